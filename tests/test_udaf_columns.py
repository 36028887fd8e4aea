"""Python udafs as Spark Columns and SQL functions (sparkagg.udaf.register), planned by the JVM's
PythonAggregates rule in two phases. Oracles: datafusion-python running the same classes (the same SQL,
FILTER included), aggregate() on the same data, and Spark's own aggregates for the JVM columns beside them."""
from __future__ import annotations

import math

import datafusion
import pyarrow as pa
import pytest
from pyspark.sql import Window
from pyspark.sql import functions as F
from pyspark.sql.utils import AnalysisException

from data import PARTITIONS, frame
from oracle import same
from sparkagg.udaf import aggregate, register, udaf
from test_python_udaf import DECLARED, SQL_CALLS, RetractingSum, _agree, _datafusion, _table

ARGS = {"wmean": ("x", "w"), "spread": ("n",)}


def _udaf(name: str):
    cls, inputs, ret, states = DECLARED[name]
    return udaf(cls, inputs, ret, states, name=name)


def _datafusion_sql(table: pa.Table, name: str, sql: str) -> list[dict]:
    cls, inputs, ret, states = DECLARED[name]
    ctx = datafusion.SessionContext()
    ctx.register_udaf(datafusion.udaf(cls, inputs, ret, states, "immutable", name=name))
    ctx.register_record_batches("t", [table.to_batches() or [pa.RecordBatch.from_pylist([], schema=table.schema)]])
    return ctx.sql(sql).to_arrow_table().to_pylist()


# wmean over every partition count; spread (an Accumulator per group, slower) over 3
@pytest.mark.parametrize("name,partitions", [("wmean", p) for p in PARTITIONS] + [("spread", 3)])
@pytest.mark.parametrize("grouped", [True, False], ids=["grouped", "global"])
def test_the_column_and_sql_forms_give_datafusions_results(spark, name, grouped, partitions):
    table = _table(2000)
    f = _udaf(name)
    df = frame(spark, table).repartition(partitions)
    column = (df.groupBy("k") if grouped else df).agg(f(*ARGS[name]).alias("v"))
    as_column = {(r["k"] if grouped else None): r["v"] for r in column.collect()}
    register(spark, name, f)
    df.createOrReplaceTempView("t")
    sql = f"SELECT k, {SQL_CALLS[name]} AS v FROM t GROUP BY k" if grouped else f"SELECT {SQL_CALLS[name]} AS v FROM t"
    as_sql = {(r["k"] if grouped else None): r["v"] for r in spark.sql(sql).collect()}
    oracle = _datafusion(table, name, grouped, partitions)
    assert _agree(as_column, oracle) and _agree(as_sql, oracle)


def test_empty_input_one_null_row_global_and_none_grouped(spark):
    df = frame(spark, _table(0))
    f = _udaf("wmean")
    assert [tuple(r) for r in df.agg(f("x", "w")).collect()] == [(None,)]
    assert df.groupBy("k").agg(f("x", "w")).collect() == []


def test_beside_jvm_aggregates_in_expressions_and_under_having(spark):
    table = _table(3000)
    df = frame(spark, table).repartition(3)
    f = _udaf("wmean")
    out = (df.groupBy("k")
           .agg((f("x", "w") * 2).alias("twice"), F.expr("df_avg(x)").alias("avg"), F.count("*").alias("rows"))
           .filter(F.col("rows") > 60))
    got = {r["k"]: r for r in out.collect()}
    spark_own = {r["k"]: r for r in df.groupBy("k").agg(F.avg("x").alias("avg"), F.count("*").alias("rows"))
                 .filter(F.col("rows") > 60).collect()}
    oracle = _datafusion(table, "wmean", True, 1)
    assert got.keys() == spark_own.keys() and got  # NULL key included when it has the rows
    for k, row in got.items():
        assert same(row["twice"], None if oracle[k] is None else 2 * oracle[k], rel=1e-9)
        assert same(row["avg"], spark_own[k]["avg"], rel=1e-9) and row["rows"] == spark_own[k]["rows"]


def test_two_udafs_and_a_computed_key_equal_aggregate(spark):
    table = _table(2000)
    df = frame(spark, table).repartition(3)
    mean, spread = _udaf("wmean"), _udaf("spread")
    out = df.groupBy((F.col("k") % 7).alias("g")).agg(mean("x", "w").alias("m"), spread("n").alias("s"))
    by_aggregate = aggregate(df, (F.col("k") % 7).alias("g"), m=mean("x", "w"), s=spread("n"))
    assert sorted(map(tuple, out.collect()), key=repr) == sorted(map(tuple, by_aggregate.collect()), key=repr)


def test_sql_filter_having_and_a_global_total_equal_datafusion(spark):
    table = _table(2000)
    register(spark, "wmean", _udaf("wmean"))
    frame(spark, table).repartition(3).createOrReplaceTempView("t")
    sql = ("SELECT k, wmean(x, w) FILTER (WHERE n > 0) AS m, count(*) AS c FROM t GROUP BY k "
           "HAVING count(*) > 60 ORDER BY k NULLS FIRST")
    got = [r.asDict() for r in spark.sql(sql).collect()]
    oracle = _datafusion_sql(table, "wmean", sql)
    assert [r["k"] for r in got] == [r["k"] for r in oracle] and got
    assert all(same(g["m"], o["m"], rel=1e-9) and g["c"] == o["c"] for g, o in zip(got, oracle))


def test_distinct_runs_over_the_distinct_rows_beside_the_plain_call(spark):
    table = _table(1500)
    doubled = pa.concat_tables([table, table.slice(0, 700)])  # every row of the first 700 twice
    df = frame(spark, doubled).repartition(3)
    mean = _udaf("wmean")
    register(spark, "wmean", mean)
    df.createOrReplaceTempView("twice")
    got = {r["k"]: r for r in spark.sql(
        "SELECT k, wmean(DISTINCT x, w) AS d, wmean(x, w) AS m, wmean(DISTINCT x, w) FILTER (WHERE n > 0) AS f, "
        "count(*) AS c FROM twice GROUP BY k").collect()}
    rows = df.select("k", "x", "w", "n")
    once = {r["k"]: r["d"] for r in aggregate(rows.select("k", "x", "w").distinct(), "k", d=mean("x", "w")).collect()}
    kept = {r["k"]: r["f"] for r in aggregate(rows.filter("n > 0").select("k", "x", "w").distinct(), "k",
                                               f=mean("x", "w")).collect()}
    plain = _datafusion(doubled, "wmean", True, 1)
    counts = {r["k"]: r["count"] for r in df.groupBy("k").count().collect()}
    assert got.keys() == once.keys() == plain.keys()
    for k, row in got.items():
        assert same(row["d"], once[k], rel=1e-9) and same(row["m"], plain[k], rel=1e-9)
        assert same(row["f"], kept.get(k), rel=1e-9) and row["c"] == counts[k]


def test_the_plan_shows_the_two_python_phases_around_one_shuffle(spark):
    df = frame(spark, _table(100))
    plan = df.groupBy("k").agg(_udaf("wmean")("x", "w"))._jdf.queryExecution().executedPlan().toString()
    assert plan.count("MapInArrow") == 2 and "Exchange hashpartitioning(__sparkagg_target" in plan, plan


def test_wrong_argument_type_fails_at_analysis_naming_the_udaf(spark):
    df = spark.createDataFrame([(1, "a")], "k long, s string")
    with pytest.raises(AnalysisException, match=r"udaf wmean: argument 2 \(s\) is string; it takes double"):
        df.groupBy("k").agg(_udaf("wmean")("k", "s"))


@pytest.mark.parametrize("bounds,frame_sql", [
    ((-2, 0), "ROWS BETWEEN 2 PRECEDING AND CURRENT ROW"),
    ((None, 1), "ROWS BETWEEN UNBOUNDED PRECEDING AND 1 FOLLOWING"),
])
def test_over_a_rows_window_equal_the_jvm_window_operator(spark, bounds, frame_sql):
    table = _table(400, seed=5).append_column("t", pa.array(range(405), pa.int64()))
    df = frame(spark, table).repartition(3)
    rsum, mean = udaf(RetractingSum, pa.int64(), pa.int64(), [pa.int64(), pa.int64()], name="rsum"), _udaf("wmean")
    w = Window.partitionBy("k").orderBy("t").rowsBetween(*[Window.unboundedPreceding if b is None else b
                                                          for b in bounds])
    as_column = df.select("t", rsum("n").over(w).alias("s"), (mean("x", "x").over(w) + 1).alias("m"),
                          F.expr("df_count(x)").over(w).alias("c"))
    register(spark, "rsum", rsum)
    register(spark, "wmean", mean)
    df.createOrReplaceTempView("slid")
    spec = f"PARTITION BY k ORDER BY t {frame_sql}"
    as_sql = spark.sql(f"SELECT t, rsum(n) OVER ({spec}) AS s, wmean(x, x) OVER ({spec}) + 1 AS m, "
                       f"df_count(x) OVER ({spec}) AS c FROM slid")
    # The JVM window operator over the same frame: wmean(x, x) is sum(x * x) / sum(x) over rows with x.
    want = spark.sql(f"SELECT t, df_sum(n) OVER ({spec}) AS s, df_sum(x * x) OVER ({spec}) / "
                     f"df_sum(x) OVER ({spec}) + 1 AS m, df_count(x) OVER ({spec}) AS c FROM slid ORDER BY t").collect()
    for got in (as_column, as_sql):
        rows = got.orderBy("t").collect()
        assert len(rows) == len(want) == 405
        for g, o in zip(rows, want):
            assert g["t"] == o["t"] and g["s"] == o["s"] and g["c"] == o["c"], (g, o)
            assert same(g["m"], None if o["m"] is None or math.isinf(o["m"]) else o["m"], rel=1e-9), (g, o)


def test_registration_refused_where_it_would_be_wrong_and_ranges_named(spark):
    f = _udaf("wmean")
    with pytest.raises(TypeError, match=r"udaf wmean is an aggregate: register it with sparkagg\.udaf\.register"):
        spark.udf.register("wmean", f)
    register(spark, "wmean", f)
    spark.createDataFrame([(1, 1.0, 1.0)], "k long, x double, w double").createOrReplaceTempView("one")
    with pytest.raises(Exception, match=r"SPARKAGG_UNSUPPORTED.*wmean: over a window a Python aggregate takes a "
                                        r"ROWS frame .*not RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW"):
        spark.createDataFrame([(1, 1.0, 1.0)], "k long, x double, w double") \
            .select(f("x", "w").over(Window.partitionBy("k").orderBy("x"))).collect()
