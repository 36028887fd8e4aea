"""nth_value (the JVM's functions/nth_value.scala); the ORDER BY keys and how they sort are
``ordering``'s. Semantics are DataFusion 55's, checked against the ``datafusion`` package.

* ``nth_value(x, n [ORDER BY ...])``: x of the n-th row in that order (1-based); a negative n counts
  from the end (-1 is the last row); NULL when the group has fewer than |n| rows. A NULL x at that
  position is the result (NULLs are rows). n is an integer literal bound as ``n=``; n = 0 is refused
  as DataFusion refuses it ("Nth value indices are 1 based. 0 is invalid index"). The call's columns
  are (x, keys...) or SQL's (x, n, keys...); the n column is constant and not read. Result: x's type.
  State: [nth_value: List<T>, the values kept in order], plus, when ordered, [nth_value_orderings:
  List<Struct<order_key_0, ...>>, their keys]. Only the first n rows (n > 0) or the last |n| (n < 0)
  can ever be the answer, so the state keeps no more, as DataFusion's does. No retract.

nth_value refuses ``ignore_nulls=True``, as DataFusion 55 refuses ``nth_value(...) IGNORE NULLS``
(DataFusion 50 accepted it and silently ignored it).
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from .accumulator import SLOT_BYTES, Accumulator, columns_to_pylists
from .argtypes import DataTypes, StateFields
from .function import AggregateFunction
from .ordering import Ordering, entry_bytes, merge_runs, sort_batch, split_rows

_UNBOUND = object()


class NthValueAccumulator(Accumulator):
    """nth_value(x, n): x of the n-th row (from the end for n < 0) by the bound ordering (arrival
    order without one); NULL out of range. State: [nth_value] (+ [nth_value_orderings] when ordered),
    the |n| rows that can still be the answer."""

    def __init__(self, arg_types: DataTypes, ansi: bool = True, *, n: Any = _UNBOUND, ordering: Any = (),
                 ignore_nulls: bool = False) -> None:
        self._ordering = Ordering("nth_value", ordering, arg_types, own=(1, 2))
        if n is _UNBOUND:
            raise TypeError("nth_value's n is a literal bound to the function: use get('nth_value').bind(n=2)")
        if isinstance(n, bool) or not isinstance(n, int):
            raise TypeError(f"nth_value's n must be an integer literal, got {n!r}")
        if n == 0:
            raise ValueError("nth_value: indices are 1-based, 0 is invalid (as in DataFusion)")
        if ignore_nulls:
            raise ValueError("nth_value does not take IGNORE NULLS (as in DataFusion)")
        self._n = n
        self._arity = len(arg_types)
        self._entries: list[tuple[tuple, Any]] = []  # (keys, value), sorted; at most |n| of them

    @staticmethod
    def return_type(arg_types: DataTypes, *, ordering: Any = (), **literals: Any) -> pa.DataType:
        Ordering("nth_value", ordering, arg_types, own=(1, 2))
        return arg_types[0]

    @staticmethod
    def state_fields(arg_types: DataTypes, *, ordering: Any = (), **literals: Any) -> StateFields:
        order = Ordering("nth_value", ordering, arg_types, own=(1, 2))
        fields = [("nth_value", pa.list_(arg_types[0]))]
        if len(order):
            fields.append(("nth_value_orderings", pa.list_(order.struct_type())))
        return fields

    def _keep(self, entries: list[tuple[tuple, Any]]) -> None:
        """Keep the entries that can be the answer: the first n, or the last |n|."""
        self._entries = entries[: self._n] if self._n > 0 else entries[self._n:]

    def update_batch(self, values: Sequence[pa.Array]) -> None:
        xs, keys = split_rows("nth_value", values, self._arity, self._ordering)
        batch = sort_batch(list(zip(keys, xs)), self._ordering)
        self._keep(merge_runs(self._entries, [batch], self._ordering))

    def merge_batch(self, states: Sequence[pa.Array]) -> None:
        columns = columns_to_pylists(states, 2 if len(self._ordering) else 1)
        runs = []
        for row in zip(*columns):
            values = row[0] or []
            if len(self._ordering):
                orderings = row[1] or []
                if len(orderings) != len(values):
                    raise ValueError("nth_value: a state's values and orderings differ in length")
                runs.append([(self._ordering.unstruct(s), v) for s, v in zip(orderings, values)])
            else:
                runs.append([((), v) for v in values])
        self._keep(merge_runs(self._entries, runs, self._ordering))

    def state(self) -> list[Any]:
        values = [v for _, v in self._entries]
        if not len(self._ordering):
            return [values]
        return [values, [self._ordering.struct(k) for k, _ in self._entries]]

    def evaluate(self) -> Any:
        index = self._n - 1 if self._n > 0 else len(self._entries) + self._n
        return self._entries[index][1] if 0 <= index < len(self._entries) else None

    def size(self) -> int:
        return 2 * SLOT_BYTES + sum(entry_bytes(k, v) for k, v in self._entries)


NTH_VALUE = AggregateFunction("nth_value", NthValueAccumulator)
