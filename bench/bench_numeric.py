"""df_var_samp, df_corr and df_regr_slope against Spark's built-in var_samp, corr and regr_slope over
5M rows at 1k and 1M groups; times and ratios measured in this one run.

    .venv/bin/python bench/bench_numeric.py [ROWS]
"""
from __future__ import annotations

import sys

import common


def main(rows: int) -> None:
    spark = common.session()
    common.base_table(spark, rows)
    print(f"bench_numeric: {rows:,} rows, local[2], best of 3 (noop write)")
    common.timed(spark, "warm-up", "SELECT k, var_samp(x), df_var_samp(x) FROM base GROUP BY k", repeat=1)
    common.compare(spark, [("df_var_samp(x)", "var_samp(x)"), ("df_corr(y, x)", "corr(y, x)"),
                           ("df_regr_slope(y, x)", "regr_slope(y, x)")])
    spark.stop()


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else common.ROWS)
