"""Reference accumulators of count, sum, avg (alias mean), min and max, and the registry of all.

Semantics are DataFusion 50's (shared/spec/functions.md), checked against the ``datafusion`` Python
package, with the project's listed deviations:

* integer and decimal sums follow Spark's ANSI mode on overflow (raise, or NULL when ANSI is off)
  where DataFusion wraps silently;
* min/max order floats by one total order (NaN above everything, -0.0 below 0.0) in every path,
  where DataFusion 50's grouped path depends on arrival order;
* a bounded window frame always gets the value of its rows, as if recomputed: the retracting
  accumulators keep enough state for that (DataFusion's sliding sum and avg turn NaN once an infinity
  has left the frame, and its sliding avg gives NaN for a frame of NULLs).

Python values are pyarrow's ``as_py`` values; decimals are computed exactly on unscaled integers.
"""
from __future__ import annotations

import decimal
import math
from collections import deque
from collections.abc import Sequence
from typing import Any, Callable

import pyarrow as pa

from .accumulator import SLOT_BYTES, Accumulator, columns_to_pylists, non_null
from .groups import GroupsAccumulator, GroupsAccumulatorAdapter

MAX_DECIMAL_PRECISION = 38
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
# Extra digits a decimal sum's type gets over its input's, and extra scale digits of a decimal avg.
SUM_EXTRA_PRECISION = 10
AVG_EXTRA_DIGITS = 4

# Rescales decimals without rounding: it has room for any 38-digit value at any scale, and a value
# that would still need rounding is a bug, so Inexact raises instead of passing unnoticed.
_EXACT = decimal.Context(prec=2 * MAX_DECIMAL_PRECISION + 2, traps=[decimal.Inexact])

DataTypes = Sequence[pa.DataType]
StateFields = list[tuple[str, pa.DataType]]


# --- type rules -------------------------------------------------------------------------------

def _is_float(t: pa.DataType) -> bool:
    """float32 and float64; half floats have no Spark type."""
    return pa.types.is_float32(t) or pa.types.is_float64(t)


def _is_numeric(t: pa.DataType) -> bool:
    return pa.types.is_integer(t) or _is_float(t) or pa.types.is_decimal128(t)


def _is_orderable(t: pa.DataType) -> bool:
    """The types min/max accept: numbers, decimal, string, binary, boolean, date, timestamp."""
    return (
        _is_numeric(t)
        or pa.types.is_string(t)
        or pa.types.is_large_string(t)
        or pa.types.is_binary(t)
        or pa.types.is_large_binary(t)
        or pa.types.is_boolean(t)
        or pa.types.is_date(t)
        or pa.types.is_timestamp(t)
    )


def _one_argument(name: str, arg_types: DataTypes, accepts: Callable[[pa.DataType], bool]) -> pa.DataType:
    """The single argument type of ``name``, rejecting other arities and unsupported types at plan
    time, as DataFusion's signature check does."""
    if len(arg_types) != 1:
        raise TypeError(f"{name} takes exactly one argument, got {len(arg_types)}")
    (t,) = arg_types
    if not accepts(t):
        raise TypeError(f"{name} does not support argument type {t}")
    return t


def _decimal(precision: int, scale: int) -> pa.DataType:
    return pa.decimal128(min(MAX_DECIMAL_PRECISION, precision), min(MAX_DECIMAL_PRECISION, scale))


def _sum_type(t: pa.DataType) -> pa.DataType:
    """Integers sum as int64, floats as double, decimal(p, s) as decimal(min(38, p + 10), s)."""
    if pa.types.is_decimal(t):
        return _decimal(t.precision + SUM_EXTRA_PRECISION, t.scale)
    return pa.float64() if _is_float(t) else pa.int64()


# --- arithmetic helpers ----------------------------------------------------------------------

def _overflow(ansi: bool, what: str) -> None:
    """Spark's rule for an arithmetic overflow: ANSI mode raises, otherwise the result is NULL."""
    if ansi:
        raise OverflowError(f"[ARITHMETIC_OVERFLOW] {what} overflow; set ansi=False to get NULL instead")
    return None


def _unscaled(value: int | decimal.Decimal, scale: int) -> int:
    """``value`` as an integer count of 10**-scale units (exact: raises if digits would be lost)."""
    return int(decimal.Decimal(value).scaleb(scale, _EXACT))


def _scaled(unscaled: int, scale: int) -> decimal.Decimal:
    """The decimal of ``unscaled`` units of 10**-scale, carrying exactly ``scale`` fraction digits."""
    return decimal.Decimal(unscaled).scaleb(-scale, _EXACT)


def _float_order_key(x: float) -> tuple[int, float, float]:
    """The total order of min/max on floats: NaN above every number, and -0.0 below 0.0.

    DataFusion's ungrouped min/max order this way (min(0.0, -0.0) is -0.0, max is 0.0, in either
    arrival order) and the spec asks for NaN on top in grouped aggregation too, so one order serves
    every path."""
    if math.isnan(x):
        return (1, 0.0, 0.0)
    return (0, x, math.copysign(1.0, x))


class _FloatSum:
    """A running double sum whose NaN and infinite inputs are counted apart from the finite ones.

    Finite values are added in arrival order, as DataFusion adds them. The counters exist for
    retract: IEEE arithmetic cannot take an infinity back out (inf - inf is NaN), so subtracting would
    leave a frame NaN after its infinity left; with counters a sliding frame equals a recomputed one.
    (A finite running sum that itself overflows to infinity is not undone by retract.)"""

    def __init__(self) -> None:
        self._finite = 0.0  # DataFusion starts at 0.0 too: the sum of a lone -0.0 is 0.0
        self._nan = self._pos_inf = self._neg_inf = 0

    def add(self, value: float, sign: int = 1) -> None:
        """Add ``value`` (``sign`` 1), or take it back out (``sign`` -1)."""
        x = float(value)  # integer inputs of avg are averaged as doubles
        if math.isnan(x):
            self._nan += sign
        elif x == math.inf:
            self._pos_inf += sign
        elif x == -math.inf:
            self._neg_inf += sign
        elif sign > 0:
            self._finite += x
        else:
            self._finite -= x

    def fits(self) -> bool:
        """Doubles never overflow into an error: they become infinite."""
        return True

    def value(self) -> float:
        if self._nan or (self._pos_inf and self._neg_inf):
            return math.nan
        if self._pos_inf:
            return math.inf
        if self._neg_inf:
            return -math.inf
        return self._finite


class _ExactSum:
    """An exact running sum of int64 values or of decimals (as unscaled integers), unbounded.

    Holding it exactly keeps arrival order and retract from ever causing a spurious overflow: the
    bound of the sum's type is checked only when the value leaves the accumulator (``fits``), so
    overflow means "the sum needs more than its type holds", as the project defines it."""

    def __init__(self, sum_type: pa.DataType) -> None:
        self.is_decimal = pa.types.is_decimal(sum_type)
        if self.is_decimal:
            self.scale = sum_type.scale
            self._lo, self._hi = 1 - 10**sum_type.precision, 10**sum_type.precision - 1
        else:
            self.scale = 0
            self._lo, self._hi = INT64_MIN, INT64_MAX
        self.total = 0  # units of 10**-scale

    def add(self, value: int | decimal.Decimal, sign: int = 1) -> None:
        """Add ``value`` (``sign`` 1), or take it back out (``sign`` -1)."""
        self.total += sign * (_unscaled(value, self.scale) if self.is_decimal else value)

    def fits(self) -> bool:
        return self._lo <= self.total <= self._hi

    def value(self) -> int | decimal.Decimal:
        return _scaled(self.total, self.scale) if self.is_decimal else self.total


# --- count -----------------------------------------------------------------------------------

class CountAccumulator(Accumulator):
    """count(a, b, ...): rows in which every argument is non-NULL; 0 for no rows, never NULL.

    count(*) is count(1): DataFusion's and Spark's planners substitute the literal before any
    accumulator exists, so an accumulator made for zero arguments is fed that one literal column
    (the drivers do this) and counts its rows. State: [count]."""

    def __init__(self, arg_types: DataTypes, ansi: bool = True) -> None:
        self.return_type(arg_types)
        self._arity = max(1, len(arg_types))
        self._count = 0

    @staticmethod
    def return_type(arg_types: DataTypes) -> pa.DataType:
        return pa.int64()

    @staticmethod
    def state_fields(arg_types: DataTypes) -> StateFields:
        return [("count", pa.int64())]

    def _counted(self, values: Sequence[pa.Array]) -> int:
        columns = columns_to_pylists(values, self._arity)
        return sum(1 for row in zip(*columns) if None not in row)

    def update_batch(self, values: Sequence[pa.Array]) -> None:
        self._count += self._counted(values)

    def retract_batch(self, values: Sequence[pa.Array]) -> None:
        self._count -= self._counted(values)

    def supports_retract_batch(self) -> bool:
        return True

    def merge_batch(self, states: Sequence[pa.Array]) -> None:
        (counts,) = columns_to_pylists(states, 1)
        self._count += sum(counts)

    def state(self) -> list[Any]:
        return [self._count]

    def evaluate(self) -> int:
        return self._count

    def size(self) -> int:
        return SLOT_BYTES


# --- sum and avg -----------------------------------------------------------------------------

class _SumAndCount(Accumulator):
    """What sum and avg share: a running sum of the non-NULL inputs and their count.

    The count tells an empty group (NULL) from a zero sum, and lets retract know when a frame has
    emptied. A state whose sum is NULL while its count is positive is an overflowed partial sum
    (ANSI off): merging it makes this sum overflowed too, since the lost value cannot be recovered."""

    def __init__(self, sum_type: pa.DataType, ansi: bool) -> None:
        self._ansi = ansi
        self._count = 0
        self._overflowed = False
        self._sum: _FloatSum | _ExactSum = (
            _FloatSum() if pa.types.is_floating(sum_type) else _ExactSum(sum_type)
        )

    def update_batch(self, values: Sequence[pa.Array]) -> None:
        for v in non_null(values):
            self._sum.add(v)
            self._count += 1

    def retract_batch(self, values: Sequence[pa.Array]) -> None:
        for v in non_null(values):
            self._sum.add(v, -1)
            self._count -= 1

    def supports_retract_batch(self) -> bool:
        return True

    def _merge(self, counts: list[int], sums: list[Any]) -> None:
        for count, total in zip(counts, sums):
            if count == 0:
                continue
            self._count += count
            if total is None:
                self._overflowed = True
            else:
                self._sum.add(total)

    def _exported_sum(self) -> Any:
        """The sum as its state type holds it: NULL when empty, the overflow rule when it does not fit."""
        if self._count == 0:
            return None
        if self._overflowed or not self._sum.fits():
            return _overflow(self._ansi, "sum")
        return self._sum.value()

    def size(self) -> int:
        """A count and a sum: 64 bits, or 128 for a decimal sum."""
        wide = isinstance(self._sum, _ExactSum) and self._sum.is_decimal
        return SLOT_BYTES * (3 if wide else 2)


class SumAccumulator(_SumAndCount):
    """sum(x): int64 for integers, double for floats, decimal(min(38, p + 10), s) for decimal(p, s).

    NULL when there is no non-NULL input. State: [sum, count] (DataFusion keeps the count only in
    its sliding variant; sparkagg always keeps it, and the sum is NULL when the count is 0 or the sum
    overflowed)."""

    def __init__(self, arg_types: DataTypes, ansi: bool = True) -> None:
        t = _one_argument("sum", arg_types, _is_numeric)
        super().__init__(_sum_type(t), ansi)

    @staticmethod
    def return_type(arg_types: DataTypes) -> pa.DataType:
        return _sum_type(_one_argument("sum", arg_types, _is_numeric))

    @staticmethod
    def state_fields(arg_types: DataTypes) -> StateFields:
        return [("sum", SumAccumulator.return_type(arg_types)), ("count", pa.int64())]

    def merge_batch(self, states: Sequence[pa.Array]) -> None:
        sums, counts = columns_to_pylists(states, 2)
        self._merge(counts, sums)

    def state(self) -> list[Any]:
        return [self._exported_sum(), self._count]

    def evaluate(self) -> Any:
        return self._exported_sum()


class AvgAccumulator(_SumAndCount):
    """avg(x) (alias mean): the mean of the non-NULL inputs, NULL when there are none.

    Integers and floats are averaged as doubles (each value converted, summed, divided by the count).
    decimal(p, s) averages exactly to decimal(min(38, p + 4), min(38, s + 4)): the sum, scaled to the
    result scale, divided by the count with the quotient truncated toward zero, as DataFusion does
    (avg of 1.00, 2.00, 2.00 is 1.666666, and -1.666666 for the negatives). State: [count, sum], the
    sum a double or a decimal(min(38, p + 10), s)."""

    def __init__(self, arg_types: DataTypes, ansi: bool = True) -> None:
        t = _one_argument("avg", arg_types, _is_numeric)
        super().__init__(self._state_sum_type(t), ansi)
        self._result_type = self.return_type(arg_types)

    @staticmethod
    def _state_sum_type(t: pa.DataType) -> pa.DataType:
        return _sum_type(t) if pa.types.is_decimal(t) else pa.float64()

    @staticmethod
    def return_type(arg_types: DataTypes) -> pa.DataType:
        t = _one_argument("avg", arg_types, _is_numeric)
        if pa.types.is_decimal(t):
            return _decimal(t.precision + AVG_EXTRA_DIGITS, t.scale + AVG_EXTRA_DIGITS)
        return pa.float64()

    @staticmethod
    def state_fields(arg_types: DataTypes) -> StateFields:
        t = _one_argument("avg", arg_types, _is_numeric)
        return [("count", pa.int64()), ("sum", AvgAccumulator._state_sum_type(t))]

    def merge_batch(self, states: Sequence[pa.Array]) -> None:
        counts, sums = columns_to_pylists(states, 2)
        self._merge(counts, sums)

    def state(self) -> list[Any]:
        return [self._count, self._exported_sum()]

    def evaluate(self) -> Any:
        total = self._exported_sum()
        if total is None:
            return None
        if isinstance(self._sum, _FloatSum):
            return total / self._count
        scale = self._result_type.scale
        numerator = self._sum.total * 10 ** (scale - self._sum.scale)
        quotient = abs(numerator) // self._count  # truncation toward zero, sign applied after
        if quotient >= 10**self._result_type.precision:
            return _overflow(self._ansi, "avg")
        return _scaled(-quotient if numerator < 0 else quotient, scale)


# --- min and max -----------------------------------------------------------------------------

class MinMaxAccumulator(Accumulator):
    """min(x) / max(x) (``kind``): the least / greatest non-NULL input, NULL when there is none.

    Result and state ([min] / [max]) have the input type. Floats use ``_float_order_key``; strings
    compare by code point (the same order as their UTF-8 bytes), binary bytewise, False < True.
    Retract needs the values still in the frame: ``SlidingMinMaxAccumulator`` keeps them."""

    def __init__(self, arg_types: DataTypes, ansi: bool = True, *, kind: str) -> None:
        t = _one_argument(kind, arg_types, _is_orderable)
        self._kind = kind
        self._key: Callable[[Any], Any] = _float_order_key if _is_float(t) else (lambda v: v)
        self._value: Any = None

    @staticmethod
    def return_type(arg_types: DataTypes, *, kind: str) -> pa.DataType:
        return _one_argument(kind, arg_types, _is_orderable)

    @staticmethod
    def state_fields(arg_types: DataTypes, *, kind: str) -> StateFields:
        return [(kind, MinMaxAccumulator.return_type(arg_types, kind=kind))]

    def _better(self, candidate: Any, incumbent: Any) -> bool:
        """Whether ``candidate`` strictly beats ``incumbent``; ties keep the value seen first."""
        if self._kind == "min":
            return self._key(candidate) < self._key(incumbent)
        return self._key(candidate) > self._key(incumbent)

    def update_batch(self, values: Sequence[pa.Array]) -> None:
        for v in non_null(values):
            if self._value is None or self._better(v, self._value):
                self._value = v

    def merge_batch(self, states: Sequence[pa.Array]) -> None:
        """The state is a value of the input type, so merging is updating."""
        self.update_batch(states)

    def state(self) -> list[Any]:
        return [self.evaluate()]

    def evaluate(self) -> Any:
        return self._value

    def size(self) -> int:
        return SLOT_BYTES + _payload_bytes(self._value)


class SlidingMinMaxAccumulator(MinMaxAccumulator):
    """min/max over a bounded window frame: keeps the frame's non-NULL values in arrival order.

    Window frames retract rows in the order they arrived, so the frame is a queue. DataFusion keeps
    a monotonic deque for O(1) amortised steps; a plain queue scanned at evaluate gives the same
    values and is simpler to trust as a reference."""

    def __init__(self, arg_types: DataTypes, ansi: bool = True, *, kind: str) -> None:
        super().__init__(arg_types, ansi, kind=kind)
        self._frame: deque[Any] = deque()

    def update_batch(self, values: Sequence[pa.Array]) -> None:
        self._frame.extend(non_null(values))

    def retract_batch(self, values: Sequence[pa.Array]) -> None:
        for v in non_null(values):
            if not self._frame or self._key(self._frame[0]) != self._key(v):
                raise ValueError(f"retract of {v!r} out of arrival order")
            self._frame.popleft()

    def supports_retract_batch(self) -> bool:
        return True

    def evaluate(self) -> Any:
        if not self._frame:
            return None
        pick = min if self._kind == "min" else max
        return pick(self._frame, key=self._key)  # both keep the first of equal values

    def size(self) -> int:
        return SLOT_BYTES + sum(SLOT_BYTES + _payload_bytes(v) for v in self._frame)


def _payload_bytes(value: Any) -> int:
    """Variable-length bytes a value holds beyond its fixed slot (strings as UTF-8)."""
    if isinstance(value, str):
        return len(value.encode("utf-8"))
    if isinstance(value, bytes):
        return len(value)
    return 0


# --- registry --------------------------------------------------------------------------------

class AggregateFunction:
    """One aggregate function: its type rules and its accumulators (DataFusion's ``AggregateUDFImpl``).

    Calling it makes the accumulator of one group; ``sliding`` makes the one bounded window frames
    use (DataFusion's ``create_sliding_accumulator``), which is the same unless the function needs
    extra state to retract; ``groups`` makes the ``GroupsAccumulator`` of all groups. Every
    accumulator takes ``ansi`` so that all are made alike; only those that can overflow (sum, avg)
    use it."""

    def __init__(
        self,
        name: str,
        accumulator: type[Accumulator],
        sliding: type[Accumulator] | None = None,
        **options: Any,
    ) -> None:
        self.name = name
        self._accumulator = accumulator
        self._sliding = sliding or accumulator
        self._options = options
        self._bound: dict[str, Any] = {}  # the options ``bind`` added (shown by repr)
        # A native GroupsAccumulator class (``native_groups`` attaches them), or None: the adapter.
        self.groups_accumulator: type[GroupsAccumulator] | None = None

    def __call__(self, arg_types: DataTypes, ansi: bool = True) -> Accumulator:
        return self._accumulator(list(arg_types), ansi, **self._options)

    def sliding(self, arg_types: DataTypes, ansi: bool = True) -> Accumulator:
        return self._sliding(list(arg_types), ansi, **self._options)

    def groups(self, arg_types: DataTypes, ansi: bool = True) -> GroupsAccumulator:
        """The accumulator of all groups of a hash aggregation (DataFusion's
        ``create_groups_accumulator``): the native one when there is one, else the adapter."""
        if self.groups_accumulator is None:
            return self.adapter(arg_types, ansi)
        return self.groups_accumulator(list(arg_types), ansi, **self._options)

    def adapter(self, arg_types: DataTypes, ansi: bool = True) -> GroupsAccumulatorAdapter:
        """This function's ``Accumulator`` run per group by ``GroupsAccumulatorAdapter``."""
        types = list(arg_types)
        return GroupsAccumulatorAdapter(
            lambda: self(types, ansi), self.return_type(types), self.state_fields(types))

    def return_type(self, arg_types: DataTypes) -> pa.DataType:
        return self._accumulator.return_type(list(arg_types), **self._options)

    def state_fields(self, arg_types: DataTypes) -> StateFields:
        return self._accumulator.state_fields(list(arg_types), **self._options)

    def bind(self, **options: Any) -> AggregateFunction:
        """This function with literal arguments bound (string_agg's ``delimiter``): every accumulator
        it makes, Partial and Final alike, gets them, as DataFusion hands each accumulator the
        literal. ``get`` and the drivers take the bound function wherever they take a name."""
        bound = AggregateFunction(self.name, self._accumulator, self._sliding, **{**self._options, **options})
        bound.groups_accumulator = self.groups_accumulator
        bound._bound = {**self._bound, **options}
        return bound

    def __repr__(self) -> str:
        bound = "".join(f", {k}={v!r}" for k, v in self._bound.items())
        return f"AggregateFunction({self.name!r}{bound})"


_AVG = AggregateFunction("avg", AvgAccumulator)

REGISTRY: dict[str, AggregateFunction] = {
    "count": AggregateFunction("count", CountAccumulator),
    "sum": AggregateFunction("sum", SumAccumulator),
    "avg": _AVG,
    "mean": _AVG,
    "min": AggregateFunction("min", MinMaxAccumulator, SlidingMinMaxAccumulator, kind="min"),
    "max": AggregateFunction("max", MinMaxAccumulator, SlidingMinMaxAccumulator, kind="max"),
}


def register(functions: dict[str, AggregateFunction]) -> None:
    """Add ``functions`` ({name or alias: function}) to the registry. The modules of the other
    families (``bitwise``, ``moments``) call it when imported, which the package does."""
    for name, function in functions.items():
        if REGISTRY.get(name, function) is not function:
            raise ValueError(f"{name!r} is already registered as {REGISTRY[name]!r}")
        REGISTRY[name] = function


def get(name: str | AggregateFunction) -> AggregateFunction:
    """The function registered as ``name`` (aliases included); a function itself (one with bound
    literals, see ``AggregateFunction.bind``) is returned as it is."""
    if isinstance(name, AggregateFunction):
        return name
    try:
        return REGISTRY[name]
    except KeyError:
        raise KeyError(f"no reference model of {name!r}; known: {', '.join(names())}") from None


def names() -> list[str]:
    """Every registered function name, aliases included, sorted."""
    return sorted(REGISTRY)
