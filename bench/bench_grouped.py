"""sparkagg's grouped operator (exec/: GroupsAccumulators over batches) against Spark's built-ins and against
sparkagg's own TypedImperativeAggregate path (the same functions with spark.sparkagg.groups.enabled=false),
over 5M rows at 1k and 1M groups: df_avg, df_sum, df_var_samp against Spark's code-generated avg, sum,
var_samp; df_approx_percentile_cont against percentile_approx (p = 0.5), df_array_agg against collect_list
(through size(...), so the cost is building the lists), df_string_agg against string_agg (concat_ws over
collect_list on 3.5, which has none; through length(...)), df_min of strings and df_sum of decimal(12,2)
against Spark's min and sum, df_median against median, df_mode of strings against mode, and df_avg beside
Spark's own count(*) (which now stays on the grouped operator) against Spark's avg beside it. The keys of both
groupings are dense integers, which the grouped operator looks up in an array; a third grouping, 1M groups of
scattered 64-bit keys (xxhash64 of the 1M-group key), takes its hash table instead, against Spark's. Then,
unless --no-spill, a 20M-group aggregation in a separate Spark with 1 GB of driver memory, which completes by
spilling (its spill metrics are printed). Then the same comparisons again on each Spark of --also-on (default
3.5, whose aggregation differs: Spark 3.5's built-ins are the anchors there), run by that Spark's venv
(.venvs/spark-<minor>, `make venvs`) with this checkout's package and JARs. Times and ratios measured in this
one run.

    .venv/bin/python bench/bench_grouped.py [--rows N] [--repeat R] [--out DIR] [--no-spill] [--also-on 3.5,4.0]
                                            [--only "df_sum of decimals,df_median"]

--only times just the calls named (their first column below), prints their ratios and records nothing.

The ratios go to bench/results/bench_grouped.json and bench_grouped-spark<minor>.json (bench/plot.py).
"""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import common
import sparkagg

# Spark's closest to string_agg: its own from 4.0 on.
STRING_AGG = ("concat_ws(',', collect_list(s))" if sparkagg.spark_minor() == "3.5" else "string_agg(s, ',')")

# (sparkagg function, its call, Spark's function, its call)
CALLS = [
    ("df_avg", "df_avg(x)", "avg", "avg(x)"),
    ("df_sum", "df_sum(x)", "sum", "sum(x)"),
    ("df_var_samp", "df_var_samp(x)", "var_samp", "var_samp(x)"),
    ("df_approx_percentile_cont", "df_approx_percentile_cont(x, 0.5)",
     "percentile_approx", "percentile_approx(x, 0.5)"),
    ("df_array_agg", "size(df_array_agg(x))", "collect_list", "size(collect_list(x))"),
    ("df_string_agg", "length(df_string_agg(s, ','))", "string_agg", f"length({STRING_AGG})"),
    ("df_min of strings", "df_min(s)", "min", "min(s)"),
    ("df_sum of decimals", "df_sum(dec)", "sum", "sum(dec)"),
    ("df_median", "df_median(x)", "median", "median(x)"),
    ("df_mode of strings", "df_mode(s)", "mode", "mode(s)"),
    ("df_avg + Spark's count(*)", "df_avg(x), count(*)", "avg + count(*)", "avg(x), count(*)"),
]

TYPED = "TypedImperativeAggregate path"
SPARSE = ("ksparse", "1M scattered keys")
SPILL_GROUPS = 20_000_000


ROOT = Path(__file__).resolve().parent.parent


def main(rows: int, repeat: int, out, spill: bool, also_on: list[str], only: list[str]) -> None:
    if only:
        unknown = set(only) - {name for name, *_ in CALLS}
        if unknown:
            sys.exit(f"bench_grouped: no call named {', '.join(sorted(unknown))}")
        CALLS[:] = [c for c in CALLS if c[0] in only]
    spark = common.session()
    common.base_table(spark, rows)
    # The base table with a string (up to 6 digits) and a decimal(12,2) column beside x.
    spark.sql("SELECT k, kbig, x, CAST(CAST(x * 1000 AS INT) AS STRING) AS s, CAST(x AS DECIMAL(12, 2)) AS dec "
              "FROM base").cache().createOrReplaceTempView("grouped")
    spark.sql("SELECT xxhash64(kbig) AS ksparse, x, s, dec FROM grouped").cache().createOrReplaceTempView("sparse")
    spark.table("grouped").count()
    spark.table("sparse").count()
    print(f"bench_grouped: {rows:,} rows, local[2], best of {repeat} (noop write)")
    # Each path's code compiled before timing: Spark's, the grouped operator, the TypedImperativeAggregate host.
    for warm in ("avg(x)", "df_avg(x), df_array_agg(x)"):
        common.timed(spark, f"warm-up: {warm}", f"SELECT kbig, {warm} FROM base GROUP BY kbig", repeat=1)
    spark.conf.set("spark.sparkagg.groups.enabled", "false")
    common.timed(spark, "warm-up: TypedImperativeAggregate path", "SELECT kbig, df_avg(x) FROM base GROUP BY kbig",
                 repeat=1)
    spark.conf.unset("spark.sparkagg.groups.enabled")
    timings = {label: timed_calls(spark, "grouped", key, label, repeat, typed=True) for key, label in common.GROUPINGS}
    key, label = SPARSE
    timings[label] = timed_calls(spark, "sparse", key, label, repeat, typed=False)
    print("ratios, sparkagg's grouped operator / other (lower is better for sparkagg):")
    minor = sparkagg.spark_minor()
    default = minor == list(sparkagg.SPARK_LINES)[-1]
    recorder = common.Recorder("bench_grouped" + ("" if default else f"-spark{minor}"),
                               "grouped operator" + ("" if default else f" on Spark {minor}"), rows, repeat,
                               source="bench/bench_grouped.py")
    chart = f"Grouped operator, {rows:,} rows: sparkagg / other"
    groups = [label for _, label in common.GROUPINGS + (SPARSE,)]
    for label in groups:
        t = timings[label]
        for name, ours, spark_name, theirs in CALLS:
            print(common.ratio_line(f"{name} / {spark_name}, {label}", t[ours], t[theirs]))
            recorder.add(chart, groups, name, f"Spark {spark_name}", label, t[ours], t[theirs])
            if (ours, TYPED) in t:
                print(common.ratio_line(f"{name} / {name} on the {TYPED}, {label}", t[ours], t[(ours, TYPED)]))
                recorder.add(chart, groups, name, f"{name}, {TYPED}", label, t[ours], t[(ours, TYPED)])
    if not only:
        recorder.write(spark, out)
    spark.stop()
    if spill:
        spill_run()
    for other in also_on:
        on_other_spark(other, rows, repeat, out)


def on_other_spark(minor: str, rows: int, repeat: int, out) -> None:
    """This script's comparisons on Spark ``minor``, in a child process of that Spark's venv."""
    python = ROOT / ".venvs" / f"spark-{minor}" / "bin" / "python"
    if not python.is_file():
        sys.exit(f"bench_grouped: no {python.parent.parent} for Spark {minor}; `make venvs` makes it")
    print(f"\n== on Spark {minor} ({python.parent.parent.relative_to(ROOT)}):", flush=True)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "python")}
    env.pop("SPARKAGG_JAR", None)
    subprocess.run([str(python), __file__, "--rows", str(rows), "--repeat", str(repeat), "--out", str(out),
                    "--no-spill", "--also-on", ""], check=True, env=env)


def timed_calls(spark, table: str, key: str, label: str, repeat: int, typed: bool) -> dict:
    """Every call grouped by ``key`` of ``table``: Spark's, sparkagg's, and (``typed``) sparkagg's on the
    TypedImperativeAggregate path."""
    print(f"{label}:")
    t = {}
    for _, ours, _, theirs in CALLS:
        sql = f"SELECT {key}, {{}} FROM {table} GROUP BY {key}"
        t[theirs] = common.timed(spark, theirs, sql.format(theirs), repeat)
        t[ours] = common.timed(spark, ours, sql.format(ours), repeat)
        if typed:
            spark.conf.set("spark.sparkagg.groups.enabled", "false")
            t[(ours, TYPED)] = common.timed(spark, f"{ours} ({TYPED})", sql.format(ours), repeat)
            spark.conf.unset("spark.sparkagg.groups.enabled")
    return t


def spill_run() -> None:
    """20M groups (40M rows, two per key) in a fresh Spark with a 1 GB driver: the final side cannot hold
    its groups and must spill. Run in a child process, since a JVM's memory is fixed when it starts."""
    print(f"spill: {SPILL_GROUPS:,} groups, 1 GB driver, 2 shuffle partitions")
    start = time.perf_counter()
    done = subprocess.run([sys.executable, __file__, "--spill-child"], check=False)
    print(f"  {'completed' if done.returncode == 0 else 'FAILED'} in {time.perf_counter() - start:.1f} s")
    if done.returncode != 0:
        sys.exit(done.returncode)


def spill_child() -> None:
    import sparkagg
    spark = sparkagg.session(master="local[2]", app_name="sparkagg-bench-spill", **{
        "spark.driver.memory": "1g", "spark.sql.shuffle.partitions": "2", "spark.sql.adaptive.enabled": "false",
        "spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false", "spark.log.level": "ERROR"})
    # Each key k gets the rows k and k + 20M: count 2, sum 2k + 20M, avg k + 10M, checked in the same pass.
    df = spark.sql(f"SELECT id % {SPILL_GROUPS} AS key, df_avg(id) AS a, df_sum(id) AS s, df_count(id) AS c "
                   f"FROM range({2 * SPILL_GROUPS}) GROUP BY id % {SPILL_GROUPS}")
    checked = df.selectExpr(
        "count(*)", f"count_if(c <> 2 OR s <> 2 * key + {SPILL_GROUPS} OR a <> key + {SPILL_GROUPS // 2})")
    groups, wrong = checked.collect()[0]
    metrics = spark._jvm.sparkagg.exec.GroupedAggregateExec.metricsOf(checked._jdf)
    print(f"  {groups:,} groups, {wrong} wrong; grouped operator metrics: {metrics}")
    spark.stop()
    if groups != SPILL_GROUPS or wrong:
        sys.exit("the 20M-group aggregation gave wrong results")


if __name__ == "__main__":
    if "--spill-child" in sys.argv:
        spill_child()
    else:
        parser = common.arguments(__doc__)
        parser.add_argument("--no-spill", action="store_true", help="leave out the 20M-group spill run")
        parser.add_argument("--also-on", default="3.5",
                            help="other Spark minors to compare on, comma-separated (default 3.5; '' for none)")
        parser.add_argument("--only", default="", help="the calls to time, comma-separated; records nothing")
        args = parser.parse_args()
        main(args.rows, args.repeat, args.out, not args.no_spill, [m for m in args.also_on.split(",") if m],
             [c for c in args.only.split(",") if c])
