"""Reference accumulators of bit_and, bit_or, bit_xor and bool_and, bool_or.

bit_* take one integer argument (int8/16/32/64 or unsigned) and return, and keep as state, that same
type: Python's integers behave as infinite two's complement, so AND, OR and XOR of values that fit a
signed (or unsigned) type always fit it again, negatives included. bool_and / bool_or take a boolean.
All skip NULLs and are NULL when no value is left. Only bit_xor can retract (XOR undoes itself); it
counts its values so that a window frame left without any is NULL again (DataFusion 50's sliding
bit_xor says 0 there).
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from .accumulator import SLOT_BYTES, Accumulator, columns_to_pylists, non_null
from .functions import AggregateFunction, DataTypes, StateFields, _one_argument, register

_BIT_OPS = {
    "bit_and": lambda a, b: a & b,
    "bit_or": lambda a, b: a | b,
    "bit_xor": lambda a, b: a ^ b,
    "bool_and": lambda a, b: a and b,
    "bool_or": lambda a, b: a or b,
}


def _accepts(kind: str):
    return pa.types.is_boolean if kind.startswith("bool") else pa.types.is_integer


class BitwiseAccumulator(Accumulator):
    """``kind``(x) for kind in bit_and, bit_or, bit_xor, bool_and, bool_or: the operator folded over
    the non-NULL values, NULL when there are none. Result and state ([value]): the input type."""

    def __init__(self, arg_types: DataTypes, ansi: bool = True, *, kind: str) -> None:
        _one_argument(kind, arg_types, _accepts(kind))
        self._kind = kind
        self._op = _BIT_OPS[kind]
        self._value: Any = None
        self._count = 0  # values folded in (for bit_xor's retract: 0 means NULL again)

    @staticmethod
    def return_type(arg_types: DataTypes, *, kind: str) -> pa.DataType:
        return _one_argument(kind, arg_types, _accepts(kind))

    @staticmethod
    def state_fields(arg_types: DataTypes, *, kind: str) -> StateFields:
        return [(kind, BitwiseAccumulator.return_type(arg_types, kind=kind))]

    def update_batch(self, values: Sequence[pa.Array]) -> None:
        for v in non_null(values):
            self._value = v if self._value is None else self._op(self._value, v)
            self._count += 1

    def merge_batch(self, states: Sequence[pa.Array]) -> None:
        """The state is a value of the input type (NULL for an empty partial), so merging is updating."""
        columns_to_pylists(states, 1)
        self.update_batch(states)

    def retract_batch(self, values: Sequence[pa.Array]) -> None:
        if self._kind != "bit_xor":
            return super().retract_batch(values)
        for v in non_null(values):
            self._count -= 1
            self._value = None if self._count == 0 else self._value ^ v

    def supports_retract_batch(self) -> bool:
        return self._kind == "bit_xor"

    def state(self) -> list[Any]:
        return [self._value]

    def evaluate(self) -> Any:
        return self._value

    def size(self) -> int:
        return 2 * SLOT_BYTES


register({kind: AggregateFunction(kind, BitwiseAccumulator, kind=kind) for kind in _BIT_OPS})
