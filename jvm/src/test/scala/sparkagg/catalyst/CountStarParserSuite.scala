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

  test("what it does not rewrite is the delegate's, time travel identifiers included") {
    for (text <- Seq("db.t", "t@v3")) {
      assert(parser.parseTemporalTableIdentifier(text) == CatalystSqlParser.parseTemporalTableIdentifier(text), text)
    }
    // Spark 4.3's `db.t@v3`: the version is the delegate's to read (ParserInterface's default drops it).
    val versioned = parser.parseTemporalTableIdentifier("db.t@v3")
    assert(versioned.isTemporal && versioned.nameParts == Seq("db", "t"), versioned)
    assert(parser.parseMultipartIdentifier("a.b.c") == Seq("a", "b", "c"))
  }
}
