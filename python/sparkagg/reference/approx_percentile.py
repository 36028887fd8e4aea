"""approx_percentile_cont, approx_median and approx_percentile_cont_with_weight (the JVM's
functions/approx_percentile.scala) on the ``tdigest`` sketch.

Semantics are DataFusion 55's, checked against the ``datafusion`` package: on one accumulator fed the
same batches, the model's result equals DataFusion's bit for bit.

* ``approx_percentile_cont(x, p[, max_size])`` (SQL also: ``approx_percentile_cont(p[, max_size])
  WITHIN GROUP (ORDER BY x [DESC])``, DESC meaning the (1 - p)-th percentile): an estimate of the p-th
  percentile of the non-NULL values of x from a t-digest of at most about ``max_size`` centroids
  (default 100). x: any integer or float type, or a decimal, which DataFusion coerces to double.
  Result: float32 for float32 x (the estimate rounded), float64 otherwise (DataFusion 55 returns an
  integer column's estimate unrounded, #21074). NULL when no non-NULL value was seen (empty or all-NULL
  input).
* ``approx_median(x)``: ``approx_percentile_cont(x, 0.5)`` with the default max_size.
* ``approx_percentile_cont_with_weight(x, weight, p[, max_size])`` (also WITHIN GROUP (ORDER BY x
  [DESC])): its result type is approx_percentile_cont's for x. Every row with non-NULL x and weight
  becomes a one-centroid digest (mean x, weight and count ``weight``) and those are merged into the
  accumulator's digest; a digest whose count is not above zero (NaN included) adds nothing, so such
  rows are skipped. The digest's ``count`` is therefore the total weight and the estimate is a
  weighted percentile (DataFusion 55; DataFusion 50 counted rows, which put the estimate low when
  weights were large).

Literals are bound to the function, as percentile_cont's are:
``get("approx_percentile_cont").bind(p=0.5, max_size=100, descending=False)``,
``get("approx_percentile_cont_with_weight").bind(p=0.9)``; approx_median takes none. The call's
columns are (x,) or SQL's (x, p[, max_size]) for approx_percentile_cont, (x, weight) or (x, weight,
p[, max_size]) for the weighted one: the literal columns are constant and are not read. p must be in
[0, 1], max_size a positive integer.

No retract, as in DataFusion.
"""
from __future__ import annotations

import math
import struct
from collections.abc import Sequence
from decimal import Decimal
from typing import Any, Callable

import pyarrow as pa

from .accumulator import SLOT_BYTES, Accumulator, columns_to_pylists
from .argtypes import DataTypes, StateFields, _is_float
from .function import AggregateFunction
from .tdigest import DEFAULT_MAX_SIZE, TDigest, total_order_key

_UNBOUND = object()


# --- type rules ---------------------------------------------------------------------------------

def _is_value_type(t: pa.DataType) -> bool:
    """What the family takes: integers, float32/64 and decimals (which DataFusion makes doubles)."""
    return pa.types.is_integer(t) or _is_float(t) or pa.types.is_decimal(t)


def _result_type(t: pa.DataType) -> pa.DataType:
    return pa.float32() if pa.types.is_float32(t) else pa.float64()


def _check_literal_column(name: str, what: str, t: pa.DataType, accepts: Callable[[pa.DataType], bool]) -> None:
    if not accepts(t):
        raise TypeError(f"{name}'s {what} must be a numeric literal, got a column of type {t}")


def _check_types(name: str, arg_types: DataTypes, weighted: bool) -> pa.DataType:
    """x's type after checking the call's columns: (x[, weight][, p[, max_size]])."""
    own = 2 if weighted else 1
    most = own if name == "approx_median" else own + 2
    if not own <= len(arg_types) <= most:
        shape = {"approx_median": "(x)", "approx_percentile_cont": "(x[, p[, max_size]])",
                 "approx_percentile_cont_with_weight": "(x, weight[, p[, max_size]])"}[name]
        raise TypeError(f"{name} takes {shape}, got {len(arg_types)} arguments")
    x = arg_types[0]
    if not _is_value_type(x):
        raise TypeError(f"{name} does not support argument type {x} (integers, floats, decimals)")
    if weighted and not _is_value_type(arg_types[1]):
        raise TypeError(f"{name} does not support weight type {arg_types[1]} (integers, floats, decimals)")
    if len(arg_types) > own:
        _check_literal_column(name, "percentile", arg_types[own], _is_value_type)
    if len(arg_types) > own + 1:
        _check_literal_column(name, "max_size", arg_types[own + 1], pa.types.is_integer)
    return x


def _to_double(t: pa.DataType) -> Callable[[Any], float]:
    """How a value of ``t`` becomes the double the digest holds: integers and floats as Rust's ``as
    f64``; decimals as Arrow's cast, the unscaled integer as a double divided by 10^scale."""
    if pa.types.is_decimal(t):
        divisor = 10.0 ** t.scale

        def decimal_to_double(d: Decimal) -> float:
            return float(int(d.scaleb(t.scale))) / divisor

        return decimal_to_double
    return float


def _from_double(t: pa.DataType) -> Callable[[float], Any]:
    """The estimate as a value of the result type: float32 rounded, doubles unchanged."""
    if pa.types.is_float32(t):
        def to_float32(q: float) -> float:
            try:
                return struct.unpack("<f", struct.pack("<f", q))[0]
            except OverflowError:
                return math.copysign(math.inf, q)

        return to_float32
    return lambda q: q


def _percentile(name: str, p: Any, descending: bool) -> float:
    if p is _UNBOUND:
        raise TypeError(f"{name}'s percentile is a literal bound to the function: use "
                        f"get({name!r}).bind(p=0.5)")
    if isinstance(p, bool) or not isinstance(p, (int, float, Decimal)) or not 0 <= p <= 1:
        raise ValueError(f"{name}: the percentile must be a number in [0, 1], got {p!r}")
    return 1.0 - float(p) if descending else float(p)


def _max_size(name: str, max_size: Any) -> int:
    if isinstance(max_size, bool) or not isinstance(max_size, int) or max_size < 1:
        raise ValueError(f"{name}: max_size must be a positive integer, got {max_size!r}")
    return max_size


def _state_fields() -> StateFields:
    return [("max_size", pa.int64()), ("sum", pa.float64()), ("count", pa.float64()), ("max", pa.float64()),
            ("min", pa.float64()), ("centroids", pa.list_(pa.float64()))]


# --- accumulators ---------------------------------------------------------------------------------

class ApproxPercentileContAccumulator(Accumulator):
    """approx_percentile_cont(x, p[, max_size]): the t-digest estimate of the p-th percentile of x.

    Result: float32 for float32 x, else float64. State: the six t-digest fields."""

    NAME = "approx_percentile_cont"
    WEIGHTED = False

    def __init__(self, arg_types: DataTypes, ansi: bool = True, *, p: Any = _UNBOUND,
                 max_size: Any = DEFAULT_MAX_SIZE, descending: bool = False) -> None:
        x = _check_types(self.NAME, arg_types, self.WEIGHTED)
        self._arity = len(arg_types)
        self._quantile = _percentile(self.NAME, p, descending)
        self._digest = TDigest(_max_size(self.NAME, max_size))
        self._to_double = _to_double(x)
        self._weight_to_double = _to_double(arg_types[1]) if self.WEIGHTED else float
        self._from_double = _from_double(_result_type(x))
        # Arrow sorts integers as integers and floats by total order, before the conversion.
        self._sort_key: Callable[[Any], Any] = total_order_key if _is_float(x) else (lambda v: v)

    @classmethod
    def return_type(cls, arg_types: DataTypes, **literals: Any) -> pa.DataType:
        return _result_type(_check_types(cls.NAME, arg_types, cls.WEIGHTED))

    @classmethod
    def state_fields(cls, arg_types: DataTypes, **literals: Any) -> StateFields:
        _check_types(cls.NAME, arg_types, cls.WEIGHTED)
        return _state_fields()

    @property
    def digest(self) -> TDigest:
        return self._digest

    def update_batch(self, values: Sequence[pa.Array]) -> None:
        xs = columns_to_pylists(values, self._arity)[0]
        present = sorted((v for v in xs if v is not None), key=self._sort_key)
        self._digest = self._digest.merge_sorted([self._to_double(v) for v in present])

    def merge_batch(self, states: Sequence[pa.Array]) -> None:
        columns = columns_to_pylists(states, 6)
        incoming = [TDigest.from_state(row) for row in zip(*columns)]
        if incoming:
            self._digest = TDigest.merge_digests([*incoming, self._digest])

    def state(self) -> list[Any]:
        return self._digest.to_state()

    def evaluate(self) -> Any:
        if self._digest.count == 0:
            return None
        return self._from_double(self._digest.estimate_quantile(self._quantile))

    def size(self) -> int:
        return 4 * SLOT_BYTES + self._digest.size()


class ApproxMedianAccumulator(ApproxPercentileContAccumulator):
    """approx_median(x): approx_percentile_cont(x, 0.5) with max_size 100; no literals."""

    NAME = "approx_median"

    def __init__(self, arg_types: DataTypes, ansi: bool = True) -> None:
        super().__init__(arg_types, ansi, p=0.5)


class ApproxPercentileContWithWeightAccumulator(ApproxPercentileContAccumulator):
    """approx_percentile_cont_with_weight(x, weight, p[, max_size]): rows with a NULL x or weight, or a
    weight not above zero (NaN included), are skipped; every other row is merged in as a one-centroid
    digest (mean x, weight ``weight``)."""

    NAME = "approx_percentile_cont_with_weight"
    WEIGHTED = True

    def update_batch(self, values: Sequence[pa.Array]) -> None:
        columns = columns_to_pylists(values, self._arity)
        max_size = self._digest.max_size
        rows = [TDigest.of_centroid(max_size, self._to_double(x), self._weight_to_double(w))
                for x, w in zip(columns[0], columns[1]) if x is not None and w is not None and w > 0]
        self._digest = TDigest.merge_digests([*rows, self._digest])


APPROX_PERCENTILE_CONT = AggregateFunction("approx_percentile_cont", ApproxPercentileContAccumulator)
APPROX_MEDIAN = AggregateFunction("approx_median", ApproxMedianAccumulator)
APPROX_PERCENTILE_CONT_WITH_WEIGHT = AggregateFunction(
    "approx_percentile_cont_with_weight", ApproxPercentileContWithWeightAccumulator)
