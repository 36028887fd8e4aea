"""min(x) and max(x) (the JVM's functions/min_max.scala): the single-group accumulator, its sliding
variant for bounded window frames, and the native GroupsAccumulator.

Deviation from DataFusion 55: floats are ordered by one total order (``ordering._float_order_key``:
NaN above everything, -0.0 below 0.0) in every path, where DataFusion 55's grouped path depends on
arrival order."""
from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from typing import Any, Callable

import pyarrow as pa

from .accumulator import SLOT_BYTES, Accumulator, _payload_bytes, non_null
from .argtypes import DataTypes, StateFields, _is_float, _is_orderable, _one_argument
from .function import AggregateFunction
from .groups import _OneValueGroups
from .ordering import _float_order_key


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


class MinMaxGroupsAccumulator(_OneValueGroups):
    """min / max (``kind``): as ``MinMaxAccumulator``, one total order on floats in every path."""

    def __init__(self, arg_types, ansi=True, *, kind: str) -> None:
        super().__init__(arg_types, ansi, kind=kind)
        self._setup(MinMaxAccumulator.return_type(arg_types, kind=kind),
                    MinMaxAccumulator.state_fields(arg_types, kind=kind))
        self._min = kind == "min"
        self._key = _float_order_key if _is_float(arg_types[0]) else (lambda v: v)

    def _initial(self, name: str) -> Any:
        return None

    def _fold(self, g: int, v: Any) -> None:
        current = self.values[g]
        if current is None:
            self.values[g] = v
        elif self._min and self._key(v) < self._key(current):
            self.values[g] = v
        elif not self._min and self._key(v) > self._key(current):
            self.values[g] = v


MIN = AggregateFunction("min", MinMaxAccumulator, SlidingMinMaxAccumulator, kind="min",
                        groups_accumulator=MinMaxGroupsAccumulator)
MAX = AggregateFunction("max", MinMaxAccumulator, SlidingMinMaxAccumulator, kind="max",
                        groups_accumulator=MinMaxGroupsAccumulator)
