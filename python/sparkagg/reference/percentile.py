"""Reference accumulator of percentile_cont(p) WITHIN GROUP (ORDER BY x [DESC]) (DataFusion 51+).

The p-th percentile of the non-NULL values of x, interpolated linearly at index p * (n - 1) of the
values sorted ascending (floats: NaN above everything, -0.0 below 0.0), as a double (float32 for a
float32 x, as DataFusion 55); DESC reads the
sorted values from the top, which is the (1 - p)-th percentile. NULL when there is no value. p is a
literal in [0, 1], bound to the function like string_agg's delimiter:
``get("percentile_cont").bind(p=0.25, descending=False)``; the call's arguments are (x,) or SQL's
(x, p[, descending]) columns, whose constant values are not read. State: [percentile_cont], the list of
values as doubles. No retract. The interpolation is exact, as Spark's percentile_cont; DataFusion 55
truncates its weight to six decimals (percentile_cont(0.3) of {1, 2, 3, 5}: 1.899999, not 1.9).
"""
from __future__ import annotations

import math
import struct
from collections.abc import Sequence
from typing import Any, Callable

import pyarrow as pa

from .accumulator import Accumulator, columns_to_pylists
from .function import AggregateFunction
from .median import _to_float32

_UNBOUND = object()


def _order_key(x: float) -> int:
    """A key that sorts doubles in the total order (NaN greatest, -0.0 before 0.0)."""
    if math.isnan(x):
        return 1 << 64
    bits = struct.unpack("<q", struct.pack("<d", x))[0]
    return bits if bits >= 0 else -(bits & 0x7FFFFFFFFFFFFFFF) - 1


class PercentileContAccumulator(Accumulator):
    def __init__(self, arg_types: Sequence[pa.DataType], ansi: bool = True, *, p: Any = _UNBOUND,
                 descending: bool = False) -> None:
        if not arg_types or not (pa.types.is_integer(arg_types[0]) or pa.types.is_floating(arg_types[0])
                                 or pa.types.is_decimal(arg_types[0]) or pa.types.is_null(arg_types[0])):
            raise TypeError(f"percentile_cont expects a numeric ordering key, got {list(arg_types)}")
        if p is _UNBOUND or not isinstance(p, (int, float)) or not 0 <= p <= 1:
            raise TypeError("percentile_cont needs its percentile bound: get('percentile_cont').bind(p=0.5)")
        self._fraction = 1 - float(p) if descending else float(p)
        self._values: list[float] = []
        self._round: Callable[[float], float] = _to_float32 if pa.types.is_float32(arg_types[0]) else float

    @staticmethod
    def return_type(arg_types: Sequence[pa.DataType], **literals: Any) -> pa.DataType:
        return pa.float32() if arg_types and pa.types.is_float32(arg_types[0]) else pa.float64()

    @staticmethod
    def state_fields(arg_types: Sequence[pa.DataType], **literals: Any) -> list[tuple[str, pa.DataType]]:
        return [("percentile_cont", pa.list_(pa.float64()))]

    def update_batch(self, values: Sequence[pa.Array]) -> None:
        (xs,) = columns_to_pylists(values[:1], 1)
        self._values.extend(float(x) for x in xs if x is not None)

    def merge_batch(self, states: Sequence[pa.Array]) -> None:
        (lists,) = columns_to_pylists(states, 1)
        for items in lists:
            self._values.extend(float(x) for x in (items or []) if x is not None)

    def state(self) -> list[Any]:
        return [list(self._values)]

    def evaluate(self) -> float | None:
        if not self._values:
            return None
        ordered = sorted(self._values, key=_order_key)
        index = self._fraction * (len(ordered) - 1)
        lo, hi = math.floor(index), math.ceil(index)
        q = ordered[lo] if lo == hi else ordered[lo] + (ordered[hi] - ordered[lo]) * (index - lo)
        return self._round(q)

    def size(self) -> int:
        return 64 + 8 * len(self._values)


PERCENTILE_CONT = AggregateFunction("percentile_cont", PercentileContAccumulator, aliases=("quantile_cont",))
