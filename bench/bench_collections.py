"""Collection and percentile aggregates against Spark's built-ins over 5M rows at 1k and 1M groups:
df_median / median, df_percentile_cont / percentile_cont, df_approx_percentile_cont / percentile_approx
(both at p = 0.5, Spark's at its default accuracy 10000, DataFusion's at its default 100 centroids) and
df_array_agg / collect_list. The arrays are measured through size(...), so the cost is building the
lists, not moving them out. Times and ratios measured in this one run.

    .venv/bin/python bench/bench_collections.py [--rows N] [--repeat R] [--out DIR]

The ratios go to bench/results/bench_collections.json (bench/plot.py).
"""
from __future__ import annotations

import common

# (sparkagg function, its call, Spark's function, its call)
CALLS = [
    ("df_median", "df_median(x)", "median", "median(x)"),
    ("df_percentile_cont", "df_percentile_cont(0.5) WITHIN GROUP (ORDER BY x)",
     "percentile_cont", "percentile_cont(0.5) WITHIN GROUP (ORDER BY x)"),
    ("df_approx_percentile_cont", "df_approx_percentile_cont(x, 0.5)",
     "percentile_approx", "percentile_approx(x, 0.5)"),
    ("df_array_agg", "size(df_array_agg(x))", "collect_list", "size(collect_list(x))"),
]


def available(spark, calls: list[tuple[str, str, str, str]]) -> list[tuple[str, str, str, str]]:
    """The calls whose sparkagg function this build registers; each other one is named and left out."""
    kept = []
    for call in calls:
        if spark.catalog.functionExists(call[0]):
            kept.append(call)
        else:
            print(f"  skipped {call[0]} / {call[2]}: {call[0]} is not registered in this sparkagg build "
                  f"(`make jar` rebuilds the JAR)")
    return kept


def main(rows: int, repeat: int, out=common.RESULTS) -> None:
    spark = common.session()
    common.base_table(spark, rows)
    print(f"bench_collections: {rows:,} rows, local[2], best of {repeat} (noop write)")
    calls = available(spark, CALLS)
    common.timed(spark, "warm-up", "SELECT k, median(x), df_median(x) FROM base GROUP BY k", repeat=1)
    timings = {}
    for key, label in common.GROUPINGS:
        print(f"{label}:")
        t = {}
        for _, ours, _, theirs in calls:
            t.update(common.timed_together(spark, {call: f"SELECT {key}, {call} FROM base GROUP BY {key}"
                                                   for call in (theirs, ours)}, repeat))
        timings[label] = t
    print("ratios, sparkagg / Spark built-in (lower is better for sparkagg):")
    recorder = common.Recorder("bench_collections", "collections and percentiles", rows, repeat)
    chart = f"Collections and percentiles, {rows:,} rows: sparkagg / Spark built-in"
    groups = [label for _, label in common.GROUPINGS]
    for _, label in common.GROUPINGS:
        for name, ours, spark_name, theirs in calls:
            print(common.ratio_line(f"{name} / {spark_name}, {label}", timings[label][ours], timings[label][theirs]))
            recorder.add(chart, groups, name, f"Spark {spark_name}", label,
                         timings[label][ours], timings[label][theirs])
    recorder.write(spark, out)
    spark.stop()


if __name__ == "__main__":
    args = common.arguments(__doc__).parse_args()
    main(args.rows, args.repeat, args.out)
