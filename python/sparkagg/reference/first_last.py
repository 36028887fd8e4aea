"""first_value and last_value (the JVM's functions/first_last.scala); the ORDER BY keys and how they sort
are ``ordering``'s. Semantics are DataFusion 55's, checked against the ``datafusion`` package.

* ``first_value(x [ORDER BY ...]) [IGNORE NULLS]`` / ``last_value(...)``: x of the first / last row
  in that order; NULL for no rows. IGNORE NULLS (``ignore_nulls=True``) skips rows whose x is NULL (a
  NULL order key does not make a row skipped). Result: x's type. State: [first_value (or last_value):
  x's type, then one field per order key (``order_key_0``, ``order_key_1``, ...: the key's type,
  holding the chosen row's keys), first_value_is_set (or last_value_is_set): boolean], DataFusion
  55's layout (it names the key fields after their expressions, ``y@2``, which a model of anonymous
  columns cannot). An unset state has NULL value and keys and the flag false; merge ignores such states. No retract.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from .accumulator import SLOT_BYTES, Accumulator, columns_to_pylists
from .argtypes import DataTypes, StateFields
from .function import AggregateFunction
from .ordering import Ordering, entry_bytes, split_rows


class FirstLastValueAccumulator(Accumulator):
    """first_value / last_value (``kind``): x of the first / last row by the bound ordering (arrival
    order without one), optionally ignoring rows whose x is NULL. State: [value, keys..., <kind>_is_set]."""

    def __init__(self, arg_types: DataTypes, ansi: bool = True, *, kind: str, ordering: Any = (),
                 ignore_nulls: bool = False) -> None:
        self._ordering = Ordering(kind, ordering, arg_types, own=(1,))
        if not isinstance(ignore_nulls, bool):
            raise TypeError(f"{kind}: ignore_nulls must be a boolean, got {ignore_nulls!r}")
        self._kind = kind
        self._arity = len(arg_types)
        self._ignore_nulls = ignore_nulls
        self._is_set = False
        self._value: Any = None
        self._keys: tuple = (None,) * len(self._ordering)

    @staticmethod
    def return_type(arg_types: DataTypes, *, kind: str, ordering: Any = (), **literals: Any) -> pa.DataType:
        Ordering(kind, ordering, arg_types, own=(1,))
        return arg_types[0]

    @staticmethod
    def state_fields(arg_types: DataTypes, *, kind: str, ordering: Any = (), **literals: Any) -> StateFields:
        order = Ordering(kind, ordering, arg_types, own=(1,))
        return [(kind, arg_types[0]), *zip(order.field_names, order.key_types), (f"{kind}_is_set", pa.bool_())]

    def _offer(self, value: Any, keys: tuple) -> None:
        """Take the row if it comes first (first_value: strictly before the held one) or last
        (last_value: not before it)."""
        if self._ignore_nulls and value is None:
            return
        if self._is_set:
            new, held = self._ordering.key(keys), self._ordering.key(self._keys)
            if (new >= held) if self._kind != "last_value" else (new < held):
                return
        self._value, self._keys, self._is_set = value, tuple(keys), True

    def update_batch(self, values: Sequence[pa.Array]) -> None:
        xs, keys = split_rows(self._kind, values, self._arity, self._ordering)
        for x, k in zip(xs, keys):
            self._offer(x, k)

    def merge_batch(self, states: Sequence[pa.Array]) -> None:
        columns = columns_to_pylists(states, 2 + len(self._ordering))
        for row in zip(*columns):
            if row[-1]:  # is_set; an unset (or NULL) flag is an empty partial
                self._offer(row[0], tuple(row[1:-1]))

    def state(self) -> list[Any]:
        return [self._value, *self._keys, self._is_set]

    def evaluate(self) -> Any:
        return self._value

    def size(self) -> int:
        return 2 * SLOT_BYTES + entry_bytes(self._keys, self._value)


FIRST_VALUE = AggregateFunction("first_value", FirstLastValueAccumulator, kind="first_value")
LAST_VALUE = AggregateFunction("last_value", FirstLastValueAccumulator, kind="last_value")
# any_value(x) (DataFusion 55): some non-NULL x; the first to arrive, as the JVM's AnyValue.
ANY_VALUE = AggregateFunction("any_value", FirstLastValueAccumulator, kind="any_value", ignore_nulls=True)
