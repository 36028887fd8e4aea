"""One group holding 10 million values completes for df_median and df_array_agg with Spark's default
memory settings: the queries run one after another in a Spark application of their own (a subprocess, one
JVM start for the four) that sets no memory, so its driver (the one JVM of local mode) has
spark.driver.memory's default, a 1 GiB heap, which no other test has filled. Its own process also keeps a
failure to itself: in local mode an OutOfMemoryError ends the JVM, which in the shared session of
conftest.py failed every later test.

Inputs are range(0, n) over 4 partitions, so every partial state holds 2.5 million values and the
final aggregation merges them into one list. Two groups: `false` holds 0 .. 9,999,999, `true` the three
values 10,000,000 .. 10,000,002. Expected values are worked by hand:

- median of 0 .. 9,999,999: the count is even, the middle values are 4,999,999 and 5,000,000, averaged
  (DataFusion 55 reads integers as doubles): 4,999,999.5. Of the three: 10,000,001;
- the array: 10,000,000 elements, min 0, max 9,999,999; for bigints also the sum,
  n(n - 1)/2 = 49,999,995,000,000 (with the size, a check against lost or duplicated elements).

The margin: these queries, one after another in one application, pass three times over with a 700 MiB
heap (and fail at 600 MiB). Before the grouped operator kept a batch of large states under 16 MB, grew
its value pools by half past a million values and no longer spilled a few groups, they failed at 800 MiB
and now and then at 1 GiB: a refused reservation spilled the one huge group, whose row, the run's record
and the batch's copy then lived together. The largest single allocation left is Spark's: the result
projection writes the array into an UnsafeRow buffer twice its size.

Strings are checked over 5 million values, not 10: a 10-million-string array returned as a column
does not fit a 1 GiB heap, for Spark's own collect_list as for df_array_agg. Both fail with
OutOfMemoryError in the final aggregation's result step (collect_list writing the array into an
UnsafeRow; df_array_agg there, or earlier in Call.toCatalyst's copy of the list), while the buffer
still holds every string as a UTF8String object of 48 bytes plus a byte[] of 24 bytes for these short
strings: about 720 MB for 10 million. (size(df_array_agg(s)) alone passes at 10 million: Spark then
computes the size inside the aggregate and never writes the array into a row.)
"""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytestmark = [pytest.mark.spark, pytest.mark.slow] # runs Spark in a subprocess

N = 10_000_000
PARTITIONS = 4
SUM = N * (N - 1) // 2  # 49,999,995,000,000

# The application: conftest.py's session settings without its test JAR; it checks the premise (no memory
# setting, a heap of at most 1 GiB), runs each query of its arguments and prints its rows as a JSON line.
APP = """
import json, sys
import sparkagg
spark = sparkagg.session(master="local[2]", app_name="sparkagg-large-groups", **{
    "spark.sql.shuffle.partitions": "4", "spark.ui.enabled": "false", "spark.log.level": "ERROR",
    "spark.ui.showConsoleProgress": "false"})
conf = spark.sparkContext.getConf()
raised = [k for k in ("spark.driver.memory", "spark.executor.memory") if conf.contains(k)]
heap = spark._jvm.java.lang.Runtime.getRuntime().maxMemory()
assert not raised and heap <= 1 << 30, f"memory settings {raised}, heap {heap / 2**20:.0f} MiB"
for query in sys.argv[1:]:
    print(json.dumps([list(row) for row in spark.sql(query).collect()]), flush=True)
"""


def grouped(select: str, x: str) -> str:
    """`select` over the subquery's columns big and v (the aggregate), both groups (sorted by big here: an
    ORDER BY would sample its input with a job of its own, running the aggregation twice)."""
    return f"""
        SELECT big, {select}
        FROM (SELECT id >= {N} AS big, {x} AS v FROM range(0, {N + 3}, 1, {PARTITIONS}) GROUP BY id >= {N})"""


# Strings "0" .. "4999999": the least is "0", the greatest "999999" (compared as bytes). Their lengths
# add up to 10*1 + 90*2 + 900*3 + 9,000*4 + 90,000*5 + 900,000*6 + 4,000,000*7 = 33,888,890.
STRINGS = 5_000_000
QUERIES = {
    "median": grouped("v", "df_median(id)"),
    "bigints": grouped("size(v), array_min(v), array_max(v), aggregate(v, 0L, (acc, x) -> acc + x)",
                       "df_array_agg(id)"),
    "doubles": grouped("size(v), array_min(v), array_max(v)", "df_array_agg(CAST(id AS DOUBLE))"),
    "strings": f"""
        SELECT size(a), array_min(a), array_max(a), aggregate(a, 0L, (acc, s) -> acc + length(s))
        FROM (SELECT df_array_agg(CAST(id AS STRING)) AS a FROM range(0, {STRINGS}, 1, {PARTITIONS}))""",
}


@pytest.fixture(scope="module")
def rows() -> dict[str, list[tuple]]:
    """Each query's rows, sorted, from one application; a query the application did not get through (an
    OutOfMemoryError ends it) has its error output instead, which fails that query's test alone."""
    run = subprocess.run([sys.executable, "-c", APP, *QUERIES.values()], capture_output=True, text=True,
                         timeout=1800)
    printed = [line for line in run.stdout.splitlines() if line.startswith("[")]
    results = {name: sorted(tuple(row) for row in json.loads(line)) for name, line in zip(QUERIES, printed)}
    return {name: results.get(name, run.stderr[-3000:]) for name in QUERIES}


def test_median_of_ten_million_bigints_in_one_group(rows):
    assert rows["median"] == [(False, 4_999_999.5), (True, N + 1.0)]


def test_array_agg_of_ten_million_bigints_in_one_group(rows):
    assert rows["bigints"] == [(False, N, 0, N - 1, SUM), (True, 3, N, N + 2, 3 * N + 3)]


def test_array_agg_of_ten_million_doubles_in_one_group(rows):
    assert rows["doubles"] == [(False, N, 0.0, N - 1.0), (True, 3, float(N), N + 2.0)]


def test_array_agg_of_five_million_strings_global(rows):
    assert rows["strings"] == [(STRINGS, "0", "999999", 33_888_890)]
