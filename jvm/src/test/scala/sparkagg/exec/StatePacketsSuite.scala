package sparkagg.exec

import org.apache.spark.sql.{DataFrame, Row}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{AttributeReference, BindReferences, Literal, UnsafeProjection}
import org.apache.spark.sql.catalyst.plans.physical.HashPartitioning
import org.apache.spark.sql.execution.adaptive.AdaptiveSparkPlanHelper
import org.apache.spark.sql.execution.exchange.{ReusedExchangeExec, ShuffleExchangeExec}
import org.apache.spark.sql.types._
import org.scalatest.funsuite.AnyFunSuite
import sparkagg.LocalSpark

/** The states crossing the shuffle in packets ([[StatePackets]]): the same rows as a row per group, every
 *  group in the partition Spark's hash partitioning gives its key, under adaptive execution and without. */
class StatePacketsSuite extends AnyFunSuite with LocalSpark with AdaptiveSparkPlanHelper {

  private def nodes(df: DataFrame): Seq[GroupedAggregateExec] =
    collect(df.queryExecution.executedPlan) { case g: GroupedAggregateExec => g }

  private def shuffles(df: DataFrame): Int =
    collect(df.queryExecution.executedPlan) { case s: ShuffleExchangeExec => s }.size

  /** The query's rows with packets and with a row per group; how many nodes unpacked packets in each. */
  private def bothWays(sql: String): (Seq[Row], Seq[Row], Int, Int) = {
    def run(packed: Boolean) = withConf(StatePackets.EnabledConf -> packed.toString) {
      val df = spark.sql(sql)
      (df.collect().toSeq, nodes(df).count(_.unpacks.isDefined))
    }
    val ((packed, unpacking), (plain, plainUnpacking)) = (run(true), run(false))
    (packed, plain, unpacking, plainUnpacking)
  }

  override def beforeAll(): Unit = {
    super.beforeAll()
    spark.range(0, 60000).selectExpr(
      "id % 7919 AS k",
      "IF(id % 13 = 0, NULL, id % 1000) AS n",
      "CONCAT('key-', id % 4001) AS s",
      "DATE_ADD(DATE'2020-01-01', CAST(id % 365 AS INT)) AS d",
      "CAST(id % 97 AS DECIMAL(20, 2)) AS m",
      "CAST(id AS DOUBLE) / 7 AS x"
    ).createOrReplaceTempView("t")
  }

  test("each partition's route is an integer Spark's hash partitioning sends there") {
    for (n <- Seq(1, 2, 3, 7, 200, 1000)) {
      val routes = StatePackets.routes(n)
      routes.zipWithIndex.foreach { case (v, p) =>
        assert(HashPartitioning(Seq(Literal(v)), n).partitionIdExpression.eval() == p, s"$n partitions, $p")
      }
    }
  }

  test("a packet's partition for one integer-like key is what Spark's partition expression gives") {
    val random = new scala.util.Random(20261128)
    val types = Seq(LongType, IntegerType, DateType, TimestampType, TimestampNTZType, DayTimeIntervalType(),
      YearMonthIntervalType())
    for (t <- types; n <- Seq(1, 3, 4, 200)) {
      val input = Seq(AttributeReference("other", LongType)(), AttributeReference("key", t)())
      val spark = BindReferences.bindReference(HashPartitioning(Seq(input(1)), n).partitionIdExpression, input)
      val ours = PacketWriter.partitioner(Seq(input(1)), input, n)
      val toRow = UnsafeProjection.create(input.map(_.dataType).toArray)
      for (i <- 0 until 500) {
        val key: Any = if (i % 50 == 0) null else if (t.defaultSize == 8) random.nextLong() else random.nextInt(): Any
        val row = toRow(InternalRow(random.nextLong(), key))
        assert(ours(row) == spark.eval(row), s"$t, $n partitions, key $key")
      }
    }
  }

  private val keyShapes = Seq("k", "n", "s", "d", "m", "k, s", "n, d")

  for (adaptive <- Seq(true, false); partitions <- Seq(1, 3, 201); keys <- keyShapes) {
    test(s"packed and plain agree, GROUP BY $keys, $partitions partitions, adaptive $adaptive") {
      withConf("spark.sql.adaptive.enabled" -> adaptive.toString,
        "spark.sql.shuffle.partitions" -> partitions.toString) {
        val sql = s"SELECT $keys, df_sum(x), df_count(x), df_max(s), df_median(x), df_approx_distinct(s) " +
          s"FROM t GROUP BY $keys ORDER BY $keys"
        val (packed, plain, unpacking, plainUnpacking) = bothWays(sql)
        assert(packed.nonEmpty && packed == plain)
        assert(unpacking == 1 && plainUnpacking == 0)
      }
    }
  }

  test("a global aggregate's one partition is not packed; DISTINCT's two shuffles are") {
    val (global, globalPlain, globalUnpacking, _) = bothWays("SELECT df_sum(x), df_max(s) FROM t")
    assert(global == globalPlain && globalUnpacking == 0)
    val (distinct, distinctPlain, distinctUnpacking, _) =
      bothWays("SELECT k, df_count(DISTINCT s), df_sum(x) FROM t GROUP BY k ORDER BY k")
    assert(distinct.size == 7919 && distinct == distinctPlain && distinctUnpacking == 2)
  }

  for (adaptive <- Seq(true, false)) {
    test(s"the merging node's rows are partitioned by its keys: a join on them needs no shuffle, adaptive $adaptive") {
      withConf("spark.sql.adaptive.enabled" -> adaptive.toString, "spark.sql.autoBroadcastJoinThreshold" -> "-1",
        "spark.sql.shuffle.partitions" -> "13") {
        val df = spark.sql("SELECT a.s, a.total, b.top FROM " +
          "(SELECT s, df_sum(x) total FROM t GROUP BY s) a JOIN (SELECT s, df_max(k) top FROM t GROUP BY s) b " +
          "ON a.s = b.s")
        val expected = spark.sql("SELECT s, sum(x), max(k) FROM t GROUP BY s").collect().map(r => r.getString(0) -> r)
        val rows = df.collect()
        assert(rows.length == 4001 && rows.map(_.getString(0)).toSet == expected.map(_._1).toSet)
        assert(shuffles(df) == 2, "one shuffle per aggregation, none for the join")
        assert(nodes(df).count(_.unpacks.isDefined) == 2)
      }
    }
  }

  test("alike aggregations in packets reuse shuffles as those with a row per group do") {
    withConf("spark.sql.autoBroadcastJoinThreshold" -> "-1") {
      val sql = "SELECT a.k, b.k FROM (SELECT k, df_sum(n) total FROM t GROUP BY k) a " +
        "JOIN (SELECT k, df_sum(n) total FROM t GROUP BY k) b ON a.total = b.total"
      def run(inPackets: Boolean): (Int, Int) = withConf(StatePackets.EnabledConf -> inPackets.toString) {
        val df = spark.sql(sql)
        df.collect()
        (shuffles(df), collect(df.queryExecution.executedPlan) { case r: ReusedExchangeExec => r }.size)
      }
      val (packed, plain) = (run(inPackets = true), run(inPackets = false))
      assert(packed == plain && packed._2 >= 1, s"(shuffles, reused) $packed, a row per group $plain")
    }
  }

  test("a group's state larger than a packet is a packet of its own") {
    val sql = "SELECT k % 2 AS g, length(df_string_agg(repeat(s, 40), ',')) FROM t GROUP BY k % 2 ORDER BY g"
    val (packed, plain, unpacking, _) = bothWays(sql)
    assert(packed == plain && unpacking == 1)
    assert(packed.map(_.getInt(1)).sum > 2 * (16 << 20) / spark.conf.get("spark.sql.shuffle.partitions").toInt)
  }
}
