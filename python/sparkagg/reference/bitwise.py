"""bit_and, bit_or and bit_xor (the JVM's functions/bitwise.scala): the single-group accumulator and the
native GroupsAccumulator, whose fold ``boolean`` reuses for bool_and and bool_or.

bit_* take one integer argument (int8/16/32/64 or unsigned) and return, and keep as state, that same
type: Python's integers behave as infinite two's complement, so AND, OR and XOR of values that fit a
signed (or unsigned) type always fit it again, negatives included. They skip NULLs and are NULL when no
value is left. Only bit_xor can retract (XOR undoes itself); it counts its values so that a window
frame left without any is NULL again (DataFusion 55's sliding bit_xor says 0 there).
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Callable

import pyarrow as pa

from .accumulator import SLOT_BYTES, Accumulator, columns_to_pylists, non_null
from .argtypes import DataTypes, StateFields, _one_argument
from .function import AggregateFunction
from .groups import _OneValueGroups


class BitwiseAccumulator(Accumulator):
    """``kind``(x) for kind in ``OPS``: the operator folded over the non-NULL values, NULL when there
    are none. Result and state ([value]): the input type, one ``ACCEPTS`` takes."""

    OPS: dict[str, Callable[[Any, Any], Any]] = {
        "bit_and": lambda a, b: a & b,
        "bit_or": lambda a, b: a | b,
        "bit_xor": lambda a, b: a ^ b,
    }
    ACCEPTS: Callable[[pa.DataType], bool] = staticmethod(pa.types.is_integer)

    def __init__(self, arg_types: DataTypes, ansi: bool = True, *, kind: str) -> None:
        _one_argument(kind, arg_types, self.ACCEPTS)
        self._kind = kind
        self._op = self.OPS[kind]
        self._value: Any = None
        self._count = 0  # values folded in (for bit_xor's retract: 0 means NULL again)

    @classmethod
    def return_type(cls, arg_types: DataTypes, *, kind: str) -> pa.DataType:
        return _one_argument(kind, arg_types, cls.ACCEPTS)

    @classmethod
    def state_fields(cls, arg_types: DataTypes, *, kind: str) -> StateFields:
        return [(kind, cls.return_type(arg_types, kind=kind))]

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


class BitwiseGroupsAccumulator(_OneValueGroups):
    """bit_and / bit_or / bit_xor on integers (``kind``): each group starts at the operator's identity
    (all ones, zero), NULL until it sees a value."""

    ACCUMULATOR: type[BitwiseAccumulator] = BitwiseAccumulator
    _IDENTITY: dict[str, Any] = {"bit_and": -1, "bit_or": 0, "bit_xor": 0}

    def __init__(self, arg_types, ansi=True, *, kind: str) -> None:
        super().__init__(arg_types, ansi, kind=kind)
        self._setup(self.ACCUMULATOR.return_type(arg_types, kind=kind),
                    self.ACCUMULATOR.state_fields(arg_types, kind=kind))
        self._kind = kind

    def _initial(self, name: str) -> Any:
        return self._IDENTITY[self._kind]

    def _fold(self, g: int, v: Any) -> None:
        kind, values = self._kind, self.values
        if kind == "bit_and":
            values[g] &= v
        elif kind == "bit_or":
            values[g] |= v
        else:
            values[g] ^= v


def _bitwise(kind: str) -> AggregateFunction:
    return AggregateFunction(kind, BitwiseAccumulator, kind=kind, groups_accumulator=BitwiseGroupsAccumulator)


BIT_AND = _bitwise("bit_and")
BIT_OR = _bitwise("bit_or")
BIT_XOR = _bitwise("bit_xor")
