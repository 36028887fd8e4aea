"""df_avg and df_sum against Spark's built-in avg / sum (code-generated hash aggregation), the same
accumulator through Spark's Aggregator route (functions.udaf), and DataFusion, over 5M rows at 1k and
1M groups. Prints times and the ratios, all measured in this one run.

    .venv/bin/python bench/bench_avg_sum.py [ROWS]
"""
from __future__ import annotations

import sys
import time

import common


def datafusion_times(rows: int) -> dict[str, float]:
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
        for _ in range(3):
            start = time.perf_counter()
            ctx.sql(f"SELECT {key}, avg(x), sum(x) FROM base GROUP BY {key}").collect()
            best = min(best, time.perf_counter() - start)
        out[key] = best
    return out


def main(rows: int) -> None:
    spark = common.session()
    spark._jvm.sparkagg.SparkAgg.registerUdaf(spark._jsparkSession, "udaf_avg", "sparkagg.functions.Avg", "double")
    common.base_table(spark, rows)
    print(f"bench_avg_sum: {rows:,} rows, local[2], best of 3 (noop write)")
    common.timed(spark, "warm-up", "SELECT k, avg(x), df_avg(x) FROM base GROUP BY k", repeat=1)
    results = {}
    for key, label in (("k", "1k groups"), ("kbig", "1M groups")):
        print(f"{label}:")
        t = {name: common.timed(spark, f"{name}", f"SELECT {key}, {name}(x) FROM base GROUP BY {key}")
             for name in ("avg", "df_avg", "udaf_avg", "sum", "df_sum")}
        results[label] = t
    df_times = datafusion_times(rows)
    print("ratios (lower is better for sparkagg):")
    for (key, label) in (("k", "1k groups"), ("kbig", "1M groups")):
        t = results[label]
        print(common.ratio_line(f"df_avg / Spark avg, {label}", t["df_avg"], t["avg"], ""))
        print(common.ratio_line(f"df_sum / Spark sum, {label}", t["df_sum"], t["sum"], ""))
        print(common.ratio_line(f"Aggregator route / df_avg, {label}", t["udaf_avg"], t["df_avg"], ""))
        if key in df_times:
            print(common.ratio_line(f"df_avg / DataFusion avg+sum, {label}", t["df_avg"], df_times[key],
                                    f"(DataFusion {df_times[key]:.2f} s)"))
    spark.stop()


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else common.ROWS)
