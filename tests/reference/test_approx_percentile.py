"""Tests of the reference model's t-digest family (python/sparkagg/reference/approx_percentile.py on
tdigest.py): approx_percentile_cont, approx_median and approx_percentile_cont_with_weight.

Evidence: type rules and state fields against DataFusion 55's (the ``datafusion`` package) plan; the
literal rules; hand-worked small digests; exact agreement with DataFusion on one partition, for several
distributions, sizes 0 to 50 000, int64 / int32 / float64 (and a few more types), NULLs, NaN and
infinities, max_size 100 and 10, DESC, global and grouped: DataFusion cuts every source batch into
slices of at most ``batch_size`` (8192) rows and each slice is one ``update_batch``, which the model is
fed identically; and, through the multi-phase drivers with several partitions (where the digest depends
on the partitioning), results within 1% of the true rank. DataFusion 55's behaviours the model departs
from are named by a test that shows both sides.
"""
from __future__ import annotations

import math
import random
import struct
from decimal import Decimal as D
from typing import Any

import datafusion
import pyarrow as pa
import pytest

import sweep
from sparkagg import reference
from sparkagg.reference import aggregate, aggregate_groups, drivers
from sparkagg.reference.tdigest import TDigest, total_order_key

APC = reference.get("approx_percentile_cont")
MEDIAN = reference.get("approx_median")
WEIGHTED = reference.get("approx_percentile_cont_with_weight")
DF_BATCH_ROWS = 8192  # DataFusion's default batch_size
PERCENTILES = (0.0, 0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 1.0)
NEG_NAN = struct.unpack("<d", struct.pack("<Q", 0xFFF8000000000000))[0]
STATE_NAMES = ["max_size", "sum", "count", "max", "min", "centroids"]


# --- helpers ---------------------------------------------------------------------------------

def df_context(batch_size: int | None = None) -> datafusion.SessionContext:
    """One target partition, so that one accumulator per group sees every batch in order."""
    config = datafusion.SessionConfig().with_target_partitions(1)
    if batch_size is not None:
        config = config.with_batch_size(batch_size)
    return datafusion.SessionContext(config)


def df_rows(batches: list[pa.RecordBatch], sql: str, batch_size: int | None = None) -> list[dict]:
    ctx = df_context(batch_size)
    ctx.register_record_batches("t", [batches])
    return ctx.sql(sql).to_arrow_table().to_pylist()


def slices(batches: list[pa.RecordBatch], rows: int = DF_BATCH_ROWS) -> list[pa.RecordBatch]:
    """The batches an aggregate gets from DataFusion's memory scan: each source batch cut into
    consecutive slices of at most ``rows`` rows."""
    return [b.slice(i, rows) for b in batches for i in range(0, len(b), rows)]


def run_model(function: Any, types: list, batches: list[pa.RecordBatch], columns: list[str],
              rows: int = DF_BATCH_ROWS) -> Any:
    """``function`` over ``batches`` in one accumulator, fed as DataFusion feeds it."""
    acc = function(types)
    for s in slices(batches, rows):
        acc.update_batch([s.column(c) for c in columns])
    return acc.evaluate()


def run_model_grouped(function: Any, types: list, batches: list[pa.RecordBatch], columns: list[str]) -> dict:
    """One accumulator per key of column ``k``; each slice gives every group its rows of the slice,
    as DataFusion's GroupsAccumulatorAdapter does."""
    accs: dict = {}
    for s in slices(batches):
        keys = s.column("k").to_pylist()
        for key in dict.fromkeys(keys):
            taken = pa.array([i for i, k in enumerate(keys) if k == key], pa.int64())
            if key not in accs:
                accs[key] = function(types)
            accs[key].update_batch([s.column(c).take(taken) for c in columns])
    return {k: a.evaluate() for k, a in accs.items()}


def identical(a: Any, b: Any) -> bool:
    """Equal values of equal Python types; doubles bit for bit (NaN's payload aside)."""
    if isinstance(a, float) and isinstance(b, float):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return struct.pack("<d", a) == struct.pack("<d", b)
    return type(a) is type(b) and a == b


def values(dist: str, n: int, seed: int) -> list:
    rng = random.Random(seed)
    if dist == "uniform":
        return [rng.uniform(-1e6, 1e6) for _ in range(n)]
    if dist == "normal":
        return [rng.gauss(10.0, 3.0) for _ in range(n)]
    if dist == "skewed":
        return [rng.lognormvariate(0.0, 2.0) for _ in range(n)]
    if dist == "few_distinct":
        return [float(rng.randint(-5, 20)) for _ in range(n)]
    if dist == "ascending":
        return [float(i) * 0.5 - 100 for i in range(n)]
    if dist == "descending":
        return [float(n - i) * 3.0 for i in range(n)]
    raise ValueError(dist)


def with_nulls(xs: list, seed: int, share: float = 0.05) -> list:
    rng = random.Random(seed)
    return [None if rng.random() < share else x for x in xs]


def as_type(xs: list, t: pa.DataType) -> pa.Array:
    """The values in ``t``: integers round toward zero and are clamped to the type's range."""
    if pa.types.is_integer(t):
        if pa.types.is_unsigned_integer(t):
            lo, hi = 0, 2**t.bit_width - 1
        else:
            lo, hi = -(2 ** (t.bit_width - 1)), 2 ** (t.bit_width - 1) - 1
        return pa.array([None if x is None else max(lo, min(hi, int(x))) for x in xs], t)
    return pa.array(xs, t)


def within_a_step(result: float, data: list, p: float) -> bool:
    """For data of few distinct values, where a t-digest interpolates across the steps: ``result``
    lies between the distinct values either side of the exact p-th percentile."""
    ordered = sorted(data)
    exact = ordered[round(p * (len(ordered) - 1))]
    lower = max((v for v in ordered if v < exact), default=exact)
    upper = min((v for v in ordered if v > exact), default=exact)
    return lower <= result <= upper


def true_rank_ok(result: float, data: list, p: float, tolerance: float = 0.01) -> bool:
    """Whether ``result`` is a p-th percentile of ``data`` to within ``tolerance`` of rank: the share
    of values below it is at most p + tolerance and the share at or below it at least p - tolerance."""
    n = len(data)
    # Over integers an estimate between two integers stands for both: the step either side counts.
    lo, hi = (math.floor(result), math.ceil(result)) if isinstance(data[0], int) else (result, result)
    below = sum(1 for v in data if v < lo) / n
    at_or_below = sum(1 for v in data if v <= hi) / n
    return below - tolerance <= p <= at_or_below + tolerance


# --- type rules, state fields, literals --------------------------------------------------------

TYPES = [pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.uint8(), pa.uint32(), pa.uint64(), pa.float32(),
         pa.float64(), pa.decimal128(10, 2), pa.decimal128(38, 10)]


@pytest.mark.parametrize("t", TYPES, ids=str)
def test_return_types_follow_datafusion(t):
    table = pa.table({"x": pa.array([], t), "w": pa.array([], t)})
    [batch] = table.to_batches() or [pa.RecordBatch.from_pylist([], schema=table.schema)]
    ctx = df_context()
    ctx.register_record_batches("t", [[batch]])
    schema = ctx.sql("SELECT approx_percentile_cont(x, 0.5) a, approx_median(x) m, "
                     "approx_percentile_cont_with_weight(x, w, 0.5) w, "
                     "approx_percentile_cont(0.5, 10) WITHIN GROUP (ORDER BY x DESC) d FROM t").to_arrow_table().schema
    expected = pa.float32() if pa.types.is_float32(t) else pa.float64()  # DataFusion 55 (#21074)
    assert [f.type for f in schema] == [expected] * 4
    assert APC.return_type([t]) == APC.return_type([t, pa.float64()]) == expected
    assert APC.return_type([t, pa.float64(), pa.int64()]) == expected
    assert MEDIAN.return_type([t]) == expected
    assert WEIGHTED.return_type([t, t]) == WEIGHTED.return_type([t, t, pa.float64(), pa.int32()]) == expected


def test_state_fields_are_datafusions_six():
    ctx = datafusion.SessionContext(datafusion.SessionConfig().with_target_partitions(2))
    batch = pa.RecordBatch.from_pydict({"k": [1], "x": [1.5], "w": [2.0]})
    ctx.register_record_batches("t", [[batch], [batch]])  # two partitions: Partial and Final phases
    ctx.sql("SET datafusion.explain.show_schema = true")
    plan = "\n".join(r["plan"] for r in ctx.sql(
        "EXPLAIN SELECT k, approx_percentile_cont(x, 0.5), approx_median(x), "
        "approx_percentile_cont_with_weight(x, w, 0.5) FROM t GROUP BY k").to_arrow_table().to_pylist())
    for call in ("approx_percentile_cont(t.x,Float64(0.5))", "approx_median(t.x)",
                 "approx_percentile_cont_with_weight(t.x,t.w,Float64(0.5))"):
        assert (f"{call}[max_size]:UInt64, {call}[sum]:Float64, {call}[count]:Float64, {call}[max]:Float64, "
                f"{call}[min]:Float64, {call}[centroids]:List(Float64)") in plan
    # UInt64 is Spark's bigint: the model's max_size is int64.
    expected = [("max_size", pa.int64()), ("sum", pa.float64()), ("count", pa.float64()), ("max", pa.float64()),
                ("min", pa.float64()), ("centroids", pa.list_(pa.float64()))]
    for f, types in ((APC, [pa.int64()]), (APC.bind(p=0.1), [pa.int32(), pa.float64()]), (MEDIAN, [pa.float64()]),
                     (WEIGHTED, [pa.int64(), pa.int64()])):
        assert f.state_fields(types) == expected


@pytest.mark.parametrize("function,types", [
    (APC, [pa.string()]), (APC, [pa.bool_()]), (APC, [pa.date32()]), (APC, []), (APC, [pa.int64()] * 4),
    (APC, [pa.int64(), pa.string()]), (APC, [pa.int64(), pa.float64(), pa.float64()]),
    (MEDIAN, [pa.int64(), pa.float64()]), (MEDIAN, [pa.string()]), (MEDIAN, []),
    (WEIGHTED, [pa.int64()]), (WEIGHTED, [pa.int64(), pa.string()]), (WEIGHTED, [pa.int64()] * 5),
])
def test_unsupported_arguments(function, types):
    with pytest.raises(TypeError):
        function.return_type(types)


def test_literals():
    with pytest.raises(TypeError, match="bind"):
        APC([pa.float64()])
    with pytest.raises(TypeError, match="bind"):
        WEIGHTED([pa.float64(), pa.float64()])
    for p in (-0.1, 1.5, None, "0.5", True, math.nan):
        with pytest.raises(ValueError):
            APC.bind(p=p)([pa.float64()])
    for max_size in (0, -3, 2.5, None, True):
        with pytest.raises(ValueError):
            APC.bind(p=0.5, max_size=max_size)([pa.float64()])
    with pytest.raises(TypeError):
        MEDIAN.bind(p=0.3)([pa.float64()])  # approx_median takes no literal
    for p in (0, 1, 0.5, D("0.25")):
        APC.bind(p=p)([pa.float64()])
    # DataFusion's rules: the same ranges
    table = pa.table({"x": pa.array([1.0])})
    for sql in ("approx_percentile_cont(x, 1.5)", "approx_percentile_cont(x, 0.5, 0)",
                "approx_percentile_cont(x, 0.5, -3)"):
        with pytest.raises(Exception):
            df_rows(table.to_batches(), f"SELECT {sql} FROM t")
    assert repr(APC.bind(p=0.5, max_size=50)) == "AggregateFunction('approx_percentile_cont', p=0.5, max_size=50)"


def test_registry_and_groups():
    for name, types in (("approx_percentile_cont", [pa.int64()]), ("approx_median", [pa.int64()]),
                        ("approx_percentile_cont_with_weight", [pa.int64(), pa.int64()])):
        f = reference.get(name)
        assert f.name == name and name in reference.names()
        assert f.groups_accumulator is None
        acc = f.groups(types)
        assert isinstance(acc, reference.GroupsAccumulatorAdapter)
        assert acc.return_type == f.return_type(types) and acc.state_fields == f.state_fields(types)
    assert not APC.bind(p=0.5)([pa.int64()]).supports_retract_batch()


# --- hand-worked values --------------------------------------------------------------------------

def one(function: Any, t: pa.DataType, xs: list, *more: list) -> Any:
    acc = function([t] * (1 + len(more)))
    acc.update_batch([pa.array(c, t) for c in (xs, *more)])
    return acc.evaluate()


def test_small_inputs_are_exact():
    """Fewer values than max_size: every value is a centroid of weight 1 and the estimate
    interpolates between neighbours."""
    half = APC.bind(p=0.5)
    assert one(half, pa.int64(), [5, 1, None, 4, 2, 3]) == 3.0
    assert one(half, pa.float64(), [1.0, 2.0, 3.0, 4.0]) == 2.5  # rank 2 is on the edge of 2.0 and 3.0
    assert one(half, pa.float64(), [7.25]) == 7.25
    assert one(half, pa.int64(), []) is None
    assert one(half, pa.int64(), [None, None]) is None
    assert one(MEDIAN, pa.int64(), [1, 2]) == 1.5  # a double, not truncated (DataFusion 55)
    assert one(MEDIAN, pa.int64(), [-1, -2]) == -1.5
    assert one(MEDIAN, pa.int32(), [10, 20, 30]) == 20.0
    assert one(APC.bind(p=0.0), pa.float64(), [3.0, -1.5, 2.0]) == -1.5  # min
    assert one(APC.bind(p=1.0), pa.float64(), [3.0, -1.5, 2.0]) == 3.0  # max
    assert one(APC.bind(p=0.25, descending=True), pa.float64(), [1.0, 2.0, 3.0, 4.0, 5.0]) == \
        one(APC.bind(p=0.75), pa.float64(), [1.0, 2.0, 3.0, 4.0, 5.0]) == 4.25
    assert one(MEDIAN, pa.decimal128(5, 2), [D("1.10"), D("2.20"), D("3.30")]) == 2.2
    assert one(MEDIAN, pa.uint8(), [250, 255, 254]) == 254.0
    # weighted: value 10 with weight 3 outweighs 20 with weight 1: count 4 (the weight), rank 2 lies in
    # the first centroid, 2/3 of its weight in: 10 + (2/3 - 1/2) * (20 - 10)
    assert one(WEIGHTED.bind(p=0.5), pa.float64(), [10.0, 20.0], [3.0, 1.0]) == 10.0 + (2 / 3 - 0.5) * 10.0
    # weights not above zero add nothing
    assert one(WEIGHTED.bind(p=0.5), pa.float64(), [10.0, 20.0, 30.0], [1.0, 0.0, 1.0]) == \
        one(WEIGHTED.bind(p=0.5), pa.float64(), [10.0, 20.0, 30.0], [1.0, math.nan, 1.0]) == \
        one(WEIGHTED.bind(p=0.5), pa.float64(), [10.0, 30.0], [1.0, 1.0]) == 20.0


def test_digest_compresses_to_max_size():
    acc = APC.bind(p=0.5, max_size=10)([pa.float64()])
    acc.update_batch([pa.array([float(i) for i in range(1000)])])
    max_size, total, count, hi, lo, flat = acc.state()
    assert (max_size, count, lo, hi) == (10, 1000, 0.0, 999.0)
    assert total == sum(range(1000)) and len(flat) % 2 == 0 and len(flat) // 2 <= 10
    weights = flat[1::2]
    means = flat[0::2]
    assert sum(weights) == 1000 and means == sorted(means)
    assert weights[0] == weights[-1] == 20.0  # the scale function keeps the tails fine: k_to_q(1, 10) * 1000


def test_state_round_trip_and_merge_of_empty_states():
    acc = APC.bind(p=0.5, max_size=20)([pa.int64()])
    acc.update_batch([pa.array(list(range(100)), pa.int64())])
    state = acc.state()
    assert TDigest.from_state(state).to_state() == state
    types = [t for _, t in APC.state_fields([pa.int64()])]
    final = APC.bind(p=0.5, max_size=20)([pa.int64()])
    final.merge_batch([pa.array([v], t) for v, t in zip(state, types)])
    assert final.evaluate() == acc.evaluate()
    assert 49 <= acc.evaluate() <= 50  # the median of 0..99, interpolated
    empty = APC.bind(p=0.5, max_size=20)([pa.int64()])
    assert empty.evaluate() is None
    assert empty.state() == [20, 0.0, 0, empty.state()[3], empty.state()[4], []]
    assert math.isnan(empty.state()[3]) and math.isnan(empty.state()[4])
    # merging only empty states gives DataFusion's default digest: max_size 100
    empty.merge_batch([pa.array([v, v], t) for v, t in zip(empty.state(), types)])
    assert empty.state()[0] == 100 and empty.evaluate() is None
    with pytest.raises(ValueError):
        empty.merge_batch([pa.array([v], t) for v, t in zip([20, 1.0, 1, 1.0, 1.0, [1.0]], types)])


def test_total_order_key():
    ordered = [NEG_NAN, -math.inf, -1e308, -1.0, -5e-324, -0.0, 0.0, 5e-324, 1.0, math.inf, math.nan]
    assert sorted(reversed(ordered), key=total_order_key) == ordered or \
        [repr(v) for v in sorted(reversed(ordered), key=total_order_key)] == [repr(v) for v in ordered]


# --- exact agreement with DataFusion on one partition ---------------------------------------------

DISTRIBUTIONS = ("uniform", "normal", "skewed", "few_distinct", "ascending", "descending")
SIZES = (0, 1, 100, sweep.slow(10_000), sweep.slow(50_000))
VALUE_TYPES = (pa.int64(), pa.float64(), pa.int32())


def _select(call: str) -> str:
    return ", ".join(f"{call.format(p=p)} AS r{i}" for i, p in enumerate(PERCENTILES))


def _compare(batches, types, columns, make, call, label):
    [row] = df_rows(batches, f"SELECT {_select(call)} FROM t")
    for i, p in enumerate(PERCENTILES):
        got = run_model(make(p), types, batches, columns)
        assert identical(got, row[f"r{i}"]), (label, p, got, row[f"r{i}"])


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dist", DISTRIBUTIONS)
@pytest.mark.parametrize("t", VALUE_TYPES, ids=str)
def test_oracle_one_partition(t, dist, n):
    xs = with_nulls(values(dist, n, seed=n), seed=n + 1)
    column = as_type(xs, t)
    batches = pa.table({"x": column}).to_batches() or [pa.RecordBatch.from_pydict({"x": column})]
    _compare(batches, [t], ["x"], lambda p: APC.bind(p=p), "approx_percentile_cont(x, {p})", "apc")
    if n in (100, 10_000):  # max_size, DESC (1 - p) and approx_median on fewer sizes
        _compare(batches, [t], ["x"], lambda p: APC.bind(p=p, max_size=10), "approx_percentile_cont(x, {p}, 10)",
                 "max_size")
        _compare(batches, [t], ["x"], lambda p: APC.bind(p=p, descending=True),
                 "approx_percentile_cont({p}) WITHIN GROUP (ORDER BY x DESC)", "desc")
    [row] = df_rows(batches, "SELECT approx_median(x) AS m FROM t")
    assert identical(run_model(MEDIAN, [t], batches, ["x"]), row["m"])


@pytest.mark.parametrize("t", [pa.int8(), pa.uint64(), pa.float32(), pa.decimal128(12, 3), pa.decimal128(38, 9)],
                         ids=str)
def test_oracle_other_types(t):
    xs = values("normal", 20_000, seed=7)
    if pa.types.is_unsigned_integer(t):
        xs = [abs(x) * 1e17 for x in xs]
    elif pa.types.is_decimal(t):
        xs = [None if x is None else D(repr(round(x, 3))) for x in xs]
    column = as_type(with_nulls(xs, seed=8), t)
    batches = pa.table({"x": column}).to_batches(max_chunksize=6000)
    _compare(batches, [t], ["x"], lambda p: APC.bind(p=p), "approx_percentile_cont(x, {p})", str(t))


@pytest.mark.parametrize("chunk", [None, 3000, 20_000])
def test_batch_boundaries_change_the_digest_as_in_datafusion(chunk):
    """DataFusion cuts every source batch into slices of at most batch_size rows: the model fed the
    same slices agrees exactly, and other slicings give other (equally valid) estimates."""
    table = pa.table({"x": values("uniform", 50_000, seed=3)})
    batches = table.to_batches(max_chunksize=chunk) if chunk else table.to_batches()
    estimates = {}
    for batch_size in (3000, 8192, 20_000):
        [row] = df_rows(batches, "SELECT approx_percentile_cont(x, 0.5) AS r FROM t", batch_size=batch_size)
        got = run_model(APC.bind(p=0.5), [pa.float64()], batches, ["x"], rows=batch_size)
        assert identical(got, row["r"]), batch_size
        layout = tuple(len(s) for s in slices(batches, batch_size))
        estimates.setdefault(layout, set()).add(got)
    # one estimate per distinct slicing, and different slicings give different estimates
    assert all(len(e) == 1 for e in estimates.values())
    assert len({e for es in estimates.values() for e in es}) == len(estimates)
    assert len(estimates) == {None: 3, 3000: 1, 20_000: 3}[chunk]


def test_oracle_special_floats():
    """NaN (both signs), infinities and signed zeros: sorted by total order, they end up in the end
    centroids; DataFusion and the model agree bit for bit."""
    rng = random.Random(11)
    specials = [math.nan, NEG_NAN, math.inf, -math.inf, -0.0, 0.0]
    for share in (0.001, 0.05, 1.0):
        xs = [rng.choice(specials) if rng.random() < share else rng.gauss(0, 1) for _ in range(12_000)]
        batches = pa.table({"x": pa.array(with_nulls(xs, seed=12), pa.float64())}).to_batches()
        _compare(batches, [pa.float64()], ["x"], lambda p: APC.bind(p=p), "approx_percentile_cont(x, {p})",
                 f"share {share}")
    # all NaN: the estimate is NaN, the extremes too
    batches = pa.table({"x": [math.nan] * 5}).to_batches()
    _compare(batches, [pa.float64()], ["x"], lambda p: APC.bind(p=p), "approx_percentile_cont(x, {p})", "nan")


@pytest.mark.parametrize("n", [1, 100, sweep.slow(10_000), sweep.slow(30_000)])
def test_oracle_with_weight(n):
    """Weights as DataFusion takes them: zero and negative ones included (no NULLs here: see below)."""
    rng = random.Random(n)
    xs = [rng.gauss(0, 100) for _ in range(n)]
    int_weights = [rng.choice([0, 1, 1, 1, 2, 3, -1]) for _ in range(n)]
    float_weights = [rng.uniform(0.0, 2.0) for _ in range(n)]
    table = pa.table({"x": as_type(xs, pa.int64()), "w": pa.array(int_weights, pa.int64()),
                      "f": pa.array(xs), "fw": pa.array(float_weights)})
    batches = table.to_batches()
    _compare(batches, [pa.int64()] * 2, ["x", "w"], lambda p: WEIGHTED.bind(p=p),
             "approx_percentile_cont_with_weight(x, w, {p})", "int weights")
    _compare(batches, [pa.float64()] * 2, ["f", "fw"], lambda p: WEIGHTED.bind(p=p, max_size=10),
             "approx_percentile_cont_with_weight(f, fw, {p}, 10)", "float weights, max_size 10")
    _compare(batches, [pa.float64()] * 2, ["f", "fw"], lambda p: WEIGHTED.bind(p=p, descending=True),
             "approx_percentile_cont_with_weight(fw, {p}) WITHIN GROUP (ORDER BY f DESC)", "desc")


def test_equal_weights_give_the_unweighted_percentile():
    """DataFusion 55 counts weight, not rows (DataFusion 50 counted rows, so weights of 10 put the
    median near the 5th percentile): with every weight 10 the median is the median."""
    xs = [float(i) for i in range(1, 1001)]
    table = pa.table({"x": xs, "w": [10.0] * 1000})
    [row] = df_rows(table.to_batches(), "SELECT approx_percentile_cont_with_weight(x, w, 0.5) AS r FROM t")
    got = run_model(WEIGHTED.bind(p=0.5), [pa.float64()] * 2, table.to_batches(), ["x", "w"])
    assert identical(got, row["r"]) and 495 <= got <= 505


def test_oracle_grouped():
    rng = random.Random(21)
    n = 30_000
    xs = [rng.gauss(0, 1) if rng.random() > 0.01 else rng.choice([math.nan, math.inf]) for _ in range(n)]
    table = pa.table({"k": pa.array([rng.choice([0, 1, 2, None]) for _ in range(n)], pa.int64()),
                      "x": pa.array(with_nulls(xs, seed=22)),
                      "i": as_type([x * 1000 if math.isfinite(x) else 0 for x in xs], pa.int64())})
    batches = table.to_batches(max_chunksize=12_000)
    for p in (0.01, 0.5, 0.9):
        rows = df_rows(batches, f"SELECT k, approx_percentile_cont(x, {p}) AS a, "
                                f"approx_percentile_cont(i, {p}, 30) AS b FROM t GROUP BY k")
        got_a = run_model_grouped(APC.bind(p=p), [pa.float64()], batches, ["x"])
        got_b = run_model_grouped(APC.bind(p=p, max_size=30), [pa.int64()], batches, ["i"])
        for r in rows:
            assert identical(got_a[r["k"]], r["a"]) and identical(got_b[r["k"]], r["b"]), (p, r)


def test_empty_and_all_null_global_and_grouped():
    table = pa.table({"k": pa.array([1, 1, 2], pa.int64()), "x": pa.array([None, None, 3.5])})
    rows = df_rows(table.to_batches(), "SELECT k, approx_median(x) m, approx_percentile_cont(x, 0.1) a "
                                       "FROM t GROUP BY k ORDER BY k")
    assert rows == [{"k": 1, "m": None, "a": None}, {"k": 2, "m": 3.5, "a": 3.5}]
    got = aggregate_groups(MEDIAN, [pa.float64()], [table.column("x").combine_chunks()],
                           keys=table.column("k").combine_chunks(), partitions=3)
    assert got == {1: None, 2: 3.5}
    empty = pa.array([], pa.float64())
    assert aggregate(APC.bind(p=0.5), [pa.float64()], [empty], partitions=3) == {None: None}
    assert df_rows(table.to_batches(), "SELECT approx_median(x) m FROM t WHERE k > 5") == [{"m": None}]


# --- DataFusion 55's NULL and type rules for the weighted form (DataFusion 50 differed) ------------

def test_with_weight_skips_null_rows():
    """DataFusion 50 read a NULL x or weight as the 0 its value buffer held; DataFusion 55 filters those
    rows, as the model does: only (100, 1) and (300, 1) are left, whose median is 200."""
    table = pa.table({"x": pa.array([None, 100, 200, 300], pa.int64()), "w": pa.array([5, 1, None, 1], pa.int64())})
    [row] = df_rows(table.to_batches(), "SELECT approx_percentile_cont_with_weight(x, w, 0.5) AS r FROM t")
    model = run_model(WEIGHTED.bind(p=0.5), [pa.int64()] * 2, table.to_batches(), ["x", "w"])
    assert row["r"] == model == one(WEIGHTED.bind(p=0.5), pa.int64(), [100, 300], [1, 1]) == 200.0


def test_with_weight_result_type_is_xs():
    """The result type follows x alone (a double here) whatever the weight's type."""
    table = pa.table({"x": pa.array([1, 2, 3, 4], pa.int64()), "w": pa.array([1.0, 1.0, 1.0, 1.0])})
    [row] = df_rows(table.to_batches(), "SELECT approx_percentile_cont_with_weight(x, w, 0.5) AS r FROM t")
    model = run_model(WEIGHTED.bind(p=0.5), [pa.int64(), pa.float64()], table.to_batches(), ["x", "w"])
    assert row["r"] == model == 2.5
    assert WEIGHTED.return_type([pa.int64(), pa.float64()]) == WEIGHTED.return_type([pa.int64(), pa.int8()]) \
        == pa.float64()
    assert WEIGHTED.return_type([pa.float32(), pa.float64()]) == pa.float32()


# --- across partitions: within 1% of the true rank --------------------------------------------------
# (Data of few distinct values: within one step of the exact percentile instead. A t-digest assumes
# values spread out within a centroid, so on a staircase it can land on the step below the one at
# rank p, beyond 1% of rank; DataFusion's digest does the same.)

@pytest.mark.parametrize("t", VALUE_TYPES, ids=str)
@pytest.mark.parametrize("dist", ("uniform", "normal", "skewed", "few_distinct"))
@pytest.mark.parametrize("partitions", (sweep.slow(1), 3, sweep.slow(8)))
def test_multi_phase_within_one_percent_of_rank(t, dist, partitions, monkeypatch):
    monkeypatch.setattr(drivers, "MAX_BATCH_ROWS", 500)
    xs = values(dist, 10_000, seed=partitions)
    column = as_type(with_nulls(xs, seed=5), t)
    data = [v for v in column.to_pylist() if v is not None]
    ok = within_a_step if dist == "few_distinct" else true_rank_ok
    for p in (0.01, 0.1, 0.5, 0.9, 0.99):
        got = aggregate(APC.bind(p=p), [t], [column], partitions=partitions, seed=p)[None]
        assert ok(got, data, p), (p, got)
    assert ok(aggregate(MEDIAN, [t], [column], partitions=partitions)[None], data, 0.5)


@pytest.mark.parametrize("partitions", (2, sweep.slow(5)))
def test_multi_phase_grouped_and_large(partitions, monkeypatch):
    monkeypatch.setattr(drivers, "MAX_BATCH_ROWS", 2000)
    rng = random.Random(partitions)
    n = 50_000
    xs = [rng.lognormvariate(0, 1) for _ in range(n)]
    keys = [rng.choice(["a", "b", "c"]) for _ in range(n)]
    column, key_column = pa.array(xs), pa.array(keys)
    for p in (0.05, 0.5, 0.95):
        for driver in (aggregate, aggregate_groups):
            got = driver(APC.bind(p=p), [pa.float64()], [column], keys=key_column, partitions=partitions, seed=3)
            for k, v in got.items():
                assert true_rank_ok(v, [x for x, kk in zip(xs, keys) if kk == k], p), (driver, p, k, v)


def test_multi_phase_with_weight_unit_weights():
    """With weights of 1 the weighted digest is an ordinary one: within 1% of rank too."""
    rng = random.Random(4)
    xs = [rng.gauss(0, 1) for _ in range(5000)]
    column, weights = pa.array(xs), pa.array([1.0] * len(xs))
    for p in (0.1, 0.5, 0.9):
        got = aggregate(WEIGHTED.bind(p=p), [pa.float64()] * 2, [column, weights], partitions=4)[None]
        assert true_rank_ok(got, xs, p), (p, got)
