package sparkagg

import org.apache.spark.SparkThrowable
import org.apache.spark.sql.{AnalysisException, DataFrame, Encoders, Row, functions => F}
import org.scalatest.funsuite.AnyFunSuite
import sparkagg.catalyst.{AccumulatorAggregator, Form, Registry}
import sparkagg.functions.Functions
import sparkagg.testing.{DefaultLineOnly, EveryFunction, MyAvg, Slow, SparkFeatures, Sweep}

/** sparkagg's functions through SQL on a local session, against Spark's built-ins and worked examples. */
class SqlSuite extends AnyFunSuite with LocalSpark {
  private def rows(df: DataFrame): Seq[Row] = df.collect().toSeq
  private def one(sql: String): Any = spark.sql(sql).collect().head.get(0)

  override def beforeAll(): Unit = {
    super.beforeAll()
    EveryFunction.createTable(spark)
    spark.sql("SELECT * FROM t WHERE k < 0").createOrReplaceTempView("empty")
  }

  // Where Spark's built-in has DataFusion's semantics, it is an independent oracle.
  private val agreeing = Seq(
    "count(*)" -> "df_count(*)",
    "count(i)" -> "df_count(i)",
    "count(i, s)" -> "df_count(i, s)",
    "count(DISTINCT s)" -> "df_count(DISTINCT s)",
    "sum(i)" -> "df_sum(i)",
    "sum(l)" -> "df_sum(l)",
    "sum(m)" -> "df_sum(m)",
    "avg(i)" -> "df_avg(i)",
    "avg(d)" -> "df_avg(d)",
    "min(i)" -> "df_min(i)",
    "max(l)" -> "df_max(l)",
    "min(d)" -> "df_min(d)",
    "max(m)" -> "df_max(m)",
    "min(s)" -> "df_min(s)",
    "max(s)" -> "df_max(s)",
    "min(dt)" -> "df_min(dt)",
    "max(dt)" -> "df_max(dt)",
    "bit_and(i)" -> "df_bit_and(i)",
    "bit_or(l)" -> "df_bit_or(l)",
    "bit_xor(i)" -> "df_bit_xor(i)",
    "bool_and(b)" -> "df_bool_and(b)",
    "bool_or(b)" -> "df_bool_or(b)",
    "var_samp(d)" -> "df_var_samp(d)",
    "var_pop(i)" -> "df_var_pop(i)",
    "stddev_samp(l)" -> "df_stddev(l)",
    "stddev_pop(m)" -> "df_stddev_pop(m)",
    "covar_samp(d, i)" -> "df_covar_samp(d, i)",
    "covar_pop(l, d)" -> "df_covar_pop(l, d)",
    "corr(d, l)" -> "df_corr(d, l)",
    "regr_slope(d, l)" -> "df_regr_slope(d, l)",
    "regr_intercept(d, l)" -> "df_regr_intercept(d, l)",
    "regr_count(d, i)" -> "df_regr_count(d, i)",
    "regr_r2(d, l)" -> "df_regr_r2(d, l)",
    "regr_avgx(d, l)" -> "df_regr_avgx(d, l)",
    "regr_avgy(d, l)" -> "df_regr_avgy(d, l)",
    "regr_sxx(d, l)" -> "df_regr_sxx(d, l)",
    "regr_syy(d, l)" -> "df_regr_syy(d, l)",
    "regr_sxy(d, l)" -> "df_regr_sxy(d, l)"
  )

  for (parts <- Sweep.partitions; grouped <- Seq(true, false)) {
    test(s"agrees with Spark's built-ins, ${if (grouped) "grouped" else "global"}, $parts partitions") {
      spark.table("t").repartition(parts).createOrReplaceTempView("tp")
      val (ours, theirs) = (agreeing.map(_._2), agreeing.map(_._1))
      def q(cols: Seq[String]) =
        if (grouped) s"SELECT k, ${cols.mkString(", ")} FROM tp GROUP BY k ORDER BY k"
        else s"SELECT ${cols.mkString(", ")} FROM tp"
      val (a, b) = (rows(spark.sql(q(ours))), rows(spark.sql(q(theirs))))
      assert(a.size == b.size && a.nonEmpty)
      a.zip(b).foreach { case (x, y) =>
        x.toSeq.zip(y.toSeq).zipWithIndex.foreach { case ((u, v), i) =>
          assert(Gen.same(u, v), s"column $i: $u vs $v")
        }
      }
    }
  }

  test("empty input: count is 0, the others NULL, grouped gives no rows") {
    assert(rows(spark.sql("SELECT df_count(*), df_count(i), df_sum(i), df_avg(m), df_min(s), df_max(d) FROM empty")) ==
      Seq(Row(0L, 0L, null, null, null, null)))
    assert(rows(spark.sql("SELECT k, df_sum(i) FROM empty GROUP BY k")).isEmpty)
  }

  test("count(*) counts rows with NULLs; count(a, b) needs both non-NULL; count() as count(*)") {
    val q = "FROM VALUES (1, 'a'), (NULL, 'b'), (3, NULL), (NULL, NULL) AS v(a, b)"
    assert(rows(spark.sql(s"SELECT df_count(*), df_count(), df_count(a), df_count(a, b) $q")) ==
      Seq(Row(4L, 4L, 2L, 1L)))
  }

  test("NaN is the greatest value: max is NaN if present, min ignores it unless all are NaN") {
    val q = "FROM VALUES (1.0D), (double('NaN')), (-2.0D), (NULL) AS v(x)"
    val r = spark.sql(s"SELECT df_max(x), df_min(x) $q").head()
    assert(r.getDouble(0).isNaN && r.getDouble(1) == -2.0)
    assert(one("SELECT df_min(x) FROM VALUES (double('NaN')), (double('NaN')) AS v(x)").asInstanceOf[Double].isNaN)
    assert(rows(
      spark.sql(s"SELECT k, df_max(x) FROM VALUES (1, 1.0D), (1, double('NaN')), (2, 3.0D) AS v(k, x) " +
        "GROUP BY k ORDER BY k")).map(_.getDouble(1).toString) == Seq("NaN", "3.0"))
  }

  test("decimal results carry DataFusion's precision: sum p+10, avg p+4 / s+4 truncated") {
    val df = spark.sql("SELECT df_sum(x) AS s, df_avg(x) AS a FROM VALUES (1.00BD), (2.00BD), (2.00BD) AS v(x)")
    assert(df.schema("s").dataType.simpleString == "decimal(13,2)")
    assert(df.schema("a").dataType.simpleString == "decimal(7,6)")
    val r = df.head()
    assert(r.getDecimal(0) == new java.math.BigDecimal("5.00"))
    assert(r.getDecimal(1) == new java.math.BigDecimal("1.666666"))
    assert(one("SELECT df_avg(x) FROM VALUES (-1.00BD), (-2.00BD), (-2.00BD) AS v(x)") ==
      new java.math.BigDecimal("-1.666666"))
  }

  test("integer overflow: Spark's ARITHMETIC_OVERFLOW in ANSI mode, NULL otherwise") {
    val q = "SELECT df_sum(x) FROM VALUES (9223372036854775807L), (1L) AS v(x)"
    spark.conf.set("spark.sql.ansi.enabled", "true") // the default from Spark 4.0 on
    // Spark 3.5 wraps the task's error in a SparkException; getErrorClass, as 3.5 has no getCondition.
    val thrown = intercept[Exception](spark.sql(q).collect())
    val e = Iterator.iterate[Throwable](thrown)(_.getCause).takeWhile(_ != null).collectFirst {
      case a: ArithmeticException => a
    }.getOrElse(fail(thrown))
    assert(e.asInstanceOf[SparkThrowable].getErrorClass == "ARITHMETIC_OVERFLOW" && e.getMessage.contains("df_sum"))
    try {
      spark.conf.set("spark.sql.ansi.enabled", "false")
      assert(one(q) == null)
      assert(one("SELECT df_sum(x) FROM VALUES (99999999999999999999999999999999999999BD), (1BD) AS v(x)") == null)
    } finally spark.conf.set("spark.sql.ansi.enabled", "true")
  }

  test("a wrong argument type fails at analysis, naming the function and what it accepts") {
    val e = intercept[AnalysisException](spark.sql("SELECT df_avg(s) FROM t").schema)
    assert(e.getMessage.contains("df_avg") && e.getMessage.contains("numeric") && e.getMessage.contains("string"))
    val e2 = intercept[AnalysisException](spark.sql("SELECT df_min(map(1, 2))").schema)
    assert(e2.getMessage.contains("df_min") && e2.getMessage.contains("map<int,int>"))
  }

  // The examples are text in the catalogue and their queries plain calls, which the oracle suites run per minor.
  test("every function's DESCRIBE examples run and give the documented result", DefaultLineOnly, Slow) {
    // Documented doubles are the exact result correctly rounded; the computed one may differ in the last bits.
    def matches(got: Any, expected: String): Boolean = got match {
      case d: Double =>
        scala.util.Try(expected.toDouble).toOption.exists(e => Gen.same(d, e) || math.abs(d - e) < 1e-12)
      case null => expected == "NULL"
      case list: scala.collection.Seq[_] => list.map(v => String.valueOf(v)).mkString("[", ", ", "]") == expected
      case other => other.toString == expected
    }
    val Example = """(?s)\s*> (.+?);\n\s*(.+)""".r
    var checked = 0
    for ((id, info, _) <- Registry.entries(Functions.all, "df_")) {
      val examples = info.getExamples.split("\n      > ").drop(1).map("> " + _)
      assert(examples.nonEmpty, s"${id.funcName} has no example")
      for (Example(query, expected) <- examples.toSeq) {
        if (SparkFeatures.withinGroup || !query.contains("WITHIN GROUP")) {
          val got = one(query)
          assert(matches(got, expected.trim), s"$query gave $got")
        } else
          assertWithinGroupRefused(query, """(df_\w+)\([^()]*\) WITHIN GROUP""".r.findFirstMatchIn(query).get.group(1))
        checked += 1
      }
    }
    assert(checked >= Registry.entries(Functions.all, "df_").size)
    val described = rows(spark.sql("DESCRIBE FUNCTION EXTENDED df_avg")).map(_.getString(0)).mkString("\n")
    assert(described.contains("Usage: df_avg(expr)") && described.contains("Examples:") &&
      described.contains("Arguments:"))
    val names =
      Functions.all.flatMap(f => f.aliases ++ Form.aggregates.map(f.name + _.suffix) :+ (f.name + "_finalize"))
    assert(Registry.entries(Functions.all, "df_").map(_._1.funcName).toSet == names.map("df_" + _).toSet)
  }

  // On the other minors tests/test_state_as_data.py rolls stored states up, and GroupedAggregateSuite's state
  // forms run every function's.
  test("state as data: daily states stored in Parquet, rolled up by month, equal the direct result",
    DefaultLineOnly, Slow) {
    withTempDir("sparkagg-states") { dir =>
      import EveryFunction.{args, calls, comparable, name, stateParams => params}
      // Spark 3.5 cannot parse WITHIN GROUP, which these four take in EveryFunction.
      val rolledUp = Functions.all.map(_.name).toSet --
        (if (SparkFeatures.withinGroup) Nil else Seq("first_value", "last_value", "nth_value", "percentile_cont"))
      assert(rolledUp == calls.map(name).toSet, "every function's state forms are rolled up")
      val days = spark.sql("SELECT *, CAST(l % 90 AS INT) AS day FROM t")
      days.createOrReplaceTempView("days")
      def within(i: Int) = EveryFunction.within(calls(i))
      spark.sql(
        s"SELECT k, day, ${calls.zipWithIndex.map { case (c, i) => s"df_${name(c)}_state${args(c)}${within(i)} AS s$i" }
            .mkString(", ")} FROM days GROUP BY k, day").write.mode("overwrite").parquet(dir)
      spark.read.parquet(dir).createOrReplaceTempView("daily")
      // Months from days, then the whole key from months: rollups of rollups.
      spark.sql(
        s"SELECT k, day DIV 30 AS month, ${calls.indices.map(i =>
            s"df_${name(calls(i))}_merge_state(s$i${params(calls(i))}) AS s$i")
            .mkString(", ")} FROM daily GROUP BY k, day DIV 30").createOrReplaceTempView("monthly")
      val merged = rows(
        spark.sql(
          s"SELECT k, ${calls.indices.map(i => s"df_${name(calls(i))}_merge(s$i${params(calls(i))})").mkString(", ")} " +
            "FROM monthly GROUP BY k ORDER BY k"))
      val finalized = rows(
        spark.sql(
          s"SELECT k, ${calls.indices.map(i => s"df_${name(calls(i))}_finalize(s$i${params(calls(i))})")
              .mkString(", ")} FROM (SELECT k, ${calls.indices.map(i =>
              s"df_${name(calls(i))}_merge_state(s$i${params(calls(i))}) AS s$i")
              .mkString(", ")} FROM monthly GROUP BY k) ORDER BY k"))
      val direct = rows(
        spark.sql(
          s"SELECT k, ${calls.indices.map(i => "df_" + calls(i) + within(i)).mkString(", ")} FROM days GROUP BY k ORDER BY k"))
      // t-digests merged in another order estimate differently (and their merged forms return doubles).
      val approximate = EveryFunction.approximate.map { case (c, col) =>
        c -> rows(spark.sql(s"SELECT k, sort_array(collect_list(CAST($col AS DOUBLE))) FROM t GROUP BY k"))
          .map(r => r.get(0) -> r.getSeq[Double](1).toArray).toMap
      }
      for (result <- Seq(merged, finalized)) {
        assert(result.size == direct.size)
        result.zip(direct).foreach { case (x, y) =>
          x.toSeq.zip(y.toSeq).zipWithIndex.foreach { case ((u, v), i) =>
            val call = if (i == 0) "k" else calls(i - 1)
            approximate.get(call) match {
              case Some(groups) =>
                val sorted = groups(x.get(0))
                assert(EveryFunction.closeInRank(sorted, u, v), s"$call: $u vs $v")
              case None => assert(Gen.same(comparable(u), comparable(v)), s"$call: $u vs $v")
            }
          }
        }
      }
    }
  }

  test("collections: array_agg keeps NULLs, string_agg skips them, median a double for integers") {
    val r = spark.sql("SELECT df_array_agg(x), df_string_agg(s, '|'), df_median(x), df_median(d), df_median(m) " +
      "FROM VALUES (3, 'a', 1.0D, 1.10BD), (NULL, NULL, NULL, NULL), (-4, 'b', double('NaN'), 2.25BD), " +
      "(8, 'c', 2.0D, -1.00BD), (1, NULL, 4.0D, NULL) AS v(x, s, d, m)").head()
    assert(r.getSeq[Any](0).map(String.valueOf).sorted == Seq("-4", "1", "3", "8", "null"))
    assert(r.getString(1).split('|').sorted.toSeq == Seq("a", "b", "c"))
    assert(r.get(2) == 2.0) // {-4, 1, 3, 8}: (1 + 3) / 2
    assert(r.getDouble(3) == 3.0) // {1, 2, 4, NaN}: NaN sorts last, (2 + 4) / 2
    assert(r.getDecimal(4) == new java.math.BigDecimal("1.10"))
    assert(one("SELECT df_median(x) FROM VALUES (-1), (-2) AS v(x)") == -1.5) // not truncated (DataFusion 55)
    assert(one("SELECT df_median(x) FROM VALUES (1.00BD), (1.25BD) AS v(x)") == new java.math.BigDecimal("1.12"))
    assert(one("SELECT df_array_agg(x) FROM VALUES (1) AS v(x) WHERE x > 1") == null)
    val e = intercept[AnalysisException](spark.sql("SELECT df_string_agg(s, s) FROM t").schema)
    assert(e.getMessage.contains("df_string_agg") && e.getMessage.contains("constant"))
  }

  private def assertWithinGroupRefused(query: String, function: String): Unit = {
    val e = intercept[AnalysisException](spark.sql(query).schema)
    assert(
      e.getMessage.contains(s"$function(...) WITHIN GROUP") && e.getMessage.contains("Spark 4.0") &&
        e.getMessage.contains(s"Spark ${spark.version}"),
      e.getMessage
    )
  }

  test("WITHIN GROUP: every ordered call runs from Spark 4.0 on; on 3.5 each is refused naming the function") {
    for (call <- EveryFunction.withinGroupCalls) {
      val query = s"SELECT ${EveryFunction.sql(call)} FROM t"
      if (SparkFeatures.withinGroup) assert(spark.sql(query).collect().length == 1, query)
      else assertWithinGroupRefused(query, "df_" + EveryFunction.name(call))
    }
  }

  test(
    s"percentile_cont WITHIN GROUP equals Spark's percentile_cont, ASC and DESC, grouped, ${Sweep.partitions.mkString(
        "/")} partitions",
    Slow) {
    assume(SparkFeatures.withinGroup, "WITHIN GROUP needs Spark 4.0 (the test above checks 3.5's refusal)")
    for (parts <- Sweep.partitions) {
      spark.table("t").repartition(parts).createOrReplaceTempView("tp")
      val calls = for (p <- Seq("0.0", "0.25", "0.5", "0.9", "1.0"); dir <- Seq("", " DESC"); x <- Seq("i", "l", "m"))
        yield s"percentile_cont($p) WITHIN GROUP (ORDER BY $x$dir)"
      val q = (prefix: String) => s"SELECT k, ${calls.map(prefix + _).mkString(", ")} FROM tp GROUP BY k ORDER BY k"
      rows(spark.sql(q("df_"))).zip(rows(spark.sql(q("")))).foreach { case (x, y) =>
        x.toSeq.zip(y.toSeq).foreach { case (u, v) => assert(Gen.same(u, v), s"$u vs $v") }
      }
    }
    val e = intercept[AnalysisException](spark.sql("SELECT df_percentile_cont(0.5) FROM t").schema)
    assert(e.getMessage.contains("WITHIN GROUP"))
    val e2 =
      intercept[AnalysisException](spark.sql("SELECT df_percentile_cont(1.5) WITHIN GROUP (ORDER BY i) FROM t").schema)
    assert(e2.getMessage.contains("df_percentile_cont") && e2.getMessage.contains("[0, 1]"))
    val e3 = intercept[AnalysisException](spark.sql("SELECT df_avg(i) WITHIN GROUP (ORDER BY i) FROM t").schema)
    assert(e3.getMessage.contains("df_avg") && e3.getMessage.contains("WITHIN GROUP"))
  }

  test("a state of the wrong function or shape is refused at analysis") {
    val e =
      intercept[AnalysisException](spark.sql("SELECT df_avg_merge(s) FROM (SELECT df_min_state(s) AS s FROM t)").schema)
    assert(e.getMessage.contains("df_avg_merge") && e.getMessage.contains("df_avg_state") &&
      e.getMessage.contains("struct<count:bigint,sum:double>"))
    val e2 = intercept[AnalysisException](spark.sql("SELECT df_sum_finalize(named_struct('sum', 1, 'n', 2L))").schema)
    assert(e2.getMessage.contains("df_sum_finalize"))
    val e3 = intercept[AnalysisException](spark.sql("SELECT df_count_merge(42)").schema)
    assert(e3.getMessage.contains("df_count_merge"))
    assert(one("SELECT df_avg_finalize(CAST(NULL AS STRUCT<count: BIGINT, sum: DOUBLE>))") == null)
  }

  test("sliding ROWS frames give Spark's own results") {
    val frame = "OVER (PARTITION BY k ORDER BY l, d ROWS BETWEEN 3 PRECEDING AND 1 FOLLOWING)"
    val q = (f: String) =>
      s"SELECT ${f}avg(d) $frame, ${f}sum(l) $frame, ${f}max(s) $frame, ${f}count(i) $frame " +
        "FROM t ORDER BY k, l, d"
    rows(spark.sql(q("df_"))).zip(rows(spark.sql(q("")))).foreach { case (x, y) =>
      x.toSeq.zip(y.toSeq).foreach { case (u, v) => assert(Gen.same(u, v), s"$u vs $v") }
    }
  }

  test("a user-defined accumulator: registered from Scala, by class name, and through functions.udaf", Slow) {
    SparkAgg.registerFunction(spark, "my_avg", MyAvg)
    SparkAgg.registerClass(spark, "my_avg_by_name", "sparkagg.testing.MyAvg")
    // A boxed input encoder, so NULLs reach the accumulator as NULLs (scalaDouble would make them 0.0).
    spark.udf.register("my_avg_udaf", F.udaf(AccumulatorAggregator(MyAvg, Encoders.DOUBLE)))
    val q = (f: String) => rows(spark.sql(s"SELECT k, $f(d) FROM t GROUP BY k ORDER BY k"))
    val expected = q("avg")
    for (f <- Seq("my_avg", "my_avg_by_name", "my_avg_udaf")) {
      q(f).zip(expected).foreach { case (x, y) => assert(x.getLong(0) == y.getLong(0) && Gen.same(x.get(1), y.get(1))) }
    }
    val e = intercept[IllegalArgumentException](SparkAgg.registerClass(spark, "x", "java.lang.StringBuilder"))
    assert(e.getMessage.contains("not a sparkagg.api.FunctionDef"))
  }

  test("the Aggregator adapter on a typed Dataset, with a decimal result") {
    import spark.implicits._
    val ds = Seq(1.0, 2.0, 4.0).toDS()
    assert(ds.select(AccumulatorAggregator(MyAvg, Encoders.scalaDouble).toColumn).head() == 7.0 / 3)
    val dec = Seq(BigDecimal("1.00"), BigDecimal("2.00"), BigDecimal("2.00")).toDF("x")
      .select($"x".cast("decimal(10,2)")).as[java.math.BigDecimal]
    // The encoder's type is decimal(38,18), so the mean is decimal(38,22), truncated.
    val avg = dec.select(AccumulatorAggregator(functions.Avg, dec.encoder).toColumn).head()
    assert(avg == new java.math.BigDecimal("1.6666666666666666666666"))
  }

  test("prefix \"\" gives DataFusion's names in place of Spark's built-ins, in that session only") {
    val other = spark.newSession()
    SparkAgg.register(other, "")
    assert(other.sql("SELECT avg(x) FROM VALUES (1.00BD), (2.00BD), (2.00BD) AS v(x)").head().getDecimal(0) ==
      new java.math.BigDecimal("1.666666"))
    assert(one("SELECT avg(x) FROM VALUES (1.00BD), (2.00BD), (2.00BD) AS v(x)") ==
      new java.math.BigDecimal("1.666667"))
  }
}
