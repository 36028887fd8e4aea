"""sparkagg's grouped operator (exec/: GroupsAccumulators over batches) against Spark's built-ins, over 5M rows, on
the input and key shapes users have: a cached table, a `spark.range` query, a Parquet file (dictionary-encoded
strings, plain longs and doubles) and the output of a join; keys of one integer, two integers, a string, a date
and 1M scattered 64-bit integers (xxhash64), at 1k and 1M groups (SHAPES). df_avg, df_sum, df_var_samp against
Spark's code-generated avg, sum, var_samp; df_approx_percentile_cont against percentile_approx (p = 0.5),
df_array_agg against collect_list (through size(...), so the cost is building the lists), df_string_agg against
string_agg (concat_ws over collect_list on 3.5, which has none; through length(...)), df_min of strings and
df_sum of decimal(12,2) against Spark's min and sum, df_median against median, df_percentile_cont against
percentile_cont (percentile on 3.5), ordered df_first_value of strings (df_first_value(s) WITHIN GROUP (ORDER BY
x); df_min_by(s, x) on 3.5) against min_by, df_approx_distinct of strings against approx_count_distinct, df_mode
of strings against mode, df_avg beside Spark's own count(*) (which stays on the grouped operator) against Spark's
avg beside it, and df_count(DISTINCT s) (four nodes) against Spark's. On the cached table's integer keys also
against sparkagg's own TypedImperativeAggregate path (the same calls with spark.sparkagg.groups.enabled=false),
and on the Parquet file df_avg, df_sum and df_count against DataFusion 55's avg, sum and count of the same file
(SessionContext with 2 target partitions, as local[2]), DataFusion timed alone: in a process of its own once
every Spark has stopped, warm, best of 5 (bench/anchor_datafusion.py). The floor under the 1k-group shapes: the
fixed-size calls and Spark's over the first row alone of the spark.range query and of the Parquet file, what a
query costs on either side before its rows count, and the task threads' CPU over every row of those two shapes,
what the operator and the scan cost without the driver's work and the JIT compiler's.
Memory, by the cached table's 1M-group key: df_approx_percentile_cont's t-digest and df_avg's two numbers, each
beside Spark's call, with the garbage collector's seconds during each query and the grouped operator's peak
memory per group (its tasks' peaks summed, Partial and Final; MEMORY_CALLS).

Every comparison runs at two settings (--settings), each in a Spark of its own (common.SETTINGS): "default", the
session `sparkagg.session()` gives (1 GB driver, 200 shuffle partitions under adaptive execution, the UI on),
and "tuned" (6 GB, 4 shuffle partitions). Then, unless --no-spill, 20M groups in a separate Spark with 1 GB of
driver memory, which completes by spilling: df_avg/df_sum/df_count, then df_median and df_string_agg
(variable-size states), every group checked. Then the comparisons on the cached table again on each Spark of
--also-on (default 3.5, whose built-ins are the anchors there), run by that Spark's venv (.venvs/spark-<minor>,
`make venvs`) with this checkout's package and JARs. Times and ratios measured in this one run; the end prints
each call's worst (shape; setting) at 1k and 1M groups, the figure to quote, and its best.

    .venv/bin/python bench/bench_grouped.py [--rows N] [--repeat R] [--out DIR] [--no-spill] [--also-on 3.5,4.0]
                                            [--only "df_sum of decimals,df_median"] [--shapes parquet-1M,join]
                                            [--settings default,tuned]

--only times just the calls named (their first column below) and records nothing; --shapes times just the
shapes named (their first column), and the worst shape recorded is the worst of those; the --also-on runs
take the cached table's three among them (`make bench BENCH_ROWS=N`, a trial, takes cached-1k alone, at the
default settings alone).

The ratios go to bench/results/bench_grouped.json and bench_grouped-spark<minor>.json (bench/plot.py): the
worst (shape; setting) of each group count, the TypedImperativeAggregate and DataFusion ratios, and every
setting's shapes' times under "shapes".
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import common
import sparkagg

# Spark 3.5 lacks string_agg and percentile_cont (its percentile is the same interpolation), and sparkagg's
# WITHIN GROUP needs Spark 4.0: there min_by is ordered first_value's sparkagg form too (the same accumulator).
ON_35 = sparkagg.spark_minor() == "3.5"
STRING_AGG = "concat_ws(',', collect_list(s))" if ON_35 else "string_agg(s, ',')"
PERCENTILE_CONT = "percentile(x, 0.5)" if ON_35 else "percentile_cont(0.5) WITHIN GROUP (ORDER BY x)"
FIRST_VALUE = "df_min_by(s, x)" if ON_35 else "df_first_value(s) WITHIN GROUP (ORDER BY x)"

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
    ("df_percentile_cont", "df_percentile_cont(x, 0.5)", "percentile_cont", PERCENTILE_CONT),
    ("df_first_value of strings, ordered", FIRST_VALUE, "min_by", "min_by(s, x)"),
    ("df_approx_distinct of strings", "df_approx_distinct(s)", "approx_count_distinct", "approx_count_distinct(s)"),
    ("df_mode of strings", "df_mode(s)", "mode", "mode(s)"),
    ("df_avg + Spark's count(*)", "df_avg(x), count(*)", "avg + count(*)", "avg(x), count(*)"),
    ("df_count DISTINCT", "df_count(DISTINCT s)", "count DISTINCT", "count(DISTINCT s)"),
]

# (name for --shapes, label, view, grouping keys, group count). The views are made by tables().
SHAPES = [
    ("cached-1k", "cached table, int key", "cached", "k", "1k groups"),
    ("cached-1M", "cached table, int key", "cached", "kbig", "1M groups"),
    ("scattered", "cached table, scattered int64 keys", "cached", "ksparse", "1M groups"),
    ("two-keys", "cached table, two int keys", "cached", "k1, k2", "1M groups"),
    ("string-key", "cached table, string key", "cached", "skey", "1M groups"),
    ("date-key", "cached table, date key", "cached", "day", "1M groups"),
    ("range-1k", "spark.range query, int key", "ranged", "k", "1k groups"),
    ("range-1M", "spark.range query, int key", "ranged", "kbig", "1M groups"),
    ("parquet-1k", "Parquet file, int key", "parquet", "k", "1k groups"),
    ("parquet-1M", "Parquet file, int key", "parquet", "kbig", "1M groups"),
    ("parquet-string-key", "Parquet file, string key", "parquet", "skey", "1M groups"),
    ("join", "join output, int key", "joined", "kbig", "1M groups"),
]
# Each shape's label, kept whole when --shapes times only some.
SHAPE_LABELS = {name: label for name, label, *_ in SHAPES}
GROUP_COUNTS = ["1k groups", "1M groups"]
# The shapes also timed on the TypedImperativeAggregate path, and the ones run on the other Sparks.
TYPED_SHAPES = {"cached-1k", "cached-1M"}
OTHER_SPARK_SHAPES = ["cached-1k", "cached-1M", "scattered"]
# sparkagg's call and DataFusion's on the same Parquet file.
DATAFUSION_CALLS = [("df_avg(x)", "avg(x)"), ("df_sum(x)", "sum(x)"), ("df_count(x)", "count(x)")]
DATAFUSION_KEYS = [("k", "1k groups"), ("kbig", "1M groups")]
# The floor under the 1k-group shapes: the fixed-size calls over the first row alone of the spark.range query
# and of the Parquet file (shape name, view). What a query costs before its rows count (planning, two stages,
# the exchange) is paid on both sides; at 1k groups, 5M rows add little to it.
FLOOR_SHAPES = [("range-1k", "ranged_one_row"), ("parquet-1k", "parquet_one_row")]
# Untimed runs of each query before its timed ones, fewer than the timed ones (a trial of one run a query,
# whose times mean nothing, has none): at 1k groups a run is too short for the JIT to finish compiling its
# loops within it.
WARM_UPS = {"1k groups": 2, "1M groups": 1}
FLOOR_NAMES = {name for name, _ in FLOOR_SHAPES}
# Where the floor is measured, the task threads' CPU over every row is too (common.task_cpu): the part of the
# time that is the operator's and the scan's, without what the driver and the JIT compiler add to each query.
TASK_CPU = "task CPU"
FLOOR_CALLS = ["df_avg", "df_sum", "df_var_samp", "df_avg + Spark's count(*)"]

TYPED = "TypedImperativeAggregate path"
# Not timed on that path: df_approx_distinct at 1M groups keeps 16 KB of registers a group there, which Spark's
# ObjectHashAggregate sorts and spills, and whose spill readers run a 1 GB driver (the default settings) out of
# heap. The grouped operator's own run of it is timed.
TYPED_OUT_OF_MEMORY = {("df_approx_distinct(s)", "1M groups")}
# Memory at the 1M-group key of the cached table: a t-digest state (up to a hundred centroids a group) beside
# df_avg's two numbers, each beside Spark's call.
MEMORY_CALLS = ["df_approx_percentile_cont", "df_avg"]
SPILL_GROUPS = 20_000_000

ROOT = Path(__file__).resolve().parent.parent


def tables(spark, rows: int, folder: Path) -> None:
    """The views SHAPES read, all of the same rows: `cached` (a cached table), `ranged` (the same query over
    spark.range, uncached), `parquet` (the cached table written to a Parquet file) and `joined` (the cached
    table joined with a 1,000-row table on k); and the first row alone of `ranged` and of `parquet`
    (`ranged_one_row`, `parquet_one_row`), which FLOOR_SHAPES read."""
    spark.sql(rows_sql(rows)).createOrReplaceTempView("ranged")
    # The same rows under a plan of their own (x is never NULL): cached under `ranged`'s own plan, every
    # query over `ranged` would be answered from the cache too.
    spark.table("ranged").where("x IS NOT NULL").cache().createOrReplaceTempView("cached")
    spark.table("cached").count()
    spark.table("cached").write.mode("overwrite").parquet(str(folder / "input.parquet"))
    spark.read.parquet(str(folder / "input.parquet")).createOrReplaceTempView("parquet")
    spark.sql("SELECT c.* FROM cached c JOIN (SELECT id AS k FROM range(1000)) d ON c.k = d.k") \
        .createOrReplaceTempView("joined")
    spark.sql(rows_sql(1)).createOrReplaceTempView("ranged_one_row")
    spark.sql(rows_sql(1)).write.mode("overwrite").parquet(str(folder / "one_row.parquet"))
    spark.read.parquet(str(folder / "one_row.parquet")).createOrReplaceTempView("parquet_one_row")


def rows_sql(rows: int) -> str:
    """The bench's rows, the first ``rows`` of them."""
    return f"""
        SELECT k, kbig, kbig % 1000 AS k1, kbig DIV 1000 AS k2, xxhash64(kbig) AS ksparse,
               concat('key-', kbig) AS skey, date_add(DATE'2000-01-01', CAST(kbig AS INT)) AS day,
               x, CAST(CAST(x * 1000 AS INT) AS STRING) AS s, CAST(x AS DECIMAL(12, 2)) AS dec
        FROM (SELECT id % 1000 AS k, id % 1000000 AS kbig, rand(1) * 100 AS x FROM range({rows}))
        """


def main(rows: int, repeat: int, out, spill: bool, also_on: list[str], only: list[str], shapes: list[str],
         settings: list[str]) -> None:
    choose(only, shapes)
    unknown = set(settings) - set(common.SETTINGS)
    if unknown or not settings:
        sys.exit(f"bench_grouped: the settings are {', '.join(common.SETTINGS)}, not "
                 f"{', '.join(sorted(unknown)) or 'none'}")
    minor = sparkagg.spark_minor()
    default = minor == list(sparkagg.SPARK_LINES)[-1]
    # The Parquet files are deleted at the end: each run writes its own, of 5M rows by default.
    with tempfile.TemporaryDirectory(prefix="sparkagg-bench-grouped-") as scratch:
        folder = Path(scratch)
        runs = {setting: run_setting(setting, rows, repeat, folder, only, shapes) for setting in settings}
        # DataFusion alone, once every Spark has stopped, over the file the first setting's run wrote.
        datafusion = datafusion_alone(folder / settings[0] / "input.parquet") if default and not only else {}
    recorder = common.Recorder("bench_grouped" + ("" if default else f"-spark{minor}"),
                               "grouped operator" + ("" if default else f" on Spark {minor}"), rows, repeat,
                               source="bench/bench_grouped.py")
    recorder.data["spark"] = next(iter(runs.values()))["spark"]
    recorder.data["settings"] = {s: common.SETTINGS[s] for s in settings}
    report(recorder, runs, datafusion, rows)
    report_floor(recorder, runs, rows)
    recorder.data["memory"] = {setting: run["memory"] for setting, run in runs.items() if run["memory"]}
    if not only:
        recorder.write(out=out)
    if spill:
        spill_run()
    timed_shapes = {name for name, *_ in SHAPES}
    other_shapes = [name for name in OTHER_SPARK_SHAPES if name in timed_shapes]
    if also_on and not other_shapes:
        print(f"\nnot run on Spark {', '.join(also_on)}: those runs take the shapes of "
              f"{', '.join(OTHER_SPARK_SHAPES)} timed here, and none was")
    for other in also_on if other_shapes else []:
        on_other_spark(other, other_shapes, rows, repeat, out, settings)


def choose(only: list[str], shapes: list[str]) -> None:
    """Narrows CALLS and SHAPES to those named (none named: all)."""
    if only:
        unknown = set(only) - {name for name, *_ in CALLS}
        if unknown:
            sys.exit(f"bench_grouped: no call named {', '.join(sorted(unknown))}")
        CALLS[:] = [c for c in CALLS if c[0] in only]
    if shapes:
        unknown = set(shapes) - {name for name, *_ in SHAPES}
        if unknown:
            sys.exit(f"bench_grouped: no shape named {', '.join(sorted(unknown))}")
        SHAPES[:] = [s for s in SHAPES if s[0] in shapes]


def run_setting(setting: str, rows: int, repeat: int, folder: Path, only: list[str], shapes: list[str]) -> dict:
    """The Spark side at one setting, in a child process (a driver's memory is fixed when its JVM starts):
    what ``measure`` returns, through a JSON file."""
    print(f"\n== settings: {setting} {common.SETTINGS[setting] or '(as sparkagg.session() gives them)'}", flush=True)
    (folder / setting).mkdir()
    result = folder / setting / "timings.json"
    subprocess.run([sys.executable, __file__, "--setting-child", setting, "--rows", str(rows), "--repeat",
                    str(repeat), "--folder", str(folder / setting), "--only", ",".join(only),
                    "--shapes", ",".join(shapes)], check=True)
    return json.loads(result.read_text())


def measure(setting: str, rows: int, repeat: int, folder: Path) -> None:
    """Every shape's calls, the floors and sparkagg's side of the DataFusion comparison at ``setting``, in this
    process's Spark; written to ``folder``/timings.json for the parent."""
    spark = common.session(setting)
    tables(spark, rows, folder)
    print(f"bench_grouped: {rows:,} rows, local[2] at the {setting} settings, best of {repeat}, each call's runs "
          "taking turns with Spark's (noop write)")
    # Each path's code compiled before timing: Spark's, the grouped operator, the TypedImperativeAggregate host.
    for warm in ("avg(x)", "df_avg(x), df_array_agg(x)"):
        common.timed(spark, f"warm-up: {warm}", f"SELECT kbig, {warm} FROM cached GROUP BY kbig", repeat=1)
    spark.conf.set("spark.sparkagg.groups.enabled", "false")
    common.timed(spark, "warm-up: TypedImperativeAggregate path",
                 "SELECT kbig, df_avg(x) FROM cached GROUP BY kbig", repeat=1)
    spark.conf.unset("spark.sparkagg.groups.enabled")
    timings = {name: timed_calls(spark, view, key, f"{label}, {groups}", repeat, typed=name in TYPED_SHAPES,
                                 groups=groups, task_cpu=name in FLOOR_NAMES)
               for name, label, view, key, groups in SHAPES}
    floor_calls = [c for c in CALLS if c[0] in FLOOR_CALLS]
    floors = {name: timed_calls(spark, view, "k", f"{SHAPE_LABELS[name]}, the first row alone", repeat, typed=False,
                                groups="1k groups", calls=floor_calls)
              for name, view in FLOOR_SHAPES} if floor_calls else {}
    memory_calls = [c for c in CALLS if c[0] in MEMORY_CALLS]
    held = memory(spark, memory_calls, repeat) if memory_calls and "cached-1M" in {n for n, *_ in SHAPES} else {}
    print("Parquet file, sparkagg's side of the comparison with DataFusion:")
    datafusion_side = {f"{ours}, {groups}": common.timed(spark, f"{ours}, {groups}",
                                                         f"SELECT {key}, {ours} FROM parquet GROUP BY {key}", repeat)
                       for key, groups in DATAFUSION_KEYS for ours, _ in DATAFUSION_CALLS}
    (folder / "timings.json").write_text(json.dumps(
        {"spark": spark.version, "shapes": timings, "floors": floors, "datafusion": datafusion_side,
         "memory": held}))
    spark.stop()


def memory(spark, calls, repeat: int) -> dict:
    """{call: its seconds and GC seconds, the least of ``repeat`` runs, for sparkagg's calls also the operator's
    peak memory per group (its tasks' peaks summed, over the 1M groups), Partial and Final} by the cached table's
    1M-group key."""
    print("memory, cached table, 1M groups (least of the runs; sparkagg's peak bytes per group, Partial / Final):")
    held = {}
    for _, ours, _, theirs in calls:
        for call in (theirs, ours):
            runs = []
            for _ in range(repeat):  # a DataFrame each run: a plan run again adds to its metrics
                df = spark.sql(f"SELECT count(m) FROM (SELECT kbig, {call} AS m FROM cached GROUP BY kbig)")
                gc, start = common.gc_seconds(spark), time.perf_counter()
                groups = df.collect()[0][0]
                runs.append((time.perf_counter() - start, common.gc_seconds(spark) - gc))
            seconds, gc = min(r[0] for r in runs), min(r[1] for r in runs)
            held[call] = {"seconds": round(seconds, 4), "gc seconds": round(gc, 4)}
            line = f"  {call:40s} {seconds:6.2f} s, GC {gc:5.2f} s"
            if call == ours:
                metrics = spark._jvm.sparkagg.exec.GroupedAggregateExec.metricsOf(df._jdf)
                per_group = {mode: round(metrics.get(f"{mode} peakMemory", 0) / max(groups, 1))
                             for mode in ("partial", "final")}
                held[call]["peak bytes per group"] = per_group
                line += f", {per_group['partial']:,} / {per_group['final']:,} bytes a group"
            print(line, flush=True)
    return held


def datafusion_alone(parquet: Path) -> dict:
    """{"<DataFusion call>, <group count>": anchor_datafusion.py's record} over ``parquet``."""
    print("\nDataFusion, alone in its own process, on the first setting's Parquet file:")
    queries = {f"{theirs}, {groups}": f"SELECT {key}, {theirs} FROM t GROUP BY {key}"
               for key, groups in DATAFUSION_KEYS for _, theirs in DATAFUSION_CALLS}
    records = common.datafusion_alone(parquet, list(queries.values()))
    return {label: records[query] for label, query in queries.items()}


def typed_of(call: str) -> str:
    """The label of ``call``'s time on the TypedImperativeAggregate path."""
    return f"{call} ({TYPED})"


def cpu_of(call: str) -> str:
    """The label of ``call``'s least task CPU seconds."""
    return f"{call} [{TASK_CPU}]"


def report(recorder, runs: dict, datafusion: dict, rows: int) -> None:
    """Prints every ratio of every setting, records each call's worst (shape, setting) of each group count
    (and every shape's times), and ends with the table of worst and best docs/benchmarks.md quotes."""
    labels = {name: f"{label}, {groups}" for name, label, _, _, groups in SHAPES}
    group_of = {name: groups for name, *_, groups in SHAPES}
    chart = f"Grouped operator, {rows:,} rows, the worst input and key shape and setting: sparkagg / Spark"
    worst_of = {}
    for setting, run in runs.items():
        print(f"\nratios at the {setting} settings, sparkagg's grouped operator / other (lower is better for "
              "sparkagg):")
        for fn, ours, spark_name, theirs in CALLS:
            for name, t in run["shapes"].items():
                print(common.ratio_line(f"{fn} / {spark_name}, {labels[name]}", t[ours] / t[theirs], 1.0))
    for fn, ours, spark_name, theirs in CALLS:
        for groups in GROUP_COUNTS:
            measured = [(setting, name, run["shapes"][name]) for setting, run in runs.items()
                        for name in run["shapes"] if group_of[name] == groups]
            if not measured:
                continue
            setting, name, t = max(measured, key=lambda m: m[2][ours] / m[2][theirs])
            best = min(m[2][ours] / m[2][theirs] for m in measured)
            worst_of[(fn, groups)] = (t[ours] / t[theirs], f"{labels[name].rsplit(', ', 1)[0]}; {setting}", best)
            recorder.add(chart, GROUP_COUNTS, fn, f"Spark {spark_name}", groups, t[ours], t[theirs])
            bar = recorder.chart(chart, GROUP_COUNTS)["bars"][-1]
            bar.setdefault("worst shape", {})[groups] = labels[name]
            bar.setdefault("setting", {})[groups] = setting
    first = next(iter(runs))
    typed_chart = f"Grouped operator, {rows:,} rows of a cached table, {first} settings: native / {TYPED}"
    for name, t in runs[first]["shapes"].items():
        if name not in TYPED_SHAPES:
            continue
        for fn, ours, _, _ in CALLS:
            if t[typed_of(ours)] is None:
                print(f"  {fn} on the {TYPED}, {labels[name]}: not run (TYPED_OUT_OF_MEMORY)")
                continue
            print(common.ratio_line(f"{fn} / {fn} on the {TYPED}, {labels[name]}", t[ours], t[typed_of(ours)]))
            recorder.add(typed_chart, GROUP_COUNTS, fn, f"{fn}, {TYPED}", group_of[name], t[ours], t[typed_of(ours)])
    if datafusion:
        df_chart = f"Grouped operator, {rows:,} rows of a Parquet file, the worse setting: sparkagg / DataFusion alone"
        print("\nParquet file, sparkagg at the worse setting / DataFusion alone:")
        for key, groups in DATAFUSION_KEYS:
            for ours, theirs in DATAFUSION_CALLS:
                anchor = datafusion[f"{theirs}, {groups}"]
                setting, our_s = max(((s, run["datafusion"][f"{ours}, {groups}"]) for s, run in runs.items()),
                                     key=lambda x: x[1])
                name = f"DataFusion {anchor['datafusion']} {theirs}"
                print(common.ratio_line(f"{ours} ({setting}) / {name}, {groups}", our_s, anchor["seconds"],
                                        f"({our_s:.3f} s / {anchor['seconds']:.3f} s)"))
                recorder.add(df_chart, GROUP_COUNTS, ours, name, groups, our_s, anchor["seconds"])
        recorder.data["datafusion"] = {k: {f: r[f] for f in ("datafusion", "target_partitions", "seconds")}
                                       for k, r in datafusion.items()}
    recorder.data["shapes"] = {setting: {labels[name]: {ours: [round(t[ours], 4), round(t[theirs], 4)]
                                                        for _, ours, _, theirs in CALLS}
                                         for name, t in run["shapes"].items()}
                               for setting, run in runs.items()}
    print(f"\nworst and best (shape; setting) of {', '.join(runs)}, grouped operator / Spark's built-in:")
    print("| call / Spark's | " + " | ".join(f"{g}: worst | {g}: best" for g in GROUP_COUNTS) + " |")
    print("|---|" + "---|---|" * len(GROUP_COUNTS))
    for fn, _, spark_name, _ in CALLS:
        cells = []
        for groups in GROUP_COUNTS:
            worst, where, best = worst_of.get((fn, groups), (None, None, None))
            cells += ["–", "–"] if worst is None else [f"{worst:.2f}x ({where})", f"{best:.2f}x"]
        print(f"| {fn} / {spark_name} | " + " | ".join(cells) + " |")


def report_floor(recorder, runs: dict, rows: int) -> None:
    """Prints each setting's floor shapes' times over their first row, beside the same shape's over every row
    and its task CPU over every row, where that shape was timed; records them by setting."""
    calls = [c for c in CALLS if c[0] in FLOOR_CALLS]
    if not calls:
        return
    recorder.data["floor"], recorder.data[TASK_CPU] = {}, {}
    for setting, run in runs.items():
        print(f"\nthe floor at 1k groups, {setting} settings: sparkagg / Spark's, the first row alone, then "
              f"{rows:,} rows, then their task CPU:")
        for name, t in run["floors"].items():
            every = run["shapes"].get(name, {})
            for fn, ours, spark_name, theirs in calls:
                cells = [f"{t[ours]:.3f} s / {t[theirs]:.3f} s"]
                if ours in every:
                    used = every[cpu_of(ours)], every[cpu_of(theirs)]
                    cells += [f"{every[ours]:.3f} s / {every[theirs]:.3f} s", f"{used[0]:.3f} s / {used[1]:.3f} s"]
                    recorder.data[TASK_CPU].setdefault(setting, {}).setdefault(name, {})[ours] = \
                        [round(c, 4) for c in used]
                print(f"  {fn} / {spark_name}, {SHAPE_LABELS[name]}: " + ", then ".join(cells))
                recorder.data["floor"].setdefault(setting, {}).setdefault(name, {})[ours] = \
                    [round(t[ours], 4), round(t[theirs], 4)]


def on_other_spark(minor: str, shapes: list[str], rows: int, repeat: int, out, settings: list[str]) -> None:
    """This script's comparisons on the cached table's ``shapes`` on Spark ``minor``, in a child process of
    that Spark's venv."""
    python = ROOT / ".venvs" / f"spark-{minor}" / "bin" / "python"
    if not python.is_file():
        sys.exit(f"bench_grouped: no {python.parent.parent} for Spark {minor}; `make venvs` makes it")
    print(f"\n== on Spark {minor} ({python.parent.parent.relative_to(ROOT)}):", flush=True)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "python")}
    env.pop("SPARKAGG_JAR", None)
    subprocess.run([str(python), __file__, "--rows", str(rows), "--repeat", str(repeat), "--out", str(out),
                    "--no-spill", "--also-on", "", "--shapes", ",".join(shapes), "--settings", ",".join(settings)],
                   check=True, env=env)


def timed_calls(spark, table: str, key: str, label: str, repeat: int, typed: bool, groups: str, calls=None,
                task_cpu: bool = False) -> dict:
    """Every call (of ``calls``, default CALLS) grouped by ``key`` of ``table``: Spark's, sparkagg's, and
    (``typed``) sparkagg's on the TypedImperativeAggregate path; with ``task_cpu``, also Spark's and sparkagg's
    least task CPU seconds (cpu_of)."""
    print(f"{label}:")
    t = {}
    calls = CALLS if calls is None else calls
    sql = f"SELECT {key}, {{}} FROM {table} GROUP BY {key}"
    def queries_of(ours: str, theirs: str) -> dict:
        queries = {theirs: sql.format(theirs), ours: sql.format(ours)}
        if typed and (ours, groups) not in TYPED_OUT_OF_MEMORY:
            queries[typed_of(ours)] = lambda: typed_path(spark, sql.format(ours))
        return queries
    shape = [(ours, theirs, queries_of(ours, theirs)) for _, ours, _, theirs in calls]
    # Every query's untimed runs before any is timed. Its own code is compiled and made hot by the JIT:
    # sparkagg's calls over one input share one generated stage (the functions are not in its code), Spark's
    # each compile their own, so warmed by the shape's first call alone, sparkagg's later calls would run that
    # stage hot against Spark's cold code. And the driver's code settles on the shape's plans: the first
    # queries after a switch of shape cost both sides more, which a first call warmed by itself would still
    # pay in its timed runs (docs/benchmarks.md has the figures).
    for _, _, queries in shape if repeat > 1 else []:
        common.timed_together(spark, {f"warm-up: {name}": query for name, query in queries.items()},
                              repeat=min(WARM_UPS[groups], repeat - 1))
    for ours, theirs, queries in shape:
        used = {} if task_cpu else None
        best = common.timed_together(spark, queries, repeat, cpu=used)
        t[theirs], t[ours] = best[theirs], best[ours]
        if task_cpu:
            t[cpu_of(theirs)], t[cpu_of(ours)] = used[theirs], used[ours]
        if typed:
            t[typed_of(ours)] = best.get(typed_of(ours))
    return t


def typed_path(spark, sql: str) -> None:
    """``sql`` run on sparkagg's TypedImperativeAggregate path (the grouped operator turned off)."""
    spark.conf.set("spark.sparkagg.groups.enabled", "false")
    try:
        df = spark.sql(sql)
        df.write.format("noop").mode("overwrite").save()
    finally:
        spark.conf.unset("spark.sparkagg.groups.enabled")


def spill_run() -> None:
    """20M groups (40M rows, two per key) in a fresh Spark with a 1 GB driver, fixed-size states then
    variable-size ones: the final side cannot hold its groups and must spill. Run in a child process, since
    a JVM's memory is fixed when it starts."""
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
    # Variable-size states: the median of {k, k + 20M} is k + 10M, and the two strings join either way round.
    start = time.perf_counter()
    df = spark.sql(f"SELECT id % {SPILL_GROUPS} AS key, df_median(id) AS m, "
                   f"df_string_agg(CAST(id AS STRING), ',') AS joined "
                   f"FROM range({2 * SPILL_GROUPS}) GROUP BY id % {SPILL_GROUPS}")
    pair = f"CAST(key AS STRING), ',', CAST(key + {SPILL_GROUPS} AS STRING)"
    swapped = f"CAST(key + {SPILL_GROUPS} AS STRING), ',', CAST(key AS STRING)"
    checked = df.selectExpr("count(*)", f"count_if(m <> key + {SPILL_GROUPS // 2} OR "
                                        f"NOT joined IN (concat({pair}), concat({swapped})))")
    varying, wrong_varying = checked.collect()[0]
    metrics = spark._jvm.sparkagg.exec.GroupedAggregateExec.metricsOf(checked._jdf)
    print(f"  df_median and df_string_agg: {varying:,} groups, {wrong_varying} wrong, "
          f"{time.perf_counter() - start:.1f} s; grouped operator metrics: {metrics}")
    spark.stop()
    if groups != SPILL_GROUPS or wrong or varying != SPILL_GROUPS or wrong_varying:
        sys.exit("the 20M-group aggregation gave wrong results")


if __name__ == "__main__":
    if "--spill-child" in sys.argv:
        spill_child()
    else:
        parser = common.arguments(__doc__)
        parser.add_argument("--no-spill", action="store_true", help="leave out the 20M-group spill run")
        parser.add_argument("--also-on", default="3.5",
                            help="other Spark minors to compare on, comma-separated (default 3.5; '' for none)")
        parser.add_argument("--only", default="",
                            help="the calls to time, separated by commas without a space (a call's name may hold "
                                 "', '); records nothing")
        parser.add_argument("--shapes", default="", help="the shapes to time, comma-separated (default all)")
        parser.add_argument("--settings", default=",".join(common.SETTINGS),
                            help=f"the settings to run at, comma-separated (default {','.join(common.SETTINGS)})")
        parser.add_argument("--setting-child", help=argparse.SUPPRESS)
        parser.add_argument("--folder", type=Path, help=argparse.SUPPRESS)
        args = parser.parse_args()
        only = [c for c in re.split(r",(?! )", args.only) if c]
        shapes = [s for s in args.shapes.split(",") if s]
        if args.setting_child:
            choose(only, shapes)
            measure(args.setting_child, args.rows, args.repeat, args.folder)
        else:
            main(args.rows, args.repeat, args.out, not args.no_spill, [m for m in args.also_on.split(",") if m],
                 only, shapes, [s for s in args.settings.split(",") if s])
