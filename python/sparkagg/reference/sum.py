"""sum(x) (the JVM's functions/sum.scala) on the running sums of ``sums``: int64 for integers, double for
floats, decimal(min(38, p + 10), s) for decimal(p, s); integer and decimal overflow follows Spark's ANSI
mode where DataFusion wraps."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from .accumulator import columns_to_pylists
from .argtypes import DataTypes, StateFields, _is_numeric, _one_argument
from .function import AggregateFunction
from .groups import EmitTo
from .sums import _sum_type, _SumAndCount, _SumGroups


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


class SumGroupsAccumulator(_SumGroups):
    """sum: as ``SumAccumulator``. State: [sum, count]."""

    def __init__(self, arg_types, ansi=True, **options) -> None:
        super().__init__(arg_types, ansi, **options)
        self.return_type = SumAccumulator.return_type(arg_types)
        self.state_fields = SumAccumulator.state_fields(arg_types)
        self._setup(self.return_type)

    def merge_batch(self, values, group_indices, opt_filter, total_num_groups) -> None:
        sums, counts = values
        self._merge(counts, sums, group_indices, opt_filter, total_num_groups)

    def evaluate(self, emit_to=EmitTo.All) -> pa.Array:
        return pa.array([s for s, _ in self._emit(emit_to)], self.return_type)

    def state(self, emit_to=EmitTo.All) -> list[pa.Array]:
        emitted = self._emit(emit_to)
        (_, sum_type), (_, count_type) = self.state_fields
        return [pa.array([s for s, _ in emitted], sum_type), pa.array([c for _, c in emitted], count_type)]


SUM = AggregateFunction("sum", SumAccumulator, groups_accumulator=SumGroupsAccumulator)
