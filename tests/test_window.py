"""Sliding windows through PySpark: sparkagg's window operator against the reference model's
sliding-window driver, on the same generated data (NULLs, NaN, +-inf, decimals)."""
from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import data
import oracle
from sparkagg import reference

CALLS = ["avg(d)", "sum(l)", "sum(m)", "count(i)", "min(s)", "max(d)", "var_pop(f)", "bit_xor(i)",
         "bool_or(b)", "corr(f, i)", "regr_slope(f, l)", "skewness(f)", "kurtosis(i)", "kurtosis_pop(d)",
         "mode(s)", "mode(i)", "median(d)", "median(i)", "median(m)", "first_value(s)", "last_value(d)",
         "max_by(s, f)", "min_by(i, l)", "any_value(s)"]
FRAMES = [(3, 0), (10, 2), (0, 5), (40, 40)]


@pytest.fixture(scope="module")
def table():
    t = data.table(rows=1200, groups=5, seed=11)
    return t.append_column("o", pa.array(range(t.num_rows), pa.int64()))


@pytest.mark.parametrize("preceding,following", FRAMES)
def test_sliding_frames_match_the_reference_driver(spark, table, preceding, following):
    frame = f"ROWS BETWEEN {preceding} PRECEDING AND {following} FOLLOWING"
    cols = ", ".join(f"df_{c} OVER (PARTITION BY k ORDER BY o {frame})" for c in CALLS)
    data.to_spark(spark, table, 3).createOrReplaceTempView("t")
    got = {r[1]: tuple(r[2:]) for r in spark.sql(f"SELECT k, o, {cols} FROM t").collect()}
    checked = 0
    for key in pc.unique(table["k"]).to_pylist():
        part = table.filter(pc.is_null(table["k"]) if key is None else pc.equal(table["k"], key)).sort_by("o")
        expected = []
        for call in CALLS:
            fn, args = call[:-1].split("(")
            names = [a.strip() for a in args.split(",")]
            expected.append(reference.drivers.sliding(fn, [part[n].type for n in names],
                                                      [part[n].combine_chunks() for n in names], preceding, following))
        for j, o in enumerate(part["o"].to_pylist()):
            for c, call in enumerate(CALLS):
                assert oracle.same(got[o][c], expected[c][j], rel=1e-6), (call, key, o, got[o][c], expected[c][j])
                checked += 1
    assert checked == table.num_rows * len(CALLS)


def test_count_distinct_over_a_sliding_frame(spark):
    rows = spark.sql("SELECT df_count(DISTINCT x) OVER (ORDER BY i ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) "
                     "FROM VALUES (1, 'a'), (2, 'b'), (3, 'a'), (4, NULL), (5, 'c'), (6, 'c') AS t(i, x) "
                     "ORDER BY i").collect()
    assert [r[0] for r in rows] == [1, 2, 2, 2, 2, 1]


@pytest.mark.parametrize("preceding,following", FRAMES)
def test_order_statistics_over_sliding_frames_match_datafusion(spark, table, preceding, following):
    """median and percentile_cont slide in DataFusion 55 too: the same frames there (p = 0.25 keeps the
    interpolation weight exact in DataFusion's six decimals)."""
    calls = ["median(d)", "median(i)", "median(f)", "percentile_cont(d, 0.25)"]
    frame = f"ROWS BETWEEN {preceding} PRECEDING AND {following} FOLLOWING"

    def query(prefix: str) -> str:
        cols = ", ".join(f"{prefix}{c} OVER (PARTITION BY k ORDER BY o {frame})" for c in calls)
        return f"SELECT o, {cols} FROM t ORDER BY o"

    data.to_spark(spark, table, 3).createOrReplaceTempView("t")
    got = [tuple(r) for r in spark.sql(query("df_")).collect()]
    want = oracle.run(table, query(""))
    assert len(got) == len(want) == table.num_rows
    for g, w in zip(got, want):
        assert g[0] == w[0] and all(oracle.same(a, b) for a, b in zip(g[1:], w[1:])), (g, w)
