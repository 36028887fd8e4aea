package sparkagg.exec

import java.nio.{ByteBuffer, ByteOrder}

import org.apache.spark.sql.DataFrame
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.columnar.CachedBatch
import org.apache.spark.sql.execution.adaptive.AdaptiveSparkPlanHelper
import org.apache.spark.sql.execution.columnar.{DefaultCachedBatch, InMemoryTableScanExec}
import org.apache.spark.sql.execution.columnar.sparkagg.CachedVectors
import org.scalatest.funsuite.AnyFunSuite
import sparkagg.LocalSpark
import sparkagg.compat.CollectionConverters._
import sparkagg.testing.Slow

/**
 * A cached table read as batches by the grouped operator (CachedVectors): strings in each encoding Spark's
 * cache gives them, dates, timestamps and decimals of at most 18 digits (as a vector's longs and as its ints),
 * with NULLs, decoded to the values Spark's own row path reads; and
 * grouped aggregations over them equal to the TypedImperativeAggregate path's.
 */
class CachedVectorsSuite extends AnyFunSuite with LocalSpark with AdaptiveSparkPlanHelper {
  import CachedVectorsSuite._

  private val columns = Seq("k", "plain", "runs", "dict", "dt", "ts", "m", "cents")

  override def beforeAll(): Unit = {
    super.beforeAll()
    // Two partitions of 12,500 rows, two cached batches each (10,000 rows a batch). The strings: all distinct
    // (no encoding shrinks them: stored plain), in runs of 500 rows (run-length), five values in no order
    // (a dictionary). Spark itself reads the table by rows (it has strings and decimals).
    spark.range(0, 25000, 1, 2).selectExpr(
      "id % 37 AS k",
      "IF(id % 17 = 0, NULL, CONCAT('plain-', CAST(id * 7919 % 100003 AS STRING))) AS plain",
      "IF(id % 13 = 0, NULL, CONCAT('run-', CAST(id DIV 500 AS STRING))) AS runs",
      "IF(id % 11 = 0, NULL, CONCAT('dictionary-', CAST(id * 7 % 5 AS STRING))) AS dict",
      "IF(id % 19 = 0, NULL, DATE_ADD(DATE'2020-01-01', CAST(id % 400 AS INT))) AS dt",
      "IF(id % 23 = 0, NULL, TIMESTAMP_SECONDS(id * 3600)) AS ts",
      "IF(id % 29 = 0, NULL, CAST((id * 7919 % 100003 - 50000) / 7 AS DECIMAL(12, 3))) AS m",
      "IF(id % 31 = 0, NULL, CAST((id % 2000 - 1000) / 100 AS DECIMAL(7, 2))) AS cents",
      "CAST(id AS DECIMAL(30, 2)) AS wide"
    ).cache().createOrReplaceTempView("cached")
    spark.table("cached").count()
  }

  private def scanOf(df: DataFrame): InMemoryTableScanExec =
    collect(df.queryExecution.executedPlan) { case s: InMemoryTableScanExec => s }.head

  test("each string encoding, dates, timestamps and decimals decode to the values Spark's rows hold") {
    val scan = scanOf(spark.table("cached").select(columns.head, columns.tail: _*))
    assert(CachedVectors.decodes(scan))
    // The encoding of each string column in each cached batch.
    val ordinals = Seq("plain", "runs", "dict").map(c => scan.relation.output.indexWhere(_.name == c))
    val encodings = scan.relation.cacheBuilder.cachedColumnBuffers.map(encodingsOf(_, ordinals))
      .collect().toSeq.transpose.map(_.toSet)
    // PassThrough 0, RunLengthEncoding 1, DictionaryEncoding 2 (compressionSchemes.scala).
    assert(encodings == Seq(Set(0), Set(1), Set(2)))

    val decoded = CachedVectors.batches(scan).flatMap(b => b.rowIterator().asScala.map(valuesOf).toList).collect()
    val rows = scan.execute().map(valuesOf).collect()
    assert(rows.length == 25000 && decoded.toSeq == rows.toSeq)
    assert(columns.indices.tail.forall(c => rows.exists(_(c).isEmpty)), "every column but k holds NULLs")
  }

  test("grouped aggregations over the decoded columns equal the TypedImperativeAggregate path's", Slow) {
    // (By ts, unique where not NULL: max_by and min_by keep the first of tied rows, which differs between paths.)
    val calls = "df_min(plain), df_max(runs), df_min_by(dict, ts), df_max_by(plain, ts), df_count(dict), " +
      "length(df_string_agg(runs, ',')), df_max(dt), df_min(ts), df_mode(dict), df_sum(m), df_avg(cents), df_max(m)"
    for (key <- Seq("k", "dt", "dict", "runs, k", "cents")) {
      val sql = s"SELECT $key, $calls FROM cached GROUP BY $key ORDER BY $key"
      val grouped = spark.sql(sql)
      val rows = grouped.collect().toSeq
      val partial = collect(grouped.queryExecution.executedPlan) { case g: GroupedAggregateExec => g }
        .find(_.mode == GroupedMode.Partial)
      assert(partial.exists(_.columnarInput), s"$sql: the Partial node reads the cache's batches")
      val typed = withConf(GroupedAggregateStrategy.EnabledConf -> "false")(spark.sql(sql).collect().toSeq)
      assert(rows.size > 4 && rows == typed, sql)
    }
    // A decimal of more than 18 digits is not decoded here: the node reads the cache's rows.
    val decimal = spark.sql("SELECT k, df_sum(wide), df_min(plain) FROM cached GROUP BY k")
    decimal.collect()
    assert(!collect(decimal.queryExecution.executedPlan) { case g: GroupedAggregateExec => g }.exists(_.columnarInput))
  }
}

private object CachedVectorsSuite {
  /** A row's values as plain Scala values (strings, day and microsecond numbers, decimals), NULL as None. */
  private def valuesOf(row: InternalRow): Seq[Option[Any]] = Seq(
    if (row.isNullAt(0)) None else Some(row.getLong(0)),
    if (row.isNullAt(1)) None else Some(row.getUTF8String(1).toString),
    if (row.isNullAt(2)) None else Some(row.getUTF8String(2).toString),
    if (row.isNullAt(3)) None else Some(row.getUTF8String(3).toString),
    if (row.isNullAt(4)) None else Some(row.getInt(4)),
    if (row.isNullAt(5)) None else Some(row.getLong(5)),
    if (row.isNullAt(6)) None else Some(row.getDecimal(6, 12, 3)),
    if (row.isNullAt(7)) None else Some(row.getDecimal(7, 7, 2))
  )

  /** The encoding of each of a cached batch's `ordinals` columns: the int after the NULL count and NULL rows. */
  def encodingsOf(batch: CachedBatch, ordinals: Seq[Int]): Seq[Int] = ordinals.map { o =>
    val in = ByteBuffer.wrap(batch.asInstanceOf[DefaultCachedBatch].buffers(o)).order(ByteOrder.nativeOrder)
    in.getInt(4 + 4 * in.getInt(0))
  }
}
