"""bool_and and bool_or (the JVM's functions/boolean.scala): the fold of ``bitwise`` over one boolean
argument. They skip NULLs, are NULL when no value is left, and have no retract. Result and state
([value]): boolean.
"""
from __future__ import annotations

from typing import Any, Callable

import pyarrow as pa

from .bitwise import BitwiseAccumulator, BitwiseGroupsAccumulator
from .function import AggregateFunction


class BooleanAccumulator(BitwiseAccumulator):
    """bool_and / bool_or (``kind``): AND / OR of the non-NULL booleans, NULL when there are none."""

    OPS: dict[str, Callable[[Any, Any], Any]] = {
        "bool_and": lambda a, b: a and b,
        "bool_or": lambda a, b: a or b,
    }
    ACCEPTS: Callable[[pa.DataType], bool] = staticmethod(pa.types.is_boolean)


class BooleanGroupsAccumulator(BitwiseGroupsAccumulator):
    """bool_and / bool_or (``kind``): each group starts at true / false, NULL until it sees a value;
    ``NullState.accumulate_boolean`` feeds the fold, as DataFusion's boolean accumulators do."""

    ACCUMULATOR = BooleanAccumulator
    _IDENTITY = {"bool_and": True, "bool_or": False}

    def _fold(self, g: int, v: Any) -> None:
        values = self.values
        if self._kind == "bool_and":
            values[g] = values[g] and v
        else:
            values[g] = values[g] or v

    def update_batch(self, values, group_indices, opt_filter, total_num_groups) -> None:
        (column,) = values
        self._resize(total_num_groups)
        self._nulls.accumulate_boolean(group_indices, column, opt_filter, total_num_groups, self._fold)


def _boolean(kind: str) -> AggregateFunction:
    return AggregateFunction(kind, BooleanAccumulator, kind=kind, groups_accumulator=BooleanGroupsAccumulator)


BOOL_AND = _boolean("bool_and")
BOOL_OR = _boolean("bool_or")
