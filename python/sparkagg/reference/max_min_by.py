"""max_by(x, y) and min_by(x, y) (the JVM's functions/max_min_by.scala): x of the row with the largest
(smallest) y, as DataFusion-extra gives them. Rows whose y is NULL are skipped; NULL when none is left.
Equal ys: the first row to arrive wins. y orders as min/max do (floats: NaN greatest, -0.0 below 0.0).
State: [value, y (named with its direction, as the JVM's ordering keys), max_by_is_set (min_by_is_set)]."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from .accumulator import SLOT_BYTES, Accumulator, columns_to_pylists
from .argtypes import DataTypes, StateFields, _is_orderable
from .function import AggregateFunction
from .ordering import _float_order_key


def _types(kind: str, arg_types: DataTypes) -> tuple[pa.DataType, pa.DataType]:
    if len(arg_types) != 2:
        raise TypeError(f"{kind} takes two arguments (x, y), got {len(arg_types)}")
    x, y = arg_types
    if not _is_orderable(y):
        raise TypeError(f"{kind} cannot choose by a value of type {y}")
    return x, y


def _order(y: Any) -> Any:
    return _float_order_key(y) if isinstance(y, float) else y


class ExtremeByAccumulator(Accumulator):
    """max_by / min_by (``kind``): the chosen row's x and y."""

    def __init__(self, arg_types: DataTypes, ansi: bool = True, *, kind: str) -> None:
        _types(kind, arg_types)
        self._largest = kind == "max_by"
        self._is_set, self._value, self._key = False, None, None

    @staticmethod
    def return_type(arg_types: DataTypes, *, kind: str) -> pa.DataType:
        return _types(kind, arg_types)[0]

    @staticmethod
    def state_fields(arg_types: DataTypes, *, kind: str) -> StateFields:
        x, y = _types(kind, arg_types)
        direction = "desc" if kind == "max_by" else "asc"
        return [(kind, x), (f"k0_{direction}_nulls_last", y), (f"{kind}_is_set", pa.bool_())]

    def _offer(self, value: Any, key: Any) -> None:
        if key is None:
            return
        if self._is_set:
            new, kept = _order(key), _order(self._key)
            if not (new > kept if self._largest else new < kept):
                return
        self._is_set, self._value, self._key = True, value, key

    def update_batch(self, values: Sequence[pa.Array]) -> None:
        for x, y in zip(*columns_to_pylists(values, 2)):
            self._offer(x, y)

    def merge_batch(self, states: Sequence[pa.Array]) -> None:
        for value, key, is_set in zip(*columns_to_pylists(states, 3)):
            if is_set:
                self._offer(value, key)

    def state(self) -> list[Any]:
        return [self._value, self._key, self._is_set]

    def evaluate(self) -> Any:
        return self._value

    def size(self) -> int:
        return SLOT_BYTES * 4


MAX_BY = AggregateFunction("max_by", ExtremeByAccumulator, kind="max_by")
MIN_BY = AggregateFunction("min_by", ExtremeByAccumulator, kind="min_by")
