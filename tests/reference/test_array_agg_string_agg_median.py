"""Tests of the reference model's collection aggregates (python/sparkagg/reference/array_agg.py,
string_agg.py, median.py): array_agg, string_agg and median, unordered and non-DISTINCT.

Evidence, as in the other reference tests: hand-worked values; type rules and DataFusion's state
fields; agreement with DataFusion 55 (the ``datafusion`` package) grouped and global through the
multi-phase drivers at 1, 3 and 17 partitions; and properties (partitioning, retract versus
recompute). array_agg's element order and string_agg's piece order are not defined across
partitions, so those results are compared as multisets (of elements, of pieces between delimiters).
Where the model departs from DataFusion 55 on purpose, a test names it and checks both sides.
"""
from __future__ import annotations

import math
import struct
from collections import Counter
from decimal import Decimal as D
from typing import Any

import datafusion
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sweep
from sparkagg import reference
from sparkagg.reference import aggregate, aggregate_groups, sliding

NAN, INF = math.nan, math.inf
F64 = pa.float64()
PARTITIONS = (1, 3, 17)
DELIMITER = ", "
STRING_AGG = reference.get("string_agg").bind(delimiter=DELIMITER)
NEG_NAN = struct.unpack("<d", struct.pack("<Q", 0xFFF8000000000000))[0]  # a NaN with the sign bit set


# --- helpers ---------------------------------------------------------------------------------

def df_run(table: pa.Table, sql: str) -> list[dict]:
    """Rows of ``sql`` over ``table`` registered as ``t`` in DataFusion 55."""
    ctx = datafusion.SessionContext()
    batches = table.to_batches() or [pa.RecordBatch.from_pylist([], schema=table.schema)]
    ctx.register_record_batches("t", [batches])
    return ctx.sql(sql).to_arrow_table().to_pylist()


def df_type(table: pa.Table, select: str) -> pa.DataType:
    ctx = datafusion.SessionContext()
    ctx.register_record_batches("t", [table.to_batches() or [pa.RecordBatch.from_pylist([], schema=table.schema)]])
    return ctx.sql(f"SELECT {select} AS r FROM t").to_arrow_table().schema.field("r").type


def element(v: Any) -> tuple:
    """A hashable, exact identity of a value: floats by repr (NaN is one value, -0.0 is not 0.0),
    decimals with their scale."""
    if v is None:
        return ("null",)
    if isinstance(v, float):
        return ("float", repr(v))
    if isinstance(v, D):
        return ("decimal", str(v))
    return (type(v).__name__, v)


def as_multiset(value: Any, function: str) -> Any:
    """array_agg's list as a multiset of elements, string_agg's string as a multiset of pieces."""
    if value is None:
        return None
    if function == "array_agg":
        return Counter(element(v) for v in value)
    return Counter(value.split(DELIMITER))


def exact(a: Any, b: Any) -> bool:
    """Equal values of equal types: floats bit for bit apart from NaN's payload, decimals with scale."""
    return element(a) == element(b)


def evaluate(function: Any, types: list, columns: list) -> Any:
    """``function`` over ``columns`` in one accumulator, one batch."""
    acc = reference.get(function)(types)
    acc.update_batch([pa.array(c, t) for c, t in zip(columns, types)])
    return acc.evaluate()


def keys_for(n: int) -> list:
    """Group keys 0, 1, 2 and a NULL key, cycling."""
    return [(0, 1, 2, None)[i % 4] for i in range(n)]


# --- datasets --------------------------------------------------------------------------------

NUMERIC: dict[str, tuple[pa.DataType, list]] = {
    "int64": (pa.int64(), [5, -3, None, 12, 7, 0, 2**40, -(2**40) + 3, 9, 1, 1, -8, 100, None, 42, 6]),
    "int64_negative": (pa.int64(), [-1, -2, -5, -6, None, -7, -10, -3, -4, -11, -2, -9]),
    "int64_mixed_sign": (pa.int64(), [-3, 4, 3, -4, -1, 2, 1, -2, None, 7, -8]),
    "int8": (pa.int8(), [-128, 127, -1, None, 5, 0, -7, 3, -2, 1]),
    "uint64": (pa.uint64(), [2**63, 5, 0, None, 17, 2**40, 3]),
    "double": (F64, [1.5, None, -2.25, 0.1, 1e10, 3.0, -0.5, 2.0, None, 7.25, 0.3, -1e-3, 4.0, 6.5]),
    "double_special": (F64, [1.5, NAN, None, -2.0, INF, -INF, 3.25, NAN, -0.0, 0.0, 2.0, -0.0, 0.5]),
    "double_inf": (F64, [1.0, INF, None, 2.5, -3.0, 4.0, -INF, -INF]),
    "double_zeros": (F64, [-0.0, 0.0, -0.0, None, 0.0, -0.0, -0.0, 0.0]),
    "float32": (pa.float32(), [1.5, None, -2.25, 0.1, 3.0, 0.7, 1e30, -5.5]),
    "decimal": (pa.decimal128(10, 2), [D("1.00"), D("2.01"), D("-0.01"), None, D("-7.35"), D("12345678.99"),
                                       D("0.01"), D("-0.03"), D("0.02"), D("-2.01")]),
    "decimal_negative": (pa.decimal128(5, 3), [D("-0.001"), D("-0.002"), D("-1.005"), None, D("-1.010"),
                                               D("-0.003"), D("-0.004")]),
    "one_row": (pa.int64(), [42]),
    "two_rows": (pa.int64(), [1, 2]),
    "empty": (F64, []),
    "all_null": (pa.int64(), [None, None, None]),
}

STRINGS: dict[str, tuple[pa.DataType, list]] = {
    "string": (pa.string(), ["a", None, "bb", "", "é", "a", None, "ccc", "d", "e e", "f", None, "gg"]),
    "large_string": (pa.large_string(), ["x", "y", None, "z", "", "w"]),
    "string_one_row": (pa.string(), ["only"]),
    "string_empty_piece": (pa.string(), ["", None]),
    "string_empty": (pa.string(), []),
    "string_all_null": (pa.string(), [None, None, None, None]),
}

# array_agg takes any type: the numeric and string sets, and a few more.
ANY = {**NUMERIC, **STRINGS,
       "bool": (pa.bool_(), [True, None, False, True]),
       "binary": (pa.binary(), [b"\x00", None, b"ab"])}


# --- type rules and state fields -------------------------------------------------------------

@pytest.mark.parametrize("t", [pa.int64(), pa.int8(), pa.uint32(), F64, pa.float32(), pa.decimal128(10, 2),
                               pa.decimal128(38, 10), pa.string(), pa.bool_(), pa.date32()])
def test_array_agg_types(t):
    f = reference.get("array_agg")
    assert f.return_type([t]) == pa.list_(t)
    assert f.state_fields([t]) == [("array_agg", pa.list_(t))]
    assert f.return_type([t]).value_field.nullable  # elements nullable: array_agg keeps NULLs
    table = pa.table({"x": pa.array([], t)})
    assert df_type(table, "array_agg(x)") == pa.list_(t)


@pytest.mark.parametrize("t", [pa.int64(), pa.int8(), pa.uint8(), pa.uint64(), F64, pa.float32(),
                               pa.decimal128(10, 2), pa.decimal128(38, 10)])
def test_median_types(t):
    f = reference.get("median")
    want = F64 if pa.types.is_integer(t) else t  # integers are read as doubles (DataFusion 51 on)
    assert f.return_type([t]) == want
    assert f.state_fields([t]) == [("median", pa.list_(want))]
    assert df_type(pa.table({"x": pa.array([], t)}), "median(x)") == want


@pytest.mark.parametrize("types", [[pa.string()], [pa.string(), pa.string()], [pa.large_string(), pa.null()],
                                   [pa.string_view(), pa.large_string()], [pa.int64(), pa.string()]])
def test_string_agg_types(types):
    for f in (reference.get("string_agg"), STRING_AGG):
        assert f.return_type(types) == pa.large_string()
        assert f.state_fields(types) == [("string_agg", pa.large_string())]
    assert df_type(pa.table({"x": pa.array(["a"], types[0] if _is_str(types[0]) else pa.string())}),
                   "string_agg(x, ',')") == pa.large_string()


def _is_str(t):
    return pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t)


@pytest.mark.parametrize("function,types", [
    ("median", [pa.string()]), ("median", [pa.bool_()]), ("median", [pa.date32()]), ("median", []),
    ("median", [F64, F64]), ("array_agg", []), ("array_agg", [F64, F64]), ("string_agg", [F64, pa.string()]),
    ("string_agg", [pa.string(), pa.int64()]), ("string_agg", []), ("string_agg", [pa.string()] * 3),
])
def test_unsupported_arguments(function, types):
    with pytest.raises(TypeError):
        reference.get(function).return_type(types)


def test_registry_and_groups():
    for name in ("array_agg", "string_agg", "median"):
        f = reference.get(name)
        assert name in reference.names() and f.name == name
        assert f.groups_accumulator is None  # no native one: the adapter
        types = [pa.string()] if name == "string_agg" else [pa.int64()]
        acc = (STRING_AGG if name == "string_agg" else f).groups(types)
        assert isinstance(acc, reference.GroupsAccumulatorAdapter)
        assert acc.return_type == f.return_type(types) and acc.state_fields == f.state_fields(types)
    assert repr(STRING_AGG) == "AggregateFunction('string_agg', delimiter=', ')"
    assert reference.get(STRING_AGG) is STRING_AGG
    assert not reference.get("array_agg")([F64]).supports_retract_batch()
    assert not STRING_AGG([pa.string()]).supports_retract_batch()
    assert reference.get("median")([F64]).supports_retract_batch()


# --- hand-worked values ----------------------------------------------------------------------

def test_array_agg_values():
    assert evaluate("array_agg", [pa.int64()], [[1, None, 2]]) == [1, None, 2]
    assert evaluate("array_agg", [pa.int64()], [[]]) is None  # NULL, not []
    assert evaluate("array_agg", [pa.int64()], [[None, None]]) == [None, None]
    assert evaluate("array_agg", [pa.string()], [["a", None, ""]]) == ["a", None, ""]
    out = evaluate("array_agg", [F64], [[NAN, -0.0, INF]])
    assert math.isnan(out[0]) and repr(out[1]) == "-0.0" and out[2] == INF


def test_array_agg_state_and_merge():
    a, b, final = (reference.get("array_agg")([pa.int64()]) for _ in range(3))
    a.update_batch([pa.array([1, None], pa.int64())])
    assert a.state() == [[1, None]] and b.state() == [None]  # an empty state is a NULL list
    final.merge_batch([pa.array([b.state()[0], a.state()[0], None, [3]], pa.list_(pa.int64()))])
    assert final.evaluate() == [1, None, 3]
    final.merge_batch([pa.array([[]], pa.list_(pa.int64()))])
    assert final.evaluate() == [1, None, 3]


def test_string_agg_values():
    assert evaluate(STRING_AGG, [pa.string()], [["a", None, "b"]]) == "a, b"
    assert evaluate(STRING_AGG, [pa.string()], [[]]) is None
    assert evaluate(STRING_AGG, [pa.string()], [[None, None]]) is None
    assert evaluate(STRING_AGG, [pa.string()], [["", None]]) == ""
    assert evaluate(STRING_AGG, [pa.string()], [["", ""]]) == ", "
    assert evaluate(STRING_AGG, [pa.int64()], [[1, None, -2]]) == "1, -2"
    # SQL's two arguments: the delimiter column is the bound literal on every row.
    assert evaluate(STRING_AGG, [pa.string(), pa.string()], [["a", "b"], [DELIMITER] * 2]) == "a, b"
    joined = reference.get("string_agg").bind(delimiter=None)  # a NULL delimiter joins with ""
    assert evaluate(joined, [pa.string(), pa.null()], [["a", "b"], [None, None]]) == "ab"


def test_string_agg_delimiter_is_bound():
    with pytest.raises(TypeError, match="bind"):
        reference.get("string_agg")([pa.string()])
    with pytest.raises(TypeError):
        reference.get("string_agg").bind(delimiter=1)([pa.string()])
    with pytest.raises(ValueError, match="constant"):
        evaluate(STRING_AGG, [pa.string(), pa.string()], [["a", "b"], [DELIMITER, ";"]])


def test_string_agg_state_and_merge():
    a, b, final = (STRING_AGG([pa.string()]) for _ in range(3))
    a.update_batch([pa.array(["x", None, "y"])])
    assert a.state() == ["x, y"] and b.state() == [None]
    final.merge_batch([pa.array(["x, y", None, "", "z"], pa.large_string())])
    assert final.evaluate() == "x, y, , z"  # an empty-string state is a value; NULL is not


@pytest.mark.parametrize("t,values,expected", [
    # integers are read as doubles (DataFusion 55): the two middle values averaged, not truncated
    (pa.int64(), [1, 2], 1.5),
    (pa.int64(), [-1, -2], -1.5),
    (pa.int64(), [-5, -6], -5.5),
    (pa.int64(), [-3, 4], 0.5),
    (pa.int64(), [3, -4], -0.5),
    (pa.int64(), [1, 2, 3, 4], 2.5),
    (pa.int64(), [-1, -2, -3, -4], -2.5),
    (pa.int64(), [4, None, 1, 3], 3.0),
    (pa.int64(), [5], 5.0),
    (pa.int64(), [], None),
    (pa.int64(), [None, None], None),
    (pa.int8(), [1, 2], 1.5),
    (pa.uint8(), [3, 4], 3.5),
    (pa.int8(), [127, 126], 126.5),  # no overflow: the sum is a double's
    (pa.int64(), [2**63 - 1, 2**63 - 2], 2.0**63),  # both round to the double 2^63
    (pa.decimal128(10, 2), [D("0.01"), D("0.02")], D("0.01")),
    (pa.decimal128(10, 2), [D("-0.01"), D("-0.02")], D("-0.01")),
    (pa.decimal128(10, 2), [D("1.00"), D("2.01")], D("1.50")),
    (pa.decimal128(10, 2), [D("-1.00"), D("-2.01")], D("-1.50")),
    (pa.decimal128(10, 2), [D("-0.01"), D("0.04")], D("0.01")),
    (pa.decimal128(10, 2), [D("7.00")], D("7.00")),
    (F64, [1.0, 2.0], 1.5),
    (F64, [1.0, NAN], NAN),  # NaN is the greatest: (1 + NaN) / 2
    (F64, [NAN, 2.0, 3.0], 3.0),
    (F64, [NAN, NAN, 1.0], NAN),
    (F64, [INF, -INF], NAN),
    (F64, [1.0, INF], INF),
    (F64, [-0.0, 0.0], 0.0),
    (F64, [0.0, -0.0, -0.0], -0.0),
    (F64, [-0.0, 0.0, 0.0], 0.0),
    (F64, [-0.0], -0.0),
    (F64, [1.7e308, 1.7e308], INF),  # (lo + hi) / 2 in double, as DataFusion
    (F64, [None, 1.0, NAN, 2.0, 3.0], 2.5),
    (pa.float32(), [1.5, 2.5], 2.0),
    (pa.float32(), [0.1, 0.2], float(struct.unpack("<f", struct.pack("<f", 0.15000000223517418))[0])),
    (pa.float32(), [3e38, 3e38], INF),
])
def test_median_values(t, values, expected):
    assert exact(evaluate("median", [t], [values]), expected)


def test_median_state_and_merge():
    a, b, final = (reference.get("median")([pa.int64()]) for _ in range(3))
    a.update_batch([pa.array([3, None, 1], pa.int64())])
    assert a.state() == [[3.0, 1.0]] and b.state() == [[]]
    final.merge_batch([pa.array([a.state()[0], b.state()[0], None, [10.0, 2.0]], pa.list_(F64))])
    assert final.evaluate() == 2.5  # {1, 2, 3, 10}: (2 + 3) / 2
    final.retract_batch([pa.array([10, None], pa.int64())])
    assert final.evaluate() == 2.0
    with pytest.raises(ValueError):
        final.retract_batch([pa.array([99], pa.int64())])


# --- deviations from DataFusion 55, named ----------------------------------------------------

def test_median_negative_nan_is_greatest_where_datafusion_orders_it_least():
    values = [NEG_NAN, 1.0, 2.0]
    assert evaluate("median", [F64], [values]) == 2.0  # [1, 2, NaN]
    assert df_run(pa.table({"x": pa.array(values)}), "SELECT median(x) AS m FROM t") == [{"m": 1.0}]  # [-NaN, 1, 2]


def test_state_fields_are_datafusion_55s():
    """The plan's schema shows DataFusion 55's states, which the model's are: string_agg a LargeUtf8
    (DataFusion 50 still planned array_agg's list), median a list of doubles for an integer column."""
    ctx = datafusion.SessionContext(datafusion.SessionConfig().with_target_partitions(2))
    batch = pa.RecordBatch.from_pydict({"k": [1], "s": ["a"]})
    ctx.register_record_batches("t", [[batch], [batch]])  # two partitions: a Partial and a Final phase
    ctx.sql("SET datafusion.explain.show_schema = true")
    plan = "\n".join(r["plan"] for r in ctx.sql(
        "EXPLAIN SELECT k, string_agg(s, ','), array_agg(s), median(k) FROM t GROUP BY k").to_arrow_table().to_pylist())
    assert 'string_agg(t.s,Utf8(","))[string_agg]:LargeUtf8' in plan
    assert 'array_agg(t.s)[array_agg]:List(Utf8)' in plan
    assert 'median(t.k)[median]:List(Float64)' in plan
    for name, t, state in (("string_agg", pa.string(), pa.large_string()),
                           ("array_agg", pa.string(), pa.list_(pa.string())), ("median", pa.int64(), pa.list_(F64))):
        f = STRING_AGG if name == "string_agg" else reference.get(name)
        assert f.state_fields([t]) == [(name, state)]


# --- agreement with DataFusion 55 -------------------------------------------------------------

def _cases() -> list[tuple[str, str]]:
    cases = [("median", n) for n in NUMERIC]
    cases += [("array_agg", n) for n in ANY]
    cases += [("string_agg", n) for n in STRINGS]
    cases += [("string_agg", "int64"), ("string_agg", "all_null")]
    return cases


def _comparable(function: str, value: Any) -> Any:
    if function == "median":
        return element(value)
    return as_multiset(value, function)


def _sql_call(function: str) -> str:
    return f"string_agg(x, '{DELIMITER}')" if function == "string_agg" else f"{function}(x)"


def _model(function: str):
    return STRING_AGG if function == "string_agg" else function


@pytest.mark.parametrize("function,dataset", _cases())
@pytest.mark.parametrize("partitions", PARTITIONS)
def test_oracle_global(function, dataset, partitions):
    t, values = ANY[dataset]
    column = pa.array(values, t)
    [row] = df_run(pa.table({"x": column}), f"SELECT {_sql_call(function)} AS r FROM t")
    expected = _comparable(function, row["r"])
    for seed in range(3):
        got = aggregate(_model(function), [t], [column], partitions=partitions, seed=seed)
        assert list(got) == [None] and _comparable(function, got[None]) == expected, (seed, got)
        got = aggregate_groups(_model(function), [t], [column], partitions=partitions, seed=seed)
        assert _comparable(function, got[None]) == expected, (seed, got)


@pytest.mark.parametrize("function,dataset", _cases())
@pytest.mark.parametrize("partitions", PARTITIONS)
def test_oracle_grouped(function, dataset, partitions):
    t, values = ANY[dataset]
    column = pa.array(values, t)
    keys = pa.array(keys_for(len(values)), pa.int64())
    rows = df_run(pa.table({"k": keys, "x": column}), f"SELECT k, {_sql_call(function)} AS r FROM t GROUP BY k")
    expected = {r["k"]: _comparable(function, r["r"]) for r in rows}
    for seed in range(3):
        for got in (aggregate(_model(function), [t], [column], keys=keys, partitions=partitions, seed=seed),
                    aggregate_groups(_model(function), [t], [column], keys=keys, partitions=partitions, seed=seed)):
            assert {k: _comparable(function, v) for k, v in got.items()} == expected, (seed, got)


@pytest.mark.parametrize("partitions", PARTITIONS)
def test_oracle_string_agg_two_arguments_and_null_delimiter(partitions):
    t, values = STRINGS["string"]
    column = pa.array(values, t)
    keys = pa.array(keys_for(len(values)), pa.int64())
    table = pa.table({"k": keys, "x": column})
    rows = df_run(table, "SELECT k, string_agg(x, ';') AS a, string_agg(x, NULL) AS b FROM t GROUP BY k")
    semi = reference.get("string_agg").bind(delimiter=";")
    joined = reference.get("string_agg").bind(delimiter=None)
    got_a = aggregate_groups(semi, [t, pa.string()], [column, pa.array([";"] * len(values))], keys=keys,
                             partitions=partitions)
    got_b = aggregate(joined, [t, pa.null()], [column, pa.nulls(len(values))], keys=keys, partitions=partitions)
    for r in rows:
        assert Counter(got_a[r["k"]].split(";")) == Counter(r["a"].split(";"))
        assert sorted(got_b[r["k"]]) == sorted(r["b"])  # joined with "": compare the characters


def test_oracle_empty_and_filtered_groups():
    """A global aggregate over no rows is one row of NULLs; a grouped one has no rows."""
    table = pa.table({"k": pa.array([1, 2], pa.int64()), "x": pa.array([None, 1], pa.int64()),
                      "s": pa.array(["a", None])})
    sql = "SELECT array_agg(x) a, median(x) m, string_agg(s, ',') s FROM t WHERE k > 5"
    assert df_run(table, sql) == [{"a": None, "m": None, "s": None}]
    assert df_run(table, sql.replace("SELECT", "SELECT k,") + " GROUP BY k") == []
    empty = pa.array([], pa.int64())
    for name in ("array_agg", "median"):
        assert aggregate(name, [pa.int64()], [empty], partitions=3) == {None: None}
        assert aggregate(name, [pa.int64()], [empty], keys=empty, partitions=3) == {}
    assert aggregate(STRING_AGG, [pa.string()], [pa.array([], pa.string())], partitions=3) == {None: None}
    # a group whose only values are NULL: array_agg keeps them, string_agg and median are NULL
    table = pa.table({"k": [1, 1, 2], "x": pa.array([None, None, "a"])})
    assert df_run(table, "SELECT k, array_agg(x) a, string_agg(x, ',') s FROM t GROUP BY k ORDER BY k") == [
        {"k": 1, "a": [None, None], "s": None}, {"k": 2, "a": ["a"], "s": "a"}]


# --- properties --------------------------------------------------------------------------------

FLOATS = st.one_of(st.none(), st.integers(-40, 40).map(lambda i: i / 4),
                   st.sampled_from([NAN, INF, -INF, -0.0, 0.0]))
INTS = st.one_of(st.none(), st.integers(-(2**62), 2**62))
DECIMALS = st.one_of(st.none(), st.integers(-(10**6), 10**6).map(lambda i: D(i).scaleb(-3)))


@settings(max_examples=sweep.examples(60), deadline=None)
@given(st.sampled_from([(F64, FLOATS), (pa.int64(), INTS), (pa.decimal128(9, 3), DECIMALS)]).flatmap(
    lambda tv: st.tuples(st.just(tv[0]), st.lists(tv[1], max_size=30))),
    st.integers(1, 6), st.integers(0, 3), st.integers(0, 3))
def test_median_partitioning_and_retract(case, partitions, preceding, following):
    t, values = case
    column = pa.array(values, t)
    whole = evaluate("median", [t], [values])
    for seed in range(2):
        assert exact(aggregate("median", [t], [column], partitions=partitions, seed=seed)[None], whole)
    frames = sliding("median", [t], [column], preceding, following)
    for i, got in enumerate(frames):
        start, end = max(0, i - preceding), min(len(values), i + following + 1)
        assert exact(got, evaluate("median", [t], [values[start:end]])), i


@settings(max_examples=sweep.examples(40), deadline=None)
@given(st.lists(st.one_of(st.none(), st.text("abé", max_size=3)), max_size=30), st.integers(1, 6),
       st.integers(0, 5))
def test_collections_partitioning(values, partitions, seed):
    column = pa.array(values, pa.string())
    keys = pa.array([None if v is None else len(v) % 2 for v in values], pa.int64())
    for function in ("array_agg", "string_agg"):
        single = evaluate(_model(function), [pa.string()], [values])
        got = aggregate(_model(function), [pa.string()], [column], partitions=partitions, seed=seed)
        assert _comparable(function, got[None]) == _comparable(function, single)
        grouped = aggregate_groups(_model(function), [pa.string()], [column], keys=keys,
                                   partitions=partitions, seed=seed)
        for k, v in grouped.items():
            rows = [x for x, key in zip(values, keys.to_pylist()) if key == k]
            assert _comparable(function, v) == _comparable(function, evaluate(_model(function), [pa.string()], [rows]))
