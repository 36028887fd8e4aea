"""array_agg (the JVM's functions/array_agg.scala): non-DISTINCT forms only (no DISTINCT in these
accumulators), with or without an ORDER BY within the aggregate (keys as ``ordering`` describes).
Semantics are DataFusion 55's, checked against the ``datafusion`` package:

* ``array_agg(x)``: any type; the list of every input value, NULLs kept (list<T>, elements nullable);
  NULL for no rows at all (not []), so all-NULL input gives [NULL, ...]. The order of the elements is
  arrival order within one accumulator and undefined across partitions. State: [array_agg], a
  List<T> that is NULL when empty; merge concatenates. No retract.
* ``array_agg(x ORDER BY ...) [IGNORE NULLS]``: the literals ``ordering=[(descending, nulls_first),
  ...]`` and ``ignore_nulls`` are bound to the function, and the order keys are trailing argument
  columns (x, key...), as ordering.py describes. The list is in the ordering's order (ties in arrival
  order); IGNORE NULLS leaves NULL values out (all-NULL input then gives NULL). State: [array_agg:
  List<T>, NULL when empty; array_agg_orderings: List<Struct<order_key_0, ...>>, each value's keys],
  both sorted, DataFusion's layout; merge is a stable merge of the sorted lists (own list first,
  then the states in row order). ``ignore_nulls`` applies unordered too.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from .accumulator import SLOT_BYTES, Accumulator, _payload_bytes, columns_to_pylists
from .argtypes import DataTypes, StateFields
from .function import AggregateFunction
from .ordering import Ordering, entry_bytes, merge_runs, sort_batch, split_rows


class ArrayAggAccumulator(Accumulator):
    """array_agg(x [ORDER BY ...]) [IGNORE NULLS]: every input value (NULLs included unless
    ``ignore_nulls``), in the bound ``ordering``'s order or else arrival order; NULL for no rows.

    Result list<T> (elements nullable). State: [array_agg], the same list, NULL when empty; when
    ordered also [array_agg_orderings], the List<Struct> of each value's keys, both sorted."""

    def __init__(self, arg_types: DataTypes, ansi: bool = True, *, ordering: Any = (),
                 ignore_nulls: bool = False) -> None:
        self._ordering = Ordering("array_agg", ordering, arg_types, own=(1,))
        if not isinstance(ignore_nulls, bool):
            raise TypeError(f"array_agg: ignore_nulls must be a boolean, got {ignore_nulls!r}")
        self._arity = len(arg_types)
        self._ignore_nulls = ignore_nulls
        self._values: list[Any] = []
        self._entries: list[tuple[tuple, Any]] = []  # ordered: (keys, value), sorted
        self._pending: list[tuple[tuple, Any]] = []  # ordered: rows not yet merged in, arrival order

    @staticmethod
    def return_type(arg_types: DataTypes, *, ordering: Any = (), **literals: Any) -> pa.DataType:
        Ordering("array_agg", ordering, arg_types, own=(1,))
        return pa.list_(arg_types[0])

    @staticmethod
    def state_fields(arg_types: DataTypes, *, ordering: Any = (), **literals: Any) -> StateFields:
        order = Ordering("array_agg", ordering, arg_types, own=(1,))
        fields = [("array_agg", pa.list_(arg_types[0]))]
        if len(order):
            fields.append(("array_agg_orderings", pa.list_(order.struct_type())))
        return fields

    def update_batch(self, values: Sequence[pa.Array]) -> None:
        xs, keys = split_rows("array_agg", values, self._arity, self._ordering)
        rows = [(k, x) for k, x in zip(keys, xs) if not (self._ignore_nulls and x is None)]
        if len(self._ordering):
            self._pending.extend(rows)
        else:
            self._values.extend(x for _, x in rows)

    def _sorted(self) -> list[tuple[tuple, Any]]:
        """The ordered entries, the pending rows merged in (a stable sort of them, then a merge:
        ties keep arrival order)."""
        if self._pending:
            self._entries = merge_runs(self._entries, [sort_batch(self._pending, self._ordering)], self._ordering)
            self._pending = []
        return self._entries

    def merge_batch(self, states: Sequence[pa.Array]) -> None:
        """Unordered: concatenates the exported lists; a NULL list is an empty partial and adds
        nothing. Ordered: merges the sorted lists (a stable merge sort of the runs)."""
        if not len(self._ordering):
            (lists,) = columns_to_pylists(states, 1)
            for exported in lists:
                if exported is not None:
                    self._values.extend(exported)
            return
        lists, orderings = columns_to_pylists(states, 2)
        runs = []
        for exported, keys in zip(lists, orderings):
            exported, keys = exported or [], keys or []
            if len(exported) != len(keys):
                raise ValueError("array_agg: a state's values and orderings differ in length")
            runs.append([(self._ordering.unstruct(k), v) for k, v in zip(keys, exported)])
        self._entries = merge_runs(self._sorted(), runs, self._ordering)

    def state(self) -> list[Any]:
        if not len(self._ordering):
            return [self.evaluate()]
        return [self.evaluate(), [self._ordering.struct(k) for k, _ in self._sorted()]]

    def evaluate(self) -> list[Any] | None:
        values = [v for _, v in self._sorted()] if len(self._ordering) else self._values
        return list(values) if values else None

    def size(self) -> int:
        return (SLOT_BYTES + sum(SLOT_BYTES + _payload_bytes(v) for v in self._values)
                + sum(entry_bytes(k, v) for k, v in self._entries + self._pending))


ARRAY_AGG = AggregateFunction("array_agg", ArrayAggAccumulator)
