package sparkagg

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.execution.adaptive.AdaptiveSparkPlanHelper
import org.scalatest.funsuite.AnyFunSuite
import sparkagg.exec.{GroupedAggregateExec, GroupedMode}
import sparkagg.testing.{DefaultLineOnly, EveryFunction, Slow, Sweep}

/**
 * The grouped operator under a small memory limit: a session whose execution memory is about 40 MB
 * (Spark's test setting for the memory it sees, 512 MB, less its 300 MB reserve, times a memory fraction
 * of 0.2), one shuffle partition, and 600k groups (200k on the other minors, which still spill). The Final
 * node must spill and merge its runs; the results are checked against values worked out by hand (the
 * t-digest's three weight-1 centroids give the middle value exactly: rank 1.5 falls on the second centroid,
 * interpolated by nothing).
 */
class GroupedSpillSuite extends AnyFunSuite with LocalSpark with AdaptiveSparkPlanHelper {
  @transient override lazy val spark: SparkSession = SparkSession.builder()
    .master("local[2]")
    .appName(getClass.getSimpleName)
    .config("spark.sql.extensions", classOf[SparkAggExtensions].getName)
    .config("spark.ui.enabled", "false")
    .config("spark.testing.memory", (512L << 20).toString)
    .config("spark.memory.fraction", "0.2")
    .config("spark.sql.shuffle.partitions", "1")
    .config("spark.sql.adaptive.enabled", "false")
    .getOrCreate()

  test("a Final node out of memory spills sorted runs and merges them: every group once, exact", Slow) {
    val groups = Sweep.volume(200000L, 600000L)
    // Each key k gets the rows k, k + groups, k + 2 * groups.
    val df = spark.sql(
      s"""SELECT key, df_count(id) AS c, df_sum(id) AS s, df_avg(id) AS a, df_min(id) AS lo,
         |       df_array_agg(id) AS ids, df_max(CAST(id AS STRING)) AS top, df_approx_median(id) AS m
         |FROM (SELECT id, id % $groups AS key FROM range(${3 * groups})) GROUP BY key""".stripMargin)
    df.createOrReplaceTempView("spilled")
    val wrong = spark.sql(
      s"""SELECT count(*) FROM spilled
         |WHERE c <> 3 OR s <> 3 * key + ${3 * groups} OR a <> key + $groups OR lo <> key OR m <> key + $groups
         |   OR array_sort(ids) <> array(key, key + $groups, key + ${2 * groups})
         |   OR top <> array_max(array(CAST(key AS STRING), CAST(key + $groups AS STRING),
         |                             CAST(key + ${2 * groups} AS STRING)))""".stripMargin)
    val counted = spark.sql("SELECT count(*), count(DISTINCT key) FROM spilled").head()
    assert(counted.getLong(0) == groups && counted.getLong(1) == groups)
    assert(wrong.head().getLong(0) == 0)

    df.collect()
    val finals =
      collect(df.queryExecution.executedPlan) { case g: GroupedAggregateExec if g.mode == GroupedMode.Final => g }
    assert(finals.size == 1)
    assert(finals.head.metrics("numSpills").value > 0, "the Final node spilled")
    assert(finals.head.metrics("spillSize").value > 0)
    assert(finals.head.metrics("numOutputRows").value == groups)
  }

  // The PartialMerge node spills through the Final node's code, which the test above runs on every minor.
  test("DISTINCT's PartialMerge node out of memory spills too: its groups leave it whole, so none counts twice",
    DefaultLineOnly, Slow) {
    // 200k keys, each with the values k, k + 200000, k + 400000 three times: 600k (key, value) groups.
    val (keys, values) = (200000L, 600000L)
    val df = spark.sql(
      s"""SELECT key, df_count(DISTINCT v) AS n, df_sum(DISTINCT v) AS s, df_count(v) AS c
         |FROM (SELECT id % $keys AS key, id % $values AS v FROM range(${3 * values})) GROUP BY key""".stripMargin)
    df.createOrReplaceTempView("distinct_spilled")
    val counted = spark.sql(
      s"""SELECT count(*), count_if(n <> 3 OR s <> 3 * key + ${3 * keys} OR c <> 9)
         |FROM distinct_spilled""".stripMargin).head()
    assert(counted.getLong(0) == keys && counted.getLong(1) == 0)
    df.collect()
    val merges =
      collect(df.queryExecution.executedPlan) {
        case g: GroupedAggregateExec if g.mode == GroupedMode.PartialMerge => g
      }
    assert(merges.size == 1)
    assert(merges.head.metrics("numSpills").value > 0, "the PartialMerge node spilled")
    assert(merges.head.metrics("numOutputRows").value == values)
  }

  // Three groups of a million values each: the Final node's array_agg pool (40 MB, asking twice that) is
  // refused. Up to Spark's sort fallback threshold (128) it keeps its groups; over it (set to 2) it spills.
  test(
    "a Final node out of memory keeps a few groups rather than spill them, and spills them past the threshold", Slow) {
    val query =
      """SELECT key, size(ids) AS n, aggregate(ids, 0L, (acc, x) -> acc + x) AS total
        |FROM (SELECT id % 3 AS key, df_array_agg(id) AS ids FROM range(3000000) GROUP BY id % 3)""".stripMargin
    // Group k holds 3j + k for j < 10^6: its sum is 3 * (10^6 - 1) * 10^6 / 2 + k * 10^6.
    val expected = (0 until 3).map(k => (k.toLong, 1000000, 1499998500000L + k * 1000000L))
    def spillsOf(threshold: String): Long =
      withConf("spark.sql.objectHashAggregate.sortBased.fallbackThreshold" -> threshold) {
        val df = spark.sql(query)
        assert(df.collect().map(r => (r.getLong(0), r.getInt(1), r.getLong(2))).sorted.toSeq == expected)
        val finals =
          collect(df.queryExecution.executedPlan) { case g: GroupedAggregateExec if g.mode == GroupedMode.Final => g }
        finals.head.metrics("numSpills").value
      }
    assert(spillsOf("128") == 0, "three groups are kept")
    assert(spillsOf("2") > 0, "past the threshold they spill")
  }

  // The functions' states through spills do not depend on the Spark minor, whose spilling the test above covers.
  test("every function through a Final node that spills agrees with the TypedImperativeAggregate path",
    DefaultLineOnly, Slow) {
    import EveryFunction._
    // 30k rows in 10k groups of three: every function's states outgrow the 40 MB and go through the spilled
    // runs and their merge (the assertion on numSpills below holds the size to that).
    createTable(spark, rows = 30000, name = "wide")
    val sql =
      s"SELECT u % 10000 AS g, ${calls.map(EveryFunction.sql(_)).mkString(", ")} FROM wide GROUP BY u % 10000 ORDER BY g"
    val grouped = spark.sql(sql)
    val rows = grouped.collect()
    val finals =
      collect(grouped.queryExecution.executedPlan) { case g: GroupedAggregateExec if g.mode == GroupedMode.Final => g }
    assert(finals.head.metrics("numSpills").value > 0, "the Final node spilled")
    spark.conf.set("spark.sparkagg.groups.enabled", "false")
    val typed =
      try spark.sql(sql).collect()
      finally spark.conf.unset("spark.sparkagg.groups.enabled")
    assert(rows.length == 10000 && typed.length == 10000)
    rows.zip(typed).foreach { case (a, b) =>
      calls.indices.foreach { i =>
        assert(Gen.same(comparable(a.get(i + 1)), comparable(b.get(i + 1))), s"${calls(i)}: $a vs $b")
      }
    }
  }
}
