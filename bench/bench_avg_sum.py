"""df_avg and df_sum against Spark's built-in avg / sum (code-generated hash aggregation), the same
accumulator through Spark's Aggregator route (functions.udaf: the "udaf_avg / df_avg" line) and through
the class registered by name (registerJavaUDAF of sparkagg.udaf.Avg, Spark's row-at-a-time UDAF path: the
"class_avg / df_avg" line), and DataFusion, over 5M rows at 1k and 1M groups. Prints times and the ratios,
all measured in this one run.

    .venv/bin/python bench/bench_avg_sum.py [--rows N] [--repeat R] [--out DIR]

The ratios go to bench/results/bench_avg_sum.json (bench/plot.py), each as sparkagg's time over the other's.
"""
from __future__ import annotations

import time

import common


def datafusion_times(rows: int, repeat: int = 3) -> dict[str, float]:
    try:
        import datafusion
        import numpy as np
        import pyarrow as pa
    except ImportError:
        return {}
    ids = np.arange(rows, dtype=np.int64)
    table = pa.table({"k": ids % 1000, "kbig": ids % 1_000_000, "x": np.random.default_rng(1).random(rows) * 100})
    ctx = datafusion.SessionContext()
    ctx.register_record_batches("base", [table.to_batches(max_chunksize=65536)])
    out = {}
    for key in ("k", "kbig"):
        best = float("inf")
        for _ in range(repeat):
            start = time.perf_counter()
            ctx.sql(f"SELECT {key}, avg(x), sum(x) FROM base GROUP BY {key}").collect()
            best = min(best, time.perf_counter() - start)
        out[key] = best
    return out


def main(rows: int, repeat: int, out) -> None:
    spark = common.session()
    spark._jvm.sparkagg.SparkAgg.registerUdaf(spark._jsparkSession, "udaf_avg", "sparkagg.functions.Avg", "double")
    spark.udf.registerJavaUDAF("class_avg", "sparkagg.udaf.Avg")
    common.base_table(spark, rows)
    print(f"bench_avg_sum: {rows:,} rows, local[2], best of {repeat} (noop write)")
    common.timed(spark, "warm-up", "SELECT k, avg(x), df_avg(x) FROM base GROUP BY k", repeat=1)
    timings = common.compare(spark, [("df_avg(x)", "avg(x)"), ("df_sum(x)", "sum(x)"), ("udaf_avg(x)", "df_avg(x)"),
                                     ("class_avg(x)", "df_avg(x)")],
                             repeat=repeat)
    df_times = datafusion_times(rows, repeat)
    print("against DataFusion 50 (avg and sum in one query, same data shape):")
    for key, label in common.GROUPINGS:
        if key in df_times:
            print(common.ratio_line(f"df_avg / DataFusion, {label}", timings[label]["df_avg(x)"], df_times[key],
                                    f"(DataFusion {df_times[key]:.2f} s)"))
    recorder = common.Recorder("bench_avg_sum", "avg and sum", rows, repeat)
    chart = f"Grouped aggregation, {rows:,} rows: sparkagg / other"
    groups = [label for _, label in common.GROUPINGS]
    for key, label in common.GROUPINGS:
        t = timings[label]
        recorder.add(chart, groups, "df_avg", "Spark avg", label, t["df_avg(x)"], t["avg(x)"])
        recorder.add(chart, groups, "df_sum", "Spark sum", label, t["df_sum(x)"], t["sum(x)"])
        recorder.add(chart, groups, "df_avg", "same accumulator as Aggregator (udaf)", label,
                     t["df_avg(x)"], t["udaf_avg(x)"])
        recorder.add(chart, groups, "df_avg", "same accumulator by class name (registerJavaUDAF)", label,
                     t["df_avg(x)"], t["class_avg(x)"])
        recorder.add(chart, groups, "df_avg", "DataFusion 50 (avg, sum)", label, t["df_avg(x)"], df_times.get(key))
    recorder.write(spark, out)
    spark.stop()


if __name__ == "__main__":
    args = common.arguments(__doc__).parse_args()
    main(args.rows, args.repeat, args.out)
