"""Ordered aggregates (WITHIN GROUP), DISTINCT collections and the t-digest functions against the
DataFusion 55 oracle: grouped and global, 1 / 3 / 17 partitions, empty and one-row input; bad literal
arguments refused at analysis. On Spark 3.5, which parses WITHIN GROUP only for its own percentiles, the
ordered calls are checked to be refused naming the function, and the tests that need them do not run."""
from __future__ import annotations

import bisect
import math
import random
import re

import datafusion
import pyarrow as pa
import pytest
from pyspark.errors import AnalysisException

import data
import oracle
import sparkagg
import sweep

WITHIN_GROUP = sparkagg.spark_minor() != "3.5"
needs_within_group = pytest.mark.skipif(
    not WITHIN_GROUP, reason="Spark 3.5 has no WITHIN GROUP (test_each_ordered_call_runs_or_is_refused checks it)")

# (sparkagg's SQL, DataFusion's SQL) for one call: Spark writes the order WITHIN GROUP, DataFusion inside
# the call. `u` is unique, so every ordering is total and the results are deterministic.
ORDERED = [
    ("array_agg(i) WITHIN GROUP (ORDER BY u)", "array_agg(i ORDER BY u)"),
    ("array_agg(s) WITHIN GROUP (ORDER BY u DESC)", "array_agg(s ORDER BY u DESC)"),
    ("array_agg(d) WITHIN GROUP (ORDER BY b NULLS FIRST, u DESC)", "array_agg(d ORDER BY b NULLS FIRST, u DESC)"),
    ("array_agg(DISTINCT i) WITHIN GROUP (ORDER BY i DESC NULLS LAST)",
     "array_agg(DISTINCT i ORDER BY i DESC NULLS LAST)"),
    ("string_agg(s, '|') WITHIN GROUP (ORDER BY u)", "string_agg(s, '|' ORDER BY u)"),
    ("string_agg(s, ',') WITHIN GROUP (ORDER BY dt DESC NULLS LAST, u)",
     "string_agg(s, ',' ORDER BY dt DESC NULLS LAST, u)"),
    ("first_value(i) WITHIN GROUP (ORDER BY u)", "first_value(i ORDER BY u)"),
    ("first_value(s) WITHIN GROUP (ORDER BY u DESC)", "first_value(s ORDER BY u DESC)"),
    ("first_value(i, true) WITHIN GROUP (ORDER BY u)", "first_value(i ORDER BY u) IGNORE NULLS"),
    ("last_value(m) WITHIN GROUP (ORDER BY u)", "last_value(m ORDER BY u)"),
    ("last_value(d, true) WITHIN GROUP (ORDER BY f NULLS FIRST, u)",
     "last_value(d ORDER BY f NULLS FIRST, u) IGNORE NULLS"),
    ("nth_value(l, 2) WITHIN GROUP (ORDER BY u)", "nth_value(l, 2 ORDER BY u)"),
    ("nth_value(s, -3) WITHIN GROUP (ORDER BY u DESC)", "nth_value(s, -3 ORDER BY u DESC)"),
    ("nth_value(i, 1000) WITHIN GROUP (ORDER BY u)", "nth_value(i, 1000 ORDER BY u)"),
    ("median(DISTINCT i)", "median(DISTINCT i)"),
    ("median(DISTINCT f)", "median(DISTINCT f)"),
    ("median(DISTINCT m)", "median(DISTINCT m)"),
    ("percentile_cont(0.25) WITHIN GROUP (ORDER BY l)", "percentile_cont(0.25) WITHIN GROUP (ORDER BY l)"),
    ("quantile_cont(0.9) WITHIN GROUP (ORDER BY d DESC)", "quantile_cont(0.9) WITHIN GROUP (ORDER BY d DESC)"),
    ("percentile_cont(f, 0.5)", "percentile_cont(f, 0.5)"),
]


def _table(rows: int = 3000) -> pa.Table:
    t = data.table(rows=rows)
    order = list(range(len(t)))
    random.Random(11).shuffle(order)
    return t.append_column("u", pa.array(order, pa.int64()))


def _query(calls: list[str], grouped: bool) -> str:
    cols = ", ".join(calls)
    return f"SELECT k, {cols} FROM t GROUP BY k ORDER BY k NULLS FIRST" if grouped else f"SELECT {cols} FROM t"


def _spark(spark, table: pa.Table, sql: str, partitions: int) -> list[tuple]:
    data.to_spark(spark, table, partitions).createOrReplaceTempView("t")
    return [tuple(r) for r in spark.sql(sql).collect()]


def _ours(calls):
    return ["df_" + c for c in calls]


def _same(a, b, near: float = 0.0) -> bool:
    """oracle.same, element by element inside lists (a list holding NaN is not == to itself); with
    ``near``, numbers within that distance count as the same."""
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if near and isinstance(a, float) and isinstance(b, float) and abs(a - b) <= near:
        return True
    return oracle.same(a, b)


def _same_rows(x: list[tuple], y: list[tuple], near: tuple = ()) -> bool:
    return len(x) == len(y) and all(
        len(r) == len(s) and all(_same(a, b, near[j] if j < len(near) else 0.0) for j, (a, b) in enumerate(zip(r, s)))
        for r, s in zip(x, y))


def _interpolation_slack(table: pa.Table, calls, offset: int) -> tuple:
    """DataFusion 55 truncates percentile_cont's interpolation weight to six decimals (docs/
    deviations.md), which moves a result by at most 1e-6 of the gap between its two values: 1e-6 of the
    column's finite range bounds it. Other calls: none (position j + offset of a row)."""
    slack = [0.0] * (offset + len(calls))
    for j, call in enumerate(calls):
        if call.split("(")[0] in ("percentile_cont", "quantile_cont"):
            column = re.search(r"ORDER BY (\w+)|\((\w+),", call).group(1, 2)
            column = column[0] or column[1]
            finite = [v for v in table[column].to_pylist() if v is not None and math.isfinite(v)]
            slack[offset + j] = 1e-6 * (max(finite) - min(finite))
    return tuple(slack)


def _datafusion(table: pa.Table, calls, grouped: bool) -> list[tuple]:
    """One DataFusion query per call (it refuses different orderings in one aggregate), side by side."""
    columns = [oracle.run(table, _query([c], grouped)) for c in calls]
    keys = [row[:-1] for row in columns[0]]  # (k,) grouped, () global
    return [key + tuple(column[j][-1] for column in columns) for j, key in enumerate(keys)]


@pytest.fixture(scope="module")
def table():
    return _table()


def _expressible():
    """The calls of ORDERED this Spark can parse: all, or on Spark 3.5 the DISTINCT ones."""
    return [c for c in ORDERED if WITHIN_GROUP or "WITHIN GROUP" not in c[0]]


@pytest.mark.slow
def test_each_ordered_call_runs_or_is_refused_naming_it(spark, table):
    for ours, _ in ORDERED:
        query = _query(_ours([ours]), grouped=False)
        if (ours, _) in _expressible():
            assert len(_spark(spark, table, query, 1)) == 1
        else:
            with pytest.raises(AnalysisException) as refused:
                _spark(spark, table, query, 1)
            text = str(refused.value)
            assert f"df_{ours.split('(')[0]}(...) WITHIN GROUP" in text and "needs Spark 4.0" in text, text


@pytest.mark.parametrize("partitions", data.PARTITIONS)
@pytest.mark.parametrize("grouped", [True, False], ids=["grouped", "global"])
def test_ordered_agree_with_datafusion(spark, table, partitions, grouped):
    ours, theirs = zip(*_expressible())
    got = _spark(spark, table, _query(_ours(ours), grouped), partitions)
    expected = _datafusion(table, theirs, grouped)
    assert len(got) == len(expected) > 0
    slack = _interpolation_slack(table, theirs, 1 if grouped else 0)
    checked = 0
    for r_got, r_exp in zip(got, expected):
        assert _same_rows([r_got], [r_exp], slack), [(c, a, b) for c, a, b in zip(("k",) + ours, r_got, r_exp)
                                                     if not _same(a, b)]
        checked += len(ours)
    assert checked == len(got) * len(ours)


@pytest.mark.parametrize("rows", [0, 1], ids=["empty", "one-row"])
def test_ordered_empty_and_one_row(spark, table, rows):
    small = table.filter(pa.compute.is_valid(table["i"])).slice(0, rows)
    ours, theirs = zip(*_expressible())
    for grouped in (True, False):
        got = _spark(spark, small, _query(_ours(ours), grouped), 3)
        expected = _datafusion(small, theirs, grouped)
        assert _same_rows(got, expected), (grouped, got, expected)


# --- t-digest -----------------------------------------------------------------------------------------

TDIGEST = [
    "approx_percentile_cont(x, 0.1)", "approx_percentile_cont(x, 0.5)", "approx_percentile_cont(x, 0.99)",
    "approx_percentile_cont(x, 0.0)", "approx_percentile_cont(x, 1.0)",
    "approx_percentile_cont(i, 0.9, 30)", "approx_percentile_cont(n, 0.25)", "approx_percentile_cont(x, 0.7, 500)",
    "approx_percentile_cont(0.3) WITHIN GROUP (ORDER BY x DESC)",
    "approx_percentile_cont(0.8, 20) WITHIN GROUP (ORDER BY i)",
    "approx_median(x)", "approx_median(i)", "approx_median(n)",
    "approx_percentile_cont_with_weight(i, w, 0.4)",
    "approx_percentile_cont_with_weight(w, 0.6) WITHIN GROUP (ORDER BY i)",
]
if not WITHIN_GROUP:  # Spark 3.5: the calls it parses
    TDIGEST = [c for c in TDIGEST if "WITHIN GROUP" not in c]


def _digest_table(n: int, seed: int = 3) -> pa.Table:
    rnd = random.Random(seed)
    return pa.table({
        "k": pa.array([i % 3 for i in range(n)], pa.int64()),
        "x": pa.array([rnd.gauss(0, 100) if i % 13 else None for i in range(n)], pa.float64()),
        "i": pa.array([rnd.randrange(-10**6, 10**6) for _ in range(n)], pa.int64()),
        "n": pa.array([rnd.randrange(0, 50) if i % 7 else None for i in range(n)], pa.int32()),
        "w": pa.array([rnd.randrange(1, 20) for _ in range(n)], pa.int64()),
    })


def _datafusion_single_partition(t: pa.Table, sql: str) -> list[tuple]:
    """DataFusion on one partition in batches of 8192 rows, its default: the run sparkagg reproduces."""
    ctx = oracle.context(datafusion.SessionConfig().with_target_partitions(1))
    ctx.register_record_batches("t", [t.to_batches(max_chunksize=8192)
                                      or [pa.RecordBatch.from_pylist([], schema=t.schema)]])
    return [tuple(r.values()) for r in ctx.sql(sql).to_arrow_table().to_pylist()]


def _one_partition(spark, t: pa.Table):
    """``t`` as view ``t`` in one Spark partition, rows in order."""
    data.frame(spark, t).coalesce(1).createOrReplaceTempView("t")


@pytest.mark.parametrize("n", [0, 1, 100, 10_000, 50_000])
def test_tdigest_equals_datafusion_on_one_partition(spark, n):
    t = _digest_table(n)
    _one_partition(spark, t)
    got = [tuple(r) for r in spark.sql("SELECT " + ", ".join(_ours(TDIGEST)) + " FROM t").collect()]
    expected = _datafusion_single_partition(t, "SELECT " + ", ".join(TDIGEST) + " FROM t")
    assert got == expected, [(c, a, b) for c, a, b in zip(TDIGEST, got[0], expected[0]) if a != b]


@pytest.mark.parametrize("partitions", [3, sweep.slow(17)])
def test_tdigest_within_one_percent_of_the_true_rank(spark, partitions):
    """Across partitions the digests merge in another order: the estimate's rank stays within 1%."""
    t = _digest_table(60_000, seed=9)
    probes = [0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99]
    calls = ", ".join(f"df_approx_percentile_cont(x, {p})" for p in probes)
    got = _spark(spark, t, f"SELECT k, {calls} FROM t GROUP BY k ORDER BY k", partitions)
    for row in got:
        values = sorted(x for k, x in zip(t["k"].to_pylist(), t["x"].to_pylist()) if k == row[0] and x is not None)
        for p, estimate in zip(probes, row[1:]):
            rank = (bisect.bisect_left(values, estimate) + bisect.bisect_right(values, estimate)) / 2 / len(values)
            assert abs(rank - p) <= 0.01, (row[0], p, estimate, rank)


def test_tdigest_grouped_equals_datafusion_when_each_group_fits_one_batch(spark):
    """Grouped, each group's rows arrive in one batch in both engines: the same digests."""
    t = _digest_table(6_000, seed=4)
    _one_partition(spark, t)
    got = [tuple(r) for r in spark.sql(_query(_ours(TDIGEST), grouped=True)).collect()]
    assert got == _datafusion_single_partition(t, _query(TDIGEST, grouped=True))


# --- bad literal arguments ------------------------------------------------------------------------------

@pytest.mark.parametrize("call, message", [
    ("df_approx_percentile_cont(id, 1.5)", "percentile in [0, 1]"),
    ("df_approx_percentile_cont(id, -0.1)", "percentile in [0, 1]"),
    ("df_approx_percentile_cont(id, id / 10)", "constant percentile"),
    ("df_approx_percentile_cont(id, 0.5, 0)", "max_size"),
    ("df_approx_percentile_cont(id, 0.5, -3)", "max_size"),
    ("df_approx_percentile_cont(id, 0.5, id)", "max_size"),
    ("df_approx_percentile_cont(id, 0.5, 2.5)", "max_size"),
    ("df_approx_percentile_cont_with_weight(id, id, 2)", "percentile in [0, 1]"),
    ("df_approx_median(cast(id AS string))", "numeric"),
    pytest.param("df_approx_percentile_cont(1.2) WITHIN GROUP (ORDER BY id)", "percentile in [0, 1]",
                 marks=needs_within_group),
    pytest.param("df_percentile_cont(1.2) WITHIN GROUP (ORDER BY id)", "[0, 1]", marks=needs_within_group),
    ("df_nth_value(id, 0)", "other than 0"),
    ("df_nth_value(id, 1.5)", "constant integer n"),
    ("df_nth_value(id, id)", "constant integer n"),
    ("df_first_value(id, id > 1)", "constant boolean ignore_nulls"),
    ("df_string_agg(cast(id AS string), cast(id AS string))", "constant string"),
    pytest.param("df_array_agg(id) WITHIN GROUP (ORDER BY named_struct('a', id))", "cannot order by",
                 marks=needs_within_group),
])
def test_bad_literals_are_refused_at_analysis(spark, call, message):
    with pytest.raises(AnalysisException) as refused:
        spark.sql(f"SELECT {call} FROM range(3)").schema
    text = str(refused.value)
    assert message in text and call.split("(")[0] in text, text


def test_within_group_on_an_unordered_function_is_refused(spark):
    with pytest.raises(AnalysisException, match="df_sum"):
        spark.sql("SELECT df_sum(id) WITHIN GROUP (ORDER BY id) FROM range(3)").schema


@needs_within_group
def test_ordered_state_round_trip(spark):
    """The keys travel in the state: merging saved states gives the ordered result, directions included."""
    spark.sql("""SELECT id % 3 AS g, df_array_agg_state(id) WITHIN GROUP (ORDER BY id DESC) AS s,
                        df_first_value_state(id) WITHIN GROUP (ORDER BY id DESC) AS f,
                        df_string_agg_state(cast(id AS string), '-') WITHIN GROUP (ORDER BY id) AS j
                 FROM range(12) GROUP BY id % 3""").createOrReplaceTempView("states")
    row = spark.sql("SELECT df_array_agg_merge(s), df_first_value_merge(f), df_string_agg_merge(j, '-') "
                    "FROM states").collect()[0]
    assert list(row[0]) == list(range(11, -1, -1))
    assert row[1] == 11
    assert row[2] == "-".join(str(i) for i in range(12))


def test_percentile_cont_interpolates_exactly_where_datafusion_truncates_its_weight(spark):
    """percentile_cont(0.3) of {1, 2, 3, 5}: index 0.3 * 3 = 0.9 (0.8999... in doubles), so 1 + 0.9 * (2 - 1)
    = 1.9 by hand and by Spark's percentile_cont; DataFusion 55 truncates the weight to six decimals and
    says 1.899999 (docs/deviations.md). A float column gives a float, as in DataFusion 55."""
    t = pa.table({"x": pa.array([1, 2, 3, 5], pa.int64()), "f": pa.array([1, 2, 3, 5], pa.float32())})
    [(theirs, their_float)] = oracle.run(t, "SELECT percentile_cont(0.3) WITHIN GROUP (ORDER BY x), "
                                            "percentile_cont(f, 0.3) FROM t")
    assert theirs == pytest.approx(1.899999, abs=1e-12) and their_float == pytest.approx(1.899999, rel=1e-7)
    _one_partition(spark, t)
    [row] = spark.sql("SELECT df_percentile_cont(x, 0.3) AS a, percentile_cont(0.3) WITHIN GROUP (ORDER BY x) AS b, "
                      "df_percentile_cont(f, 0.3) AS c FROM t").collect()
    assert row.a == pytest.approx(1.9, abs=1e-12) and row.a == row.b
    assert dict(spark.sql("SELECT df_percentile_cont(f, 0.3) AS c FROM t").dtypes)["c"] == "float"
    assert row.c == pytest.approx(1.9, rel=1e-7)
