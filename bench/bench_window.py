"""Sliding windows: 1M rows in 10 partitions, ROWS BETWEEN w PRECEDING AND CURRENT ROW for w = 10 ... 10000.
sparkagg's window operator (update + retract, O(n)) against Spark's default frame evaluation (recompute,
O(n x w)) and Spark 4.3's segment tree, for avg and max; df_count(DISTINCT x) against df_avg.
Times and ratios measured in this one run.

    .venv/bin/python bench/bench_window.py [--rows N] [--widths 10,100,1000,10000] [--repeat R] [--out DIR]

The ratios go to bench/results/bench_window.json (bench/plot.py), each as sparkagg's time over the other's.
"""
from __future__ import annotations

import common

SEGMENT_TREE = "spark.sql.window.segmentTree.enabled"


def main(rows: int, widths: list[int], repeat: int = 3, out=common.RESULTS) -> None:
    spark = common.session()
    spark.sql(f"SELECT id % 10 AS p, id AS t, rand(1) * 100 AS x, CAST(rand(2) * 1000 AS INT) AS v "
              f"FROM range({rows})").cache().createOrReplaceTempView("wb")
    spark.table("wb").count()
    print(f"bench_window: {rows:,} rows in 10 partitions, local[2], best of {repeat} (noop write)")

    def run(label: str, call: str, w: int, segment_tree: bool = False, repeat: int = repeat) -> float:
        spark.conf.set(SEGMENT_TREE, str(segment_tree).lower())
        sql = f"SELECT {call} OVER (PARTITION BY p ORDER BY t ROWS BETWEEN {w} PRECEDING AND CURRENT ROW) FROM wb"
        return common.timed(spark, label, sql, repeat)

    run("warm-up", "df_avg(x)", 10, repeat=1)
    results = {}
    for w in widths:
        print(f"w = {w}:")
        t = {"df_avg": run("df_avg", "df_avg(x)", w), "df_max": run("df_max", "df_max(x)", w),
             "df_count_distinct": run("df_count(DISTINCT v)", "df_count(DISTINCT v)", w)}
        if w <= 1000:  # Spark's recompute is O(n x w): 10000 would take minutes
            t["avg"] = run("Spark avg (recompute)", "avg(x)", w, repeat=1)
            t["max"] = run("Spark max (recompute)", "max(x)", w, repeat=1)
        t["avg_tree"] = run("Spark avg (segment tree)", "avg(x)", w, segment_tree=True)
        t["max_tree"] = run("Spark max (segment tree)", "max(x)", w, segment_tree=True)
        results[w] = t
    print("ratios:")
    first, last = widths[0], widths[-1]
    for f in ("df_avg", "df_max", "df_count_distinct"):
        print(common.ratio_line(f"{f}: w={last} / w={first} (flat is 1.0)", results[last][f], results[first][f]))
    for w in widths:
        t = results[w]
        for ours, theirs in (("df_avg", "avg"), ("df_max", "max")):
            if theirs in t:
                print(common.ratio_line(f"Spark {theirs} recompute / {ours}, w={w} (speed-up)", t[theirs], t[ours]))
            print(common.ratio_line(f"{ours} / Spark {theirs} segment tree, w={w}", t[ours], t[f"{theirs}_tree"]))
        print(common.ratio_line(f"df_count(DISTINCT) / df_avg, w={w}", t["df_count_distinct"], t["df_avg"]))
    recorder = common.Recorder("bench_window", "sliding windows", rows, repeat)
    chart = f"Sliding windows, {rows:,} rows, ROWS BETWEEN w PRECEDING AND CURRENT ROW: sparkagg / other"
    groups = [f"w = {w}" for w in widths]
    for w, group in zip(widths, groups):
        t = results[w]
        for ours, theirs in (("df_avg", "avg"), ("df_max", "max")):
            recorder.add(chart, groups, ours, f"Spark {theirs}, default (recompute)", group, t[ours], t.get(theirs))
            recorder.add(chart, groups, ours, f"Spark {theirs}, segment tree", group, t[ours], t[f"{theirs}_tree"])
        recorder.add(chart, groups, "df_count(DISTINCT v)", "df_avg", group, t["df_count_distinct"], t["df_avg"])
        recorder.add(chart, groups, "df_avg", f"df_avg at w = {first}", group, t["df_avg"], results[first]["df_avg"])
    recorder.write(spark, out)
    spark.stop()


if __name__ == "__main__":
    parser = common.arguments(__doc__, rows=1_000_000)
    parser.add_argument("--widths", default="10,100,1000,10000", help="frame widths w (default 10,100,1000,10000)")
    args = parser.parse_args()
    main(args.rows, [int(w) for w in args.widths.split(",")], args.repeat, args.out)
