package sparkagg.catalyst

import org.apache.spark.sql.catalyst.parser.CatalystSqlParser
import org.scalatest.funsuite.AnyFunSuite

class TemporalIdentifierSuite extends AnyFunSuite {
  private val parser = new CountStarParser(CatalystSqlParser, "df_count")

  test("time travel identifiers are the delegate's to read") {
    for (text <- Seq("db.t", "t@v3")) {
      assert(parser.parseTemporalTableIdentifier(text) == CatalystSqlParser.parseTemporalTableIdentifier(text), text)
    }
    // Spark 4.3's `db.t@v3`: the version is the delegate's to read (ParserInterface's default drops it).
    val versioned = parser.parseTemporalTableIdentifier("db.t@v3")
    assert(versioned.isTemporal && versioned.nameParts == Seq("db", "t"), versioned)
  }
}
