package sparkagg

import com.fasterxml.jackson.databind.ObjectMapper
import org.scalatest.funsuite.AnyFunSuite
import sparkagg.functions.{Avg, Functions}

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

  test("JSON for py4j: every function once, with its row, family and documentation") {
    val entries = new ObjectMapper().readTree(Catalogue.json())
    assert(entries.size == Functions.all.size)
    val avg = entries.get(Functions.all.indexOf(Avg))
    assert(avg.get("name").asText == "avg" && avg.get("aliases").get(0).asText == "mean")
    assert(avg.get("family").asText == "average" && avg.get("retract").asText == "yes")
    assert(avg.get("examples").get(0).get(1).asText == Avg.doc.examples.head._2)
  }
}
