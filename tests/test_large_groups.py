"""One group holding 10 million values completes for df_median and df_array_agg with Spark's default
memory settings: the session of conftest.py, which sets no memory, so the driver (the one
JVM of local mode) runs with spark.driver.memory's default, a 1 GiB heap.

Inputs are range(0, n) over 4 partitions, so every partial state holds 2.5 million values and the
final aggregation merges them into one list. Two groups: `false` holds 0 .. 9,999,999, `true` the three
values 10,000,000 .. 10,000,002. Expected values are worked by hand:

- median of 0 .. 9,999,999: the count is even, the middle values are 4,999,999 and 5,000,000, averaged
  (DataFusion 55 reads integers as doubles): 4,999,999.5. Of the three: 10,000,001;
- the array: 10,000,000 elements, min 0, max 9,999,999; for bigints also the sum,
  n(n - 1)/2 = 49,999,995,000,000 (with the size, a check against lost or duplicated elements).

Each function runs in a query of its own. Both in one query (median and array of the same 10 million
bigints) is at the edge of the 1 GiB heap: it fails intermittently with OutOfMemoryError when Spark
writes the array result into an UnsafeRow (a 162 MB byte[], twice the 81 MB array) and G1 finds no
run of free regions that long, with the median's 134 MB double[] and the array_agg buffer's reference
arrays (67 MB, plus two 40 MB copies made for the result) pinned as humongous objects.

Strings are checked over 5 million values, not 10: a 10-million-string array returned as a column
does not fit a 1 GiB heap, for Spark's own collect_list as for df_array_agg. Both fail with
OutOfMemoryError in the final aggregation's result step (collect_list writing the array into an
UnsafeRow; df_array_agg there, or earlier in Call.toCatalyst's copy of the list), while the buffer
still holds every string as a UTF8String object of 48 bytes plus a byte[] of 24 bytes for these short
strings: about 720 MB for 10 million. (size(df_array_agg(s)) alone passes at 10 million: Spark then
computes the size inside the aggregate and never writes the array into a row.)
"""
from __future__ import annotations

import pytest

N = 10_000_000
PARTITIONS = 4
SUM = N * (N - 1) // 2  # 49,999,995,000,000


@pytest.fixture(scope="module")
def default_spark(spark):
    """The shared session, after checking the premise: no memory setting raised above Spark's default."""
    conf = spark.sparkContext.getConf()
    raised = [k for k in ("spark.driver.memory", "spark.executor.memory") if conf.contains(k)]
    max_heap = spark._jvm.java.lang.Runtime.getRuntime().maxMemory()
    assert not raised and max_heap <= 1 << 30, (
        f"this test is about Spark's default memory settings; the session sets {raised}, "
        f"heap {max_heap / 2**20:.0f} MiB")
    return spark


def grouped(spark, select: str, x: str) -> list[tuple]:
    """`select` over the subquery's columns big and v (the aggregate), both groups, sorted by big here
    (an ORDER BY would sample its input with a job of its own, running the aggregation twice)."""
    rows = spark.sql(f"""
        SELECT big, {select}
        FROM (SELECT id >= {N} AS big, {x} AS v FROM range(0, {N + 3}, 1, {PARTITIONS}) GROUP BY id >= {N})
        """).collect()
    return sorted(tuple(r) for r in rows)


def test_median_of_ten_million_bigints_in_one_group(default_spark):
    assert grouped(default_spark, "v", "df_median(id)") == [(False, 4_999_999.5), (True, N + 1.0)]


def test_array_agg_of_ten_million_bigints_in_one_group(default_spark):
    got = grouped(default_spark, "size(v), array_min(v), array_max(v), aggregate(v, 0L, (acc, x) -> acc + x)",
                  "df_array_agg(id)")
    assert got == [(False, N, 0, N - 1, SUM), (True, 3, N, N + 2, 3 * N + 3)]


def test_array_agg_of_ten_million_doubles_in_one_group(default_spark):
    got = grouped(default_spark, "size(v), array_min(v), array_max(v)", "df_array_agg(CAST(id AS DOUBLE))")
    assert got == [(False, N, 0.0, N - 1.0), (True, 3, float(N), N + 2.0)]


def test_array_agg_of_five_million_strings_global(default_spark):
    # Strings "0" .. "4999999": the least is "0", the greatest "999999" (compared as bytes). Their lengths
    # add up to 10*1 + 90*2 + 900*3 + 9,000*4 + 90,000*5 + 900,000*6 + 4,000,000*7 = 33,888,890.
    n = 5_000_000
    (row,) = default_spark.sql(f"""
        SELECT size(a), array_min(a), array_max(a), aggregate(a, 0L, (acc, s) -> acc + length(s))
        FROM (SELECT df_array_agg(CAST(id AS STRING)) AS a FROM range(0, {n}, 1, {PARTITIONS}))""").collect()
    assert tuple(row) == (n, "0", "999999", 33_888_890)
