package sparkagg.testing

import org.apache.spark.sql.SparkSession

/**
 * One call of every sparkagg function over SqlSuite's table `t` (k, i, l, d, m, s, dt, b, u), for the
 * suites that run them all: the state rollup (SqlSuite), the two grouped paths (GroupedAggregateSuite) and
 * the grouped operator's spills (GroupedSpillSuite).
 */
object EveryFunction {
  /** The table `t`: 5000 rows in 37 groups `k`, a column of each type with NULLs, and a unique `u`
   *  (`rows` rows under another `name`, the same columns). */
  def createTable(spark: SparkSession, rows: Long = 5000, name: String = "t"): Unit = {
    spark.range(0, rows).selectExpr(
      "id % 37 AS k",
      "IF(id % 11 = 0, NULL, CAST(id * 7919 % 1000 - 500 AS INT)) AS i",
      "IF(id % 13 = 0, NULL, id * 104729 % 100000 - 50000) AS l",
      "IF(id % 7 = 0, NULL, CAST(id AS DOUBLE) / 8) AS d",
      "IF(id % 5 = 0, NULL, CAST(id * 31 % 997 AS DECIMAL(10, 2)) / 3) AS m",
      "IF(id % 17 = 0, NULL, CAST(id * 13 % 101 AS STRING)) AS s",
      "IF(id % 19 = 0, NULL, DATE_ADD(DATE'2020-01-01', CAST(id % 400 AS INT))) AS dt",
      "IF(id % 23 = 0, NULL, id % 3 = 0) AS b",
      "id AS u"
    ).createOrReplaceTempView(name)
  }

  private val everyCall: Seq[String] = Seq(
    "count(i)",
    "sum(l)",
    "sum(m)",
    "avg(d)",
    "avg(m)",
    "min(s)",
    "max(dt)",
    "bit_and(i)",
    "bit_or(l)",
    "bit_xor(i)",
    "bool_and(b)",
    "bool_or(b)",
    "var_samp(d)",
    "var_pop(i)",
    "stddev(m)",
    "stddev_pop(l)",
    "skewness(u * u)",
    "kurtosis(i)",
    "kurtosis_pop(l)",
    "covar_samp(d, l)",
    "covar_pop(l, i)",
    "corr(d, l)",
    "regr_slope(d, l)",
    "regr_intercept(d, l)",
    "regr_count(d, i)",
    "regr_r2(d, l)",
    "regr_avgx(d, l)",
    "regr_avgy(d, l)",
    "regr_sxx(d, l)",
    "regr_syy(d, l)",
    "regr_sxy(d, l)",
    "median(i)",
    "median(m)",
    "mode(s)",
    "array_agg(s)",
    "string_agg(s, '|')",
    "approx_distinct(l)",
    "percentile_cont(0.3)",
    "array_agg(i)",
    "string_agg(s, ',')",
    "first_value(s)",
    "last_value(i, true)",
    "nth_value(l, -2)",
    "max_by(s, u)",
    "any_value(IF(u = 7, dt, NULL))",
    "min_by(i, u)",
    "max_by(d, u)",
    "min_by(dt, -u / 3.0D)",
    "array_agg(d)",
    "array_agg(l)",
    "approx_percentile_cont(d, 0.4)",
    "approx_percentile_cont_with_weight(d, abs(i) % 3 + 1, 0.6)",
    "approx_median(l)"
  )

  /** Ordered calls: the key `u` is unique, so their results do not depend on the plan. */
  val ordered: Set[String] = Set("array_agg(i)", "string_agg(s, ',')", "first_value(s)", "last_value(i, true)",
    "nth_value(l, -2)")

  /** The t-digest calls and the column each estimates a quantile of. Estimates depend on the order
   *  states are merged in, so two plans agree only approximately: see [[closeInRank]]. */
  val approximate: Map[String, String] = Map("approx_percentile_cont(d, 0.4)" -> "d",
    "approx_percentile_cont_with_weight(d, abs(i) % 3 + 1, 0.6)" -> "d", "approx_median(l)" -> "l")

  /** Whether two estimates' ranks among a group's values (sorted) agree within 3%: 4 of the ~135 values
   *  of a group of `t`; the 1% bar of the spec is tested on large groups in tests/test_oracle_ordered.py. */
  def closeInRank(sorted: Array[Double], a: Any, b: Any): Boolean = (a == null && b == null) || {
    def rank(x: Double) = (sorted.count(_ < x) + sorted.count(_ <= x)) / 2.0 / sorted.length
    math.abs(rank(a.toString.toDouble) - rank(b.toString.toDouble)) <= 0.03
  }

  def name(call: String): String = call.takeWhile(_ != '(')
  def args(call: String): String = call.dropWhile(_ != '(')

  /** The constant parameters a call's `_merge` and `_merge_state` forms take after the state, e.g. ", 0.4". */
  def stateParams(call: String): String = call match {
    case "string_agg(s, '|')" => ", '|'"
    case "string_agg(s, ',')" => ", ','"
    case "percentile_cont(0.3)" => ", 0.3"
    case "nth_value(l, -2)" => ", -2"
    case "approx_percentile_cont(d, 0.4)" => ", 0.4"
    case "approx_percentile_cont_with_weight(d, abs(i) % 3 + 1, 0.6)" => ", 0.6"
    case _ => ""
  }

  /** The WITHIN GROUP clause a call takes, if any. */
  def within(call: String): String =
    if (name(call) == "percentile_cont") " WITHIN GROUP (ORDER BY d)"
    else if (ordered(call)) " WITHIN GROUP (ORDER BY u DESC)" else ""

  /** The calls this Spark can express: every one from Spark 4.0 on; on 3.5 those without WITHIN GROUP
   *  (SqlSuite checks that the others are refused there, naming the function). */
  lazy val calls: Seq[String] = everyCall.filter(c => SparkFeatures.withinGroup || within(c).isEmpty)

  /** The calls that take WITHIN GROUP. */
  lazy val withinGroupCalls: Seq[String] = everyCall.filter(within(_).nonEmpty)

  /** The call as SQL under `prefix`, e.g. "df_array_agg(i) WITHIN GROUP (ORDER BY u DESC)". */
  def sql(call: String, prefix: String = "df_"): String = prefix + call + within(call)

  /** Unordered array_agg / string_agg: the order of elements depends on the plan; compared as multisets. */
  def comparable(v: Any): Any = v match {
    case s: scala.collection.Seq[_] => s.map(String.valueOf).sorted
    case s: String if s.contains('|') => s.split('|').toSeq.sorted
    case other => other
  }
}
