package sparkagg

import org.apache.spark.sql.{DataFrame, Row}
import org.apache.spark.sql.execution.WholeStageCodegenExec
import org.apache.spark.sql.execution.exchange.ReusedExchangeExec
import org.apache.spark.sql.execution.adaptive.AdaptiveSparkPlanHelper
import org.scalatest.funsuite.AnyFunSuite
import sparkagg.exec.{GroupedAggregateExec, GroupedAggregateStrategy, GroupedMode}
import sparkagg.api.{Arg, BindContext, FunctionDef}
import sparkagg.testing.{DefaultLineOnly, EveryFunction, MyAvg, Slow, SparkFeatures, Sweep}

/**
 * The grouped operator (exec/) against the TypedImperativeAggregate path it replaces: every function,
 * half of them under FILTER, grouped by keys that take each key table (one integer key with and without
 * NULLs, strings, two keys, an expression, 5000 unique keys, none), at 1, 3 and 17 partitions.
 */
class GroupedAggregateSuite extends AnyFunSuite with LocalSpark with AdaptiveSparkPlanHelper {
  import EveryFunction._

  override def beforeAll(): Unit = {
    super.beforeAll()
    createTable(spark)
  }

  private def groupedNodes(df: DataFrame): Seq[GroupedAggregateExec] =
    collect(df.queryExecution.executedPlan) { case g: GroupedAggregateExec => g }

  /** The query's rows on each path, and the grouped path's plan nodes. */
  private def bothPaths(sql: String): (Seq[Row], Seq[Row], Seq[GroupedAggregateExec]) = {
    val grouped = spark.sql(sql)
    val groupedRows = grouped.collect().toSeq
    (groupedRows, typedPath(sql), groupedNodes(grouped))
  }

  /** The rows of `sql` on the TypedImperativeAggregate path (the grouped operator switched off). */
  private def typedPath(sql: String): Seq[Row] = withConf(GroupedAggregateStrategy.EnabledConf -> "false") {
    val df = spark.sql(sql)
    val rows = df.collect().toSeq
    assert(groupedNodes(df).isEmpty, "switched off, the grouped operator is not planned")
    rows
  }

  /** Row by row, column by column; t-digest estimates by their rank among the group's values, which
   *  `valuesOf(column)` gives per row (the same grouping, filter and order as the query). */
  private def assertSame(a: Seq[Row], b: Seq[Row], columns: Seq[String],
      valuesOf: String => Seq[Array[Double]] = _ => Nil): Unit = {
    assert(a.size == b.size && a.nonEmpty)
    val approximateValues = columns.filter(approximate.contains).map(c => c -> valuesOf(c)).toMap
    a.zip(b).zipWithIndex.foreach { case ((x, y), r) =>
      columns.indices.foreach { i =>
        val same = approximateValues.get(columns(i)) match {
          case Some(values) => closeInRank(values(r), x.get(i), y.get(i))
          case None => Gen.same(comparable(x.get(i)), comparable(y.get(i)))
        }
        assert(same, s"${columns(i)}: ${x.get(i)} vs ${y.get(i)} in $x")
      }
    }
  }

  /** Per group of `query` (its FROM ... ORDER BY part, after the keys), the sorted values of the column
   *  an approximate call estimates, under `filter`. */
  private def groupValues(keys: Seq[String], from: String, filter: String)(call: String): Seq[Array[Double]] = {
    val values = s"sort_array(collect_list(CAST(${approximate(call)} AS DOUBLE)) $filter)"
    spark.sql(s"SELECT ${(keys :+ values).mkString(", ")} $from").collect().toSeq
      .map(r => r.getSeq[Double](keys.size).toArray)
  }

  private val keySets = Seq("k", "i", "s", "k, b", "k % 5", "u", "")
  // On the other minors an integer key, a string key and none: the other shapes exercise sparkagg's own key
  // table, which the minor does not change.
  private val keySetsOnEveryLine = Set("k", "s", "")

  // One integer key and none at every partition count, the other shapes at one count each (Sweep.partitionsOf).
  for ((keys, i) <- keySets.zipWithIndex; parts <- Sweep.partitionsOf(i, everyCount = Set("k", "")(keys))) {
    val label = if (keys.isEmpty) "global" else s"GROUP BY $keys"
    test(
      s"both paths agree on every function, FILTER on half of them, $label, $parts partitions",
      Sweep.onEveryLineIf(keySetsOnEveryLine(keys)) ++ Sweep.slowIf(!Set("k", "")(keys)): _*
    ) {
      spark.table("t").repartition(parts).createOrReplaceTempView("tp")
      val aggregates = calls.zipWithIndex.map { case (c, j) =>
        EveryFunction.sql(c) + (if (j % 2 == 0) " FILTER (WHERE u % 3 <> 0)" else "")
      }
      val keyList = if (keys.isEmpty) Nil else keys.split(", ").toSeq
      val select = (keyList ++ aggregates).mkString(", ")
      val sql = if (keys.isEmpty) s"SELECT $select FROM tp"
      else s"SELECT $select FROM tp GROUP BY $keys ORDER BY $keys"
      val (grouped, typed, nodes) = bothPaths(sql)
      assert(nodes.map(_.mode) == Seq(GroupedMode.Final, GroupedMode.Partial))
      val from = sql.substring(sql.indexOf(" FROM "))
      val filtered = calls.zipWithIndex.collect { case (c, j) if j % 2 == 0 => c }.toSet
      assertSame(grouped, typed, keyList ++ calls,
        c =>
          groupValues(keyList, from, if (filtered(c)) "FILTER (WHERE u % 3 <> 0)" else "")(c))
    }
  }

  test("planned only when every function is sparkagg's, called plainly", Slow) {
    def planned(sql: String) = { val df = spark.sql(sql); df.collect(); groupedNodes(df).size }
    SparkAgg.registerFunction(spark, "my_avg", MyAvg)
    assert(planned("SELECT k, df_avg(d), df_count(*) FROM t GROUP BY k") == 2)
    assert(planned("SELECT k, df_avg(d), avg(d) FROM t GROUP BY k") == 2, "Spark's avg runs as sparkagg's")
    assert(planned("SELECT k, df_avg(d), avg(m) FROM t GROUP BY k") == 0, "a decimal avg stays Spark's")
    assert(planned("SELECT k, df_count(DISTINCT s) FROM t GROUP BY k") == 4, "DISTINCT in four stages")
    assert(
      planned("SELECT k, df_count(DISTINCT s), df_sum(DISTINCT l) FROM t GROUP BY k") == 2,
      "two sets of distinct columns: Spark's expand and its group-by, then the operator on their rows"
    )
    assert(
      planned("SELECT k, df_count(DISTINCT s), df_sum(DISTINCT l), df_avg(d) FROM t GROUP BY k") == 2,
      "with a plain call beside them too: its states on the operator; Spark's first() of them keeps the last"
    )
    assert(planned("SELECT k, df_avg_state(d) FROM t GROUP BY k") == 2, "state forms run there too")
    assert(planned("SELECT k, count(*) FROM t GROUP BY k") == 0)
    assert(planned("SELECT k, df_sum(l), df_var_samp(d), df_bit_or(i) FROM t GROUP BY k") == 2)
    assert(planned("SELECT k, df_sum(l), df_median(d) FROM t GROUP BY k") == 2, "median's accumulator is native")
    assert(planned("SELECT k, df_sum(l), df_mode(d) FROM t GROUP BY k") == 2, "mode's accumulator is native")
    assert(planned("SELECT k, df_sum(l), my_avg(d) FROM t GROUP BY k") == 2, "a user's GroupsAccumulator runs there")
    SparkAgg.registerFunction(spark, "my_avg_alone", MyAvgWithoutGroups)
    assert(
      planned("SELECT k, df_sum(l), my_avg_alone(d) FROM t GROUP BY k") == 0,
      "a user's function written as an Accumulator alone has no native accumulator: Spark's path"
    )
    assert(
      planned("SELECT k, df_sum(CAST(m AS DECIMAL(12,2))), df_avg(CAST(m AS DECIMAL(18,3))) FROM t GROUP BY k") == 2,
      "decimals up to 18 digits are native")
    assert(
      planned("SELECT k, df_avg(CAST(m AS DECIMAL(30,5))), sum(CAST(m AS DECIMAL(30,5))) FROM t GROUP BY k") == 2,
      "wider decimals too, and Spark's sum of them"
    )
  }

  for (keys <- Seq("k", "")) {
    val label = if (keys.isEmpty) "global" else s"GROUP BY $keys"
    val keyList = keys.split(", ").filter(_.nonEmpty).toSeq
    val order = if (keys.isEmpty) "" else s" GROUP BY $keys ORDER BY $keys"

    // Every function's DISTINCT runs the same four nodes: on the default minor alone; the test below
    // checks the plan and its results on every minor.
    test(s"DISTINCT on the operator in four stages: every function, beside plain calls, $label, 3 partitions",
      DefaultLineOnly, Slow) {
      spark.table("t").repartition(3).createOrReplaceTempView("tp")
      // One query per set of distinct columns (calls spelled with the same arguments share it); t-digest
      // estimates depend on the order states merge in and WITHIN GROUP orders by another column.
      val sets = calls.filter(c => within(c).isEmpty && !approximate.contains(c)).groupBy(args)
      for ((_, distinct) <- sets.toSeq.sortBy(_._1)) {
        val plain = Seq("df_avg(d) FILTER (WHERE u % 3 <> 0)", "count(*)", "df_string_agg(s, '|')")
        val select = keyList ++ distinct.map(c => s"df_${name(c)}(DISTINCT ${args(c).drop(1)}") ++ plain
        val (grouped, typed, nodes) = bothPaths(s"SELECT ${select.mkString(", ")} FROM tp$order")
        assert(nodes.map(_.mode) ==
            Seq(GroupedMode.Final, GroupedMode.Partial, GroupedMode.PartialMerge, GroupedMode.Partial), distinct)
        assertSame(grouped, typed, keyList ++ distinct ++ plain)
      }
    }

    test(s"Spark's count and sum DISTINCT beside sparkagg's DISTINCT and plain calls, $label, 3 partitions") {
      spark.table("t").repartition(3).createOrReplaceTempView("tp")
      val calls = Seq("count(DISTINCT i)", "sum(DISTINCT i)", "df_avg(DISTINCT i)", "df_var_samp(d)", "count(*)")
      val (grouped, own, nodes) = bothPaths(s"SELECT ${(keyList ++ calls).mkString(", ")} FROM tp$order")
      assert(nodes.map(_.mode) ==
        Seq(GroupedMode.Final, GroupedMode.Partial, GroupedMode.PartialMerge, GroupedMode.Partial))
      assertSame(grouped, own, keyList ++ calls)
    }
  }

  for (parts <- Sweep.scaled(Seq(1, 3), Seq(3))) {
    test(s"state forms: every function's _state, _merge_state and _merge agree with Spark's path, $parts partitions",
      Slow) {
      import EveryFunction.{args, name, within, stateParams => params}
      // The states of (k, u % 4), under a FILTER.
      val states = calls.zipWithIndex.map { case (c, i) =>
        s"df_${name(c)}_state${args(c)}${within(c)} FILTER (WHERE u % 9 <> 0) AS s$i"
      }
      spark.table("t").repartition(parts).createOrReplaceTempView("tp")
      val statesSql = s"SELECT k, u % 4 AS q, ${states.mkString(", ")} FROM tp GROUP BY k, u % 4"
      val (grouped, typed, nodes) = bothPaths(statesSql + " ORDER BY k, q")
      assert(nodes.nonEmpty, "the _state forms ran on the grouped operator")
      val exact = calls.indices.filterNot(i => approximate.contains(calls(i)))
      // Field by field; lists as multisets (unordered array_agg). States merged in another order differ in
      // their doubles' last bits, measured against the state's largest field: a central moment near zero
      // (a symmetric group's third) is all rounding.
      def sameState(a: Any, b: Any, scale: Double = 0): Boolean = (a, b) match {
        case (x: Row, y: Row) =>
          val magnitudes = (x.toSeq ++ y.toSeq).collect { case d: Double if !d.isNaN && !d.isInfinite => math.abs(d) }
          val largest = (0.0 +: magnitudes).max
          x.length == y.length && (0 until x.length).forall(i => sameState(x.get(i), y.get(i), largest))
        case (x: Double, y: Double) =>
          (x.isNaN && y.isNaN) || x == y || math.abs(x - y) <= 1e-9 * math.max(
            scale, math.max(math.abs(x), math.abs(y)))
        case (x: scala.collection.Seq[_], y: scala.collection.Seq[_]) =>
          x.map(String.valueOf).sorted == y.map(String.valueOf).sorted
        case _ => Gen.same(comparable(a), comparable(b))
      }
      grouped.zip(typed).foreach { case (x, y) =>
        exact.foreach(i => assert(sameState(x.get(2 + i), y.get(2 + i)), s"${calls(i)}: $x vs $y"))
      }
      // Both paths merge the same states, a few of them NULL (passed over).
      spark.createDataFrame(spark.sparkContext.parallelize(typed, parts), spark.sql(statesSql).schema)
        .createOrReplaceTempView("states")
      for (form <- Seq("_merge", "_merge_state")) {
        val merged = calls.zipWithIndex.map { case (c, i) =>
          s"df_${name(c)}$form(IF(q = 3 AND k % 5 = 0, NULL, s$i)${params(c)})"
        }
        val (g, t, mergeNodes) = bothPaths(s"SELECT k, ${merged.mkString(", ")} FROM states GROUP BY k ORDER BY k")
        assert(mergeNodes.nonEmpty, s"the $form forms ran on the grouped operator")
        g.zip(t).foreach { case (x, y) =>
          exact.foreach(i =>
            assert(Gen.same(comparable(x.get(1 + i)), comparable(y.get(1 + i))), s"${calls(i)}$form: $x"))
        }
      }
    }
  }

  test("state forms on the grouped operator refuse a state no accumulator makes, naming the function") {
    val good = spark.sql("SELECT k, df_count_merge(named_struct('count', 1L)) FROM t GROUP BY k")
    good.collect()
    assert(groupedNodes(good).size == 2)
    val error = intercept[Exception](
      spark.sql("SELECT k, df_count_merge(named_struct('count', IF(k = 3, NULL, 1L))) FROM t GROUP BY k").collect())
    assert(
      Iterator.iterate[Throwable](error)(_.getCause).takeWhile(_ != null).exists(e =>
        e.getMessage != null && e.getMessage.contains("df_count_merge") && e.getMessage.contains("count")),
      error
    )
  }

  test("empty input: a global aggregate gives its one row of empty values, a grouped one no rows") {
    val (global, typedGlobal, _) =
      bothPaths("SELECT df_count(i), df_sum(l), df_avg(d), df_array_agg(s) FROM t WHERE k < 0")
    assert(global == Seq(Row(0L, null, null, null)) && global == typedGlobal)
    val (grouped, _, _) = bothPaths("SELECT k, df_count(i) FROM t WHERE k < 0 GROUP BY k")
    assert(grouped.isEmpty)
  }

  test("convert_to_state: every key unique, partial aggregation stops and passes rows on as states", Slow) {
    withConf(GroupedAggregateStrategy.SkipPartialRowsConf -> "1000", GroupedAggregateStrategy.BatchSizeConf -> "256") {
      // Shuffled, so that the keys do not arrive sorted (sorted keys are emitted as they pass instead).
      spark.table("t").repartition(2).createOrReplaceTempView("shuffled")
      val from = " FROM shuffled GROUP BY u ORDER BY u"
      val (grouped, typed, nodes) = bothPaths(s"SELECT u, ${calls.map(EveryFunction.sql(_)).mkString(", ")}$from")
      assertSame(grouped, typed, "u" +: calls, groupValues(Seq("u"), from, ""))
      val partial = nodes.find(_.mode == GroupedMode.Partial).get
      // t has two partitions of 2500 rows; each stops after its first 1024 (four batches of 256).
      assert(partial.metrics("skippedRows").value == 5000 - 2 * 1024)
      val (_, _, few) = bothPaths("SELECT k, df_sum(l) FROM t GROUP BY k ORDER BY k")
      assert(few.find(_.mode == GroupedMode.Partial).get.metrics("skippedRows").value == 0)
    }
  }

  test("input sorted by the keys: groups are emitted as the keys change, across batches", Slow) {
    withConf(GroupedAggregateStrategy.BatchSizeConf -> "100") {
      val from = " FROM (SELECT * FROM t ORDER BY k) GROUP BY k ORDER BY k"
      val (grouped, typed, nodes) = bothPaths(s"SELECT k, ${calls.map(EveryFunction.sql(_)).mkString(", ")}$from")
      assertSame(grouped, typed, "k" +: calls, groupValues(Seq("k"), from, ""))
      assert(nodes.find(_.mode == GroupedMode.Partial).get.child.outputOrdering.nonEmpty)
    }
  }

  test("a Partial node over rows runs in its child's generated stage, and hands rows on mid-input alike", Slow) {
    def staged(df: DataFrame): Seq[GroupedAggregateExec] = collect(df.queryExecution.executedPlan) {
      case w: WholeStageCodegenExec if w.child.isInstanceOf[GroupedAggregateExec] =>
        w.child.asInstanceOf[GroupedAggregateExec]
    }
    val queries = Seq(
      // Keys and fields given as values: one long, one string or no key; each setter, a cast, FILTER.
      "SELECT k, df_sum(l), df_avg(d), df_count(s), df_bool_and(b), df_min(s) FILTER (WHERE i > 3), " +
        "df_max(dt), df_sum(CAST(i AS DOUBLE)) FROM t GROUP BY k ORDER BY k",
      "SELECT s, df_sum(l), df_max(d) FROM t GROUP BY s ORDER BY s",
      "SELECT df_sum(l), df_avg(i), df_count(*) FROM t",
      // Fields never NULL (their validity set once per batch) beside nullable ones.
      "SELECT k, df_sum(u), df_avg(u * 0.25D), df_max(CAST(u AS INT)), df_sum(l) FROM t GROUP BY k ORDER BY k",
      // Rows pushed: two keys, list and decimal fields.
      "SELECT k, b, df_array_agg(d), df_median(d), df_sum(m) FROM t GROUP BY k, b ORDER BY k, b",
      // Spark's rewrite of two DISTINCTs: an Expand hands on several rows per input row, without a stop between.
      "SELECT k, df_count(DISTINCT i), df_count(DISTINCT s), df_sum(l) FROM t GROUP BY k ORDER BY k",
      // A join whose every row matches many.
      "SELECT t.k, df_sum(t.l), df_count(*) FROM t JOIN (SELECT k FROM t WHERE u < 300) v ON t.k = v.k " +
        "GROUP BY t.k ORDER BY t.k"
    )
    // Small batches, and (ratio 0) partial aggregation skipped from the first: output pending all along. The
    // TypedImperativeAggregate path, which these settings do not reach, runs once per query.
    for (q <- queries; typed = typedPath(q); skip <- Seq(false, true)) {
      val skipping = Seq(
        GroupedAggregateStrategy.SkipPartialRowsConf -> (if (skip) "0" else "-1"),
        GroupedAggregateStrategy.SkipPartialRatioConf -> "0",
        GroupedAggregateStrategy.BatchSizeConf -> "64"
      )
      withConf(skipping: _*) {
        val df = spark.sql(q)
        val rows = df.collect().toSeq
        val partials = staged(df)
        assert(partials.nonEmpty, s"a Partial node in a generated stage: $q")
        // A global aggregate never skips: its one group reduces every row.
        if (skip && q.contains("GROUP BY")) assert(partials.map(_.metrics("skippedRows").value).sum > 0, q)
        val pulled = withConf("spark.sql.codegen.wholeStage" -> "false") {
          val off = spark.sql(q)
          val result = off.collect().toSeq
          assert(staged(off).isEmpty && groupedNodes(off).nonEmpty)
          result
        }
        assert(rows == pulled, q)
        assertSame(rows, typed, rows.head.schema.fieldNames.toSeq)
      }
    }
    // Every function in the stage, its fields given as values or its rows pushed, against the node pulling.
    val from = " FROM t GROUP BY k ORDER BY k"
    // (A dozen at a time: Spark leaves a node of more than 100 output fields out of generated code.)
    for (some <- calls.grouped(12)) {
      val every = s"SELECT k, ${some.map(EveryFunction.sql(_)).mkString(", ")}$from"
      val inStage = spark.sql(every)
      val inStageRows = inStage.collect().toSeq
      assert(staged(inStage).nonEmpty, every)
      val pulled = withConf("spark.sql.codegen.wholeStage" -> "false")(spark.sql(every).collect().toSeq)
      assertSame(inStageRows, pulled, "k" +: some, groupValues(Seq("k"), from, ""))
    }
  }

  test("a Partial node over rows from an iterator (a shuffle, a cached table's rows) pulls them") {
    val wide = spark.table("t").selectExpr("*", "CAST(m AS DECIMAL(30, 6)) AS w")
    wide.repartition(3).createOrReplaceTempView("shuffled")
    wide.where("u >= 0").cache().createOrReplaceTempView("cached")
    for (view <- Seq("shuffled", "cached")) {
      // (A decimal of 30 digits: the node reads no cached decimals wider than 18 digits as batches.)
      val df = spark.sql(s"SELECT k, df_sum(l), df_max(w) FROM $view GROUP BY k")
      df.collect()
      val partial = groupedNodes(df).find(_.mode == GroupedMode.Partial).get
      assert(!partial.supportCodegen && !partial.columnarInput, view)
    }
    spark.catalog.uncacheTable("cached")
  }

  test("a staged Partial node runs a subquery in its arguments, and an identical one is reused", Slow) {
    val withSubquery = "SELECT k, df_sum(l + (SELECT max(l) FROM t)) FROM t GROUP BY k ORDER BY k"
    val (grouped, typed, _) = bothPaths(withSubquery)
    assert(grouped == typed && grouped.nonEmpty)
    val twice = spark.sql("SELECT a.k, a.s, b.s FROM (SELECT k, df_sum(l) s FROM t GROUP BY k) a " +
      "JOIN (SELECT k, df_sum(l) s FROM t GROUP BY k) b ON a.k = b.k")
    assert(twice.collect().forall(r => r.get(1) == r.get(2)))
    assert(collect(twice.queryExecution.executedPlan) { case r: ReusedExchangeExec => r }.nonEmpty,
      "the second side reads the first one's shuffle")
  }

  test(
    "keys of integer-like and boolean fields, and one string key, written to the table from rows and vectors", Slow) {
    val keys = spark.table("t").selectExpr(
      "CAST(k % 5 - 2 AS TINYINT) AS kb",
      "CAST(IF(u % 29 = 0, NULL, k % 3 - 1) AS SMALLINT) AS ks",
      "i % 4 AS ki",
      "dt",
      "b",
      "IF(u % 31 = 0, NULL, TIMESTAMP_SECONDS(k * -86400)) AS kt",
      "IF(u % 2 = 0, NULL, k) AS kl",
      "s",
      "l",
      "d"
    )
    keys.createOrReplaceTempView("keys")
    withTempDir("sparkagg-keys") { dir =>
      keys.write.mode("overwrite").parquet(dir)
      spark.read.parquet(dir).createOrReplaceTempView("keys_pq")
      // "ki, kt", "ki, dt", "kl, ki" and "kb, ks, ki" are packed into two words (NULL in some fields, all, none).
      for (view <- Seq("keys", "keys_pq");
        key <- Seq("kb, ks, ki, dt, b, kt, kl", "ks, b", "ki, kt", "s", "ki, dt", "kl, ki", "kb, ks, ki")) {
        val sql = s"SELECT $key, df_sum(l), df_max(d), df_count(*) FROM $view GROUP BY $key ORDER BY $key"
        val (grouped, typed, nodes) = bothPaths(sql)
        assert(nodes.nonEmpty && grouped.size > 10, sql)
        assert(grouped == typed, sql)
      }
    }
  }

  test("a Final node's rows, written from its keys and columns when they are its output as they are, else projected",
    Slow) {
    for (sql <- Seq(
        "SELECT s, df_min(CAST(u AS STRING)), df_sum(l) FROM t GROUP BY s",
        "SELECT df_min(CAST(u AS STRING)) AS m, s FROM t GROUP BY s",
        "SELECT s, s AS again, df_max(s) AS a, df_max(s) AS b FROM t GROUP BY s",
        "SELECT upper(s), length(df_min(s)), df_count(*) + 1 FROM t GROUP BY s",
        "SELECT k, b, df_max(d), df_max(s), df_count(*) FROM t GROUP BY k, b",
        "SELECT df_max(s), k FROM t GROUP BY k",
        "SELECT k, df_bool_and(b), df_bool_or(b), df_first_value(s, true) FROM t GROUP BY k"
      )) {
      val (grouped, typed, nodes) = bothPaths(sql)
      assert(nodes.map(_.mode) == Seq(GroupedMode.Final, GroupedMode.Partial), sql)
      assert(grouped.size > 10 && grouped.map(_.toString).sorted == typed.map(_.toString).sorted, sql)
    }
  }

  test("floating keys: NaN is one group, 0.0 and -0.0 are one group, as Spark groups them") {
    val (grouped, typed, nodes) = bothPaths("SELECT d, df_count(*), df_sum(x) FROM VALUES (double('NaN'), 1), " +
      "(double('NaN'), 2), (0.0D, 3), (-0.0D, 4), (NULL, 5) AS v(d, x) GROUP BY d ORDER BY d")
    assert(nodes.nonEmpty && grouped == typed)
    assert(grouped.map(r => (r.getLong(1), r.getLong(2))) == Seq((1L, 5L), (2L, 7L), (2L, 3L)))
  }

  test("a columnar child (Parquet, a cached table) is read batch by batch, in place when columns are plain", Slow) {
    withTempDir("sparkagg-columnar") { dir =>
      spark.table("t").write.mode("overwrite").parquet(dir)
      spark.read.parquet(dir).createOrReplaceTempView("pq")
      // Strings without a dictionary (s has 101 values, which Parquet would otherwise encode by one): the
      // scan's vectors hold them end to end, read in place (VectorBytes).
      withTempDir("sparkagg-plain") { plainDir =>
        spark.table("t").write.mode("overwrite").option("parquet.enable.dictionary", "false").parquet(plainDir)
        spark.read.parquet(plainDir).createOrReplaceTempView("pq_plain")
        // Spark offers a cached table's batches only when every column of the table is primitive; the node
        // reads them from a table with other columns too (`wide`; strings and dates: CachedVectorsSuite).
        spark.table("t").select("k", "i", "l", "d", "b", "u").cache().createOrReplaceTempView("cached")
        spark.table("t").where("u >= 0").cache().createOrReplaceTempView("wide")
        val plain = Seq("df_sum(l)", "df_avg(d)", "df_min(l)", "df_count(i)", "df_array_agg(i)", "df_max(d)",
          "df_bool_and(b)", "df_var_samp(d) FILTER (WHERE b)")
        val queries =
          Seq(
            "pq" -> plain,
            "pq" -> calls.map(EveryFunction.sql(_)),
            "pq" -> plain.map(_.replace("(i)", "(s)")),
            "pq_plain" -> calls.map(EveryFunction.sql(_)),
            "pq_plain" -> plain.map(_.replace("(i)", "(s)")),
            "cached" -> plain,
            "wide" -> plain
          )
        for ((table, aggregates) <- queries) {
          val from = s" FROM $table GROUP BY k ORDER BY k"
          val (grouped, typed, nodes) = bothPaths(s"SELECT k, ${aggregates.mkString(", ")}$from")
          val partial = nodes.find(_.mode == GroupedMode.Partial).get
          assert(partial.columnarInput, s"$table: the Partial node reads the scan's batches")
          val names = if (aggregates.size == calls.size) calls else aggregates
          assertSame(grouped, typed, "k" +: names, groupValues(Seq("k"), from, ""))
        }
        // One string key, read from the scan's string vector without a projection per row.
        for (table <- Seq("pq", "pq_plain")) {
          val byString = s" FROM $table GROUP BY s ORDER BY s"
          val (grouped, typed, nodes) = bothPaths(s"SELECT s, ${plain.mkString(", ")}$byString")
          assert(nodes.find(_.mode == GroupedMode.Partial).get.columnarInput)
          assertSame(grouped, typed, "s" +: plain, groupValues(Seq("s"), byString, ""))
        }
        spark.catalog.uncacheTable("cached")
        spark.catalog.uncacheTable("wide")
      }
    }
  }

  // Streaming plans put Spark's stateful aggregation strategy before the session's, so it never reaches
  // the grouped operator; sparkagg's functions run there as TypedImperativeAggregates.
  test("a streaming aggregation of sparkagg functions runs under Spark's stateful planning", Slow) {
    import sparkagg.testing.Streams.MemoryStream
    implicit val sqlContext: org.apache.spark.sql.SQLContext = spark.sqlContext
    import spark.implicits._
    val input = MemoryStream[Long]
    val query = input.toDF().selectExpr("value % 3 AS k", "value AS v").groupBy("k").agg(
      org.apache.spark.sql.functions.expr("df_sum(v)").as("s"))
      .writeStream.format("memory").queryName("streamed").outputMode("complete").start()
    try {
      input.addData(1L to 10L)
      query.processAllAvailable()
      input.addData(11L to 12L)
      query.processAllAvailable()
      // 1..12 by value % 3: {3, 6, 9, 12}, {1, 4, 7, 10}, {2, 5, 8, 11}
      assert(spark.sql("SELECT k, s FROM streamed ORDER BY k").collect().toSeq == Seq(Row(0L, 30L), Row(1L, 22L),
        Row(2L, 26L)))
    } finally query.stop()
  }

  test("array<double> values (NULL lists, NULL elements) gathered end to end agree with the other path") {
    // The lists travel as arguments, then as array_agg's nested state lists, then as first_value's state.
    spark.sql("SELECT id % 3 AS k, IF(id % 4 = 0, NULL, array(id * 1.5D, IF(id % 2 = 0, NULL, -id * 1.0D))) AS arr " +
      "FROM range(40)").repartition(3).createOrReplaceTempView("lists")
    val sql = "SELECT k, sort_array(transform(df_array_agg(arr), x -> to_json(x))) AS a, df_count(arr) AS c" +
      (if (SparkFeatures.withinGroup) ", df_first_value(arr) WITHIN GROUP (ORDER BY arr[0]) AS f" else "") +
      " FROM lists GROUP BY k ORDER BY k"
    val (grouped, typed, nodes) = bothPaths(sql)
    assert(nodes.nonEmpty)
    assert(grouped == typed)
    assert(
      grouped.head.getSeq[String](1).count(_ == null) == 4 && grouped.head.getSeq[String](1).contains("[27.0,null]"))
  }

  test("interpreted projections (codegen off): two list states and two packed states in one row stay apart") {
    // An interpreted projection reads every field of a group's row before writing any; the row's reused
    // buffers are its columns' own. Found by the fuzzer: df_median(DISTINCT l), df_median(DISTINCT i) over
    // one row with i NULL gave NULL for both (sql/fuzz/seed-1006737.json). Two packed t-digest states of
    // one length shared a buffer the same way.
    val sql = "SELECT id % 2 AS k, df_median(id * 3 + 1) AS m1, df_median(IF(id < 2, NULL, id)) AS m2, " +
      "df_approx_percentile_cont(id, 0.5) AS p1, df_approx_percentile_cont(-id, 0.5) AS p2 " +
      "FROM range(5) GROUP BY id % 2 ORDER BY k"
    withConf("spark.sql.codegen.factoryMode" -> "NO_CODEGEN", "spark.sql.codegen.wholeStage" -> "false") {
      val (grouped, typed, nodes) = bothPaths(sql)
      assert(nodes.nonEmpty)
      assert(grouped == typed)
      // k = 0: ids 0, 2, 4: m1 of {1, 7, 13} = 7, m2 of {2, 4} = 3; k = 1: ids 1, 3: m1 of {4, 10} = 7,
      // m2 of {3} = 3
      assert(grouped.map(r => (r.getLong(0), r.getDouble(1), r.getDouble(2))) == Seq((0L, 7.0, 3.0), (1L, 7.0, 3.0)))
      assert(grouped.forall(r => r.getDouble(3) == -r.getDouble(4)), grouped)
    }
  }

  // Spark's own count, sum, avg, min and max beside a sparkagg function, over doubles with NaN and
  // infinities, floats, timestamps and booleans; Spark's own path (the operator off) is the oracle.
  private val sparkOwnCalls = Seq(
    "count(*)",
    "count(i)",
    "count(i, s)",
    "sum(l)",
    "sum(i)",
    "sum(x)",
    "sum(f)",
    "avg(i)",
    "avg(x)",
    "avg(f)",
    "min(i)",
    "max(l)",
    "min(x)",
    "max(x)",
    "min(f)",
    "max(dt)",
    "min(ts)",
    "max(ts)",
    "min(b)",
    "max(b)",
    "min(w)",
    "max(w)",
    "min(m)",
    "max(m)",
    "max(CAST(w AS BINARY))",
    "sum(md)"
  )

  for (parts <- Sweep.partitions; keys <- Seq("k", "")) {
    test(
      s"Spark's count, sum, avg, min, max mixed with sparkagg's stay on the operator, GROUP BY '$keys', $parts partitions") {
      spark.sql("SELECT *, CASE u % 41 WHEN 0 THEN double('NaN') WHEN 1 THEN double('inf') WHEN 2 THEN " +
        "double('-inf') ELSE d - 300 END AS x, CAST(d AS FLOAT) AS f, CAST(dt AS TIMESTAMP) AS ts, " +
        "CASE u % 7 WHEN 0 THEN 'é' WHEN 1 THEN '' WHEN 2 THEN 'Zz' ELSE s END AS w, " +
        "CAST(m AS DECIMAL(12, 2)) AS md FROM t")
        .repartition(parts).createOrReplaceTempView("tp")
      val calls = Seq("df_avg(d)", "df_sum(md)", "df_avg(md)") ++ sparkOwnCalls.zipWithIndex.map { case (c, j) =>
        if (j % 3 == 0) s"$c FILTER (WHERE u % 4 <> 0)" else c
      }
      val select = (keys.split(", ").filter(_.nonEmpty).toSeq ++ calls).mkString(", ")
      val sql = if (keys.isEmpty) s"SELECT $select FROM tp" else s"SELECT $select FROM tp GROUP BY $keys ORDER BY $keys"
      withConf("spark.sql.ansi.enabled" -> "true") {
        val (grouped, own, nodes) = bothPaths(sql)
        assert(nodes.map(_.mode) == Seq(GroupedMode.Final, GroupedMode.Partial))
        assert(nodes.head.simpleString(100).contains("count(1) (Spark's)"), nodes.head.simpleString(100))
        assertSame(grouped, own, (if (keys.isEmpty) Nil else Seq(keys)) ++ calls)
      }
    }
  }

  test("Spark's aggregates whose results sparkagg does not give exactly keep the aggregation Spark's", Slow) {
    def planned(sql: String) = { val df = spark.sql(sql); df.collect(); groupedNodes(df).size }
    withConf("spark.sql.ansi.enabled" -> "false") {
      assert(planned("SELECT k, df_avg(d), sum(l) FROM t GROUP BY k") == 2, "with ANSI off sum wraps around")
    }
    assert(planned("SELECT k, df_avg(d), try_sum(l) FROM t GROUP BY k") == 0, "try_sum: NULL from the first overflow")
    assert(planned("SELECT k, df_avg(d), first(d) FROM t GROUP BY k") == 0)
    if (SparkFeatures.collations)
      assert(planned("SELECT k, df_avg(d), min(s COLLATE UTF8_LCASE) FROM t GROUP BY k") == 0,
        "a collated string's min stays Spark's")
    assert(planned("SELECT k, count(*), sum(d) FROM t GROUP BY k") == 0, "no sparkagg function: Spark's")
  }

  test("Spark's min and max of -0.0 and 0.0 on the operator: -0.0 orders first") {
    val sql = "SELECT df_count(*), min(x), max(x) FROM VALUES (0.0D), (-0.0D), (0.0D) AS v(x)"
    val Seq(row) = spark.sql(sql).collect().toSeq
    assert(groupedNodes(spark.sql(sql)).nonEmpty)
    assert(row.getLong(0) == 3L)
    assert(java.lang.Double.doubleToRawLongBits(row.getDouble(1)) == java.lang.Double.doubleToRawLongBits(-0.0))
    assert(java.lang.Double.doubleToRawLongBits(row.getDouble(2)) == 0L)
  }

  test("Spark's sum of integers on the operator wraps around with ANSI off, as Spark's") {
    // 2^63 - 1 ten times over two groups and 3 partitions: states that wrapped, merged.
    val sql = "SELECT k, df_count(*), sum(x), sum(y) FROM (SELECT id % 2 AS k, 9223372036854775807 AS x, " +
      "IF(id < 3, -9223372036854775807, id) AS y FROM range(0, 10, 1, 3)) GROUP BY k ORDER BY k"
    withConf("spark.sql.ansi.enabled" -> "false") {
      val (grouped, own, nodes) = bothPaths(sql)
      assert(nodes.nonEmpty)
      // Each group: 5 (2^63 - 1) = 2 * 2^64 + 2^63 - 5, which is 2^63 - 5 modulo 2^64. y of group 0:
      // -2 (2^63 - 1) + 4 + 6 + 8 = -2^64 + 20, so 20; of group 1: -(2^63 - 1) + 24, which fits.
      assert(grouped.map(_.getLong(2)) == Seq(Long.MaxValue - 4, Long.MaxValue - 4))
      assert(grouped.map(_.getLong(3)) == Seq(20L, Long.MinValue + 25))
      assert(grouped == own)
    }
  }

  test("Spark's sum of integers on the operator fails as Spark's does, with ANSI on, when the total overflows") {
    withConf("spark.sql.ansi.enabled" -> "true") {
      val e = intercept[Exception](
        spark.sql("SELECT k, df_count(*), sum(x) FROM (SELECT id % 2 AS k, 9223372036854775807 AS x " +
          "FROM range(10)) GROUP BY k").collect())
      assert(e.getMessage.contains("ARITHMETIC_OVERFLOW") && e.getMessage.contains("sum"))
    }
  }

  test("ANSI overflow on the grouped path names the function") {
    withConf("spark.sql.ansi.enabled" -> "true") {
      val e = intercept[Exception](
        spark.sql(
          "SELECT k, df_sum(x) FROM (SELECT id % 2 AS k, 9223372036854775807 AS x FROM range(10)) GROUP BY k").collect())
      assert(e.getMessage.contains("ARITHMETIC_OVERFLOW") && e.getMessage.contains("df_sum"))
    }
  }
}

/** my_avg as a user's first version of it: the Accumulator, no GroupsAccumulator. */
private object MyAvgWithoutGroups extends FunctionDef {
  val name = "my_avg_alone"
  val signature: String = MyAvg.signature
  val doc = MyAvg.doc
  def bind(args: Seq[Arg], ctx: BindContext) = MyAvg.bind(args, ctx).map(_.copy(newGroupsAccumulator = None))
}
