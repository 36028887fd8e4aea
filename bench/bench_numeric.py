"""df_var_samp, df_corr and df_regr_slope against Spark's built-in var_samp, corr and regr_slope over
5M rows at 1k and 1M groups; times and ratios measured in this one run.

    .venv/bin/python bench/bench_numeric.py [--rows N] [--repeat R] [--out DIR]

The ratios go to bench/results/bench_numeric.json (bench/plot.py).
"""
from __future__ import annotations

import common

CALLS = [("df_var_samp(x)", "var_samp(x)"), ("df_corr(y, x)", "corr(y, x)"),
         ("df_regr_slope(y, x)", "regr_slope(y, x)")]


def main(rows: int, repeat: int, out) -> None:
    spark = common.session()
    common.base_table(spark, rows)
    print(f"bench_numeric: {rows:,} rows, local[2], best of {repeat} (noop write)")
    common.timed(spark, "warm-up", "SELECT k, var_samp(x), df_var_samp(x) FROM base GROUP BY k", repeat=1)
    recorder = common.Recorder("bench_numeric", "variance, correlation, regression", rows, repeat)
    names = {call: ("Spark " if not call.startswith("df_") else "") + call.split("(")[0]
             for pair in CALLS for call in pair}
    common.compare(spark, CALLS, recorder, f"Statistics, {rows:,} rows: sparkagg / Spark built-in", repeat, names)
    recorder.write(spark, out)
    spark.stop()


if __name__ == "__main__":
    args = common.arguments(__doc__).parse_args()
    main(args.rows, args.repeat, args.out)
