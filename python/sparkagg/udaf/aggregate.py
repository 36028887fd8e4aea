"""``aggregate``: Python udafs grouped in two phases on Spark, as DataFusion's Partial and Final.

1. Partial, in the Python workers over each input partition's Arrow batches (``mapInArrow``): a group
   index and one GroupsAccumulator per call (a user's Accumulator runs one per group); the partition's
   states go out with their keys, early when the groups outgrow ``spark.sparkagg.udaf.partialGroups``.
2. The states, and only they, are shuffled by the keys (one partition for a global aggregate).
3. Final, again in the workers: the states merge into one group each and are evaluated.
"""
from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ..reference.groups import EmitTo
from . import plan
from .api import AggregateUDF, UdafCall
from .grouping import GroupIndex
from .plan import PREFIX, arrow_type, spark_type

PARTIAL_GROUPS_CONF = "spark.sparkagg.udaf.partialGroups"
PARTIAL_GROUPS_DEFAULT = 1 << 20
OUT_ROWS = 1 << 16  # rows per Arrow batch handed back to Spark


class _Phase:
    """What both phases share: the key columns, then each call's columns (arguments or states)."""

    def __init__(self, udafs: list[AggregateUDF], widths: list[int], key_types: list[pa.DataType],
                 names: list[str]) -> None:
        self.udafs = udafs
        self.widths = widths
        self.key_types = key_types
        self.names = names  # of the output columns, as the Spark schema has them

    def start(self) -> tuple[GroupIndex, list]:
        index = GroupIndex(self.key_types)
        accumulators = [u.groups() for u in self.udafs]
        if not self.key_types:  # a global aggregate has its one group even with no rows
            for u, acc in zip(self.udafs, accumulators):
                empty = [pa.array([], t) for t in u.input_types]
                u.calling("update_batch", acc.update_batch, empty, index.index([], 0), None, 1)
        return index, accumulators

    def fold(self, batch: pa.RecordBatch, index: GroupIndex, accumulators: list) -> None:
        keys = len(self.key_types)
        groups = index.index([batch.column(i) for i in range(keys)], batch.num_rows)
        at = keys
        for u, acc, width in zip(self.udafs, accumulators, self.widths):
            self._fold(u, acc, [batch.column(at + j) for j in range(width)], groups, index.count)
            at += width

    def _fold(self, udaf, acc, columns, groups, total) -> None:
        raise NotImplementedError

    def emit(self, index: GroupIndex, accumulators: list) -> Iterator[pa.RecordBatch]:
        count = index.count
        columns = index.take_keys()
        for u, acc in zip(self.udafs, accumulators):
            for array in self._out(u, acc):
                if len(array) != count:
                    raise ValueError(f"udaf {u.name}: {len(array)} values emitted for {count} groups")
                columns.append(array)
        yield from pa.Table.from_arrays(columns, self.names).to_batches(max_chunksize=OUT_ROWS)

    def _out(self, udaf, acc) -> list[pa.Array]:
        raise NotImplementedError


class Partial(_Phase):
    def __init__(self, udafs, widths, key_types, names, max_groups: int) -> None:
        super().__init__(udafs, widths, key_types, names)
        self.max_groups = max_groups

    def _fold(self, udaf, acc, columns, groups, total) -> None:
        udaf.calling("update_batch", acc.update_batch, columns, groups, None, total)

    def _out(self, udaf, acc):
        return udaf.checked_states(udaf.calling("state", acc.state, EmitTo.All))

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        index, accumulators = self.start()
        for batch in batches:
            if not self.key_types:  # the last column marks the input's rows apart from the extra one
                batch = batch.filter(batch.column(batch.num_columns - 1))
            self.fold(batch, index, accumulators)
            if self.key_types and index.count > self.max_groups:  # bounded memory: hand these on now
                yield from self.emit(index, accumulators)
        if index.count:
            yield from self.emit(index, accumulators)


class Final(_Phase):
    def _fold(self, udaf, acc, columns, groups, total) -> None:
        udaf.calling("merge_batch", acc.merge_batch, columns, groups, None, total)

    def _out(self, udaf, acc):
        return [udaf.checked(udaf.calling("evaluate", acc.evaluate, EmitTo.All), udaf.return_type, "result")]

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        index, accumulators = self.start()
        for batch in batches:
            self.fold(batch, index, accumulators)
        if index.count:
            yield from self.emit(index, accumulators)


def aggregate(df: DataFrame, by: str | list | None = None, *calls: UdafCall, **named: UdafCall) -> DataFrame:
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
    staged = plan.keys(df, keys, "k") + args
    rows = df.select(*staged)
    if not keys:
        # A global aggregate has a row even for empty input, but Spark may skip the Python workers of an
        # empty partition (3.5 does): one extra row, marked out, gives the final phase a state to start.
        nulls = [F.lit(None).cast(f.dataType).alias(f.name) for f in rows.schema.fields]
        extra = df.sparkSession.range(1).select(*nulls, F.lit(False).alias(f"{PREFIX}row"))
        rows = rows.select("*", F.lit(True).alias(f"{PREFIX}row")).union(extra)
    key_types = [arrow_type(f.dataType) for f in rows.schema.fields[: len(keys)]]
    key_schema = [T.StructField(f"{PREFIX}k{i}", f.dataType, True)
                  for i, f in enumerate(rows.schema.fields[: len(keys)])]

    state_schema = T.StructType(key_schema + [
        T.StructField(f"{PREFIX}s{i}_{f}", spark_type(u.name, "state", t), True)
        for i, u in enumerate(udafs) for f, t in enumerate(u.state_type)])
    max_groups = int(df.sparkSession.conf.get(PARTIAL_GROUPS_CONF, str(PARTIAL_GROUPS_DEFAULT)))
    states = rows.mapInArrow(Partial(udafs, widths, key_types, state_schema.names, max_groups), state_schema)
    states = states.repartition(*[F.col(f.name) for f in key_schema]) if keys else states.repartition(1)

    result_schema = T.StructType(key_schema + [
        T.StructField(name, spark_type(u.name, "return", u.return_type), True) for name, u in zip(calls, udafs)])
    finals = states.mapInArrow(Final(udafs, [len(u.state_type) for u in udafs], key_types, result_schema.names),
                               result_schema)
    key_names = df.select(*[plan.column(k) for k in keys]).columns
    return finals.toDF(*key_names, *calls)
