"""df_avg and df_sum against Spark's built-in avg / sum (code-generated hash aggregation), the same
accumulator through Spark's Aggregator route (functions.udaf: the "udaf_avg / df_avg" line) and through
the class registered by name (registerJavaUDAF of sparkagg.udaf.Avg, Spark's row-at-a-time UDAF path: the
"class_avg / df_avg" line), and DataFusion, over 5M rows at 1k and 1M groups. Prints times and the ratios,
all measured in this one run: DataFusion's over the same rows as a Parquet file, in a process of its own once
Spark has stopped (common.datafusion_alone), against df_avg over that file.

    .venv/bin/python bench/bench_avg_sum.py [--rows N] [--repeat R] [--out DIR]

The ratios go to bench/results/bench_avg_sum.json (bench/plot.py), each as sparkagg's time over the other's.
"""
from __future__ import annotations

import tempfile
from pathlib import Path

import common


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
    with tempfile.TemporaryDirectory(prefix="sparkagg-bench-avg-") as scratch:
        parquet = Path(scratch) / "base.parquet"
        spark.table("base").select("k", "kbig", "x").write.parquet(str(parquet))
        spark.read.parquet(str(parquet)).createOrReplaceTempView("file")
        print("the same rows as a Parquet file:")
        ours = {key: common.timed(spark, f"df_avg(x), df_sum(x), {label}",
                                  f"SELECT {key}, df_avg(x), df_sum(x) FROM file GROUP BY {key}", repeat)
                for key, label in common.GROUPINGS}
        recorder.data["spark"] = spark.version
        spark.stop()
        theirs = common.datafusion_alone(parquet, [f"SELECT {key}, avg(x), sum(x) FROM t GROUP BY {key}"
                                                   for key, _ in common.GROUPINGS])
    for key, label in common.GROUPINGS:
        anchor = theirs[f"SELECT {key}, avg(x), sum(x) FROM t GROUP BY {key}"]
        name = f"DataFusion {anchor['datafusion']} (avg, sum; Parquet file)"
        print(common.ratio_line(f"df_avg, df_sum / {name}, {label}", ours[key], anchor["seconds"]))
        recorder.add(chart, groups, "df_avg, df_sum", name, label, ours[key], anchor["seconds"])
    recorder.write(out=out)


if __name__ == "__main__":
    args = common.arguments(__doc__).parse_args()
    main(args.rows, args.repeat, args.out)
