"""Drivers that run reference accumulators the way a query engine does.

``aggregate`` runs Accumulators as a multi-phase, repartitioned grouping does (Partial accumulators
per input partition, their states shuffled to Final ones by key and merged); ``aggregate_groups`` the
same plan over GroupsAccumulators, with early ``EmitTo.First`` emits and ``convert_to_state``;
``sliding`` evaluates bounded window frames. They randomise nothing but what an engine is free to
choose (partitioning, batch boundaries, merge order), so a function whose result changes under them is
wrong.
"""
from __future__ import annotations

import math
import random
import zlib
from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from .accumulator import Accumulator
from .function import AggregateFunction
from .groups import EmitTo, GroupsAccumulator
from .registry import get

# Batches here are tiny and sometimes empty so that small inputs still cross many boundaries.
MAX_BATCH_ROWS = 7
# In aggregate_groups: how often a Partial batch skips aggregation (convert_to_state), and how often
# a Partial emits its first groups early (EmitTo.First) after a batch.
CONVERT_TO_STATE_CHANCE = 0.15
EARLY_EMIT_CHANCE = 0.25


def aggregate(
    name: str | AggregateFunction,
    arg_types: Sequence[pa.DataType],
    columns: Sequence[pa.Array],
    keys: pa.Array | None = None,
    partitions: int = 3,
    seed: int = 0,
    ansi: bool = True,
    num_rows: int | None = None,
) -> dict[Any, Any]:
    """``name(columns...)`` grouped by ``keys`` (or one global group), in two phases.

    1. Rows go to ``partitions`` input partitions at random (keeping their order within one), each
       cut into random batches; a Partial accumulator per (partition, group) gets ``update_batch``.
    2. Each Partial accumulator's ``state()`` goes to the Final partition ``hash(key)`` picks.
    3. A Final accumulator per group ``merge_batch``es its states in random chunks and evaluates.

    Returns {group key: value}. Without ``keys`` the one group's key is None and, as in SQL, a global
    aggregate has a row even for empty input: every Partial emits a state, empty or not. With keys, a
    NULL key is a group of its own (also None). ``num_rows`` is needed only for a call without
    arguments and keys (count(*)), which otherwise has nothing to count rows by.
    """
    if partitions < 1:
        raise ValueError(f"partitions must be positive, got {partitions}")
    function = get(name)
    rows = _num_rows(columns, keys, num_rows)
    args = _arguments(arg_types, columns, rows)
    row_keys = [_group_key(k) for k in keys.to_pylist()] if keys is not None else [None] * rows
    rng = random.Random(seed)
    assignment = [rng.randrange(partitions) for _ in range(rows)]

    def new() -> Accumulator:
        return function(arg_types, ansi)

    incoming: list[dict[Any, list[list[Any]]]] = [{} for _ in range(partitions)]
    for p in range(partitions):
        partials: dict[Any, Accumulator] = {None: new()} if keys is None else {}
        for batch in _random_chunks([i for i in range(rows) if assignment[i] == p], rng):
            for key, indices in _groups(batch, row_keys, grouped=keys is not None).items():
                if key not in partials:
                    partials[key] = new()
                taken = pa.array(indices, pa.int64())
                partials[key].update_batch([a.take(taken) for a in args])
        for key, accumulator in partials.items():
            incoming[_final_partition(key, partitions)].setdefault(key, []).append(accumulator.state())

    state_types = [t for _, t in function.state_fields(arg_types)]
    result: dict[Any, Any] = {}
    for states_by_key in incoming:
        for key, states in states_by_key.items():
            final = new()
            for chunk in _random_chunks(states, rng):
                final.merge_batch(
                    [pa.array([s[f] for s in chunk], type=t) for f, t in enumerate(state_types)]
                )
            result[key] = final.evaluate()
    return result


def aggregate_groups(
    name: str | AggregateFunction,
    arg_types: Sequence[pa.DataType],
    columns: Sequence[pa.Array],
    keys: pa.Array | None = None,
    partitions: int = 3,
    seed: int = 0,
    ansi: bool = True,
    num_rows: int | None = None,
    opt_filter: pa.Array | None = None,
    adapter: bool = False,
    early_emit: bool = True,
) -> dict[Any, Any]:
    """``name(columns...)`` grouped by ``keys`` as ``aggregate`` computes it, through GroupsAccumulators.

    The function's ``groups`` accumulator (or, with ``adapter``, its Accumulator run through
    ``GroupsAccumulatorAdapter``) does the work of a hash aggregation in two phases:

    1. Rows go to ``partitions`` Partial partitions at random, each cut into random batches. A
       Partial assigns group indices in order of first appearance and calls ``update_batch``; now and
       then it instead sends a batch on as ``convert_to_state`` (one state per row), and now and then
       after a batch it emits ``state(EmitTo.First(n))`` early (as DataFusion does under memory
       pressure or on sorted input), after which its remaining groups' indices shift down by n. At
       the end it emits ``state(EmitTo.All)``.
    2. Every state row goes to the Final partition ``hash(key)`` picks; a Final merges them in random
       chunks with ``merge_batch`` and evaluates in random ``EmitTo.First`` pieces, then ``All``.

    ``opt_filter`` (one boolean per row: an aggregate's ``FILTER (WHERE ...)``) is applied in phase 1.
    The random choices depend only on ``seed`` and the data, so the native accumulator and the
    adapter see the same plan. Returns {group key: value}, as ``aggregate``.
    """
    if partitions < 1:
        raise ValueError(f"partitions must be positive, got {partitions}")
    function = get(name)
    rows = _num_rows(columns, keys, num_rows)
    args = _arguments(arg_types, columns, rows)
    if opt_filter is not None and len(opt_filter) != rows:
        raise ValueError(f"opt_filter has {len(opt_filter)} rows, the input {rows}")
    grouped = keys is not None
    row_keys = [_group_key(k) for k in keys.to_pylist()] if grouped else [None] * rows
    rng = random.Random(seed)
    assignment = [rng.randrange(partitions) for _ in range(rows)]
    state_types = [t for _, t in function.state_fields(arg_types)]

    def new() -> GroupsAccumulator:
        return function.adapter(arg_types, ansi) if adapter else function.groups(arg_types, ansi)

    incoming: list[list[tuple[Any, tuple]]] = [[] for _ in range(partitions)]

    def send(emitted_keys: list[Any], states: list[pa.Array]) -> None:
        if len(states) != len(state_types) or any(len(a) != len(emitted_keys) for a in states):
            raise ValueError(f"{name}: state arrays do not match the {len(emitted_keys)} groups emitted")
        for key, row in zip(emitted_keys, zip(*[a.to_pylist() for a in states])):
            incoming[_final_partition(key, partitions)].append((key, row))

    for p in range(partitions):
        accumulator = new()
        order: list[Any] = []  # the keys of group indices 0, 1, ...
        index: dict[Any, int] = {}
        for batch in _random_chunks([i for i in range(rows) if assignment[i] == p], rng):
            taken = pa.array(batch, pa.int64())
            values = [a.take(taken) for a in args]
            batch_filter = None if opt_filter is None else opt_filter.take(taken)
            if batch and accumulator.supports_convert_to_state() and rng.random() < CONVERT_TO_STATE_CHANCE:
                send([row_keys[i] for i in batch], accumulator.convert_to_state(values, batch_filter))
                continue
            group_indices = []
            for i in batch:
                key = row_keys[i]
                if key not in index:
                    index[key] = len(order)
                    order.append(key)
                group_indices.append(index[key])
            if not grouped and not order:  # the global group exists from the first batch on
                index[None] = 0
                order.append(None)
            accumulator.update_batch(values, group_indices, batch_filter, len(order))
            if early_emit and order and rng.random() < EARLY_EMIT_CHANCE:
                n = rng.randint(1, len(order))
                send(order[:n], accumulator.state(EmitTo.First(n)))
                del order[:n]
                index = {key: i for i, key in enumerate(order)}
        if not grouped and not order:  # a global aggregate's Partial emits a state even without rows
            accumulator.update_batch([a.slice(0, 0) for a in args], [], None, 1)
            order.append(None)
        if order:
            send(order, accumulator.state(EmitTo.All))

    result: dict[Any, Any] = {}
    for states in incoming:
        accumulator = new()
        order, index = [], {}
        for chunk in _random_chunks(states, rng):
            group_indices = []
            for key, _ in chunk:
                if key not in index:
                    index[key] = len(order)
                    order.append(key)
                group_indices.append(index[key])
            arrays = [pa.array([row[f] for _, row in chunk], t) for f, t in enumerate(state_types)]
            accumulator.merge_batch(arrays, group_indices, None, len(order))
        while order:
            n = rng.randint(1, len(order)) if early_emit else len(order)
            values = accumulator.evaluate(EmitTo.All if n == len(order) else EmitTo.First(n)).to_pylist()
            result.update(zip(order[:n], values))
            del order[:n]
    return result


def sliding(
    name: str | AggregateFunction,
    arg_types: Sequence[pa.DataType],
    columns: Sequence[pa.Array],
    preceding: int,
    following: int,
    ansi: bool = True,
    num_rows: int | None = None,
) -> list[Any]:
    """``name(columns...) OVER (ROWS BETWEEN preceding PRECEDING AND following FOLLOWING)`` per row:
    ``framed`` over those frames."""
    if preceding < 0 or following < 0:
        raise ValueError("preceding and following must be non-negative")
    rows = _num_rows(columns, None, num_rows)
    bounds = [(max(0, i - preceding), min(rows, i + following + 1)) for i in range(rows)]
    return framed(name, arg_types, columns, bounds, ansi, rows)


def framed(
    name: str | AggregateFunction,
    arg_types: Sequence[pa.DataType],
    columns: Sequence[pa.Array],
    bounds: Sequence[tuple[int, int]],
    ansi: bool = True,
    num_rows: int | None = None,
) -> list[Any]:
    """``name`` over each frame ``columns[start:end]`` of ``bounds`` (one per output row; an empty
    frame where end <= start).

    While both ends only move forward and the accumulator can retract, one sliding accumulator follows
    the frames as DataFusion's window operator does: the rows leaving are retracted, then the rows
    entering are added, then the frame is evaluated (recomputed instead when the accumulator
    ``needs_rebuild``, as sparkagg's window operator does). Otherwise each frame is computed from
    scratch, which is always right, only slower.
    """
    function = get(name)
    rows = _num_rows(columns, None, num_rows)
    args = _arguments(arg_types, columns, rows)

    def rows_between(start: int, end: int) -> list[pa.Array]:
        return [a.slice(start, max(0, end - start)) for a in args]

    def fresh(start: int, end: int, make=function.sliding) -> Accumulator:
        accumulator = make(arg_types, ansi)
        accumulator.update_batch(rows_between(start, end))
        return accumulator

    forward = all(s0 <= s1 and e0 <= e1 for (s0, e0), (s1, e1) in zip(bounds, bounds[1:]))
    accumulator = function.sliding(arg_types, ansi)
    if not forward or not accumulator.supports_retract_batch():
        return [fresh(start, end, function).evaluate() for start, end in bounds]
    out = []
    low = high = 0  # rows [low, high) are in the accumulator
    for start, end in bounds:
        end = max(start, end)
        if start >= high:  # no row in common: start again at the frame
            accumulator, low, high = fresh(start, end), start, end
        if start > low:
            accumulator.retract_batch(rows_between(low, start))
            low = start
        if end > high:
            accumulator.update_batch(rows_between(high, end))
            high = end
        if accumulator.needs_rebuild():
            accumulator = fresh(low, high)
        out.append(accumulator.evaluate())
    return out


def _num_rows(columns: Sequence[pa.Array], keys: pa.Array | None, num_rows: int | None) -> int:
    if columns:
        return len(columns[0])
    if keys is not None:
        return len(keys)
    if num_rows is None:
        raise ValueError("a call without argument columns or keys needs num_rows")
    return num_rows


def _arguments(arg_types: Sequence[pa.DataType], columns: Sequence[pa.Array], rows: int) -> list[pa.Array]:
    """The argument columns; a call without arguments gets the literal 1 per row instead, which is
    how DataFusion and Spark plan count(*)."""
    if len(columns) != len(arg_types):
        raise ValueError(f"{len(arg_types)} argument types but {len(columns)} columns")
    return list(columns) if columns else [pa.array([1] * rows, pa.int64())]


def _group_key(key: Any) -> Any:
    """A float key normalised as Spark groups it: every NaN is one group, -0.0 and 0.0 are one."""
    if isinstance(key, float):
        if math.isnan(key):
            return math.nan
        if key == 0.0:
            return 0.0
    return key


def _groups(batch: list[int], row_keys: list[Any], grouped: bool) -> dict[Any, list[int]]:
    """The batch's row indices by group. The global group receives every batch, even an empty one,
    as a global aggregate's accumulator does; a grouped one only sees groups that have rows."""
    if not grouped:
        return {None: batch}
    groups: dict[Any, list[int]] = {}
    for i in batch:
        groups.setdefault(row_keys[i], []).append(i)
    return groups


def _final_partition(key: Any, partitions: int) -> int:
    """A stable hash (Python's own is salted per process for strings) so a seed replays exactly."""
    return zlib.crc32(repr(key).encode()) % partitions


def _random_chunks(items: list[Any], rng: random.Random) -> list[list[Any]]:
    """``items`` cut at random boundaries into consecutive chunks, some empty: engines choose batch
    boundaries freely and may deliver empty batches, and results must not depend on either."""
    chunks = []
    start = 0
    while start < len(items):
        size = rng.randint(0, MAX_BATCH_ROWS)
        chunks.append(items[start : start + size])
        start += size
    return chunks
