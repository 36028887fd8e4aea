"""``window``: Python udafs over sliding ROWS frames, in Spark's Python workers.

The rows are shuffled by the partition keys and sorted by them and the order keys; each worker then
reads one window partition after another. A frame moves forward only, so it is a queue of rows: an
accumulator with ``retract`` takes the rows entering and gives back the rows leaving (O(1) per row for
a fixed-size state); one without it slides on two stacks of states (the rows leaving are dropped with
the older stack, whose states were built once from the newer end), as the JVM window operator does."""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import types as T

from . import plan
from .api import AggregateUDF, Call
from .grouping import normal_key_value
from .plan import PREFIX, spark_type

Frame = tuple[int | None, int | None]


def frames(rows: int, bounds: Frame) -> Iterator[tuple[int, int]]:
    """Row i's frame [low, high) among ``rows``: ``bounds`` are offsets from i (None: unbounded)."""
    start, end = bounds
    for i in range(rows):
        low = 0 if start is None else min(rows, max(0, i + start))
        high = rows if end is None else min(rows, max(0, i + end + 1))
        yield low, max(low, high)


def _rows(args: list[pa.Array], low: int, high: int) -> list[pa.Array]:
    return [a.slice(low, high - low) for a in args]


def retracting(udaf: AggregateUDF, args: list[pa.Array], rows: int, bounds: Frame) -> list[Any]:
    accumulator = udaf.factory()
    call = udaf.calling
    out = []
    low = high = 0  # rows [low, high) are in the accumulator
    for start, end in frames(rows, bounds):
        leaving = min(start, high)
        if leaving > low:
            call("retract", accumulator.retract, *_rows(args, low, leaving))
        low = start
        high = max(high, low)
        if end > high:
            call("update", accumulator.update, *_rows(args, high, end))
            high = end
        out.append(call("evaluate", accumulator.evaluate))
    return out


class _TwoStacks:
    """The frame's rows as a queue on two stacks: ``newer`` one accumulator over the rows pushed since
    the last flip; ``older`` the states of every suffix of the rows before (the top covers them all)."""

    def __init__(self, udaf: AggregateUDF, args: list[pa.Array]) -> None:
        self.udaf, self.args = udaf, args
        self.newer, self.newer_rows = udaf.one(), []
        self.older: list[list[pa.Array]] = []

    def push(self, row: int) -> None:
        self.udaf.calling("update", self.newer.update, *_rows(self.args, row, row + 1))
        self.newer_rows.append(row)

    def pop(self) -> None:
        if not self.older:
            suffix = self.udaf.one()
            for row in reversed(self.newer_rows):
                self.udaf.calling("update", suffix.update, *_rows(self.args, row, row + 1))
                self.older.append(self._state(suffix))
            self.newer, self.newer_rows = self.udaf.one(), []
        self.older.pop()

    def _state(self, accumulator: Any) -> list[pa.Array]:
        return self.udaf.states([self.udaf.calling("state", accumulator.state)])

    def evaluate(self) -> Any:
        total = self.udaf.one()
        if self.older:
            self.udaf.calling("merge", total.merge, self.older[-1])
        if self.newer_rows:
            self.udaf.calling("merge", total.merge, self._state(self.newer))
        return self.udaf.calling("evaluate", total.evaluate)


def stacked(udaf: AggregateUDF, args: list[pa.Array], rows: int, bounds: Frame) -> list[Any]:
    queue = _TwoStacks(udaf, args)
    out = []
    low = high = 0  # rows [low, high) are in the queue
    for start, end in frames(rows, bounds):
        while low < min(start, high):
            queue.pop()
            low += 1
        low = start
        high = max(high, low)
        while high < end:
            queue.push(high)
            high += 1
        out.append(queue.evaluate())
    return out


class Windows:
    """The worker's side: the sorted rows of a Spark partition, cut into window partitions."""

    def __init__(self, udafs: list[AggregateUDF], widths: list[int], keep: int, keys: int,
                 bounds: Frame, names: list[str]) -> None:
        self.udafs, self.widths, self.keep, self.keys, self.bounds = udafs, widths, keep, keys, bounds
        self.names = names

    def _partition(self, parts: list[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        table = pa.Table.from_batches(parts).combine_chunks()
        rows = table.num_rows
        columns = [table.column(i).chunk(0) if table.column(i).num_chunks else pa.array([], table.column(i).type)
                   for i in range(table.num_columns)]
        out = columns[: self.keep]
        at = self.keep + self.keys
        for u, width in zip(self.udafs, self.widths):
            args = columns[at: at + width]
            at += width
            slide = retracting if u.retracts else stacked
            out.append(u.results(slide(u, args, rows, self.bounds)))
        yield from pa.Table.from_arrays(out, self.names).to_batches(max_chunksize=1 << 16)

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        current, parts = None, []
        for batch in batches:
            key_columns = [batch.column(self.keep + i).to_pylist() for i in range(self.keys)]
            keys = [tuple(map(normal_key_value, k)) for k in zip(*key_columns)] if self.keys else [()] * batch.num_rows
            start = 0
            for i, key in enumerate(keys):
                if key != current:
                    if i > start:
                        parts.append(batch.slice(start, i - start))
                    if parts:
                        yield from self._partition(parts)
                    current, parts, start = key, [], i
            if batch.num_rows > start:
                parts.append(batch.slice(start, batch.num_rows - start))
        if parts:
            yield from self._partition(parts)


def window(df: DataFrame, partition_by: str | list | None, order_by: str | list,
           *calls: Call, rows: Frame = (None, 0), **named: Call) -> DataFrame:
    """``df`` with one column per udaf call (``f("x").alias("m")`` or ``m=f("x")``, as in
    :func:`aggregate`): the call over ``ROWS BETWEEN`` ``rows`` of each row,
    within its ``partition_by`` partition ordered by ``order_by`` (names or Columns, ``.desc()`` too).

    ``rows=(start, end)`` are offsets from the current row, negative for preceding, None for unbounded:
    ``(-2, 0)`` is ROWS BETWEEN 2 PRECEDING AND CURRENT ROW, ``(None, 0)`` the running aggregate.

    >>> import pyarrow as pa
    >>> from sparkagg.udaf import Accumulator, udaf, window
    >>> class Total(Accumulator):
    ...     def __init__(self): self.total = 0
    ...     def update(self, values): self.total += sum(values.to_pylist())
    ...     def retract(self, values): self.total -= sum(values.to_pylist())
    ...     def merge(self, states): self.total += sum(states[0].to_pylist())
    ...     def state(self): return [self.total]
    ...     def evaluate(self): return self.total
    >>> total = udaf(Total, pa.int64(), pa.int64(), [pa.int64()])
    >>> df = spark.createDataFrame([(1, 10), (2, 20), (3, 30), (4, 40)], "t long, x long")
    >>> [r.last_two for r in window(df, None, "t", rows=(-1, 0), last_two=total("x")).orderBy("t").collect()]
    [10, 30, 50, 70]
    """
    calls = plan.named_calls("window", calls, named)
    args, udafs, widths = plan.calls(df, calls)
    start, end = rows
    if start is not None and end is not None and start > end:
        raise ValueError(f"window: rows={rows} starts after it ends")
    keys = plan.as_list(partition_by)
    staged = [plan.column(c) for c in df.columns] + plan.keys(df, keys, "p") + args
    key_names = [f"{PREFIX}p{i}" for i in range(len(keys))]
    rows_ = df.select(*staged)
    rows_ = rows_.repartition(*key_names) if keys else rows_.repartition(1)
    rows_ = rows_.sortWithinPartitions(*key_names, *[plan.column(o) for o in plan.as_list(order_by)])
    schema = T.StructType(df.schema.fields + [
        T.StructField(name, spark_type(u.name, "return", u.return_type), True) for name, u in zip(calls, udafs)])
    return rows_.mapInArrow(Windows(udafs, widths, len(df.columns), len(keys), (start, end), schema.names), schema)
