"""The order of values and of ``ORDER BY`` keys (the JVM's functions/ordering.scala): the total order
on floats that min, max, median and every sort key use, and the ordering literal of the ordered
aggregates (array_agg, string_agg, first_value, last_value, nth_value) with the merge of sorted runs
they share.

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

Merging ordered lists (nth_value, array_agg, string_agg) is a stable merge of sorted runs: the
accumulator's own list first, then each state's list in row order; a state's list is checked to be
sorted by the ordering, and one whose keys are out of order raises ValueError. Updates sort each batch
stably and merge it in the same way (array_agg defers that until its list is read).

Deviation from DataFusion 55: a float order key that is a NaN with the sign bit set sorts above +inf
with every other NaN (Arrow's total order puts it below -inf), as everywhere in the model.
"""
from __future__ import annotations

import heapq
import math
from collections.abc import Iterable, Sequence
from functools import total_ordering
from typing import Any, Callable

import pyarrow as pa

from .accumulator import SLOT_BYTES, _payload_bytes, columns_to_pylists
from .argtypes import DataTypes, _is_float, _is_orderable


def _float_order_key(x: float) -> tuple[int, float, float]:
    """The total order of min/max on floats: NaN above every number, and -0.0 below 0.0.

    DataFusion's ungrouped min/max order this way (min(0.0, -0.0) is -0.0, max is 0.0, in either
    arrival order) and sparkagg puts NaN on top in grouped aggregation too (docs/deviations.md),
    so one order serves every path."""
    if math.isnan(x):
        return (1, 0.0, 0.0)
    return (0, x, math.copysign(1.0, x))


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
