"""The reference model's GroupsAccumulators (python/sparkagg/reference/groups.py; the native ones in
their family modules).

Hand-worked values for each of NullState's four paths and for EmitTo.First's index shift; then
properties over random data: every native GroupsAccumulator equals GroupsAccumulatorAdapter over the
function's Accumulator (bit for bit, through the same multi-phase plan with early emits and
convert_to_state), both equal the Accumulator driver, EmitTo.First(n) followed by All emits what All
alone does, and retract undoes update.
"""
from __future__ import annotations

import math
from decimal import Decimal as D
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sweep
from sparkagg import reference
from sparkagg.reference import EmitTo, GroupsAccumulator, GroupsAccumulatorAdapter, NullState
from sparkagg.reference.registry import NATIVE

NAN, INF = math.nan, math.inf
PROPERTY = settings(max_examples=sweep.examples(30), deadline=None, suppress_health_check=[HealthCheck.too_slow])


def same(a: Any, b: Any, rel_tol: float = 0.0) -> bool:
    """Equal values; floats equal bit for bit (NaN equal to NaN, -0.0 not 0.0) or within rel_tol."""
    if isinstance(a, float) and isinstance(b, float):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        if rel_tol and math.isfinite(a):
            return math.isclose(a, b, rel_tol=rel_tol, abs_tol=rel_tol)
        return a == b and math.copysign(1, a) == math.copysign(1, b)
    if isinstance(a, D) and isinstance(b, D):
        return a == b and a.as_tuple().exponent == b.as_tuple().exponent
    return type(a) is type(b) and a == b


def same_dict(a: dict, b: dict, rel_tol: float = 0.0) -> bool:
    return a.keys() == b.keys() and all(same(a[k], b[k], rel_tol) for k in a)


# --- NullState: the four paths ---------------------------------------------------------------

def run_null_state(groups, values, opt_filter, total, arrow_type=pa.int64()):
    state, calls = NullState(), []
    state.accumulate(groups, pa.array(values, arrow_type),
                     None if opt_filter is None else pa.array(opt_filter, pa.bool_()),
                     total, lambda g, v: calls.append((g, v)))
    return state, calls


def test_null_state_without_filter_without_nulls():
    state, calls = run_null_state([0, 1, 0], [1, 2, 3], None, 3)
    assert calls == [(0, 1), (1, 2), (0, 3)]
    assert state.build(EmitTo.All) == [True, True, False]  # group 2 exists but saw nothing
    assert state.seen_values == []


def test_null_state_without_filter_with_nulls():
    state, calls = run_null_state([0, 1, 2, 1], [1, None, 3, None], None, 3)
    assert calls == [(0, 1), (2, 3)]
    assert state.build() == [True, False, True]


def test_null_state_with_filter_without_nulls():
    # a NULL filter entry excludes its row, as false does
    state, calls = run_null_state([0, 1, 1, 0], [5, 6, 7, 8], [True, False, None, False], 2)
    assert calls == [(0, 5)]
    assert state.build() == [True, False]


def test_null_state_with_filter_with_nulls():
    state, calls = run_null_state([0, 1, 0, 1, 2], [None, 2, 3, 4, None], [True, True, False, None, True], 3)
    assert calls == [(1, 2)]
    assert state.build() == [False, True, False]


def test_null_state_build_first_shifts_the_rest_down():
    state, _ = run_null_state([0, 2], [1, 1], None, 4)
    assert state.build(EmitTo.First(1)) == [True]
    # old groups 1, 2, 3 are now 0, 1, 2; a value for new group 0 (old 1) marks it
    state.accumulate([0], pa.array([9]), None, 3, lambda g, v: None)
    assert state.build(EmitTo.First(2)) == [True, True]
    assert state.build(EmitTo.All) == [False]


def test_null_state_accumulate_boolean():
    state, calls = NullState(), []
    state.accumulate_boolean([0, 0, 1], pa.array([True, None, False]), None, 2,
                             lambda g, v: calls.append((g, v)))
    assert calls == [(0, True), (1, False)]
    with pytest.raises(TypeError):
        state.accumulate_boolean([0], pa.array([1]), None, 1, lambda g, v: None)


# --- EmitTo.First: hand-worked ---------------------------------------------------------------

def both(name: str, arg_types: list[pa.DataType]) -> list[GroupsAccumulator]:
    f = reference.get(name)
    return [f.groups(arg_types), f.adapter(arg_types)]


@pytest.mark.parametrize("kind", ["native", "adapter"])
def test_emit_first_sum_shifts_indices(kind):
    acc = both("sum", [pa.int64()])[kind == "adapter"]
    acc.update_batch([pa.array([10, 20, 30])], [0, 1, 2], None, 3)
    acc.update_batch([pa.array([1, None, 2])], [0, 1, 2], None, 3)
    # groups: 0 -> 11 (2 values), 1 -> 20 (1), 2 -> 32 (2)
    sums, counts = acc.state(EmitTo.First(2))
    assert sums.to_pylist() == [11, 20] and counts.to_pylist() == [2, 1]
    # old group 2 is now group 0; group 1 is new and sees only NULL, group 2 nothing at all
    acc.update_batch([pa.array([5, None])], [0, 1], None, 3)
    assert acc.evaluate(EmitTo.First(1)).to_pylist() == [37]
    assert acc.evaluate(EmitTo.All).to_pylist() == [None, None]
    assert acc.evaluate(EmitTo.All).to_pylist() == []  # All reset it


@pytest.mark.parametrize("kind", ["native", "adapter"])
def test_emit_first_min_with_filter(kind):
    acc = both("min", [pa.float64()])[kind == "adapter"]
    acc.update_batch([pa.array([3.0, NAN, -1.0, 2.0])], [0, 1, 1, 2], pa.array([True, True, False, True]), 3)
    # group 1 saw NaN only (-1.0 was filtered out): min of all-NaN is NaN
    assert [v if v == v else "nan" for v in acc.evaluate(EmitTo.First(2)).to_pylist()] == [3.0, "nan"]
    acc.merge_batch([pa.array([1.5, None])], [0, 1], None, 2)  # old group 2 is 0
    assert acc.evaluate().to_pylist() == [1.5, None]


def test_emit_first_variance_and_count():
    var = reference.get("var_pop").groups([pa.int64()])
    count = reference.get("count").groups([pa.int64(), pa.int64()])
    var.update_batch([pa.array([1, 3, 10, None])], [0, 0, 1, 1], None, 2)
    count.update_batch([pa.array([1, 3, 10, None]), pa.array([1, None, 1, 1])], [0, 0, 1, 1], None, 2)
    assert [a.to_pylist() for a in var.state(EmitTo.First(1))] == [[2], [2.0], [2.0]]
    assert count.evaluate(EmitTo.First(1)).to_pylist() == [1]
    var.update_batch([pa.array([14])], [0], None, 1)  # old group 1: {10, 14}
    assert var.evaluate().to_pylist() == [4.0]
    assert count.evaluate().to_pylist() == [1]


def test_emit_first_beyond_groups_fails():
    acc = reference.get("max").groups([pa.int64()])
    acc.update_batch([pa.array([1])], [0], None, 1)
    with pytest.raises(ValueError):
        acc.evaluate(EmitTo.First(2))
    with pytest.raises(ValueError):
        EmitTo.First(-1)


def test_convert_to_state_is_each_row_as_its_group():
    acc = reference.get("avg").groups([pa.int64()])
    counts, sums = acc.convert_to_state([pa.array([4, None, 6])], pa.array([True, True, False]))
    assert counts.to_pylist() == [1, 0, 0] and sums.to_pylist() == [4.0, None, None]
    assert acc.supports_convert_to_state()
    adapter = reference.get("avg").adapter([pa.int64()])
    states = adapter.convert_to_state([pa.array([4, None, 6])], pa.array([True, True, False]))
    assert [a.to_pylist() for a in states] == [[1, 0, 0], [4.0, None, None]]


def test_every_function_has_groups():
    for name in reference.names():
        f = reference.get(name)
        two_columns = name.startswith(("covar", "corr", "regr")) or name in (
            "approx_percentile_cont_with_weight", "max_by", "min_by")
        types = [pa.float64()] * 2 if two_columns else (
            [pa.bool_()] if name.startswith("bool") else [pa.int64()])
        acc = f.groups(types)
        assert isinstance(acc, GroupsAccumulator)
        native = f.groups_accumulator is not None
        assert native == (f.name in NATIVE), name
        assert isinstance(acc, GroupsAccumulatorAdapter) != native
        assert acc.return_type == f.return_type(types) and acc.state_fields == f.state_fields(types)


# --- properties over random data -------------------------------------------------------------

FLOATS = st.one_of(st.integers(-4000, 4000).map(lambda i: i / 4), st.sampled_from([NAN, INF, -INF, -0.0]))


def column(types: str):
    """(arrow types, column strategies) of a function's arguments."""
    nullable = lambda s: st.one_of(st.none(), s)  # noqa: E731
    if types == "int":
        return [pa.int64()], [nullable(st.integers(-(10**12), 10**12))]
    if types == "small":  # retract of Welford moments loses digits relative to the largest value seen
        return [pa.int64()], [nullable(st.integers(-1000, 1000))]
    if types == "bits":
        return [pa.int32()], [nullable(st.integers(-(2**31), 2**31 - 1))]
    if types == "bool":
        return [pa.bool_()], [nullable(st.booleans())]
    if types == "decimal":
        return [pa.decimal128(9, 2)], [nullable(st.integers(-(10**8), 10**8).map(lambda i: D(i).scaleb(-2)))]
    if types == "string":
        return [pa.string()], [nullable(st.text("abcé", max_size=3))]
    if types == "float":
        return [pa.float64()], [nullable(FLOATS)]
    if types == "finite":  # the two-column functions: their Welford merges differ from update in rounding
        return [pa.float64()] * 2, [nullable(st.integers(-400, 400).map(lambda i: i / 4))] * 2
    raise ValueError(types)


CASES = [
    *[(f, t) for f in ("count", "sum", "avg", "min", "max") for t in ("int", "float", "decimal")],
    ("count", "string"), ("min", "string"), ("max", "string"), ("min", "bool"), ("max", "bool"),
    *[(f, "bits") for f in ("bit_and", "bit_or", "bit_xor")],
    *[(f, "bool") for f in ("bool_and", "bool_or")],
    *[(f, t) for f in ("var_samp", "var_pop", "stddev", "stddev_pop") for t in ("int", "float")],
    *[(f, "finite") for f in ("covar_samp", "covar_pop", "corr", "regr_slope", "regr_r2", "regr_count", "regr_sxy")],
]


@st.composite
def dataset(draw, types: str):
    arrow_types, strategies = column(types)
    n = draw(st.integers(0, 40))
    rows = [tuple(draw(s) for s in strategies) for _ in range(n)]
    keys = draw(st.lists(st.one_of(st.none(), st.integers(0, 5)), min_size=n, max_size=n))
    columns = [pa.array([r[i] for r in rows], t) for i, t in enumerate(arrow_types)]
    return arrow_types, columns, pa.array(keys, pa.int64())


@pytest.mark.parametrize("name,types", CASES, ids=[f"{n}-{t}" for n, t in CASES])
@PROPERTY
@given(data=st.data(), seed=st.integers(0, 2**16), partitions=st.integers(1, 4), grouped=st.booleans())
def test_groups_equal_adapter_equal_accumulator_driver(name, types, data, seed, partitions, grouped):
    arrow_types, columns, keys = data.draw(dataset(types))
    keys = keys if grouped else None
    native = reference.aggregate_groups(name, arrow_types, columns, keys, partitions, seed)
    adapted = reference.aggregate_groups(name, arrow_types, columns, keys, partitions, seed, adapter=True)
    assert same_dict(native, adapted)  # same plan, same arithmetic: bit for bit
    driver = reference.aggregate(name, arrow_types, columns, keys, partitions, seed)
    assert same_dict(native, driver, rel_tol=1e-9)  # another plan: floats round differently


@pytest.mark.parametrize("name,types", CASES, ids=[f"{n}-{t}" for n, t in CASES])
@PROPERTY
@given(data=st.data(), split=st.integers(0, 10), use_adapter=st.booleans())
def test_emit_first_then_all_equals_all(name, types, data, split, use_adapter):
    arrow_types, columns, keys = data.draw(dataset(types))
    groups = [0 if k is None else k + 1 for k in keys.to_pylist()]
    total = max(groups, default=-1) + 1
    f = reference.get(name)
    make = f.adapter if use_adapter else f.groups
    whole, pieces, states_whole, states_pieces = (make(arrow_types) for _ in range(4))
    filt = pa.array([i % 3 != 0 for i in range(len(groups))], pa.bool_())
    for acc in (whole, pieces, states_whole, states_pieces):
        acc.update_batch(columns, groups, filt, total)
    n = min(split, total)
    expected = whole.evaluate(EmitTo.All).to_pylist()
    got = pieces.evaluate(EmitTo.First(n)).to_pylist() + pieces.evaluate(EmitTo.All).to_pylist()
    assert len(got) == len(expected) and all(same(a, b) for a, b in zip(got, expected))
    expected_states = [a.to_pylist() for a in states_whole.state(EmitTo.All)]
    first = states_pieces.state(EmitTo.First(n))
    rest = states_pieces.state(EmitTo.All)
    assert all(len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
               for a, b in zip([a.to_pylist() + b.to_pylist() for a, b in zip(first, rest)], expected_states))


RETRACTING = [(f, "small" if t == "int" else t) for f, t in CASES
              if t in ("int", "finite") and reference.get(f).sliding([pa.float64()] * (2 if t == "finite" else 1))
              .supports_retract_batch()] + [("bit_xor", "bits"), ("min", "string"), ("max", "string")]


def _has_constant_column(columns) -> bool:
    """Some column's non-NULL values are all equal (at least two of them)."""
    for c in columns:
        values = [v for v in c.to_pylist() if v is not None]
        if len(values) >= 2 and len(set(values)) == 1:
            return True
    return False


def close(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return same(a, b, rel_tol=1e-6)
    return same(a, b)


@pytest.mark.parametrize("name,types", RETRACTING, ids=[f"{n}-{t}" for n, t in RETRACTING])
@PROPERTY
@given(data=st.data())
def test_update_then_retract_restores(name, types, data):
    """Window frames retract their oldest rows: update A, update B, retract A is B alone (the sliding
    accumulator); the plain accumulator, where it retracts, also undoes its latest rows."""
    arrow_types, first, _ = data.draw(dataset(types))
    _, second, _ = data.draw(dataset(types))
    f = reference.get(name)
    alone = f.sliding(arrow_types)
    alone.update_batch(second)
    slid = f.sliding(arrow_types)
    slid.update_batch(first)
    slid.update_batch(second)
    slid.retract_batch(first)
    assert close(slid.evaluate(), alone.evaluate())
    plain = f(arrow_types)
    # Undoing the newest rows cannot make a column exactly constant again (Welford's m2 keeps a rounding
    # residue), so a function that is NULL for a constant column is only compared when none is constant.
    # Windows never do this: they retract the oldest rows, which the sliding accumulators settle exactly.
    if plain.supports_retract_batch() and not name.startswith(("min", "max")) and not _has_constant_column(first):
        before = f(arrow_types)
        before.update_batch(first)
        plain.update_batch(first)
        plain.update_batch(second)
        plain.retract_batch(second)
        assert close(plain.evaluate(), before.evaluate())
