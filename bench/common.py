"""Shared benchmark harness: one local[2] session with sparkagg, timing by a noop write (the whole
query runs, nothing is collected), best of N runs, ratios printed against anchors measured in the same run."""
from __future__ import annotations

import time

import sparkagg

ROWS = 5_000_000


def session():
    spark = sparkagg.session(master="local[2]", app_name="sparkagg-bench", **{
        "spark.sql.shuffle.partitions": "4", "spark.driver.memory": "6g", "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false", "spark.log.level": "ERROR"})
    return spark


GROUPINGS = (("k", "1k groups"), ("kbig", "1M groups"))


def base_table(spark, rows: int = ROWS):
    """k: 1k groups, kbig: 1M groups, x and y: uniform doubles (y correlated with x), as in
    shared/bench-anchors."""
    df = spark.sql(f"SELECT id % 1000 AS k, id % 1000000 AS kbig, rand(1) * 100 AS x, "
                   f"rand(1) * 50 + rand(2) * 10 AS y, id AS t FROM range({rows})")
    df = df.cache()
    df.count()
    df.createOrReplaceTempView("base")
    return df


def timed(spark, label: str, sql: str, repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        df = spark.sql(sql)
        start = time.perf_counter()
        df.write.format("noop").mode("overwrite").save()
        best = min(best, time.perf_counter() - start)
    print(f"  {label:48s} {best:7.2f} s", flush=True)
    return best


def ratio_line(label: str, ours: float, anchor: float, note: str = "") -> str:
    return f"  {label:48s} {ours / anchor:6.2f}x {note}"


def compare(spark, calls: list[tuple[str, str]]) -> dict[str, dict[str, float]]:
    """Times each (sparkagg call, Spark built-in call) at 1k and 1M groups, prints both and their ratio.
    Returns {grouping label: {call: seconds}}."""
    timings = {}
    for key, label in GROUPINGS:
        print(f"{label}:")
        t = {}
        for ours, theirs in calls:
            for call in (theirs, ours):
                t[call] = timed(spark, call, f"SELECT {key}, {call} FROM base GROUP BY {key}")
        timings[label] = t
    print("ratios, sparkagg / Spark built-in (lower is better for sparkagg):")
    for _, label in GROUPINGS:
        for ours, theirs in calls:
            print(ratio_line(f"{ours} / {theirs}, {label}", timings[label][ours], timings[label][theirs]))
    return timings
