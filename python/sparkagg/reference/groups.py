"""The reference model's ``NullState`` helper and its ways to fulfil DataFusion's ``GroupsAccumulator``
contract (``sparkagg.udaf.contract``, where the contract and ``EmitTo`` are described).

``GroupsAccumulatorAdapter`` runs any single-group ``Accumulator`` this way (one per group), which is
what DataFusion does for functions without a native implementation; the native ones (in the family
modules: ``count``, ``sum``, ``average``, ``min_max``, ``bitwise``, ``boolean``, ``variance``) keep one
Python list per state field instead.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pyarrow as pa

from ..udaf.contract import EmitTo, GroupsAccumulator, StateFields
from .accumulator import SLOT_BYTES, Accumulator

# --- filters and validation ---------------------------------------------------------------------

def _filter_list(opt_filter: pa.Array | None, rows: int) -> list[bool] | None:
    """``opt_filter`` as Python booleans (NULL counts as false), or None when there is none."""
    if opt_filter is None:
        return None
    if not pa.types.is_boolean(opt_filter.type):
        raise TypeError(f"opt_filter must be a boolean array, got {opt_filter.type}")
    if len(opt_filter) != rows:
        raise ValueError(f"opt_filter has {len(opt_filter)} rows, values {rows}")
    return [f is True for f in opt_filter.to_pylist()]


def _check_batch(values: Sequence[pa.Array], group_indices: Sequence[int], total_num_groups: int) -> int:
    """The batch's row count, after checking the arrays and indices agree with it."""
    rows = len(group_indices)
    for a in values:
        if len(a) != rows:
            raise ValueError(f"an argument array has {len(a)} rows, group_indices {rows}")
    for g in group_indices:
        if not 0 <= g < total_num_groups:
            raise IndexError(f"group index {g} outside 0..{total_num_groups - 1}")
    return rows


def included_rows(values: Sequence[pa.Array], group_indices: Sequence[int],
                  opt_filter: pa.Array | None) -> list[tuple[int, tuple]]:
    """(group, row values) of the rows the filter keeps, in order, NULLs included: for accumulators
    whose rule about NULLs is their own (count of several arguments, two-column moments)."""
    columns = [a.to_pylist() for a in values]
    keep = _filter_list(opt_filter, len(group_indices))
    rows = zip(*columns) if columns else ((),) * len(group_indices)
    return [(g, row) for i, (g, row) in enumerate(zip(group_indices, rows)) if keep is None or keep[i]]


# --- NullState ----------------------------------------------------------------------------------

class NullState:
    """Which groups have seen a value: the validity of a native accumulator's output.

    ``accumulate`` calls ``value_fn(group, value)`` for every non-NULL, not filtered-out value and
    marks its group as seen; ``build(emit_to)`` returns the emitted groups' validity (True: seen, so
    the value is meaningful; False: the output is NULL) and drops them. The four input shapes (filter
    or not, NULLs or not) take four loops, as in DataFusion and the JVM's NullState."""

    def __init__(self) -> None:
        self.seen_values: list[bool] = []

    def size(self) -> int:
        return len(self.seen_values) // 8 + 1

    def _resize(self, total_num_groups: int) -> None:
        if total_num_groups > len(self.seen_values):
            self.seen_values.extend([False] * (total_num_groups - len(self.seen_values)))

    def accumulate(self, group_indices: Sequence[int], values: pa.Array, opt_filter: pa.Array | None,
                   total_num_groups: int, value_fn: Callable[[int, Any], None]) -> None:
        _check_batch([values], group_indices, total_num_groups)
        self._resize(total_num_groups)
        seen = self.seen_values
        data = values.to_pylist()
        keep = _filter_list(opt_filter, len(data))
        has_nulls = values.null_count > 0
        if keep is None and not has_nulls:
            for g, v in zip(group_indices, data):
                seen[g] = True
                value_fn(g, v)
        elif keep is None:
            for g, v in zip(group_indices, data):
                if v is not None:
                    seen[g] = True
                    value_fn(g, v)
        elif not has_nulls:
            for g, v, k in zip(group_indices, data, keep):
                if k:
                    seen[g] = True
                    value_fn(g, v)
        else:
            for g, v, k in zip(group_indices, data, keep):
                if k and v is not None:
                    seen[g] = True
                    value_fn(g, v)

    def accumulate_boolean(self, group_indices: Sequence[int], values: pa.Array,
                           opt_filter: pa.Array | None, total_num_groups: int,
                           value_fn: Callable[[int, bool], None]) -> None:
        """``accumulate`` for a boolean array (Arrow keeps booleans as bits, not primitives)."""
        if not pa.types.is_boolean(values.type):
            raise TypeError(f"accumulate_boolean needs a boolean array, got {values.type}")
        self.accumulate(group_indices, values, opt_filter, total_num_groups, value_fn)

    def build(self, emit_to: Any = EmitTo.All) -> list[bool]:
        """Validity of the emitted groups (True where a value was seen); they are dropped."""
        return emit_to.take(self.seen_values)


# --- the adapter --------------------------------------------------------------------------------

class GroupsAccumulatorAdapter(GroupsAccumulator):
    """Any single-group ``Accumulator`` run as a ``GroupsAccumulator``: one accumulator per group,
    made by ``factory`` as groups appear, each fed the rows of its group in arrival order."""

    def __init__(self, factory: Callable[[], Accumulator], return_type: pa.DataType,
                 state_fields: StateFields) -> None:
        self._factory = factory
        self.return_type = return_type
        self.state_fields = list(state_fields)
        self._accumulators: list[Accumulator] = []

    def _ensure(self, total_num_groups: int) -> None:
        while len(self._accumulators) < total_num_groups:
            self._accumulators.append(self._factory())

    def _by_group(self, arrays: Sequence[pa.Array], group_indices: Sequence[int],
                  opt_filter: pa.Array | None, total_num_groups: int) -> dict[int, list[int]]:
        rows = _check_batch(arrays, group_indices, total_num_groups)
        self._ensure(total_num_groups)
        keep = _filter_list(opt_filter, rows)
        by_group: dict[int, list[int]] = {}
        for i, g in enumerate(group_indices):
            if keep is None or keep[i]:
                by_group.setdefault(g, []).append(i)
        return by_group

    def update_batch(self, values, group_indices, opt_filter, total_num_groups) -> None:
        for g, rows in self._by_group(values, group_indices, opt_filter, total_num_groups).items():
            taken = pa.array(rows, pa.int64())
            self._accumulators[g].update_batch([a.take(taken) for a in values])

    def merge_batch(self, values, group_indices, opt_filter, total_num_groups) -> None:
        for g, rows in self._by_group(values, group_indices, opt_filter, total_num_groups).items():
            taken = pa.array(rows, pa.int64())
            self._accumulators[g].merge_batch([a.take(taken) for a in values])

    def evaluate(self, emit_to=EmitTo.All) -> pa.Array:
        return pa.array([a.evaluate() for a in emit_to.take(self._accumulators)], self.return_type)

    def state(self, emit_to=EmitTo.All) -> list[pa.Array]:
        states = [a.state() for a in emit_to.take(self._accumulators)]
        return [pa.array([s[f] for s in states], t) for f, (_, t) in enumerate(self.state_fields)]

    def convert_to_state(self, values, opt_filter) -> list[pa.Array]:
        rows = len(values[0]) if values else 0
        keep = _filter_list(opt_filter, rows)
        states = []
        for i in range(rows):
            accumulator = self._factory()
            if keep is None or keep[i]:
                accumulator.update_batch([a.slice(i, 1) for a in values])
            states.append(accumulator.state())
        return [pa.array([s[f] for s in states], t) for f, (_, t) in enumerate(self.state_fields)]

    def supports_convert_to_state(self) -> bool:
        return True

    def size(self) -> int:
        return SLOT_BYTES * len(self._accumulators) + sum(a.size() for a in self._accumulators)


class NativeGroupsAccumulator(GroupsAccumulator):
    """Base of the native accumulators: per-group Python lists named in ``LISTS`` (each list has one
    entry per group), grown with ``_resize`` and emitted together with ``_take``; ``convert_to_state``
    is a fresh accumulator fed each row as its own group."""

    LISTS: tuple[str, ...] = ()

    def __init__(self, arg_types: Sequence[pa.DataType], ansi: bool = True, **options: Any) -> None:
        self._arg_types = list(arg_types)
        self._ansi = ansi
        self._options = options
        self._groups = 0

    def _initial(self, name: str) -> Any:
        """The value a new group starts with in list ``name``."""
        return 0

    def _resize(self, total_num_groups: int) -> None:
        if total_num_groups > self._groups:
            extra = total_num_groups - self._groups
            for name in self.LISTS:
                getattr(self, name).extend([self._initial(name)] * extra)
            self._groups = total_num_groups

    def _take(self, emit_to) -> dict[str, list[Any]]:
        """The emitted groups' entries of every list, removed (later groups shift down)."""
        n = emit_to.count(self._groups)
        self._groups -= n
        return {name: emit_to.take(getattr(self, name)) for name in self.LISTS}

    def convert_to_state(self, values, opt_filter) -> list[pa.Array]:
        rows = len(values[0]) if values else 0
        fresh = type(self)(self._arg_types, self._ansi, **self._options)
        fresh.update_batch(values, list(range(rows)), opt_filter, rows)
        return fresh.state(EmitTo.All)

    def supports_convert_to_state(self) -> bool:
        return True

    def size(self) -> int:
        return SLOT_BYTES * self._groups * max(1, len(self.LISTS))


class _OneValueGroups(NativeGroupsAccumulator):
    """Accumulators whose state is one value of the input type per group, valid where ``NullState``
    has seen a value: min, max, bool_and/or, bit_and/or/xor. Merging is updating."""

    LISTS = ("values",)

    def _setup(self, return_type: pa.DataType, state_fields) -> None:
        self.return_type = return_type
        self.state_fields = state_fields
        self.values: list[Any] = []
        self._nulls = NullState()

    def _fold(self, g: int, v: Any) -> None:
        raise NotImplementedError

    def _accumulate(self, column: pa.Array, group_indices, opt_filter, total_num_groups) -> None:
        self._resize(total_num_groups)
        self._nulls.accumulate(group_indices, column, opt_filter, total_num_groups, self._fold)

    def update_batch(self, values, group_indices, opt_filter, total_num_groups) -> None:
        (column,) = values
        self._accumulate(column, group_indices, opt_filter, total_num_groups)

    def merge_batch(self, values, group_indices, opt_filter, total_num_groups) -> None:
        self.update_batch(values, group_indices, opt_filter, total_num_groups)

    def evaluate(self, emit_to=EmitTo.All) -> pa.Array:
        self._nulls._resize(self._groups)
        valid = self._nulls.build(emit_to)
        values = self._take(emit_to)["values"]
        return pa.array([v if ok else None for v, ok in zip(values, valid)], self.return_type)

    def state(self, emit_to=EmitTo.All) -> list[pa.Array]:
        return [self.evaluate(emit_to)]

    def size(self) -> int:
        return super().size() + self._nulls.size()
