package sparkagg.catalyst

import org.apache.spark.sql.catalyst.analysis.UnresolvedFunction
import org.apache.spark.sql.catalyst.parser.CatalystSqlParser
import org.scalatest.funsuite.AnyFunSuite

class CountStarParserSuite extends AnyFunSuite {
  private val parser = new CountStarParser(CatalystSqlParser, "df_count")

  test("df_count(*) becomes the argument-less df_count(); other functions keep their star") {
    val Seq(ours, theirs) = Seq("df_count(*)", "other(*)").map(parser.parseExpression)
    assert(ours.asInstanceOf[UnresolvedFunction].arguments.isEmpty)
    assert(theirs.asInstanceOf[UnresolvedFunction].arguments.size == 1)
  }

  test("what it does not rewrite is the delegate's") {
    assert(parser.parseMultipartIdentifier("a.b.c") == Seq("a", "b", "c"))
    assert(parser.parseTableIdentifier("db.t") == CatalystSqlParser.parseTableIdentifier("db.t"))
  }
}
