"""Reference accumulators of the ordered aggregates: first_value, last_value and nth_value, and the
ordering machinery they share with ordered array_agg and string_agg (listagg.py).

Semantics are DataFusion 50's (shared/spec/functions.md), checked against the ``datafusion`` package.

The ORDER BY of an aggregate (``first_value(x ORDER BY y DESC, z)``) reaches the model as extra
trailing argument columns, one per sort key, after the function's own arguments; the literal
``ordering=[(descending, nulls_first), ...]``, bound to the function, says how many trailing columns
are keys and how each sorts. The caller always passes both flags (Spark's defaults are ASC NULLS FIRST
and DESC NULLS LAST; DataFusion's are ASC NULLS LAST and DESC NULLS FIRST, so a test against
DataFusion spells them out). Without ``ordering`` (or with ``ordering=[]``) the order is arrival
order: the order rows reach one accumulator, then the order in which states are merged. Keys compare
as Arrow's sort does: numbers by value, strings by code point (UTF-8 byte order), binary bytewise,
False < True, dates and timestamps by time; floats by the model's total order (every NaN above
+inf, -0.0 below 0.0); a NULL key sorts first or last as its ``nulls_first`` flag says, in either
direction. Rows whose keys are all equal keep their arrival order (a stable sort), so first_value
takes the earliest and last_value the latest of tied rows; the tests use unique keys, where no engine
has a choice.

* ``first_value(x [ORDER BY ...]) [IGNORE NULLS]`` / ``last_value(...)``: x of the first / last row
  in that order; NULL for no rows. IGNORE NULLS (``ignore_nulls=True``) skips rows whose x is NULL (a
  NULL order key does not make a row skipped). Result: x's type. State: [first_value (or last_value):
  x's type, then one field per order key (``order_key_0``, ``order_key_1``, ...: the key's type,
  holding the chosen row's keys), is_set: boolean], DataFusion's layout (it names the key fields
  after their expressions, ``y@2``, which a model of anonymous columns cannot). An unset state has
  NULL value and keys and is_set false; merge ignores such states. No retract.
* ``nth_value(x, n [ORDER BY ...])``: x of the n-th row in that order (1-based); a negative n counts
  from the end (-1 is the last row); NULL when the group has fewer than |n| rows. A NULL x at that
  position is the result (NULLs are rows). n is an integer literal bound as ``n=``; n = 0 is refused
  as DataFusion refuses it ("Nth value indices are 1 based. 0 is invalid index"). The call's columns
  are (x, keys...) or SQL's (x, n, keys...); the n column is constant and not read. Result: x's type.
  State: [nth_value: List<T>, the values kept in order], plus, when ordered, [nth_value_orderings:
  List<Struct<order_key_0, ...>>, their keys]. Only the first n rows (n > 0) or the last |n| (n < 0)
  can ever be the answer, so the state keeps no more, as DataFusion's does. No retract.

Merging ordered lists (nth_value here, array_agg and string_agg in listagg.py) is a stable merge of
sorted runs: the accumulator's own list first, then each state's list in row order; a state's list is
checked to be sorted by the ordering, and one whose keys are out of order raises ValueError. Updates
sort each batch stably and merge it in the same way (array_agg defers that until its list is read).

Deviations from DataFusion 50:

* nth_value refuses ``ignore_nulls=True``: DataFusion 50 accepts ``nth_value(...) IGNORE NULLS`` and
  silently ignores it (NULL rows are still counted), which the model does not copy.
* a float order key that is a NaN with the sign bit set sorts above +inf with every other NaN
  (Arrow's total order puts it below -inf), as everywhere in the model.
"""
from __future__ import annotations

import heapq
from collections.abc import Iterable, Sequence
from functools import total_ordering
from typing import Any, Callable

import pyarrow as pa

from .accumulator import SLOT_BYTES, Accumulator, columns_to_pylists
from .functions import (
    AggregateFunction,
    DataTypes,
    StateFields,
    _float_order_key,
    _is_float,
    _is_orderable,
    _payload_bytes,
    register,
)

_UNBOUND = object()


# --- the ordering literal and sort keys -------------------------------------------------------------

@total_ordering
class _Descending:
    """A value that sorts in reverse."""

    __slots__ = ("key",)

    def __init__(self, key: Any) -> None:
        self.key = key

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Descending) and self.key == other.key

    def __lt__(self, other: _Descending) -> bool:
        return other.key < self.key

    def __hash__(self) -> int:
        return hash(self.key)


def _is_key_type(t: pa.DataType) -> bool:
    return _is_orderable(t) or pa.types.is_time(t) or pa.types.is_null(t)


class Ordering:
    """The bound ``ordering`` literal of a call with ``len(arg_types)`` columns, the last
    ``len(ordering)`` of which are sort keys: their types, and a sort key for a row of key values."""

    def __init__(self, name: str, ordering: Any, arg_types: DataTypes, own: Sequence[int]) -> None:
        if ordering is None:
            ordering = ()
        try:
            spec = [(d, n) for d, n in ordering]
        except (TypeError, ValueError):
            raise TypeError(f"{name}: ordering must be a list of (descending, nulls_first) pairs, "
                            f"got {ordering!r}") from None
        if not all(isinstance(d, bool) and isinstance(n, bool) for d, n in spec):
            raise TypeError(f"{name}: ordering's flags must be booleans, got {ordering!r}")
        self.name = name
        self.spec = spec
        self.own = len(arg_types) - len(spec)  # the function's own arguments, before the keys
        if self.own not in own:
            shape = " or ".join(str(n) for n in own)
            raise TypeError(f"{name} takes {shape} argument(s) before its {len(spec)} order key(s), "
                            f"got {len(arg_types)} columns")
        self.key_types = list(arg_types[self.own:])
        for t in self.key_types:
            if not _is_key_type(t):
                raise TypeError(f"{name} cannot order by a key of type {t}")
        self._value_keys: list[Callable[[Any], Any]] = [
            _float_order_key if _is_float(t) else (lambda v: v) for t in self.key_types]

    def __len__(self) -> int:
        return len(self.spec)

    @property
    def field_names(self) -> list[str]:
        return [f"order_key_{i}" for i in range(len(self.spec))]

    def struct_type(self) -> pa.DataType:
        """The type of one row's keys in an ``..._orderings`` list."""
        return pa.struct([pa.field(n, t) for n, t in zip(self.field_names, self.key_types)])

    def key(self, keys: Sequence[Any]) -> tuple:
        """A sort key of a row's key values under the ordering."""
        out = []
        for value, (descending, nulls_first), value_key in zip(keys, self.spec, self._value_keys):
            if value is None:
                out.append((0 if nulls_first else 2, None))
                continue
            k = value_key(value)
            out.append((1, _Descending(k) if descending else k))
        return tuple(out)

    def struct(self, keys: Sequence[Any]) -> dict[str, Any]:
        return dict(zip(self.field_names, keys))

    def unstruct(self, struct: dict[str, Any] | None) -> tuple:
        if struct is None:
            raise ValueError(f"{self.name}: a NULL entry in an orderings list")
        return tuple(struct[n] for n in self.field_names)


def merge_runs(own: list[tuple[tuple, Any]], runs: Iterable[list[tuple[tuple, Any]]],
               ordering: Ordering) -> list[tuple[tuple, Any]]:
    """One sorted list of (keys, value) entries: a stable merge of the accumulator's ``own`` sorted
    entries and the sorted ``runs`` (on equal keys, ``own`` first, then the runs in order). Each run is
    checked to be sorted by ``ordering``; ``own`` is the accumulator's and trusted."""
    keyed = [[(ordering.key(keys), (keys, value)) for keys, value in own]]
    for run in runs:
        sort_keys = [ordering.key(keys) for keys, _ in run]
        if any(b < a for a, b in zip(sort_keys, sort_keys[1:])):
            raise ValueError(f"{ordering.name}: a state's values are not sorted by the ordering")
        keyed.append(list(zip(sort_keys, run)))
    return [entry for _, entry in heapq.merge(*keyed, key=lambda pair: pair[0])]


def sort_batch(entries: list[tuple[tuple, Any]], ordering: Ordering) -> list[tuple[tuple, Any]]:
    """A batch's (keys, value) entries sorted by ``ordering``, ties in arrival order."""
    return sorted(entries, key=lambda e: ordering.key(e[0]))


def split_rows(name: str, values: Sequence[pa.Array], arity: int, ordering: Ordering) -> tuple[list, list]:
    """(x column, key tuple per row) of a batch of ``arity`` columns: x first, keys last."""
    columns = columns_to_pylists(values, arity)
    keys = list(zip(*columns[ordering.own:])) if len(ordering) else [()] * len(columns[0])
    return columns[0], keys


def entry_bytes(keys: Sequence[Any], value: Any) -> int:
    return SLOT_BYTES * (1 + len(keys)) + _payload_bytes(value) + sum(_payload_bytes(k) for k in keys)


# --- first_value / last_value -----------------------------------------------------------------------

class FirstLastValueAccumulator(Accumulator):
    """first_value / last_value (``kind``): x of the first / last row by the bound ordering (arrival
    order without one), optionally ignoring rows whose x is NULL. State: [value, keys..., is_set]."""

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
        return [(kind, arg_types[0]), *zip(order.field_names, order.key_types), ("is_set", pa.bool_())]

    def _offer(self, value: Any, keys: tuple) -> None:
        """Take the row if it comes first (first_value: strictly before the held one) or last
        (last_value: not before it)."""
        if self._ignore_nulls and value is None:
            return
        if self._is_set:
            new, held = self._ordering.key(keys), self._ordering.key(self._keys)
            if (new >= held) if self._kind == "first_value" else (new < held):
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


# --- nth_value --------------------------------------------------------------------------------------

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
            raise ValueError("nth_value does not take IGNORE NULLS (DataFusion 50 accepts it and ignores it)")
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


register({
    "first_value": AggregateFunction("first_value", FirstLastValueAccumulator, kind="first_value"),
    "last_value": AggregateFunction("last_value", FirstLastValueAccumulator, kind="last_value"),
    "nth_value": AggregateFunction("nth_value", NthValueAccumulator),
})
