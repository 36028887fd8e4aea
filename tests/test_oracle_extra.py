"""mode, skewness, kurtosis, kurtosis_pop, max_by and min_by, from DataFusion's companion crate of extra
aggregates, against DataFusion 55 with datafusion-extra-functions (oracle.py) on the generated table: grouped and
global at 1 / 3 / 17 partitions, on sparkagg's grouped operator and on Spark's own; then hand-worked
groups at the NULL thresholds (too few values, values that do not vary, NaN, infinities), and the
reference model. sparkagg keeps central moments where DataFusion-extra sums powers: equal results on
well-conditioned data, NULL where the values do not vary and its sums cancel into noise (docs/
deviations.md)."""
from __future__ import annotations

import math

import pyarrow as pa
import pytest

import data
import oracle
from sparkagg import reference

FUNCTIONS = ("skewness", "kurtosis", "kurtosis_pop")
CALLS = [f"{fn}({c})" for fn in FUNCTIONS for c in ("i", "l", "f", "d", "m")] + [
    "mode(i % 5)", "mode(l % 3)", "mode(f)", "mode(d)", "mode(s)", "mode(dt)",
    "max_by(i, l)", "max_by(s, f)", "max_by(dt, i)", "min_by(i, l)", "min_by(s, f)"]  # keys without ties
# datafusion-extra-functions 0.5.5's min_by fails ("should not reach here"): its max_by of the negated key.
ORACLE_CALLS = [c.replace("min_by(i, l)", "max_by(i, -l)").replace("min_by(s, f)", "max_by(s, -f)") for c in CALLS]
# Moments merge in the order states arrive, which partitioning changes, and DataFusion-extra sums powers.
FLOAT_REL = 1e-9
# m4 / m2^2 - 3 near 0 loses its digits to the subtraction in any algebra, so near 0 the bar is absolute.
NEAR_ZERO = 1e-12
# Where NaN ties with another most frequent value, DataFusion-extra's choice follows its hash map's order
# (one run says NaN, the next inf): that column is checked against the reference model instead.
HASH_ORDERED = "mode(d)"


def _close(a, b) -> bool:
    return oracle.same(a, b, FLOAT_REL) or (isinstance(a, float) and isinstance(b, float) and abs(a - b) <= NEAR_ZERO)


def _close_rows(got: list[tuple], want: list[tuple]) -> bool:
    return len(got) == len(want) and all(len(r) == len(w) and all(map(_close, r, w)) for r, w in zip(got, want))


def _query(calls, prefix: str, grouped: bool) -> str:
    cols = ", ".join(prefix + c for c in calls)
    return (f"SELECT k, {cols} FROM t GROUP BY k ORDER BY k NULLS FIRST" if grouped
            else f"SELECT {cols} FROM t")


def _spark_rows(spark, table: pa.Table, sql: str, partitions: int, operator: bool = True) -> list[tuple]:
    spark.conf.set("spark.sparkagg.groups.enabled", str(operator).lower())
    try:
        data.to_spark(spark, table, partitions).createOrReplaceTempView("t")
        return [tuple(r) for r in spark.sql(sql).collect()]
    finally:
        spark.conf.unset("spark.sparkagg.groups.enabled")


@pytest.fixture(scope="module")
def table():
    return data.table()


@pytest.fixture(scope="module")
def expected(table):
    return {grouped: oracle.run(table, _query(ORACLE_CALLS, "", grouped)) for grouped in (True, False)}


@pytest.mark.parametrize("operator", [True, False], ids=["operator", "spark-aggregate"])
@pytest.mark.parametrize("partitions", data.PARTITIONS)
@pytest.mark.parametrize("grouped", [True, False], ids=["grouped", "global"])
def test_agrees_with_datafusion_extra(spark, table, expected, grouped, partitions, operator):
    got = _spark_rows(spark, table, _query(CALLS, "df_", grouped), partitions, operator)
    want = expected[grouped]
    assert len(got) == len(want) > 0
    modes = reference.drivers.aggregate("mode", [pa.float64()], [table["d"].combine_chunks()],
                                        keys=table["k"].combine_chunks() if grouped else None)
    offset, at = int(grouped), CALLS.index(HASH_ORDERED)
    values = 0
    for r_got, r_want in zip(got, want):
        key = r_got[0] if grouped else None
        r_want = r_want[:offset + at] + (modes[key],) + r_want[offset + at + 1:]
        assert _close_rows([r_got], [r_want]), (r_got, r_want)
        values += sum(isinstance(v, float) and not math.isnan(v) for v in r_got)
    assert values > len(got) * len(CALLS) // 2  # most cells are numbers, not NULL or NaN


SMALL = [  # (group, values): the thresholds each function has
    (1, []), (2, [4.0]), (3, [1.0, 2.0]), (4, [1.0, 2.0, 4.0]), (5, [1.0, 2.0, 2.0, 3.0]),
    (6, [1.0, 2.0, 2.0, 3.0, 10.0]), (7, [5.0] * 5), (8, [0.1] * 6), (9, [1.0, float("nan"), 2.0, 3.0, 4.0]),
    (10, [1.0, float("inf"), 2.0, 3.0, 4.0]), (11, [-1e6, 3.5, 7.25, 1e6, 12.0, -0.0]),
]


def _small() -> pa.Table:
    keys, xs = [], []
    for k, values in SMALL:
        keys += [k] * (len(values) + 1)
        xs += values + [None]  # a NULL in every group, skipped
    return pa.table({"k": pa.array(keys, pa.int64()), "x": pa.array(xs, pa.float64())})


@pytest.mark.parametrize("partitions", [1, 3])
def test_thresholds_and_special_values_agree_with_datafusion_extra(spark, partitions):
    t = _small()
    calls = [f"{fn}(x)" for fn in FUNCTIONS]
    want = oracle.run(t, _query(calls, "", True))
    got = _spark_rows(spark, t, _query(calls, "df_", True), partitions)
    by_group = {r[0]: r[1:] for r in got}
    # Six 0.1s do not vary: NULL. DataFusion-extra's sums of powers cancel into noise there (docs/
    # deviations.md); every other group is its result.
    assert by_group[8] == (None, None, None)
    assert next(r for r in want if r[0] == 8)[1:] != (None, None, None)
    assert _close_rows([r for r in got if r[0] != 8], [r for r in want if r[0] != 8]), (got, want)
    assert by_group[2] == (None, None, None)  # one value: too few, and no variation
    assert by_group[3] == (None, None, -2.0)  # [1, 2]: m2 = 1/4, m4 = 1/16, so m4 / m2^2 - 3 = -2
    assert by_group[4][0] is not None and by_group[4][1] is None  # skewness from three, kurtosis from four
    assert by_group[7] == (None, None, None)  # values that do not vary
    for group in (6, 11):
        for fn, value, want in zip(FUNCTIONS, by_group[group], _textbook(dict(SMALL)[group])):
            assert _close(value, want), (group, fn, value, want)


def _textbook(values: list[float]) -> tuple[float, float, float]:
    """skewness, kurtosis and kurtosis_pop from the central moments, taken in two passes."""
    n = len(values)
    mean = sum(values) / n
    m2, m3, m4 = (sum((v - mean) ** p for v in values) / n for p in (2, 3, 4))
    excess_pop = m4 / m2 ** 2 - 3
    return (math.sqrt(n * (n - 1)) / (n - 2) * m3 / m2 ** 1.5,
            (n - 1) / ((n - 2) * (n - 3)) * ((n + 1) * excess_pop + 6), excess_pop)


def test_reference_model_gives_the_textbook_values():
    """[1, 2, 2, 3, 10] worked by hand: mean 3.6, n*m2 = 53.2, n*m3 = 236.16, n*m4 = 1736.656."""
    m2, m3, m4 = 53.2 / 5, 236.16 / 5, 1736.656 / 5
    hand = (math.sqrt(20) / 3 * m3 / m2 ** 1.5, 4 / 6 * (6 * (m4 / m2 ** 2 - 3) + 6), m4 / m2 ** 2 - 3)
    values = [1.0, 2.0, 2.0, 3.0, 10.0]
    for fn, want, textbook in zip(FUNCTIONS, hand, _textbook(values)):
        assert math.isclose(want, textbook, rel_tol=1e-12)
        acc = reference.get(fn)([pa.float64()])
        acc.update_batch([pa.array(values)])
        assert math.isclose(acc.evaluate(), want, rel_tol=1e-12), fn


@pytest.mark.parametrize("fn", FUNCTIONS)
def test_reference_model_agrees_with_spark(spark, table, fn):
    got = {r[0]: r[1] for r in _spark_rows(spark, table, f"SELECT k, df_{fn}(f) FROM t GROUP BY k", 3)}
    want = reference.drivers.aggregate(fn, [pa.float64()], [table["f"].combine_chunks()],
                                       keys=table["k"].combine_chunks(), partitions=3)
    assert got.keys() == want.keys() and all(oracle.same(got[k], want[k], FLOAT_REL) for k in got)


def test_bad_argument_is_an_analysis_error_naming_the_function(spark):
    from pyspark.errors import AnalysisException
    for fn in FUNCTIONS:
        with pytest.raises(AnalysisException, match=f"df_{fn}"):
            spark.sql(f"SELECT df_{fn}('a')").collect()


def test_mode_ties_nulls_and_floats(spark):
    """Worked by hand: the smallest of equally frequent values; NULLs skipped; -0.0 and 0.0 counted apart."""
    rows = spark.sql(
        "SELECT df_mode(x), df_mode(s), df_mode(d), df_mode(n) FROM VALUES "
        "(9, 'b', 0.0D, CAST(NULL AS INT)), (9, 'a', -0.0D, NULL), (5, 'a', -0.0D, NULL), (5, 'b', 0.0D, NULL), "
        "(1, NULL, 0.0D, NULL), (NULL, NULL, double('NaN'), NULL) AS t(x, s, d, n)").collect()
    assert tuple(rows[0]) == (5, "a", 0.0, None)
    assert str(rows[0][2]) == "0.0"  # 0.0 three times, -0.0 twice
    want = oracle.run(pa.table({"x": pa.array([9, 9, 5, 5, 1, None], pa.int64())}), "SELECT mode(x) FROM t")
    assert want == [(5,)]


def test_max_by_min_by_worked_by_hand(spark):
    """The largest y's x even when that x is NULL; NULL ys skipped, and all-NULL ys give NULL; NaN the
    greatest y; of equal ys the first row (one partition here, so the first is defined)."""
    t = pa.table({"x": ["a", "b", None, "d"], "y": [5, None, 7, 1], "z": [1, 3, 3, 2],
                  "w": [2.0, float("nan"), -1.0, -1.0], "n": pa.nulls(4, pa.int64())})
    calls = ["max_by(x, y)", "min_by(x, y)", "max_by(x, z)", "max_by(x, w)", "max_by(x, n)"]
    rows = ("('a', 5, 1, 2.0D, CAST(NULL AS BIGINT)), ('b', NULL, 3, double('NaN'), NULL), "
            "(NULL, 7, 3, -1.0D, NULL), ('d', 1, 2, -1.0D, NULL)")
    got = spark.sql(f"SELECT {', '.join('df_' + c for c in calls)} FROM VALUES {rows} AS t(x, y, z, w, n)").collect()
    assert [tuple(r) for r in got] == [(None, "d", "b", "b", None)]
    want = oracle.run(t, _query([c for c in calls if not c.startswith("min_by")], "", False))
    assert want == [(None, "b", "b", None)]


@pytest.mark.parametrize("partitions", [1, 3])
def test_any_value_is_a_non_null_value_of_its_group_as_in_datafusion_55(spark, table, partitions):
    """Which value is DataFusion's choice and Spark's arrival order: the checks are that it is one of the
    group's non-NULL values, and NULL exactly where the group has none (every s NULL in the all-NULL
    column), in both engines."""
    t = table.append_column("none", pa.nulls(table.num_rows, pa.string()))
    sql = "SELECT k, {p}any_value(s), {p}any_value(none) FROM t GROUP BY k"
    got = {r[0]: r[1:] for r in _spark_rows(spark, t, sql.format(p="df_"), partitions)}
    want = oracle.run(t, sql.format(p=""))
    want = {r[0]: r[1:] for r in want}
    assert got.keys() == want.keys()
    for k, (some, none) in got.items():
        rows = t.filter(pa.compute.is_null(t["k"]) if k is None else pa.compute.equal(t["k"], k))
        values = set(rows["s"].drop_null().to_pylist())
        assert values and some in values and want[k][0] in values, k
        assert none is None and want[k][1] is None
