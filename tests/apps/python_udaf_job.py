"""A user's script: a Python Accumulator defined here (so it travels by value) run by sparkagg.udaf on the
session named by argv ("--remote sc://..." or "--master local-cluster[...]"), grouped and over a sliding
window: by aggregate() and window(); as a Column in agg(), in an expression beside other aggregates, global
and .over(); and in SQL after sparkagg.udaf.register; on Connect also with NULL arguments and keys at 1, 3
and 17 partitions, and over empty input. Each is checked against Spark's own expressions for the same
figures; prints one JSON line."""
import json
import sys

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.window import Window

import sparkagg
from sparkagg.udaf import Accumulator, aggregate, register, udaf, window


class WeightedMean(Accumulator):
    """sum(x * w) / sum(w) over the rows where both are present."""

    def __init__(self):
        self.xw, self.w = 0.0, 0.0

    def update(self, x, w):
        both = pc.and_(pc.is_valid(x), pc.is_valid(w))
        x, w = pc.filter(x, both), pc.filter(w, both)
        self.xw += pc.sum(pc.multiply(x, w)).as_py() or 0.0
        self.w += pc.sum(w).as_py() or 0.0

    def retract(self, x, w):
        both = pc.and_(pc.is_valid(x), pc.is_valid(w))
        x, w = pc.filter(x, both), pc.filter(w, both)
        self.xw -= pc.sum(pc.multiply(x, w)).as_py() or 0.0
        self.w -= pc.sum(w).as_py() or 0.0

    def merge(self, states):
        self.xw += pc.sum(states[0]).as_py() or 0.0
        self.w += pc.sum(states[1]).as_py() or 0.0

    def state(self):
        return [pa.scalar(self.xw), pa.scalar(self.w)]

    def evaluate(self):
        return pa.scalar(self.xw / self.w if self.w else None, pa.float64())


def close(a, b):
    return (a is None and b is None) or (a is not None and b is not None and abs(a - b) <= 1e-9 * max(1.0, abs(b)))


mode, where = sys.argv[1], sys.argv[2]
if mode == "--remote":
    spark = SparkSession.builder.remote(where).getOrCreate()
else:
    spark = sparkagg.session(master=where, **{"spark.ui.enabled": "false"})
wmean = udaf(WeightedMean, [pa.float64(), pa.float64()], pa.float64(), [pa.float64(), pa.float64()],
             name="wmean")
df = spark.range(0, 20000, 1, 6).select(
    (F.col("id") % 100).alias("k"), F.col("id").alias("t"), (F.col("id") % 7).cast("double").alias("x"),
    (F.col("id") % 5 + 1).cast("double").alias("w"))
got = {r.k: r.m for r in aggregate(df, "k", m=wmean("x", "w")).collect()}
want = {r.k: r.m for r in df.groupBy("k").agg((F.sum(F.col("x") * F.col("w")) / F.sum("w")).alias("m")).collect()}
slid = window(df.where(F.col("k") < 3), "k", "t", rows=(-4, 0), m=wmean("x", "w")).orderBy("k", "t").collect()
spec = "PARTITION BY k ORDER BY t ROWS BETWEEN 4 PRECEDING AND CURRENT ROW"
expected = df.where(F.col("k") < 3).selectExpr(
    "k", "t", f"sum(x * w) OVER ({spec}) / sum(w) OVER ({spec}) AS m").orderBy("k", "t").collect()
register(spark, "wmean", wmean)
df.createOrReplaceTempView("t")
as_column = {r.k: r.m for r in df.groupBy("k").agg(wmean("x", "w").alias("m")).collect()}
# In an expression, beside a sparkagg function and a Spark built-in; global; over a window.
mixed = df.groupBy("k").agg((wmean("x", "w") * 2).alias("m2"), F.expr("df_avg(x)").alias("a"),
                            F.count("*").alias("n")).collect()
plain = {r.k: (r.a, r.n) for r in df.groupBy("k").agg(F.avg("x").alias("a"), F.count("*").alias("n")).collect()}
overall = df.agg(wmean("x", "w").alias("m")).collect()[0].m
overall_want = df.agg((F.sum(F.col("x") * F.col("w")) / F.sum("w")).alias("m")).collect()[0].m
col_slid = df.where(F.col("k") < 3).select(
    "k", "t", wmean("x", "w").over(Window.partitionBy("k").orderBy("t").rowsBetween(-4, 0)).alias("m")
).orderBy("k", "t").collect()
as_sql = {r.k: r.m for r in spark.sql("SELECT k, wmean(x, w) FILTER (WHERE x IS NOT NULL) AS m FROM t "
                                       "GROUP BY k").collect()}
sql_slid = spark.sql(f"SELECT k, t, wmean(x, w) OVER ({spec}) AS m FROM t WHERE k < 3 ORDER BY k, t").collect()

# On Connect (classic sessions run these in test_udaf_columns.py): NULLs among the arguments and the keys, at
# 1, 3 and 17 partitions, the Column form and aggregate() against Spark's sums over the rows where both
# arguments are present; and empty input, grouped (no rows) and global.
connect_only = {}
if mode == "--remote":
    both = "x IS NOT NULL AND w IS NOT NULL"
    want_expr = F.expr(f"sum(CASE WHEN {both} THEN x * w END) / sum(CASE WHEN {both} THEN w END)")
    nulls_ok = []
    for parts in (1, 3, 17):
        holey = spark.range(0, 600, 1, parts).selectExpr(
            "IF(id % 13 = 0, NULL, id % 9) AS k", "IF(id % 4 = 0, NULL, double(id % 7)) AS x",
            "IF(id % 6 = 0, NULL, double(id % 5 + 1)) AS w")
        expect = {r.k: r.m for r in holey.groupBy("k").agg(want_expr.alias("m")).collect()}
        for form in (holey.groupBy("k").agg(wmean("x", "w").alias("m")), aggregate(holey, "k", m=wmean("x", "w"))):
            rows = {r.k: r.m for r in form.collect()}
            nulls_ok.append(rows.keys() == expect.keys() and all(close(rows[k], expect[k]) for k in expect))
    empty = df.where(F.lit(False))
    connect_only = {
        "nulls_1_3_17_ok": len(nulls_ok) == 6 and all(nulls_ok),
        "empty_ok": empty.groupBy("k").agg(wmean("x", "w")).count() == 0 and
        [tuple(r) for r in empty.agg(wmean("x", "w"), F.count("*")).collect()] == [(None, 0)]}

def same_groups(a):
    return a.keys() == want.keys() and all(close(a[k], want[k]) for k in want)


def same_rows(a):
    return len(a) == len(expected) and all((x.k, x.t) == (y.k, y.t) and close(x.m, y.m) for x, y in zip(a, expected))


print(json.dumps({
    "groups": len(got), "grouped_ok": same_groups(got), "window_rows": len(slid), "window_ok": same_rows(slid),
    "column_ok": same_groups(as_column), "sql_ok": same_groups(as_sql), "sql_window_ok": same_rows(sql_slid),
    "expression_ok": len(mixed) == len(want) and all(
        close(r.m2, 2 * want[r.k]) and close(r.a, plain[r.k][0]) and r.n == plain[r.k][1] for r in mixed),
    "global_ok": close(overall, overall_want), "column_window_ok": same_rows(col_slid), **connect_only}),
    flush=True)
spark.stop()
