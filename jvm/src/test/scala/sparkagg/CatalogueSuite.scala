package sparkagg

import org.scalatest.funsuite.AnyFunSuite
import sparkagg.functions.Functions

class CatalogueSuite extends AnyFunSuite {
  private def retract(name: String) = Catalogue.rows.find(_.name == name).get.retract

  test("one row per function, each bound by some argument list") {
    assert(Catalogue.rows.map(_.name) == Functions.all.map(_.name))
    Catalogue.rows.foreach(r => assert(!r.retract.startsWith("unknown"), r))
  }

  test("retract as the accumulators say") {
    Seq("count", "sum", "avg", "var_samp", "corr", "regr_slope", "bit_xor").foreach(n => assert(retract(n) == "yes", n))
    Seq("min", "max", "median", "percentile_cont").foreach(n => assert(retract(n) == "sliding variant", n))
    Seq("bit_and", "bool_or", "string_agg").foreach(n => assert(retract(n) == "no", n))
  }

  test("grouped path as the bindings say: native accumulators where a function has one") {
    def grouped(name: String) = Catalogue.rows.find(_.name == name).get.grouped
    assert(grouped("count") == "native")
    assert(grouped("percentile_cont") == "native")
    Seq("string_agg", "array_agg", "nth_value", "approx_distinct").foreach(n => assert(grouped(n) == "native", n))
    assert(Catalogue.rows.filter(_.grouped != "native").map(_.name).isEmpty,
      "every function has its native GroupsAccumulator")
    Seq("sum", "avg", "median").foreach(n => assert(grouped(n) == "native", n))
  }

  test("tab-separated rows for py4j") {
    val lines = Catalogue.tsv().split("\n")
    assert(lines.length == Functions.all.size && lines.forall(_.split("\t", -1).length == 6))
    assert(lines.exists(_.startsWith("avg\tmean\t")))
  }
}
