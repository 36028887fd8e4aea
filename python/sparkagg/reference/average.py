"""avg(x), alias mean (the JVM's functions/average.scala), on the running sums of ``sums``.

Deviation from DataFusion 55: a bounded window frame gets the mean of its rows as if recomputed, where
DataFusion's sliding avg turns NaN once an infinity has left the frame and gives NaN for a frame of
NULLs."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from .accumulator import columns_to_pylists
from .argtypes import DataTypes, StateFields, _decimal, _is_numeric, _one_argument
from .function import AggregateFunction
from .groups import EmitTo
from .sums import _FloatSum, _overflow, _scaled, _sum_type, _SumAndCount, _SumGroups, _unscaled

# Extra digits, and extra scale digits, of a decimal avg's result over its input's.
AVG_EXTRA_DIGITS = 4


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


class AvgGroupsAccumulator(_SumGroups):
    """avg: as ``AvgAccumulator``. State: [count, sum]."""

    def __init__(self, arg_types, ansi=True, **options) -> None:
        super().__init__(arg_types, ansi, **options)
        self.return_type = AvgAccumulator.return_type(arg_types)
        self.state_fields = AvgAccumulator.state_fields(arg_types)
        (t,) = arg_types
        self._setup(_sum_type(t) if pa.types.is_decimal(t) else pa.float64())

    def merge_batch(self, values, group_indices, opt_filter, total_num_groups) -> None:
        counts, sums = values
        self._merge(counts, sums, group_indices, opt_filter, total_num_groups)

    def _mean(self, total: Any, count: int) -> Any:
        if total is None:
            return None
        if self._float:
            return total / count
        result = self.return_type
        numerator = _unscaled(total, self._scale) * 10 ** (result.scale - self._scale)
        quotient = abs(numerator) // count  # truncation toward zero, sign applied after
        if quotient >= 10**result.precision:
            return _overflow(self._ansi, "avg")
        return _scaled(-quotient if numerator < 0 else quotient, result.scale)

    def evaluate(self, emit_to=EmitTo.All) -> pa.Array:
        return pa.array([self._mean(s, c) for s, c in self._emit(emit_to)], self.return_type)

    def state(self, emit_to=EmitTo.All) -> list[pa.Array]:
        emitted = self._emit(emit_to)
        (_, count_type), (_, sum_type) = self.state_fields
        return [pa.array([c for _, c in emitted], count_type), pa.array([s for s, _ in emitted], sum_type)]


AVG = AggregateFunction("avg", AvgAccumulator, aliases=("mean",), groups_accumulator=AvgGroupsAccumulator)
