"""median (the JVM's functions/median.scala). Semantics are DataFusion 55's, checked against the
``datafusion`` package:

* ``median(x)``: integers, floats, decimals; NULLs skipped; NULL when no value is left. Integers are
  read as float64 and give float64 (DataFusion coerces them from 51 on: median{1, 2} = 1.5); floats
  and decimals keep their type. An odd count takes the middle value; an even one averages the two
  middle values in the type: decimals (on their unscaled integers) truncate toward zero
  (median{0.01, 0.02} = 0.01 at scale 2), floats compute (lo + hi) / 2 in their own width (float32
  rounds to float32; two huge doubles overflow to inf, as in DataFusion). Floats are ordered as
  min/max order them: every NaN above everything, -0.0 below 0.0. State: [median], a List<T> of the
  non-NULL values ([] when empty). Retract removes one equal value (DataFusion has median retract
  from 52 on).

Deviations from DataFusion 55, where it computes something no engine should copy:

* median of two decimal(38, s) values whose sum overflows the type: DataFusion adds with
  wrap-around; the exact average always fits the type, so the model gives it.
* a NaN with the sign bit set: DataFusion's median orders floats by IEEE totalOrder, which puts it
  below -inf; the model, as its min/max do, puts every NaN above every number.
"""
from __future__ import annotations

import math
import struct
from collections.abc import Sequence
from typing import Any, Callable

import pyarrow as pa

from .accumulator import SLOT_BYTES, Accumulator, _payload_bytes, columns_to_pylists, non_null
from .argtypes import DataTypes, StateFields, _is_float, _is_numeric, _one_argument
from .function import AggregateFunction
from .ordering import _float_order_key
from .sums import _scaled, _unscaled


def _to_float32(x: float) -> float:
    """``x`` rounded to the nearest float32 (an overflow gives the infinity of its sign)."""
    try:
        return struct.unpack("<f", struct.pack("<f", x))[0]
    except OverflowError:
        return math.copysign(math.inf, x)


def _midpoint(t: pa.DataType) -> Callable[[Any, Any], Any]:
    """The average of the two middle values, computed in the type ``t``."""
    if pa.types.is_decimal(t):
        scale = t.scale

        def decimal_mid(lo: Any, hi: Any) -> Any:
            total = _unscaled(lo, scale) + _unscaled(hi, scale)
            half = abs(total) // 2  # truncation toward zero, sign applied after
            return _scaled(-half if total < 0 else half, scale)

        return decimal_mid
    if pa.types.is_float32(t):
        return lambda lo, hi: _to_float32(_to_float32(lo + hi) / 2)
    return lambda lo, hi: (lo + hi) / 2


class MedianAccumulator(Accumulator):
    """median(x): the middle non-NULL value (the average of the two middle ones for an even count), NULL
    when there is none. Result: float64 for integers, else the input type. State: [median], List of the
    values in the result type."""

    def __init__(self, arg_types: DataTypes, ansi: bool = True) -> None:
        t = MedianAccumulator.return_type(arg_types)
        self._read: Callable[[Any], Any] = float if _is_float(t) else (lambda v: v)
        self._key: Callable[[Any], Any] = _float_order_key if _is_float(t) else (lambda v: v)
        self._mid = _midpoint(t)
        self._values: list[Any] = []

    @staticmethod
    def return_type(arg_types: DataTypes) -> pa.DataType:
        t = _one_argument("median", arg_types, _is_numeric)
        return pa.float64() if pa.types.is_integer(t) else t

    @staticmethod
    def state_fields(arg_types: DataTypes) -> StateFields:
        return [("median", pa.list_(MedianAccumulator.return_type(arg_types)))]

    def update_batch(self, values: Sequence[pa.Array]) -> None:
        self._values.extend(map(self._read, non_null(values)))

    def retract_batch(self, values: Sequence[pa.Array]) -> None:
        for v in non_null(values):
            key = self._key(self._read(v))
            for i, held in enumerate(self._values):
                if self._key(held) == key:
                    del self._values[i]
                    break
            else:
                raise ValueError(f"retract of {v!r}, which median does not hold")

    def supports_retract_batch(self) -> bool:
        return True

    def merge_batch(self, states: Sequence[pa.Array]) -> None:
        (lists,) = columns_to_pylists(states, 1)
        for exported in lists:
            if exported is not None:
                self._values.extend(v for v in exported if v is not None)

    def state(self) -> list[Any]:
        return [list(self._values)]

    def evaluate(self) -> Any:
        n = len(self._values)
        if n == 0:
            return None
        ordered = sorted(self._values, key=self._key)
        if n % 2:
            return ordered[n // 2]
        return self._mid(ordered[n // 2 - 1], ordered[n // 2])

    def size(self) -> int:
        return SLOT_BYTES + sum(SLOT_BYTES + _payload_bytes(v) for v in self._values)


MEDIAN = AggregateFunction("median", MedianAccumulator)
