"""Tests of the reference model's ordered aggregates: first_value, last_value, nth_value
(python/sparkagg/reference/first_last.py, nth_value.py, on ordering.py) and ordered array_agg /
string_agg (array_agg.py, string_agg.py).

Evidence: type rules and DataFusion 55's state layouts (the ``datafusion`` package's plan); the
literal rules (ordering, ignore_nulls, n); hand-worked values, ties and merges; and agreement with
DataFusion, grouped and global, with DataFusion itself running several partitions and the model
through the multi-phase drivers (Accumulators and GroupsAccumulators) at 1, 3 and 7 partitions. Every
ORDER BY here ends in a unique key, so no engine has a choice and results compare exactly. Without
ORDER BY the result is arrival order, compared with DataFusion on one partition and one accumulator.
"""
from __future__ import annotations

import math
import random
from typing import Any

import datafusion
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sweep
from sparkagg import reference
from sparkagg.reference import aggregate, aggregate_groups
from sparkagg.reference.ordering import Ordering

I64 = pa.int64()
PARTITIONS = (1, 3, 7)
ASC_NF, ASC_NL, DESC_NF, DESC_NL = (False, True), (False, False), (True, True), (True, False)
SQL_FLAGS = {ASC_NF: "ASC NULLS FIRST", ASC_NL: "ASC NULLS LAST", DESC_NF: "DESC NULLS FIRST",
             DESC_NL: "DESC NULLS LAST"}


# --- helpers ---------------------------------------------------------------------------------

def df_rows(table: pa.Table, sql: str, partitions: int = 1) -> list[dict]:
    """``sql`` over ``table`` as ``t``; with ``partitions`` > 1 the rows are split into that many
    input partitions (DataFusion then aggregates in Partial and Final phases)."""
    ctx = datafusion.SessionContext(datafusion.SessionConfig().with_target_partitions(partitions))
    if len(table) == 0:
        parts = [[pa.RecordBatch.from_pylist([], schema=table.schema)]]
    else:
        size = math.ceil(len(table) / partitions)
        parts = [table.slice(i, size).to_batches() for i in range(0, len(table), size)]
    ctx.register_record_batches("t", parts)
    return ctx.sql(sql).to_arrow_table().to_pylist()


def one(function: Any, types: list, *columns: list) -> Any:
    acc = function(types)
    acc.update_batch([pa.array(c, t) for c, t in zip(columns, types)])
    return acc.evaluate()


def same(a: Any, b: Any) -> bool:
    """Equal, with NaN equal to NaN, inside lists too."""
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return type(a) is type(b) and a == b


def dataset(n: int, seed: int) -> pa.Table:
    """Group key k (with NULL), values x (int64) and s (string) with NULLs, order keys y (few
    distinct, NULLs), f (double: NaN, infinities, signed zeros, NULLs) and z (unique: breaks ties)."""
    rng = random.Random(seed)
    z = list(range(n))
    rng.shuffle(z)
    specials = [math.nan, math.inf, -math.inf, -0.0, 0.0]
    return pa.table({
        "k": pa.array([rng.choice([0, 1, 2, None]) for _ in range(n)], I64),
        "x": pa.array([None if rng.random() < 0.2 else rng.randint(-50, 50) for _ in range(n)], I64),
        "s": pa.array([None if rng.random() < 0.2 else rng.choice(["a", "bb", "", "é", "zz", "b"]) for _ in range(n)]),
        "y": pa.array([None if rng.random() < 0.15 else rng.randint(0, 5) for _ in range(n)], I64),
        "f": pa.array([None if rng.random() < 0.1 else (rng.choice(specials) if rng.random() < 0.3 else
                                                       rng.uniform(-9, 9)) for _ in range(n)]),
        "z": pa.array(z, I64),
    })


# (ORDER BY keys: column and flags); each ends in the unique z
ORDERINGS = [
    [("z", ASC_NF)],
    [("z", DESC_NL)],
    [("y", ASC_NF), ("z", ASC_NL)],
    [("y", DESC_NL), ("z", DESC_NF)],
    [("y", ASC_NL), ("z", DESC_NL)],
    [("y", DESC_NF), ("f", ASC_NL), ("z", ASC_NF)],
    [("f", DESC_NF), ("z", ASC_NF)],
    [("f", ASC_NL), ("z", DESC_NF)],
    [("s", ASC_NL), ("z", ASC_NF)],
    [("s", DESC_NF), ("y", ASC_NL), ("z", DESC_NL)],
]


def order_by(keys: list) -> str:
    return "ORDER BY " + ", ".join(f"{c} {SQL_FLAGS[flags]}" for c, flags in keys)


# (SQL call with {o} for the ORDER BY, model function maker, value columns); n's column is SQL's too
CALLS = [
    ("first_value(x {o})", lambda o: reference.get("first_value").bind(ordering=o), ["x"]),
    ("last_value(x {o})", lambda o: reference.get("last_value").bind(ordering=o), ["x"]),
    ("first_value(x {o}) IGNORE NULLS",
     lambda o: reference.get("first_value").bind(ordering=o, ignore_nulls=True), ["x"]),
    ("last_value(x {o}) IGNORE NULLS",
     lambda o: reference.get("last_value").bind(ordering=o, ignore_nulls=True), ["x"]),
    ("first_value(s {o})", lambda o: reference.get("first_value").bind(ordering=o), ["s"]),
    *[(f"nth_value(x, {n} {{o}})", lambda o, n=n: reference.get("nth_value").bind(n=n, ordering=o), ["x"])
      for n in (1, 2, 3, 7, -1, -2, -5, 1000, -1000)],
    ("nth_value(s, 2 {o})", lambda o: reference.get("nth_value").bind(n=2, ordering=o), ["s"]),
    ("array_agg(x {o})", lambda o: reference.get("array_agg").bind(ordering=o), ["x"]),
    ("array_agg(x {o}) IGNORE NULLS", lambda o: reference.get("array_agg").bind(ordering=o, ignore_nulls=True),
     ["x"]),
    ("array_agg(f {o})", lambda o: reference.get("array_agg").bind(ordering=o), ["f"]),
    ("string_agg(s, ',' {o})", lambda o: reference.get("string_agg").bind(delimiter=",", ordering=o), ["s"]),
    ("string_agg(s, '; ' {o})", lambda o: reference.get("string_agg").bind(delimiter="; ", ordering=o), ["s"]),
]


# --- type rules, state fields, literals --------------------------------------------------------

def test_state_fields_follow_datafusions_layout():
    ctx = datafusion.SessionContext(datafusion.SessionConfig().with_target_partitions(2))
    batch = pa.RecordBatch.from_pydict({"k": pa.array([1], I64), "x": pa.array([1], I64), "y": [1.0], "s": ["a"]})
    ctx.register_record_batches("t", [[batch], [batch]])
    ctx.sql("SET datafusion.explain.show_schema = true")

    def partial_schema(call: str) -> str:
        plan = ctx.sql(f"EXPLAIN SELECT k, {call} FROM t GROUP BY k").to_arrow_table().to_pylist()
        [line] = [r["plan"] for r in plan if "mode=Partial" in r["plan"]]
        return line[line.index("schema=["):]

    # DataFusion names the key fields after their expressions (y@2, s@3); the model, after positions.
    assert "[first_value]:Int64;N, y@2:Float64;N, s@3:Utf8;N, " in partial_schema("first_value(x ORDER BY y, s)")
    assert "[first_value_is_set]:Boolean;N" in partial_schema("first_value(x ORDER BY y, s)")
    assert "[last_value]:Int64;N, y@2:Float64;N, " in partial_schema("last_value(x ORDER BY y)")
    assert "[last_value_is_set]:Boolean;N" in partial_schema("last_value(x ORDER BY y)")
    assert "[first_value]:Int64;N, first_value(t.x)[first_value_is_set]:Boolean;N" in partial_schema("first_value(x)")
    schema = partial_schema("nth_value(x, 2 ORDER BY y)")
    assert "nth_value[nth_value]:List(" in schema and "nth_value[nth_value_orderings]:List(" in schema
    assert "nth_value_orderings" not in partial_schema("nth_value(x, 2)")
    schema = partial_schema("array_agg(x ORDER BY y)")
    assert "[array_agg]:List(" in schema and "[array_agg_orderings]:List(" in schema
    schema = partial_schema("string_agg(s, ',' ORDER BY y)")
    assert "[array_agg]:List(Utf8)" in schema and "[array_agg_orderings]" in schema

    key = pa.struct([("order_key_0", pa.float64()), ("order_key_1", pa.string())])
    types = [I64, pa.float64(), pa.string()]
    two = [ASC_NF, DESC_NL]
    assert reference.get("first_value").bind(ordering=two).state_fields(types) == [
        ("first_value", I64), ("order_key_0", pa.float64()), ("order_key_1", pa.string()),
        ("first_value_is_set", pa.bool_())]
    assert reference.get("last_value").state_fields([I64]) == [("last_value", I64), ("last_value_is_set", pa.bool_())]
    assert reference.get("nth_value").bind(n=2, ordering=two).state_fields(types) == [
        ("nth_value", pa.list_(I64)), ("nth_value_orderings", pa.list_(key))]
    assert reference.get("nth_value").bind(n=2, ordering=two).state_fields([I64, I64, pa.float64(), pa.string()]) == [
        ("nth_value", pa.list_(I64)), ("nth_value_orderings", pa.list_(key))]  # SQL's (x, n, keys...)
    assert reference.get("nth_value").state_fields([I64]) == [("nth_value", pa.list_(I64))]
    assert reference.get("array_agg").bind(ordering=two).state_fields(types) == [
        ("array_agg", pa.list_(I64)), ("array_agg_orderings", pa.list_(key))]
    assert reference.get("array_agg").state_fields([I64]) == [("array_agg", pa.list_(I64))]
    assert reference.get("string_agg").bind(delimiter=",", ordering=two).state_fields(
        [pa.string(), pa.string(), pa.float64(), pa.string()]) == [
        ("array_agg", pa.list_(pa.string())), ("array_agg_orderings", pa.list_(key))]
    assert reference.get("string_agg").bind(ordering=[ASC_NF]).state_fields([pa.large_string(), I64]) == [
        ("array_agg", pa.list_(pa.large_string())),
        ("array_agg_orderings", pa.list_(pa.struct([("order_key_0", I64)])))]


@pytest.mark.parametrize("t", [I64, pa.int8(), pa.float64(), pa.string(), pa.decimal128(10, 2), pa.bool_(),
                               pa.date32(), pa.list_(I64)], ids=str)
def test_return_types(t):
    table = pa.table({"x": pa.array([], t), "y": pa.array([], I64)})
    [batch] = [pa.RecordBatch.from_pylist([], schema=table.schema)]
    ctx = datafusion.SessionContext()
    ctx.register_record_batches("t", [[batch]])
    schema = ctx.sql("SELECT first_value(x ORDER BY y) a, last_value(x) b, nth_value(x, 2 ORDER BY y) c, "
                     "array_agg(x ORDER BY y) d FROM t").to_arrow_table().schema
    assert [f.type for f in schema] == [t, t, t, pa.list_(t)]
    o = [ASC_NF]
    assert reference.get("first_value").bind(ordering=o).return_type([t, I64]) == t
    assert reference.get("last_value").return_type([t]) == t
    assert reference.get("nth_value").bind(n=2, ordering=o).return_type([t, I64]) == t
    assert reference.get("array_agg").bind(ordering=o).return_type([t, I64]) == pa.list_(t)


def test_literals():
    nth = reference.get("nth_value")
    with pytest.raises(TypeError, match="bind"):
        nth([I64])
    with pytest.raises(ValueError, match="1-based"):
        nth.bind(n=0)([I64])
    for n in (1.5, True, None, "2"):
        with pytest.raises(TypeError):
            nth.bind(n=n)([I64])
    with pytest.raises(Exception, match="1 based"):
        df_rows(pa.table({"x": [1], "y": [1]}), "SELECT nth_value(x, 0 ORDER BY y) FROM t")
    with pytest.raises(ValueError, match="IGNORE NULLS"):
        nth.bind(n=1, ignore_nulls=True)([I64])
    for name, extra in (("first_value", {}), ("nth_value", {"n": 1}), ("array_agg", {}),
                        ("string_agg", {"delimiter": ","})):
        f = reference.get(name).bind(**extra)
        x = pa.string() if name == "string_agg" else I64
        for bad in ([True], [(True,)], [("yes", False)], 3, [(1, 0)]):
            with pytest.raises(TypeError):
                f.bind(ordering=bad)([x, I64])
        with pytest.raises(TypeError):  # more keys than trailing columns
            f.bind(ordering=[ASC_NF, ASC_NF])([x, I64])
        with pytest.raises(TypeError):  # a key column the ordering does not declare
            f.bind(ordering=[ASC_NF])([x, I64, I64, I64])
        with pytest.raises(TypeError):  # a key type with no order
            f.bind(ordering=[ASC_NF])([x, pa.list_(I64)])
    with pytest.raises(TypeError):
        reference.get("first_value").bind(ignore_nulls="yes")([I64])
    assert repr(reference.get("first_value").bind(ordering=[ASC_NF])) == \
        "AggregateFunction('first_value', ordering=[(False, True)])"


def test_registry_and_groups():
    for name in ("first_value", "last_value", "nth_value"):
        f = reference.get(name)
        assert f.name == name and name in reference.names() and f.groups_accumulator is None
        bound = f.bind(n=2, ordering=[DESC_NL]) if name == "nth_value" else f.bind(ordering=[DESC_NL])
        acc = bound.groups([I64, pa.float64()])
        assert isinstance(acc, reference.GroupsAccumulatorAdapter)
        assert acc.state_fields == bound.state_fields([I64, pa.float64()])
        assert not bound([I64, pa.float64()]).supports_retract_batch()


# --- hand-worked values, ties, states -------------------------------------------------------------

X = [10, None, 30, 40, 50]
Y = [5, 4, 3, None, 1]


def test_values_by_hand():
    """x = [10, NULL, 30, 40, 50] with keys y = [5, 4, 3, NULL, 1]."""
    def f(name, o, **lit):
        return one(reference.get(name).bind(ordering=o, **lit), [I64, I64], X, Y)

    assert f("first_value", [ASC_NL]) == 50 and f("last_value", [ASC_NL]) == 40
    assert f("first_value", [ASC_NF]) == 40 and f("last_value", [ASC_NF]) == 10
    assert f("first_value", [DESC_NL]) == 10 and f("last_value", [DESC_NL]) == 40
    assert f("last_value", [DESC_NL], ignore_nulls=True) == 40
    assert f("first_value", [DESC_NF]) == 40
    # ASC NULLS LAST: x in order 50, 30, NULL, 10, 40
    assert [f("nth_value", [ASC_NL], n=n) for n in (1, 2, 3, 4, 5, 6, -1, -2, -3, -5, -6)] == \
        [50, 30, None, 10, 40, None, 40, 10, None, 50, None]
    assert f("array_agg", [ASC_NL]) == [50, 30, None, 10, 40]
    assert f("array_agg", [DESC_NF]) == [40, 10, None, 30, 50]
    assert f("array_agg", [DESC_NF], ignore_nulls=True) == [40, 10, 30, 50]
    s = one(reference.get("string_agg").bind(delimiter=",", ordering=[DESC_NF]), [pa.string(), I64],
            ["a", "b", None, "d", "e"], Y)
    assert s == "d,a,b,e"
    # without ORDER BY: arrival order
    assert one(reference.get("first_value"), [I64], X) == 10
    assert one(reference.get("last_value"), [I64], X) == 50
    assert one(reference.get("last_value").bind(ignore_nulls=True), [I64], [1, 2, None]) == 2
    assert one(reference.get("first_value").bind(ignore_nulls=True), [I64], [None, None, 3]) == 3
    assert one(reference.get("nth_value").bind(n=2), [I64], X) is None
    assert one(reference.get("nth_value").bind(n=-2), [I64], X) == 40
    assert one(reference.get("array_agg").bind(ignore_nulls=True), [I64], X) == [10, 30, 40, 50]
    assert one(reference.get("array_agg").bind(ignore_nulls=True), [I64], [None]) is None
    # empty input: NULL everywhere
    for name, lit in (("first_value", {}), ("last_value", {}), ("nth_value", {"n": 1}), ("array_agg", {})):
        assert one(reference.get(name).bind(ordering=[ASC_NF], **lit), [I64, I64], [], []) is None


def test_float_and_string_keys():
    xs = list(range(7))
    fs = [1.0, math.nan, -0.0, 0.0, -math.inf, math.inf, None]
    got = one(reference.get("array_agg").bind(ordering=[ASC_NL]), [I64, pa.float64()], xs, fs)
    assert got == [4, 2, 3, 0, 5, 1, 6]  # -inf, -0.0, 0.0, 1.0, inf, NaN, NULL
    got = one(reference.get("array_agg").bind(ordering=[DESC_NF]), [I64, pa.float64()], xs, fs)
    assert got == [6, 1, 5, 0, 3, 2, 4]
    [row] = df_rows(pa.table({"x": xs, "f": fs}), "SELECT array_agg(x ORDER BY f ASC NULLS LAST) a, "
                                                   "array_agg(x ORDER BY f DESC NULLS FIRST) d FROM t")
    assert row == {"a": [4, 2, 3, 0, 5, 1, 6], "d": [6, 1, 5, 0, 3, 2, 4]}
    strings = ["b", "", "é", "a", "ab", None, "B"]
    got = one(reference.get("array_agg").bind(ordering=[ASC_NF]), [I64, pa.string()], xs, strings)
    assert got == [5, 1, 6, 3, 4, 0, 2]  # NULL, "", "B", "a", "ab", "b", "é": code point order


def test_ties_keep_arrival_order():
    """Equal keys: a stable sort. first_value takes the earliest tied row, last_value the latest,
    array_agg keeps them in arrival order, within a batch, across batches and across merges."""
    xs, ys = [1, 2, 3, 4, 5, 6], [7, 7, 0, 7, 0, 7]
    o = [ASC_NF]
    assert one(reference.get("first_value").bind(ordering=o), [I64, I64], xs, ys) == 3
    assert one(reference.get("last_value").bind(ordering=o), [I64, I64], xs, ys) == 6
    assert one(reference.get("array_agg").bind(ordering=o), [I64, I64], xs, ys) == [3, 5, 1, 2, 4, 6]
    assert one(reference.get("nth_value").bind(n=3, ordering=o), [I64, I64], xs, ys) == 1
    assert one(reference.get("nth_value").bind(n=-4, ordering=o), [I64, I64], xs, ys) == 1
    for name, expected in (("first_value", 3), ("last_value", 6), ("array_agg", [3, 5, 1, 2, 4, 6])):
        acc = reference.get(name).bind(ordering=o)([I64, I64])
        for i in range(0, 6, 2):  # three batches
            acc.update_batch([pa.array(xs[i:i + 2]), pa.array(ys[i:i + 2])])
        assert acc.evaluate() == expected, name
        # two partials merged in order: the first partial's tied rows come first
        a, b = reference.get(name).bind(ordering=o)([I64, I64]), reference.get(name).bind(ordering=o)([I64, I64])
        a.update_batch([pa.array(xs[:3]), pa.array(ys[:3])])
        b.update_batch([pa.array(xs[3:]), pa.array(ys[3:])])
        final = reference.get(name).bind(ordering=o)([I64, I64])
        types = [t for _, t in reference.get(name).bind(ordering=o).state_fields([I64, I64])]
        final.merge_batch([pa.array([sa, sb], t) for sa, sb, t in zip(a.state(), b.state(), types)])
        assert final.evaluate() == expected, name


def test_first_last_state_and_merge():
    f = reference.get("first_value").bind(ordering=[DESC_NL])
    acc = f([I64, I64])
    assert acc.state() == [None, None, False]
    acc.update_batch([pa.array([1, 2, None]), pa.array([5, 9, 7])])
    assert acc.state() == [2, 9, True]
    # states: unset ones are skipped; the best key wins, whatever its value (NULL included)
    acc.merge_batch([pa.array([None, 99, None], I64), pa.array([None, 3, 12], I64), pa.array([False, True, True])])
    assert acc.evaluate() is None and acc.state() == [None, 12, True]
    last = reference.get("last_value").bind(ordering=[ASC_NF], ignore_nulls=True)([I64, I64])
    last.update_batch([pa.array([None, 4, None]), pa.array([100, 1, None])])
    assert last.state() == [4, 1, True]  # the NULL x at key 100 is skipped; a NULL key is not
    unordered = reference.get("last_value")([I64])
    unordered.merge_batch([pa.array([3, None, 4], I64), pa.array([True, False, True])])
    assert unordered.state() == [4, True]


def test_ordered_list_states_merge_sorted_runs():
    o = [DESC_NL]
    f = reference.get("array_agg").bind(ordering=o)
    acc = f([I64, I64])
    acc.update_batch([pa.array([1, 2, 3]), pa.array([10, 30, 20])])
    assert acc.state() == [[2, 3, 1], [{"order_key_0": 30}, {"order_key_0": 20}, {"order_key_0": 10}]]
    types = [t for _, t in f.state_fields([I64, I64])]
    acc.merge_batch([pa.array([[7, 8], None, [9]], types[0]),
                     pa.array([[{"order_key_0": 25}, {"order_key_0": None}], [], [{"order_key_0": 30}]], types[1])])
    assert acc.evaluate() == [2, 9, 7, 3, 1, 8]  # 30, 30 (own list first), 25, 20, 10, NULL last
    with pytest.raises(ValueError, match="not sorted"):
        acc.merge_batch([pa.array([[1, 2]], types[0]),
                         pa.array([[{"order_key_0": 1}, {"order_key_0": 2}]], types[1])])  # ascending: unsorted
    with pytest.raises(ValueError, match="length"):
        acc.merge_batch([pa.array([[1, 2]], types[0]), pa.array([[{"order_key_0": 1}]], types[1])])
    empty = f([I64, I64])
    assert empty.state() == [None, []] and empty.evaluate() is None


def test_nth_value_state_keeps_only_candidates():
    xs, ys = list(range(10)), [9 - i for i in range(10)]
    for n, expected_values in ((2, [9, 8]), (-3, [2, 1, 0])):
        acc = reference.get("nth_value").bind(n=n, ordering=[ASC_NF])([I64, I64])
        acc.update_batch([pa.array(xs), pa.array(ys)])
        values, orderings = acc.state()
        assert values == expected_values and [o["order_key_0"] for o in orderings] == [9 - v for v in values]
    acc = reference.get("nth_value").bind(n=3)([I64])
    acc.update_batch([pa.array([5, 6, 7, 8])])
    assert acc.state() == [[5, 6, 7]] and acc.evaluate() == 7


def test_string_agg_ordered_keeps_delimiter_rules():
    f = reference.get("string_agg").bind(delimiter=";", ordering=[DESC_NL])
    assert one(f, [pa.string(), pa.string(), I64], ["a", "b", "c"], [";"] * 3, [1, 3, 2]) == "b;c;a"
    with pytest.raises(ValueError, match="constant"):
        one(f, [pa.string(), pa.string(), I64], ["a", "b"], [";", ","], [1, 2])
    assert one(f, [I64, I64], [1, None, -3], [1, 3, 2]) == "-3;1"
    assert one(f, [pa.string(), I64], [None, None], [1, 2]) is None
    joined = reference.get("string_agg").bind(delimiter=None, ordering=[ASC_NF])
    assert one(joined, [pa.string(), I64], ["x", "y"], [2, 1]) == "yx"


# --- agreement with DataFusion ------------------------------------------------------------------

@pytest.mark.parametrize("keys", ORDERINGS, ids=lambda ks: order_by(ks).replace(" ", "_"))
@pytest.mark.parametrize("grouped", [False, sweep.slow(True)], ids=["global", "grouped"])
def test_oracle_ordered(keys, grouped):
    table = dataset(90, seed=len(order_by(keys)))
    o = order_by(keys)
    ordering = [flags for _, flags in keys]
    select = ", ".join(f"{sql.format(o=o)} AS r{i}" for i, (sql, _, _) in enumerate(CALLS))
    group = " GROUP BY k" if grouped else ""
    rows = df_rows(table, f"SELECT {'k, ' if grouped else ''}{select} FROM t{group}", partitions=3)
    expected = {r.get("k"): r for r in rows}
    key_columns = [table.column(c).combine_chunks() for c, _ in keys]
    group_keys = table.column("k").combine_chunks() if grouped else None
    for i, (sql, make, value_columns) in enumerate(CALLS):
        function = make(ordering)
        columns = [table.column(c).combine_chunks() for c in value_columns]
        if sql.startswith("string_agg"):
            columns.append(pa.array([sql.split("'")[1]] * len(table)))  # SQL's delimiter column
        elif sql.startswith("nth_value"):
            columns.append(pa.array([int(sql.split(",")[1].split()[0])] * len(table), I64))  # SQL's n column
        columns += key_columns
        types = [c.type for c in columns]
        for partitions in PARTITIONS:
            for driver in (aggregate, aggregate_groups):
                got = driver(function, types, columns, keys=group_keys, partitions=partitions, seed=partitions)
                assert set(got) == set(expected), (sql, driver.__name__)
                for k, value in got.items():
                    assert same(value, expected[k][f"r{i}"]), (sql.format(o=o), driver.__name__, partitions, k,
                                                               value, expected[k][f"r{i}"])


def test_oracle_unordered_on_one_accumulator():
    """Without ORDER BY the result is arrival order: one partition, one batch, on both sides."""
    table = dataset(40, seed=3)
    calls = {"first_value(x)": reference.get("first_value"), "last_value(x)": reference.get("last_value"),
             "first_value(x) IGNORE NULLS": reference.get("first_value").bind(ignore_nulls=True),
             "last_value(x) IGNORE NULLS": reference.get("last_value").bind(ignore_nulls=True),
             "array_agg(x) IGNORE NULLS": reference.get("array_agg").bind(ignore_nulls=True),
             "nth_value(x, 3)": reference.get("nth_value").bind(n=3),
             "nth_value(x, -2)": reference.get("nth_value").bind(n=-2)}
    [row] = df_rows(table, "SELECT " + ", ".join(f"{c} AS r{i}" for i, c in enumerate(calls)) + " FROM t")
    x = table.column("x").combine_chunks()
    for i, function in enumerate(calls.values()):
        assert same(one(function, [I64], x.to_pylist()), row[f"r{i}"]), list(calls)[i]


def test_oracle_empty_and_all_null():
    table = pa.table({"k": pa.array([1, 1, 2], I64), "x": pa.array([None, None, 5], I64),
                      "y": pa.array([2, 1, 3], I64)})
    rows = df_rows(table, "SELECT k, first_value(x ORDER BY y) a, first_value(x ORDER BY y) IGNORE NULLS b, "
                          "nth_value(x, 1 ORDER BY y) c, array_agg(x ORDER BY y) IGNORE NULLS d FROM t "
                          "GROUP BY k ORDER BY k")
    assert rows == [{"k": 1, "a": None, "b": None, "c": None, "d": None}, {"k": 2, "a": 5, "b": 5, "c": 5, "d": [5]}]
    cols, o = [table.column("x").combine_chunks(), table.column("y").combine_chunks()], [ASC_NL]
    keys = table.column("k").combine_chunks()
    for name, lit, expected in (("first_value", {}, {1: None, 2: 5}),
                                ("first_value", {"ignore_nulls": True}, {1: None, 2: 5}),
                                ("nth_value", {"n": 1}, {1: None, 2: 5}),
                                ("array_agg", {"ignore_nulls": True}, {1: None, 2: [5]}),
                                ("array_agg", {}, {1: [None, None], 2: [5]})):
        f = reference.get(name).bind(ordering=o, **lit)
        assert aggregate_groups(f, [I64, I64], cols, keys=keys, partitions=3) == expected, (name, lit)
    empty = [pa.array([], I64), pa.array([], I64)]
    assert df_rows(table, "SELECT first_value(x ORDER BY y) a, nth_value(x, 2 ORDER BY y) b FROM t WHERE k > 9") == \
        [{"a": None, "b": None}]
    for name, lit in (("first_value", {}), ("last_value", {}), ("nth_value", {"n": 2}), ("array_agg", {})):
        f = reference.get(name).bind(ordering=o, **lit)
        assert aggregate(f, [I64, I64], empty, partitions=3) == {None: None}
        assert aggregate(f, [I64, I64], empty, keys=pa.array([], I64), partitions=3) == {}


def test_nth_value_ignore_nulls_is_refused_as_in_datafusion_55():
    """DataFusion 50 accepted IGNORE NULLS on nth_value and ignored it; DataFusion 55 refuses it at plan
    time, as the model does."""
    table = pa.table({"x": pa.array([10, None, 30], I64), "y": pa.array([1, 2, 3], I64)})
    with pytest.raises(Exception, match="nth_value"):
        df_rows(table, "SELECT nth_value(x, 2 ORDER BY y) IGNORE NULLS AS a FROM t")
    with pytest.raises(ValueError):
        reference.get("nth_value").bind(n=2, ordering=[ASC_NF], ignore_nulls=True)([I64, I64])


# --- properties ---------------------------------------------------------------------------------------

@settings(max_examples=sweep.examples(40), deadline=None)
@given(rows=st.lists(st.tuples(st.one_of(st.none(), st.integers(-9, 9)), st.one_of(st.none(), st.integers(0, 3)),
                               st.sampled_from([0, 1, None])), max_size=40),
       flags=st.tuples(st.booleans(), st.booleans(), st.booleans(), st.booleans()),
       partitions=st.integers(1, 6), seed=st.integers(0, 1000), n=st.sampled_from([1, 2, 4, -1, -3]))
def test_partitioning_does_not_change_ordered_results(rows, flags, partitions, seed, n):
    """With a unique last key, every driver plan gives the one-accumulator result."""
    xs = [r[0] for r in rows]
    ys = [r[1] for r in rows]
    zs = list(range(len(rows)))
    random.Random(seed).shuffle(zs)
    keys = pa.array([r[2] for r in rows], I64)
    ordering = [flags[:2], flags[2:]]
    columns = [pa.array(xs, I64), pa.array(ys, I64), pa.array(zs, I64)]
    for f in (reference.get("first_value").bind(ordering=ordering),
              reference.get("last_value").bind(ordering=ordering, ignore_nulls=True),
              reference.get("nth_value").bind(n=n, ordering=ordering),
              reference.get("array_agg").bind(ordering=ordering)):
        got = aggregate_groups(f, [I64] * 3, columns, keys=keys, partitions=partitions, seed=seed)
        also = aggregate(f, [I64] * 3, columns, keys=keys, partitions=partitions, seed=seed)
        for k, v in got.items():
            idx = [i for i, kk in enumerate(keys.to_pylist()) if kk == k]
            alone = one(f, [I64] * 3, [xs[i] for i in idx], [ys[i] for i in idx], [zs[i] for i in idx])
            assert v == alone == also[k], (f, k)


def test_ordering_key_rejects_incomparable_types():
    with pytest.raises(TypeError):
        Ordering("array_agg", [ASC_NF], [I64, pa.struct([("a", I64)])], own=(1,))
    order = Ordering("array_agg", [DESC_NL, ASC_NF], [I64, I64, pa.string()], own=(1,))
    assert order.own == 1 and order.key_types == [I64, pa.string()]
    assert sorted([(1, "b"), (None, "a"), (2, None), (1, "a")], key=order.key) == \
        [(2, None), (1, "a"), (1, "b"), (None, "a")]
