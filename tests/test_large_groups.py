"""One group holding 10 million values completes for df_median and df_array_agg with Spark's default
memory settings (issue 4): the session of conftest.py, which sets no memory, so the driver (the one
JVM of local mode) runs with spark.driver.memory's default, a 1 GiB heap.

Inputs are range(0, n) over 4 partitions, so every partial state holds 2.5 million values and the
final aggregation merges them into one list. Expected values are worked by hand:

- median of the bigints 0 .. 9,999,999: the count is even, the middle values are 4,999,999 and
  5,000,000, averaged in bigint and truncated toward zero: 4,999,999; as doubles: 4,999,999.5;
- the array: 10,000,000 elements, min 0, max 9,999,999; for bigints also the sum,
  n(n - 1)/2 = 49,999,995,000,000 (with the size, a check against lost or duplicated elements).

Strings are checked over 5 million values, not 10: 10 million strings do not fit a 1 GiB heap, for
Spark's own collect_list as for df_array_agg (both fail with OutOfMemoryError at the same place,
writing the 10-million-element result into an UnsafeRow, while the aggregation buffer still holds
every string as a UTF8String object of 48 bytes plus a byte[] of 24 bytes for these short strings:
about 720 MB for 10 million).
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


def test_median_and_array_agg_of_ten_million_bigints_in_one_group(default_spark):
    # Two groups, so the grouped (hash map) path runs: `false` holds 0 .. 9,999,999, `true` three more values.
    rows = default_spark.sql(f"""
        SELECT big, m, size(a), array_min(a), array_max(a), aggregate(a, 0L, (acc, x) -> acc + x)
        FROM (SELECT id >= {N} AS big, df_median(id) AS m, df_array_agg(id) AS a
              FROM range(0, {N + 3}, 1, {PARTITIONS}) GROUP BY id >= {N})""").collect()
    # Sorted here, not by ORDER BY: its range partitioning would sample, running the aggregation twice.
    assert sorted(tuple(r) for r in rows) == [
        (False, 4_999_999, N, 0, N - 1, SUM),
        (True, N + 1, 3, N, N + 2, 3 * N + 3),
    ]


def test_median_and_array_agg_of_ten_million_doubles_global(default_spark):
    (row,) = default_spark.sql(f"""
        SELECT m, size(a), array_min(a), array_max(a)
        FROM (SELECT df_median(CAST(id AS DOUBLE)) AS m, df_array_agg(CAST(id AS DOUBLE)) AS a
              FROM range(0, {N}, 1, {PARTITIONS}))""").collect()
    assert tuple(row) == (4_999_999.5, N, 0.0, float(N - 1))


def test_array_agg_of_five_million_strings_global(default_spark):
    # Strings "0" .. "4999999": the least is "0", the greatest "999999" (compared as bytes). Their lengths
    # add up to 10*1 + 90*2 + 900*3 + 9,000*4 + 90,000*5 + 900,000*6 + 4,000,000*7 = 33,888,890.
    n = 5_000_000
    (row,) = default_spark.sql(f"""
        SELECT size(a), array_min(a), array_max(a), aggregate(a, 0L, (acc, s) -> acc + length(s))
        FROM (SELECT df_array_agg(CAST(id AS STRING)) AS a FROM range(0, {n}, 1, {PARTITIONS}))""").collect()
    assert tuple(row) == (n, "0", "999999", 33_888_890)
