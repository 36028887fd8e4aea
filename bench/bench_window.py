"""Sliding windows: ROWS BETWEEN w PRECEDING AND CURRENT ROW for w = 10 ... 10000, rows in 10 partitions.
sparkagg's window operator (update + retract) against Spark's default frame evaluation (recompute,
O(n x w)) and Spark's segment tree: avg, max, mode and first_value WITHIN GROUP (against Spark's mode and
min_by) over 1M rows; the order statistics median and percentile_cont (against Spark's percentile; its
median and percentile_cont refuse a sliding frame) over the first 200k of them, since Spark recomputes
each of those frames by sorting it; df_count(DISTINCT x) against df_avg; each function at every w against
itself at the smallest (flat is 1.0). Times and ratios measured in this one run.

    .venv/bin/python bench/bench_window.py [--rows N] [--widths 10,100,1000,10000] [--repeat R] [--out DIR]

The ratios go to bench/results/bench_window.json (bench/plot.py), each as sparkagg's time over the other's.
"""
from __future__ import annotations

import common

SEGMENT_TREE = "spark.sql.window.segmentTree.enabled"
# (sparkagg's name, its call, Spark's name, Spark's call, the table, whether Spark's segment tree stays
# fast at any w: avg's and max's do; a percentile's or mode's buffer holds the frame, and min_by's tree
# measured 13 s at w = 1000, as its recompute)
PAIRS = [
    ("df_avg", "df_avg(x)", "avg", "avg(x)", "wb", True),
    ("df_max", "df_max(x)", "max", "max(x)", "wb", True),
    ("df_median", "df_median(x)", "percentile 0.5", "percentile(x, 0.5)", "ws", False),
    ("df_percentile_cont", "df_percentile_cont(0.9) WITHIN GROUP (ORDER BY x)", "percentile 0.9",
     "percentile(x, 0.9)", "ws", False),
    ("df_mode", "df_mode(v)", "mode", "mode(v)", "wb", False),
    ("df_first_value", "df_first_value(x) WITHIN GROUP (ORDER BY v)", "min_by", "min_by(x, v)", "wb", False),
]
# Spark's recompute is O(n x w): beyond this width it takes minutes a query. So is its segment tree for
# the order statistics, whose buffers merge in O(w).
RECOMPUTE_UP_TO = 1000


def main(rows: int, widths: list[int], repeat: int = 3, out=common.RESULTS) -> None:
    spark = common.session()
    stat_rows = min(rows, 200_000)
    spark.sql(f"SELECT id % 10 AS p, id AS t, rand(1) * 100 AS x, CAST(rand(2) * 1000 AS INT) AS v "
              f"FROM range({rows})").cache().createOrReplaceTempView("wb")
    spark.table("wb").count()
    spark.sql(f"SELECT * FROM wb WHERE t < {stat_rows}").cache().createOrReplaceTempView("ws")
    spark.table("ws").count()
    print(f"bench_window: {rows:,} rows (order statistics: {stat_rows:,}) in 10 partitions, local[2], "
          f"best of {repeat} (noop write)")

    def run(label: str, call: str, w: int, table: str, segment_tree: bool = False, repeat: int = repeat) -> float:
        spark.conf.set(SEGMENT_TREE, str(segment_tree).lower())
        sql = f"SELECT {call} OVER (PARTITION BY p ORDER BY t ROWS BETWEEN {w} PRECEDING AND CURRENT ROW) FROM {table}"
        return common.timed(spark, label, sql, repeat)

    run("warm-up", "df_avg(x)", 10, "wb", repeat=1)
    results = {}
    for w in widths:
        print(f"w = {w}:")
        t = {}
        for ours, our_call, theirs, their_call, table, fixed_buffer in PAIRS:
            t[ours] = run(ours, our_call, w, table)
            if w <= RECOMPUTE_UP_TO:
                t[theirs] = run(f"Spark {theirs} (recompute)", their_call, w, table, repeat=1)
            if w <= RECOMPUTE_UP_TO or fixed_buffer:
                t[f"{theirs}_tree"] = run(f"Spark {theirs} (segment tree)", their_call, w, table, segment_tree=True,
                                          repeat=repeat if fixed_buffer else 1)
        t["df_count_distinct"] = run("df_count(DISTINCT v)", "df_count(DISTINCT v)", w, "wb")
        results[w] = t
    print("ratios:")
    first, last = widths[0], widths[-1]
    for ours, *_ in PAIRS:
        print(common.ratio_line(f"{ours}: w={last} / w={first} (flat is 1.0)", results[last][ours],
                                results[first][ours]))
    for w in widths:
        t = results[w]
        for ours, _, theirs, *_ in PAIRS:
            if theirs in t:
                print(common.ratio_line(f"Spark {theirs} recompute / {ours}, w={w} (speed-up)", t[theirs], t[ours]))
            if f"{theirs}_tree" in t:
                print(common.ratio_line(f"{ours} / Spark {theirs} segment tree, w={w}", t[ours], t[f"{theirs}_tree"]))
        print(common.ratio_line(f"df_count(DISTINCT) / df_avg, w={w}", t["df_count_distinct"], t["df_avg"]))
    recorder = common.Recorder("bench_window", "sliding windows", rows, repeat)
    chart = "Sliding windows, ROWS BETWEEN w PRECEDING AND CURRENT ROW: sparkagg / other"
    groups = [f"w = {w}" for w in widths]
    for w, group in zip(widths, groups):
        t = results[w]
        for ours, _, theirs, *_ in PAIRS:
            recorder.add(chart, groups, ours, f"Spark {theirs}, default (recompute)", group, t[ours], t.get(theirs))
            recorder.add(chart, groups, ours, f"Spark {theirs}, segment tree", group, t[ours], t.get(f"{theirs}_tree"))
        recorder.add(chart, groups, "df_count(DISTINCT v)", "df_avg", group, t["df_count_distinct"], t["df_avg"])
        for ours, *_ in PAIRS:
            recorder.add(chart, groups, ours, f"{ours} at w = {first}", group, t[ours], results[first][ours])
    recorder.write(spark, out)
    spark.stop()


if __name__ == "__main__":
    parser = common.arguments(__doc__, rows=1_000_000)
    parser.add_argument("--widths", default="10,100,1000,10000", help="frame widths w (default 10,100,1000,10000)")
    args = parser.parse_args()
    main(args.rows, [int(w) for w in args.widths.split(",")], args.repeat, args.out)
