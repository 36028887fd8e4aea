"""``aggregate``: Python udafs grouped in two phases on Spark, as DataFusion's Partial and Final.

1. Partial, in the Python workers over each input partition's Arrow batches (``mapInArrow``): a group
   index and one GroupsAccumulator per call (a user's Accumulator runs one per group); the partition's
   states go out with their keys, early when the groups outgrow ``spark.sparkagg.udaf.partialGroups``.
2. The states, and only they, are shuffled by the keys (one partition for a global aggregate). They
   cross as Arrow IPC streams, each one binary value holding up to ``OUT_ROWS`` groups, not as Spark
   rows: a few large values cost Spark a copy where a row per group costs a conversion each way. The
   partial phase cuts its groups into N buckets (N: the shuffle's partitions) by a hash of the keys,
   numpy's for numbers, dates and timestamps and, for other keys, Spark's ``hash()`` computed beside
   the rows; a bucket's streams carry a value that Spark's shuffle sends to that bucket's partition.
3. Final, again in the workers: the states merge into one group each and are evaluated.
"""
from __future__ import annotations

from collections.abc import Iterator
from functools import lru_cache

import numpy as np
import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from . import plan
from .api import AggregateUDF, Call
from .contract import EmitTo
from .grouping import GroupIndex
from .plan import PREFIX, arrow_type, spark_type

PARTIAL_GROUPS_CONF = "spark.sparkagg.udaf.partialGroups"
PARTIAL_GROUPS_DEFAULT = 1 << 20
OUT_ROWS = 1 << 16  # rows per Arrow batch handed back to Spark, and groups per state stream


def _mix32(h: int, k: int) -> int:
    k = (k * 0xCC9E2D51) & 0xFFFFFFFF
    k = ((k << 15) | (k >> 17)) & 0xFFFFFFFF
    h ^= (k * 0x1B873593) & 0xFFFFFFFF
    h = ((h << 13) | (h >> 19)) & 0xFFFFFFFF
    return (h * 5 + 0xE6546B64) & 0xFFFFFFFF


def spark_hash_int(value: int, seed: int = 42) -> int:
    """Spark's ``hash()`` of an int (Murmur3 x86 32-bit with seed 42), as its hash partitioning uses."""
    h = _mix32(seed, value & 0xFFFFFFFF) ^ 4
    h = ((h ^ (h >> 16)) * 0x85EBCA6B) & 0xFFFFFFFF
    h = ((h ^ (h >> 13)) * 0xC2B2AE35) & 0xFFFFFFFF
    h ^= h >> 16
    return h - (1 << 32) if h >= 1 << 31 else h


@lru_cache
def partition_targets(partitions: int) -> np.ndarray:
    """For each partition p of a shuffle into ``partitions`` by one int column, an int that Spark sends
    to p: the states of bucket p carry it, so that the buckets land one per partition. (Were the
    table wrong, every bucket would still go whole to one partition: only the balance would suffer.)"""
    targets = np.full(partitions, -1, np.int32)
    value, found = 0, 0
    while found < partitions:
        p = spark_hash_int(value) % partitions
        if targets[p] < 0:
            targets[p], found = value, found + 1
        value += 1
    return targets


class _Phase:
    """What both phases share: the key columns, then each call's columns (arguments or states)."""

    def __init__(self, udafs: list[AggregateUDF], widths: list[int], key_types: list[pa.DataType],
                 names: list[str], filters: list[int | None] | None = None) -> None:
        self.udafs = udafs
        self.widths = widths
        self.key_types = key_types
        self.names = names  # of the keys and each call's output columns
        self.filters = filters or [None] * len(udafs)  # each call's FILTER (WHERE ...) column, if any

    def start(self) -> tuple[GroupIndex, list]:
        index = GroupIndex(self.key_types)
        accumulators = [u.groups() for u in self.udafs]
        if not self.key_types:  # a global aggregate has its one group even with no rows
            for u, acc in zip(self.udafs, accumulators):
                empty = [pa.array([], t) for t in u.input_types]
                u.calling("update_batch", acc.update_batch, empty, index.index([], 0), None, 1)
        return index, accumulators

    def fold(self, batch: pa.RecordBatch, index: GroupIndex, accumulators: list) -> np.ndarray:
        """The batch's rows into their groups; returns each row's group."""
        keys = len(self.key_types)
        groups = index.index([batch.column(i) for i in range(keys)], batch.num_rows)
        at = keys
        for u, acc, width, mask in zip(self.udafs, accumulators, self.widths, self.filters):
            columns, rows = [batch.column(at + j) for j in range(width)], groups
            if mask is not None:  # the rows FILTER keeps (NULL drops the row, as in SQL)
                keep = batch.column(mask).fill_null(False)
                columns, rows = [c.filter(keep) for c in columns], groups[keep.to_numpy(zero_copy_only=False)]
            self._fold(u, acc, columns, rows, index.count)
            at += width
        return groups

    def _fold(self, udaf, acc, columns, groups, total) -> None:
        raise NotImplementedError

    def table(self, index: GroupIndex, accumulators: list) -> pa.Table:
        """Every group's keys and outputs, in group order; the index starts afresh."""
        count = index.count
        columns = index.take_keys()
        for u, acc in zip(self.udafs, accumulators):
            for array in self._out(u, acc):
                if len(array) != count:
                    raise ValueError(f"udaf {u.name}: {len(array)} values emitted for {count} groups")
                columns.append(array)
        return pa.Table.from_arrays(columns, self.names)

    def _out(self, udaf, acc) -> list[pa.Array]:
        raise NotImplementedError


def hashed_in_python(key_types: list[pa.DataType]) -> bool:
    """Whether ``key_buckets`` can bucket these keys; other keys take Spark's hash as a column."""
    t = pa.types
    return all(t.is_integer(k) or t.is_floating(k) or t.is_boolean(k) or t.is_date(k) or t.is_timestamp(k)
               for k in key_types)


def key_buckets(keys: list[pa.Array], count: int, partitions: int) -> np.ndarray:
    """Each group's bucket from its key values (numbers, dates and timestamps), in numpy: any function
    of the key does, as long as every worker computes the same one (so not Python's ``hash``). Keys
    equal to GROUP BY are equal here: -0.0 was made 0.0 before the workers, NaN is made one NaN."""
    mixed = np.zeros(count, np.uint64)
    for column in keys:
        if pa.types.is_floating(column.type):
            floats = column.fill_null(0).to_numpy(zero_copy_only=False).astype(np.float64)
            floats[np.isnan(floats)] = np.nan
            values = floats.view(np.uint64)
        else:
            t = column.type
            plain = column.cast(pa.int8()) if pa.types.is_boolean(t) else column.view(pa.int32()) \
                if pa.types.is_date32(t) else column.view(pa.int64()) if pa.types.is_temporal(t) else column
            values = plain.fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64).view(np.uint64)
        if column.null_count:
            values = np.where(column.is_valid().to_numpy(zero_copy_only=False), values, np.uint64(0x9E3779B97F4A7C15))
        mixed = (mixed ^ values) * np.uint64(0xFF51AFD7ED558CCD)  # splitmix64's finish, per column
        mixed ^= mixed >> np.uint64(33)
    return (mixed % np.uint64(partitions)).astype(np.int32)


class Partial(_Phase):
    """Input rows (keys, arguments[, bucket]) to state streams (target, Arrow IPC of keys and states).
    Keys of numbers are bucketed here per group (``key_buckets``); other keys arrive with their bucket,
    Spark's hash of the keys computed beside them, and each group keeps the one of its rows."""

    def __init__(self, udafs, widths, key_types, names, max_groups: int, partitions: int,
                 bucket_column: int | None = None, filters: list[int | None] | None = None) -> None:
        super().__init__(udafs, widths, key_types, names, filters)
        self.max_groups = max_groups
        self.partitions = partitions
        self.targets = partition_targets(partitions)
        self.bucket_column = bucket_column if bucket_column is not None or hashed_in_python(key_types) \
            else len(key_types) + sum(widths)
        self.buckets = np.zeros(0, np.int32)  # per group, from the bucket column

    def _fold(self, udaf, acc, columns, groups, total) -> None:
        udaf.calling("update_batch", acc.update_batch, columns, groups, None, total)

    def _out(self, udaf, acc):
        return udaf.checked_states(udaf.calling("state", acc.state, EmitTo.All))

    def _keep_buckets(self, groups: np.ndarray, buckets: pa.Array, count: int) -> None:
        if count > len(self.buckets):
            self.buckets = np.concatenate([self.buckets, np.zeros(max(count, 2 * len(self.buckets)), np.int32)])
        self.buckets[groups] = buckets.to_numpy(zero_copy_only=False)

    def emit(self, index: GroupIndex, accumulators: list) -> Iterator[pa.RecordBatch]:
        table = self.table(index, accumulators)
        keys = [table.column(i).combine_chunks() for i in range(len(self.key_types))]
        buckets = key_buckets(keys, table.num_rows, self.partitions) if self.bucket_column is None \
            else self.buckets[: table.num_rows]
        order = np.argsort(buckets, kind="stable")
        table, buckets = table.take(order), buckets[order]
        starts = np.flatnonzero(np.diff(buckets, prepend=-1))
        for start, end in zip(starts, [*starts[1:], len(buckets)]):
            target = pa.array([self.targets[buckets[start]]], pa.int32())
            for at in range(start, end, OUT_ROWS):
                sink = pa.BufferOutputStream()
                with pa.ipc.new_stream(sink, table.schema) as writer:
                    writer.write_table(table.slice(at, min(OUT_ROWS, end - at)))
                stream = sink.getvalue()
                offsets = pa.py_buffer(np.array([0, stream.size], np.int32))
                value = pa.Array.from_buffers(pa.binary(), 1, [None, offsets, stream])  # not copied
                yield pa.RecordBatch.from_arrays([target, value], [f"{PREFIX}target", f"{PREFIX}states"])

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        index, accumulators = self.start()
        for batch in batches:
            if not self.key_types:  # the last column marks the input's rows apart from the extra one
                batch = batch.filter(batch.column(batch.num_columns - 1))
            groups = self.fold(batch, index, accumulators)
            if self.bucket_column is not None:
                self._keep_buckets(groups, batch.column(self.bucket_column), index.count)
            if self.key_types and index.count > self.max_groups:  # bounded memory: hand these on now
                yield from self.emit(index, accumulators)
        if index.count:
            yield from self.emit(index, accumulators)


class Final(_Phase):
    """State streams to one row per group: keys and results."""

    def _fold(self, udaf, acc, columns, groups, total) -> None:
        udaf.calling("merge_batch", acc.merge_batch, columns, groups, None, total)

    def _out(self, udaf, acc):
        return [udaf.checked(udaf.calling("evaluate", acc.evaluate, EmitTo.All), udaf.return_type, "result")]

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        index, accumulators = self.start()
        for batch in batches:
            streams = batch.column(1)
            for i in range(len(streams)):
                for states in pa.ipc.open_stream(streams[i].as_buffer()):
                    self.fold(states, index, accumulators)
        if index.count:
            yield from self.table(index, accumulators).to_batches(max_chunksize=OUT_ROWS)


def _shuffle_partitions(spark) -> int:
    """The partitions of Spark's shuffle by a column, before AQE coalesces them."""
    conf = spark.conf
    initial = conf.get("spark.sql.adaptive.coalescePartitions.initialPartitionNum", None)
    if initial and conf.get("spark.sql.adaptive.enabled", "true") == "true":
        return int(initial)
    return int(conf.get("spark.sql.shuffle.partitions", "200"))


def aggregate(df: DataFrame, by: str | list | None = None, *calls: Call, **named: Call) -> DataFrame:
    """One row per group of ``by`` (a column name or Column, a list of them, or None / [] for one
    global row), then one column per udaf call, in the order given: ``f("x").alias("m")`` (unaliased:
    the udaf's name), then keywords ``m=f("x")``.

    The udafs run in two phases in Spark's Python workers: only their states cross the shuffle.

    >>> import pyarrow as pa
    >>> from sparkagg.udaf import Accumulator, udaf, aggregate
    >>> class Total(Accumulator):
    ...     def __init__(self): self.total = 0
    ...     def update(self, values): self.total += sum(v for v in values.to_pylist() if v is not None)
    ...     def merge(self, states): self.total += sum(states[0].to_pylist())
    ...     def state(self): return [self.total]
    ...     def evaluate(self): return self.total
    >>> total = udaf(Total, pa.int64(), pa.int64(), [pa.int64()])
    >>> df = spark.createDataFrame([("a", 1), ("b", 2), ("a", 3)], "k string, x long")
    >>> sorted(aggregate(df, "k", total=total("x")).collect())
    [Row(k='a', total=4), Row(k='b', total=2)]
    """
    calls = plan.named_calls("aggregate", calls, named)
    args, udafs, widths = plan.calls(df, calls)
    keys = plan.as_list(by)
    rows = df.select(*plan.keys(df, keys, "k"), *args)
    spark = df.sparkSession
    key_types = [arrow_type(f.dataType) for f in rows.schema.fields[: len(keys)]]
    partitions = _shuffle_partitions(spark) if keys else 1
    if not hashed_in_python(key_types):
        key_hash = F.hash(*[F.col(name) for name in rows.columns[: len(keys)]])
        rows = rows.select("*", F.pmod(key_hash, F.lit(partitions)).alias(f"{PREFIX}bucket"))
    if not keys:
        # A global aggregate has a row even for empty input, but Spark may skip the Python workers of an
        # empty partition (3.5 does): one extra row, marked out, gives the final phase a state to start.
        nulls = [F.lit(None).cast(f.dataType).alias(f.name) for f in rows.schema.fields]
        extra = spark.range(1).select(*nulls, F.lit(False).alias(f"{PREFIX}row"))
        rows = rows.select("*", F.lit(True).alias(f"{PREFIX}row")).union(extra)
    key_schema = [T.StructField(f"{PREFIX}k{i}", f.dataType, True)
                  for i, f in enumerate(rows.schema.fields[: len(keys)])]

    state_names = [f.name for f in key_schema] + [f"s{i}_{f}" for i, u in enumerate(udafs)
                                                  for f in range(len(u.state_type))]
    max_groups = int(spark.conf.get(PARTIAL_GROUPS_CONF, str(PARTIAL_GROUPS_DEFAULT)))
    partial = Partial(udafs, widths, key_types, state_names, max_groups, partitions)
    states = rows.mapInArrow(partial, f"{PREFIX}target int, {PREFIX}states binary")
    states = states.repartition(F.col(f"{PREFIX}target")) if keys else states.repartition(1)

    result_schema = T.StructType(key_schema + [
        T.StructField(name, spark_type(u.name, "return", u.return_type), True) for name, u in zip(calls, udafs)])
    finals = states.mapInArrow(Final(udafs, [len(u.state_type) for u in udafs], key_types, result_schema.names),
                               result_schema)
    key_names = df.select(*[plan.column(k) for k in keys]).columns
    return finals.toDF(*key_names, *calls)
