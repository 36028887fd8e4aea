"""mode(x) (the JVM's functions/mode.scala): the most frequent non-NULL value, counted per distinct value;
equal frequencies go to the smallest value (datafusion-extra-functions 0.5.5's result), floats ordered as
Spark orders them (NaN greatest, -0.0 before 0.0). Floats count by their bits, as DataFusion hashes them:
-0.0 and 0.0 are two values, every NaN one. Retractable: a leaving row's count goes down."""
from __future__ import annotations

import math
import struct
from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from .accumulator import SLOT_BYTES, Accumulator, columns_to_pylists, non_null
from .argtypes import DataTypes, StateFields, _is_float, _one_argument
from .function import AggregateFunction


def _accepts(t: pa.DataType) -> bool:
    return (pa.types.is_integer(t) or _is_float(t) or pa.types.is_date32(t) or pa.types.is_timestamp(t)
            or pa.types.is_string(t) or pa.types.is_large_string(t))


def _key(value: Any) -> Any:
    """The value as the counts' key: a float by its bits (one NaN), anything else as it is."""
    if isinstance(value, float):
        return ("float", struct.pack(">d", math.nan if math.isnan(value) else value))
    return value


def _value(key: Any) -> Any:
    return struct.unpack(">d", key[1])[0] if isinstance(key, tuple) else key


def _order(value: Any) -> Any:
    if isinstance(value, float):
        return (math.isnan(value), 0.0 if math.isnan(value) else value, math.copysign(1.0, value))
    return value


class ModeAccumulator(Accumulator):
    """mode(x): result and state values of x's type; state [values, frequencies]."""

    def __init__(self, arg_types: DataTypes, ansi: bool = True) -> None:
        self._type = _one_argument("mode", arg_types, _accepts)
        self._counts: dict[Any, int] = {}

    @staticmethod
    def return_type(arg_types: DataTypes) -> pa.DataType:
        return _one_argument("mode", arg_types, _accepts)

    @staticmethod
    def state_fields(arg_types: DataTypes) -> StateFields:
        t = _one_argument("mode", arg_types, _accepts)
        return [("values", pa.list_(t)), ("frequencies", pa.list_(pa.int64()))]

    def _add(self, value: Any, n: int) -> None:
        key = _key(value)
        now = self._counts.get(key, 0) + n
        if now:
            self._counts[key] = now
        else:
            del self._counts[key]

    def update_batch(self, values: Sequence[pa.Array]) -> None:
        for v in non_null(values):
            self._add(v, 1)

    def retract_batch(self, values: Sequence[pa.Array]) -> None:
        for v in non_null(values):
            self._add(v, -1)

    def supports_retract_batch(self) -> bool:
        return True

    def merge_batch(self, states: Sequence[pa.Array]) -> None:
        values, frequencies = columns_to_pylists(states, 2)
        for vs, fs in zip(values, frequencies):
            for v, f in zip(vs or [], fs or []):
                self._add(v, f)

    def state(self) -> list[Any]:
        return [[_value(k) for k in self._counts], list(self._counts.values())]

    def evaluate(self) -> Any:
        if not self._counts:
            return None
        top = max(self._counts.values())
        return min((_value(k) for k, n in self._counts.items() if n == top), key=_order)

    def size(self) -> int:
        return SLOT_BYTES * (2 + 3 * len(self._counts))


MODE = AggregateFunction("mode", ModeAccumulator)
