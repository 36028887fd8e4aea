"""count(a, b, ...) and count(*) (the JVM's functions/count.scala): the single-group accumulator and
the native GroupsAccumulator."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from .accumulator import SLOT_BYTES, Accumulator, columns_to_pylists
from .argtypes import DataTypes, StateFields
from .function import AggregateFunction
from .groups import EmitTo, NativeGroupsAccumulator, _check_batch, included_rows


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


class CountGroupsAccumulator(NativeGroupsAccumulator):
    """count: per group, the rows whose arguments are all non-NULL. Never NULL. State: [count]."""

    LISTS = ("counts",)

    def __init__(self, arg_types, ansi=True, **options) -> None:
        super().__init__(arg_types, ansi, **options)
        self.return_type = CountAccumulator.return_type(arg_types)
        self.state_fields = CountAccumulator.state_fields(arg_types)
        self._arity = max(1, len(arg_types))
        self.counts: list[int] = []

    def update_batch(self, values, group_indices, opt_filter, total_num_groups) -> None:
        if len(values) != self._arity:
            raise ValueError(f"expected {self._arity} arrays, got {len(values)}")
        _check_batch(values, group_indices, total_num_groups)
        self._resize(total_num_groups)
        for g, row in included_rows(values, group_indices, opt_filter):
            if None not in row:
                self.counts[g] += 1

    def merge_batch(self, values, group_indices, opt_filter, total_num_groups) -> None:
        _check_batch(values, group_indices, total_num_groups)
        self._resize(total_num_groups)
        for g, (count,) in included_rows(values, group_indices, opt_filter):
            self.counts[g] += count

    def evaluate(self, emit_to=EmitTo.All) -> pa.Array:
        return pa.array(self._take(emit_to)["counts"], self.return_type)

    def state(self, emit_to=EmitTo.All) -> list[pa.Array]:
        return [self.evaluate(emit_to)]


COUNT = AggregateFunction("count", CountAccumulator, groups_accumulator=CountGroupsAccumulator)
