"""The running sums that sum and avg share (the JVM's functions/sums.scala): an exact sum of integers or
decimals, unbounded, and a double sum that counts its NaN and infinities apart; the decimal arithmetic
and Spark's overflow rule; the Accumulator and the native GroupsAccumulator both functions build on.

Integer and decimal sums follow Spark's ANSI mode on overflow (raise, or NULL when ANSI is off) where
DataFusion wraps silently. A bounded window frame always gets the value of its rows, as if recomputed:
the retracting accumulators keep enough state for that (DataFusion's sliding sum and avg turn NaN once
an infinity has left the frame). Decimals are computed exactly on unscaled integers.
"""
from __future__ import annotations

import decimal
import math
from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from .accumulator import SLOT_BYTES, Accumulator, non_null
from .argtypes import INT64_MAX, INT64_MIN, MAX_DECIMAL_PRECISION, _decimal, _is_float
from .groups import NativeGroupsAccumulator, NullState, _check_batch, included_rows

# Extra digits a decimal sum's type gets over its input's.
SUM_EXTRA_PRECISION = 10


# Rescales decimals without rounding: it has room for any 38-digit value at any scale, and a value
# that would still need rounding is a bug, so Inexact raises instead of passing unnoticed.
_EXACT = decimal.Context(prec=2 * MAX_DECIMAL_PRECISION + 2, traps=[decimal.Inexact])


def _sum_type(t: pa.DataType) -> pa.DataType:
    """Integers sum as int64, floats as double, decimal(p, s) as decimal(min(38, p + 10), s)."""
    if pa.types.is_decimal(t):
        return _decimal(t.precision + SUM_EXTRA_PRECISION, t.scale)
    return pa.float64() if _is_float(t) else pa.int64()


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


# Flags of the NaN and infinities a double sum has seen (no retract here, so flags suffice where the
# single-group sum counts them).
_NAN, _POS_INF, _NEG_INF = 1, 2, 4


class _SumGroups(NativeGroupsAccumulator):
    """What sum and avg share: per group a running sum of the non-NULL inputs (a double, with flags
    for NaN and infinities, or an exact integer of 10**-scale units), their count, and whether a
    merged partial sum had overflowed (its sum NULL with a positive count)."""

    LISTS = ("sums", "flags", "counts", "overflowed")

    def _setup(self, sum_type: pa.DataType) -> None:
        self._float = pa.types.is_floating(sum_type)
        self._decimal = pa.types.is_decimal(sum_type)
        if self._decimal:
            self._scale = sum_type.scale
            self._lo, self._hi = 1 - 10**sum_type.precision, 10**sum_type.precision - 1
        else:
            self._scale = 0
            self._lo, self._hi = -(2**63), 2**63 - 1
        self.sums: list[Any] = []
        self.flags: list[int] = []
        self.counts: list[int] = []
        self.overflowed: list[bool] = []
        self._nulls = NullState()

    def _initial(self, name: str) -> Any:
        if name == "sums":
            return 0.0 if self._float else 0
        return False if name == "overflowed" else 0

    def _add(self, g: int, value: Any) -> None:
        if self._float:
            x = float(value)
            if math.isnan(x):
                self.flags[g] |= _NAN
            elif x == math.inf:
                self.flags[g] |= _POS_INF
            elif x == -math.inf:
                self.flags[g] |= _NEG_INF
            else:
                self.sums[g] += x
        else:
            self.sums[g] += _unscaled(value, self._scale) if self._decimal else value

    def _update_one(self, g: int, value: Any) -> None:
        self._add(g, value)
        self.counts[g] += 1

    def update_batch(self, values, group_indices, opt_filter, total_num_groups) -> None:
        (column,) = values
        self._resize(total_num_groups)
        self._nulls.accumulate(group_indices, column, opt_filter, total_num_groups, self._update_one)

    def _merge(self, counts: pa.Array, sums: pa.Array, group_indices, opt_filter, total_num_groups) -> None:
        _check_batch([counts, sums], group_indices, total_num_groups)
        self._resize(total_num_groups)
        for g, (count, total) in included_rows([counts, sums], group_indices, opt_filter):
            if not count:
                continue
            self.counts[g] += count
            if total is None:
                self.overflowed[g] = True
            else:
                self._add(g, total)

    def _exported(self, total: Any, flags: int, count: int, overflowed: bool) -> Any:
        """A group's sum as its state type holds it (see ``_SumAndCount._exported_sum``)."""
        if count == 0:
            return None
        if self._float:
            if flags & _NAN or flags & (_POS_INF | _NEG_INF) == _POS_INF | _NEG_INF:
                return math.nan
            if flags & _POS_INF:
                return math.inf
            if flags & _NEG_INF:
                return -math.inf
            return total
        if overflowed or not self._lo <= total <= self._hi:
            return _overflow(self._ansi, "sum")
        return _scaled(total, self._scale) if self._decimal else total

    def _emit(self, emit_to) -> list[tuple[Any, int]]:
        """(exported sum, count) of the emitted groups."""
        self._nulls.build(emit_to)  # kept as long as the lists; the counts decide NULL
        lists = self._take(emit_to)
        return [(self._exported(s, f, c, o), c) for s, f, c, o in
                zip(lists["sums"], lists["flags"], lists["counts"], lists["overflowed"])]

    def _resize(self, total_num_groups: int) -> None:
        super()._resize(total_num_groups)
        self._nulls._resize(total_num_groups)

    def size(self) -> int:
        return super().size() + self._nulls.size()
