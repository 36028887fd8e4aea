package sparkagg

import org.apache.spark.sql.Row
import org.apache.spark.sql.execution.adaptive.AdaptiveSparkPlanHelper
import org.scalatest.funsuite.AnyFunSuite
import sparkagg.window.{SlidingWindowExec, SlidingWindowStrategy}
import sparkagg.testing.{SparkFeatures, Sweep}

/** sparkagg's sliding window operator against Spark's own WindowExec running the same functions. */
class WindowSuite extends AnyFunSuite with LocalSpark with AdaptiveSparkPlanHelper {
  override def beforeAll(): Unit = {
    super.beforeAll()
    // Seven partitions of about 210 rows (430 under `make test-long`): long enough for every frame to slide,
    // grow and shrink; Spark's side recomputes its frames, quadratic in the rows for UNBOUNDED FOLLOWING.
    spark.range(0, Sweep.volume(1500, 3000)).selectExpr(
      "id % 7 AS p",
      "id AS o",
      "IF(id % 9 = 0, NULL, CAST(id * 7919 % 1000 - 500 AS INT)) AS i",
      "IF(id % 11 = 0, NULL, IF(id % 97 = 0, double('NaN'), (id * 104729 % 10000) / 8.0D)) AS d",
      "IF(id % 13 = 0, NULL, CAST(id * 31 % 997 AS DECIMAL(10, 2))) AS m",
      "IF(id % 17 = 0, NULL, CAST(id * 13 % 101 AS STRING)) AS s"
    ).createOrReplaceTempView("w")
    // Partitions smaller than the frames, and a NULL partition key.
    spark.sql("SELECT IF(o % 50 = 0, NULL, o % 300) AS p, o, i, d FROM w").createOrReplaceTempView("small")
  }

  private def both(sql: String): (Seq[Row], Seq[Row], Boolean) = {
    def run(enabled: Boolean) = {
      spark.conf.set(SlidingWindowStrategy.EnabledConf, enabled.toString)
      val df = spark.sql(sql)
      val rows = df.collect().toSeq
      (rows, find(df.queryExecution.executedPlan)(_.isInstanceOf[SlidingWindowExec]).isDefined)
    }
    try {
      val (ours, usedOurs) = run(enabled = true)
      val (spark_, usedWhenOff) = run(enabled = false)
      assert(!usedWhenOff)
      (ours, spark_, usedOurs)
    } finally spark.conf.unset(SlidingWindowStrategy.EnabledConf)
  }

  private def assertSame(a: Seq[Row], b: Seq[Row]): Unit = {
    assert(a.size == b.size && a.nonEmpty)
    a.zip(b).foreach { case (x, y) =>
      x.toSeq.zip(y.toSeq).zipWithIndex.foreach { case ((u, v), i) =>
        assert(Gen.same(u, v), s"column $i: $u vs $v in $x")
      }
    }
  }

  private val frames = Seq(
    "ROWS BETWEEN 3 PRECEDING AND CURRENT ROW",
    "ROWS BETWEEN 10 PRECEDING AND 2 FOLLOWING",
    "ROWS BETWEEN 5 PRECEDING AND 2 PRECEDING", // excludes the current row
    "ROWS BETWEEN 1 FOLLOWING AND 4 FOLLOWING", // empty at the partition's end
    "ROWS BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING",
    "ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING",
    "ROWS BETWEEN 400 PRECEDING AND 400 FOLLOWING"
  ) // wider than the small partitions

  // Every frame runs over `small` on every minor. Over `w` (many calls; Spark's side slow on the long frames)
  // the other minors run these three, with rows before, after and on both sides of the current one.
  private val slidingOnEveryLine = frames.slice(1, 4)

  // `make check` runs the first three frames over `small`; the others are Slow.
  for ((frame, i) <- frames.zipWithIndex; table <- Seq("w", "small")) {
    test(
      s"$frame over $table equals Spark's WindowExec",
      Sweep.onEveryLineIf(table == "small" || slidingOnEveryLine.contains(frame)) ++
        Sweep.slowIf(table == "w" || i >= 3): _*
    ) {
      val calls = if (table == "w")
        Seq(
          "df_avg(d)",
          "df_sum(i)",
          "df_sum(m)",
          "df_count(*)",
          "df_count(d)",
          "df_min(s)",
          "df_max(d)",
          "df_var_samp(i)",
          "df_corr(d, i)",
          "df_bool_or(i > 0)",
          "df_bit_xor(i)",
          "df_bit_and(i)",
          "df_bool_and(d > 100)",
          // order statistics and counts: sliding variants kept in order (off: recomputed per frame)
          "df_median(d)",
          "df_median(i)",
          "df_median(m)",
          "df_percentile_cont(d, 0.3)",
          "df_mode(i % 7)",
          "df_mode(s)",
          // rows kept in arrival or key order (NULL keys and values, ties in i % 5)
          "df_first_value(m)",
          "df_last_value(d)",
          "df_nth_value(i, -2)",
          "df_max_by(s, i % 5)",
          "df_any_value(d)",
          // no retract: two stacks of states, whose merges must keep arrival order
          "df_array_agg(i)",
          "df_string_agg(s, ',')"
        ) ++ (if (!SparkFeatures.withinGroup) Nil // Spark 3.5 cannot parse WITHIN GROUP
              else
                Seq(
                  "df_percentile_cont(0.75) WITHIN GROUP (ORDER BY i DESC)",
                  "df_first_value(d) WITHIN GROUP (ORDER BY i % 5)",
                  "df_last_value(s, true) WITHIN GROUP (ORDER BY i % 5 DESC)",
                  "df_nth_value(d, 2) WITHIN GROUP (ORDER BY s)"
                ))
      else Seq("df_avg(d)", "df_sum(i)", "df_max(d)", "df_count(i)", "df_bit_or(i)")
      val cols = calls.map(c => s"$c OVER (PARTITION BY p ORDER BY o $frame)").mkString(", ")
      val (ours, theirs, used) = both(s"SELECT p, o, $cols FROM $table ORDER BY p, o")
      assert(used, "the sliding operator was not chosen")
      assertSame(ours, theirs)
    }
  }

  test("no PARTITION BY, and a window mixing in a built-in, which stays with Spark") {
    val (ours, theirs, used) = both(
      "SELECT o, df_sum(i) OVER (ORDER BY o ROWS BETWEEN 20 PRECEDING AND CURRENT ROW) FROM w ORDER BY o")
    assert(used)
    assertSame(ours, theirs)
    val (_, _, mixed) = both("SELECT o, df_sum(i) OVER (ORDER BY o ROWS 2 PRECEDING), " +
      "sum(i) OVER (ORDER BY o ROWS 2 PRECEDING) FROM w")
    assert(!mixed)
  }

  test("variances and covariances when a large value leaves small ones: the frame rebuilt, not a residue") {
    val window = "(ORDER BY o ROWS BETWEEN CURRENT ROW AND 2 FOLLOWING)"
    val sql = s"SELECT o, df_var_pop(l) OVER $window, df_corr(i, l) OVER $window, df_regr_slope(i, i) OVER $window " +
      "FROM VALUES (1L, -280573825, -247494532041L), (2L, 4, 1L), (3L, -4, 0L), (4L, 2, 3L) AS t(o, i, l) ORDER BY o"
    val (ours, recomputed, used) = both(sql)
    assert(used)
    assertSame(ours, recomputed)
    // o = 2: l in {1, 0, 3}, mean 4/3, var_pop 14/9; i against itself, slope 1
    assert(math.abs(ours(1).getDouble(1) - 14.0 / 9) < 1e-12 && ours(1).getDouble(3) == 1.0, ours(1))
  }

  test("a constant x beside an infinite y in a sliding frame: regr_slope NULL, as over the same rows added") {
    // Found by the fuzzer (seed 4105669, sql/fuzz/). Frame of o = 3: x = -0.0 twice, so var_pop(x) = 0 and
    // the slope is NULL whatever y holds; when -inf arrived before (-171.15, 2.0) left, x's moments kept
    // Welford's residue and the slope was NaN.
    val window = "(ORDER BY o ROWS BETWEEN 1 PRECEDING AND CURRENT ROW)"
    val sql = s"SELECT o, df_regr_slope(y, x) OVER $window, df_covar_pop(y, x) OVER $window FROM VALUES " +
      "(1, 2.0D, CAST(-171.15306091308594 AS FLOAT)), (2, 93.05794318827608D, CAST(-0.0 AS FLOAT)), " +
      "(3, double('-inf'), CAST(-0.0 AS FLOAT)) AS t(o, y, x) ORDER BY o"
    val (ours, recomputed, used) = both(sql)
    assert(used)
    assertSame(ours, recomputed)
    assert(ours(2).isNullAt(1), ours(2))
    assert(ours(2).getDouble(2).isNaN, "covar_pop over an infinite y and a constant x: 0 times infinity")
    // A shrinking frame left with one row whose x is -inf (seed 4204399): regr_sxy NaN, as that row alone
    // gives it, not the 0 of a constant y.
    val (shrunk, whole, _) = both("SELECT o, df_regr_sxy(y, x) OVER (ORDER BY o ROWS BETWEEN CURRENT ROW AND " +
      "UNBOUNDED FOLLOWING) FROM VALUES (15, 5644125.39D, CAST(66.14777374267578 AS FLOAT)), " +
      "(18, 8403330.38D, CAST('-inf' AS FLOAT)) AS t(o, y, x) ORDER BY o")
    assertSame(shrunk, whole)
    assert(shrunk(1).getDouble(1).isNaN, shrunk(1))
  }

  test("a decimal sum that overflows in one frame, ANSI off: NULL there, and the next frame's sum again") {
    val big = "9" + "0" * 37 // 9e37: two of them need 39 digits, over decimal(38, 0)'s 38
    val sql = "SELECT o, df_sum(x) OVER (ORDER BY o ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) FROM VALUES " +
      s"(1, CAST($big AS DECIMAL(38, 0))), (2, $big), (3, 1), (4, 1) AS t(o, x) ORDER BY o"
    spark.conf.set("spark.sql.ansi.enabled", "false")
    try {
      val (ours, recomputed, used) = both(sql)
      assert(used)
      assertSame(ours, recomputed)
      assert(ours.map(r => Option(r.getDecimal(1)).map(_.toPlainString).orNull) ==
        Seq(big, null, big.dropRight(1) + "1", "2"))
    } finally spark.conf.unset("spark.sql.ansi.enabled")
  }

  test("DISTINCT of functions that cannot retract: the frame rebuilt when a value leaves, as Spark recomputes") {
    val frame = "ROWS BETWEEN 6 PRECEDING AND 2 FOLLOWING"
    val calls = Seq("df_bit_and(DISTINCT i % 64)", "df_min(DISTINCT s)", "df_median(DISTINCT i % 7)",
      "df_first_value(DISTINCT d)")
    val cols = calls.map(c => s"$c OVER (PARTITION BY p ORDER BY o $frame)").mkString(", ")
    val (ours, recomputed, used) = both(s"SELECT p, o, $cols FROM w ORDER BY p, o")
    assert(used)
    assertSame(ours, recomputed)
  }

  test("DISTINCT over sliding frames: a value -> multiplicity map, checked against a brute-force count") {
    val frame = "ROWS BETWEEN 6 PRECEDING AND 2 FOLLOWING"
    val sql = s"SELECT p, o, df_count(DISTINCT i % 5) OVER (PARTITION BY p ORDER BY o $frame) AS c, " +
      s"df_sum(DISTINCT i % 5) OVER (PARTITION BY p ORDER BY o $frame) AS s FROM w ORDER BY p, o"
    val (ours, recomputed, used) = both(sql) // switch off: Spark's WindowExec recomputes each frame
    assert(used)
    assertSame(ours, recomputed)
    // Independently: the same frames worked out in Scala from the raw rows.
    val raw = spark.sql("SELECT p, o, IF(i IS NULL, NULL, i % 5) FROM w ORDER BY p, o").collect()
      .groupBy(_.getLong(0)).toSeq.sortBy(_._1)
    val expected = raw.flatMap { case (_, rows) =>
      rows.indices.map { j =>
        val values = rows.slice(math.max(0, j - 6), math.min(rows.length, j + 3)).flatMap(r => Option(r.get(2)))
          .map(_.asInstanceOf[Int]).distinct
        (values.size.toLong, if (values.isEmpty) null else values.map(_.toLong).sum)
      }
    }
    assert(ours.map(r => (r.getLong(2), r.get(3))) == expected)
  }

  private val rangeFrames = Seq(
    "ORDER BY q RANGE BETWEEN 5 PRECEDING AND CURRENT ROW",
    "ORDER BY q RANGE BETWEEN 3 PRECEDING AND 2 FOLLOWING",
    "ORDER BY q DESC RANGE BETWEEN 4 PRECEDING AND 1 PRECEDING",
    "ORDER BY q DESC NULLS FIRST RANGE BETWEEN CURRENT ROW AND 6 FOLLOWING",
    "ORDER BY q NULLS LAST RANGE BETWEEN UNBOUNDED PRECEDING AND 2 FOLLOWING",
    "ORDER BY x RANGE BETWEEN 2.5D PRECEDING AND 0.5D FOLLOWING",
    "ORDER BY iq RANGE BETWEEN 3 PRECEDING AND 1 FOLLOWING",
    SparkFeatures.dateRangeFrame,
    "ORDER BY ts DESC RANGE BETWEEN INTERVAL '90' MINUTE PRECEDING AND INTERVAL '30' MINUTE FOLLOWING"
  )

  // `make check` runs the first four frames; the others are Slow.
  for ((frame, i) <- rangeFrames.zipWithIndex) {
    test(s"$frame (ties and NULL keys) equals Spark's WindowExec", Sweep.slowIf(i >= 4): _*) {
      // q: a bigint key with ties (o DIV 3) and NULLs; iq: a negative int key; x: a double key;
      // day, ts: date and timestamp keys with ties.
      val calls = Seq("df_avg(d)", "df_sum(i)", "df_count(*)", "df_max(d)", "df_bit_and(i)", "df_var_pop(i)")
      val cols = calls.map(c => s"$c OVER (PARTITION BY p $frame)").mkString(", ")
      val (ours, theirs, used) = both(
        s"SELECT p, o, $cols FROM (SELECT *, IF(o % 29 = 0, NULL, o DIV 3) AS q, CAST(-o DIV 2 AS INT) AS iq, " +
          "o / 4.0D AS x, DATE_ADD(DATE'2024-01-01', CAST(o DIV 4 AS INT)) AS day, " +
          "TIMESTAMP'2024-01-01 00:00:00' + make_dt_interval(0, 0, CAST(o DIV 2 AS INT) * 20) AS ts FROM w) " +
          "ORDER BY p, o")
      assert(used, "the sliding operator was not chosen")
      assertSame(ours, theirs)
    }
  }
}
