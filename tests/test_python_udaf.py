"""Aggregates written in Python (sparkagg.udaf) run by Spark in two phases.

Oracles: datafusion-python runs the very same Accumulator classes; the reference model's
GroupsAccumulators, run as udafs, must equal sparkagg's JVM functions; windows equal Spark's own window
operator over the same frames."""
from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import datafusion
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from pyspark.sql import functions as F

import sweep
from data import PARTITIONS, frame
from oracle import same
from sparkagg import reference
from sparkagg.udaf import Accumulator, GroupsAccumulator, UdafError, aggregate, udaf, window
from sparkagg.udaf.aggregate import partition_targets
from sparkagg.udaf.grouping import GroupIndex

ROOT = Path(__file__).resolve().parent.parent


class WeightedMean(datafusion.Accumulator):
    """Written for datafusion-python: sum(x * w) / sum(w) over rows where both are present."""

    def __init__(self):
        self.xw, self.w = 0.0, 0.0

    def update(self, x: pa.Array, w: pa.Array) -> None:
        x, w = x.to_numpy(zero_copy_only=False), w.to_numpy(zero_copy_only=False)  # NULL as NaN
        both = ~(np.isnan(x) | np.isnan(w))
        self.xw += float(np.dot(x[both], w[both]))
        self.w += float(w[both].sum())

    def merge(self, states: list[pa.Array]) -> None:
        self.xw += float(np.nansum(states[0].to_numpy(zero_copy_only=False)))
        self.w += float(np.nansum(states[1].to_numpy(zero_copy_only=False)))

    def state(self) -> list[pa.Scalar]:
        return [pa.scalar(self.xw), pa.scalar(self.w)]

    def evaluate(self) -> pa.Scalar:
        return pa.scalar(self.xw / self.w if self.w else None, pa.float64())


class Spread(datafusion.Accumulator):
    """Written for datafusion-python: max(n) - min(n), NULL when no n is present; exact."""

    def __init__(self):
        self.low = self.high = None

    def _fold(self, low, high) -> None:
        if low is not None:
            self.low = low if self.low is None else min(self.low, low)
            self.high = high if self.high is None else max(self.high, high)

    def update(self, n: pa.Array) -> None:
        bounds = pc.min_max(n)
        self._fold(bounds["min"].as_py(), bounds["max"].as_py())

    def merge(self, states: list[pa.Array]) -> None:
        self._fold(pc.min(states[0]).as_py(), pc.max(states[1]).as_py())

    def state(self) -> list[pa.Scalar]:
        return [pa.scalar(self.low, pa.int64()), pa.scalar(self.high, pa.int64())]

    def evaluate(self) -> pa.Scalar:
        return pa.scalar(None if self.low is None else self.high - self.low, pa.int64())


DECLARED = {  # name: (class, input types, return type, state types)
    "wmean": (WeightedMean, [pa.float64(), pa.float64()], pa.float64(), [pa.float64(), pa.float64()]),
    "spread": (Spread, [pa.int64()], pa.int64(), [pa.int64(), pa.int64()]),
}
SQL_CALLS = {"wmean": "wmean(x, w)", "spread": "spread(n)"}


def _table(rows: int, seed: int = 3) -> pa.Table:
    rnd = random.Random(seed)

    def maybe(v, every):
        return None if rnd.randrange(every) == 0 else v

    keys = [maybe(rnd.randrange(40), 30) for _ in range(rows)]
    keys += [1000 + i for i in range(5)] if rows else []  # groups of one row
    n = len(keys)
    return pa.table({
        "k": pa.array(keys, pa.int64()),
        "x": pa.array([maybe(rnd.uniform(-100, 100), 7) for _ in range(n)], pa.float64()),
        "w": pa.array([maybe(rnd.uniform(0, 5), 9) for _ in range(n)], pa.float64()),
        "n": pa.array([maybe(rnd.randint(-10**12, 10**12), 5) for _ in range(n)], pa.int64()),
    })


def _datafusion(table: pa.Table, name: str, grouped: bool, partitions: int) -> dict:
    cls, inputs, ret, states = DECLARED[name]
    ctx = datafusion.SessionContext(datafusion.SessionConfig().with_target_partitions(partitions))
    ctx.register_udaf(datafusion.udaf(cls, inputs, ret, states, "immutable", name=name))
    batches = table.to_batches(max_chunksize=max(1, table.num_rows // partitions)) or \
        [pa.RecordBatch.from_pylist([], schema=table.schema)]
    ctx.register_record_batches("t", [batches[i::partitions] for i in range(partitions) if batches[i::partitions]])
    sql = f"SELECT k, {SQL_CALLS[name]} FROM t GROUP BY k" if grouped else f"SELECT NULL AS k, {SQL_CALLS[name]} FROM t"
    return {r["k"]: list(r.values())[1] for r in ctx.sql(sql).to_arrow_table().to_pylist()}


def _sparkagg(spark, table: pa.Table, name: str, grouped: bool, partitions: int) -> dict:
    cls, inputs, ret, states = DECLARED[name]
    f = udaf(cls, inputs, ret, states, name=name)
    df = frame(spark, table).repartition(partitions)
    args = {"wmean": ("x", "w"), "spread": ("n",)}[name]
    out = aggregate(df, "k" if grouped else None, v=f(*args))
    return {(r["k"] if grouped else None): r["v"] for r in out.collect()}


def _agree(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(same(a[k], b[k], rel=1e-9) for k in a)


@pytest.mark.parametrize("partitions", PARTITIONS)
@pytest.mark.parametrize("grouped", [True, False], ids=["grouped", "global"])
@pytest.mark.parametrize("name", sorted(DECLARED))
def test_a_datafusion_accumulator_gives_datafusions_results(spark, name, grouped, partitions):
    table = _table(2000)
    assert _agree(_sparkagg(spark, table, name, grouped, partitions), _datafusion(table, name, grouped, partitions))


@pytest.mark.parametrize("name", sorted(DECLARED))
def test_empty_input_one_null_row_global_and_none_grouped(spark, name):
    empty = _table(0)
    assert _sparkagg(spark, empty, name, False, 3) == _datafusion(empty, name, False, 1) == {None: None}
    assert _sparkagg(spark, empty, name, True, 3) == _datafusion(empty, name, True, 1) == {}


def test_hand_worked_groups_of_one_and_all_null(spark):
    df = spark.createDataFrame([(1, 2.0, 1.0), (1, 4.0, 3.0), (2, 5.0, None), (3, None, None)],
                               "k long, x double, w double")
    f = udaf(WeightedMean, [pa.float64(), pa.float64()], pa.float64(), [pa.float64(), pa.float64()])
    rows = sorted(aggregate(df, ["k"], m=f("x", "w")).collect())
    assert [tuple(r) for r in rows] == [(1, 3.5), (2, None), (3, None)]  # (2*1 + 4*3) / 4


def _reference(name: str, types: list[pa.DataType], **bound):
    """A reference-model function as a udaf: its GroupsAccumulator, run unchanged."""
    function = reference.get(name).bind(**bound) if bound else reference.get(name)
    return udaf(lambda: function.groups(types), types, function.return_type(types),
                [t for _, t in function.state_fields(types)], name=name)


@pytest.mark.parametrize("partitions", PARTITIONS)
def test_reference_groups_accumulators_equal_the_jvm_functions(spark, partitions):
    table = _table(3000, seed=11)
    df = frame(spark, table).repartition(partitions)
    df.createOrReplaceTempView("py_udaf_t")
    f64, i64 = [pa.float64()], [pa.int64()]
    got = {r["k"]: r for r in aggregate(
        df, "k", avg=_reference("avg", f64)("x"), var=_reference("var_samp", f64)("x"),
        median=_reference("approx_percentile_cont", f64, p=0.5)("x"), values=_reference("array_agg", i64)("n"),
    ).collect()}
    jvm = {r["k"]: r for r in spark.sql(
        "SELECT k, df_avg(x) AS avg, df_var_samp(x) AS var, df_approx_percentile_cont(x, 0.5) AS median, "
        "df_array_agg(n) AS values, min(x) AS lo, max(x) AS hi FROM py_udaf_t GROUP BY k").collect()}
    assert got.keys() == jvm.keys() and len(got) == 46
    for k, want in jvm.items():
        row = got[k]
        assert same(row["avg"], want["avg"], rel=1e-12) and same(row["var"], want["var"], rel=1e-9), k
        assert sorted(row["values"], key=repr) == sorted(want["values"], key=repr), k
        if want["median"] is None:
            assert row["median"] is None
        else:  # t-digests built in another order: within 2% of the group's range
            assert abs(row["median"] - want["median"]) <= 0.02 * (want["hi"] - want["lo"]), k


class RetractingSum(Accumulator):
    """A sum of int64 with retract: the window slides by undoing rows."""

    def __init__(self):
        self.total, self.count = 0, 0

    def update(self, n):
        self.total += pc.sum(n).as_py() or 0
        self.count += len(n) - n.null_count

    def retract(self, n):
        self.total -= pc.sum(n).as_py() or 0
        self.count -= len(n) - n.null_count

    def merge(self, states):
        self.total += pc.sum(states[0]).as_py() or 0
        self.count += pc.sum(states[1]).as_py() or 0

    def state(self):
        return [self.total, self.count]

    def evaluate(self):
        return self.total if self.count else None


@pytest.mark.parametrize("bounds,frame_sql", [
    ((-3, 0), "ROWS BETWEEN 3 PRECEDING AND CURRENT ROW"),
    sweep.slow((-1, 2), "ROWS BETWEEN 1 PRECEDING AND 2 FOLLOWING"),
    sweep.slow((None, 0), "ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW"),
    sweep.slow((1, 3), "ROWS BETWEEN 1 FOLLOWING AND 3 FOLLOWING"),
    sweep.slow((0, None), "ROWS BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING"),
])
def test_sliding_windows_equal_the_jvm_window_operator(spark, bounds, frame_sql):
    table = _table(400, seed=5).append_column("t", pa.array(range(405), pa.int64()))
    df = frame(spark, table)
    df.createOrReplaceTempView("py_udaf_w")
    rsum = udaf(RetractingSum, pa.int64(), pa.int64(), [pa.int64(), pa.int64()], name="rsum")
    got = window(df, "k", "t", rows=bounds, s=rsum("n"), a=_reference("avg", [pa.float64()])("x"),
                 v=_reference("var_samp", [pa.float64()])("x")).orderBy("t").collect()
    spec = f"PARTITION BY k ORDER BY t {frame_sql}"
    want = spark.sql(f"SELECT t, df_sum(n) OVER ({spec}) AS s, df_avg(x) OVER ({spec}) AS a, "
                     f"df_var_samp(x) OVER ({spec}) AS v FROM py_udaf_w ORDER BY t").collect()
    assert len(got) == len(want) == 405
    for g, w in zip(got, want):
        assert g["t"] == w["t"] and g["s"] == w["s"], (g, w)
        assert same(g["a"], w["a"], rel=1e-9) and same(g["v"], w["v"], rel=1e-6), (g, w)


class RowCount(GroupsAccumulator):
    """A user's own GroupsAccumulator: rows per group, in numpy over the group indices."""

    return_type, state_fields = pa.int64(), [("n", pa.int64())]

    def __init__(self):
        self.counts = np.zeros(0, np.int64)

    def _grow(self, total):
        self.counts = np.concatenate([self.counts, np.zeros(total - len(self.counts), np.int64)])

    def update_batch(self, values, group_indices, opt_filter, total_num_groups):
        self._grow(total_num_groups)
        self.counts += np.bincount(group_indices, minlength=total_num_groups)

    def merge_batch(self, values, group_indices, opt_filter, total_num_groups):
        self._grow(total_num_groups)
        np.add.at(self.counts, group_indices, values[0].to_numpy())

    def evaluate(self, emit_to):
        return pa.array(self.state(emit_to)[0])

    def state(self, emit_to):
        n = emit_to.count(len(self.counts))
        out, self.counts = self.counts[:n], self.counts[n:]
        return [pa.array(out)]

    def size(self):
        return self.counts.nbytes


count_rows = udaf(RowCount, pa.int64(), pa.int64(), [pa.int64()], name="count_rows")


def test_a_groups_accumulator_of_the_users_own(spark):
    df = spark.range(0, 10000, 1, 4).selectExpr("id % 7 AS k", "id")
    rows = dict(aggregate(df, "k", n=count_rows("id")).collect())
    assert rows == {k: len(range(k, 10000, 7)) for k in range(7)}


KEY_SHAPES = {  # keys bucketed by Spark's hash beside the rows (strings) or in numpy (numbers, dates)
    "string": ["s"],
    "string, int": ["s", "i"],
    "double with NaNs, -0.0, NULL": ["d"],
    "date, timestamp": ["day", "ts"],
    "boolean, float, byte": ["b", "f", "y"],
}
SLOW_KEY_SHAPES = {"string, int", "boolean, float, byte"}  # make check: the string, double and date keys


def _key(value):
    return "NaN" if isinstance(value, float) and value != value else value


@pytest.mark.parametrize("keys", [sweep.slow(keys) if name in SLOW_KEY_SHAPES else keys
                                  for name, keys in KEY_SHAPES.items()], ids=KEY_SHAPES.keys())
def test_every_key_shape_groups_as_spark_groups_by(spark, keys):
    df = spark.range(0, 3000, 1, 5).selectExpr(
        "id",
        "CASE id % 11 WHEN 0 THEN NULL WHEN 1 THEN '' ELSE concat('ké', id % 37) END AS s",
        "CAST(id % 13 AS INT) AS i",
        "CASE id % 7 WHEN 0 THEN double('NaN') WHEN 1 THEN sqrt(-1.0) WHEN 2 THEN double('-0.0') "
        "WHEN 3 THEN 0.0D WHEN 4 THEN NULL ELSE double(id % 5) END AS d",
        "date_add(DATE'2024-02-28', CAST(id % 6 AS INT)) AS day",
        "timestamp_seconds(1700000000 + id % 4) AS ts",
        "id % 3 = 0 AS b", "CAST(id % 4 AS FLOAT) / 2 AS f", "CAST(id % 5 AS TINYINT) AS y")
    got = [(*map(_key, r[:-1]), r[-1]) for r in aggregate(df, keys, n=count_rows("id")).collect()]
    expected = [(*map(_key, r[:-1]), r[-1]) for r in df.groupBy(*keys).count().collect()]
    assert len(got) == len(expected) and sorted(got, key=repr) == sorted(expected, key=repr)


@pytest.mark.parametrize("key_type", [pa.int64(), pa.int32(), pa.int8()])
@pytest.mark.parametrize("spread", ["dense", "sparse from the start", "dense, then sparse"])
def test_integer_keys_number_groups_by_first_appearance_dense_or_sparse(key_type, spread):
    rng = random.Random(7)
    high = {"dense": 50, "sparse from the start": 1 << 40, "dense, then sparse": 1 << 40}[spread]
    high = min(high, 2 ** (key_type.bit_width - 1) - 1)
    index, group_of = GroupIndex([key_type]), {}
    for b in range(12):
        span = 50 if spread == "dense, then sparse" and b < 4 else high
        batch = [None if rng.random() < 0.05 else rng.randint(-span, span) for _ in range(rng.randint(0, 300))]
        got = index.index([pa.array(batch, key_type)], len(batch)).tolist()
        for k, g in zip(batch, got):  # one group per key, the same in every batch
            assert group_of.setdefault(k, g) == g
    assert sorted(group_of.values()) == list(range(index.count)) == list(range(len(group_of)))
    keys = index.take_keys()[0].to_pylist()
    assert {k: keys[g] for k, g in group_of.items()} == {k: k for k in group_of}
    # the non-NULL keys numbered in order of their first row (NULL's group comes after its batch's keys)
    firsts = [g for g in group_of.values() if keys[g] is not None]
    assert firsts == sorted(firsts)


def test_state_streams_land_one_bucket_per_partition(spark):
    targets = partition_targets(7)
    df = spark.createDataFrame([(int(t),) for t in targets], "t int").repartition(7, "t")
    assert dict(df.select("t", F.spark_partition_id()).collect()) == {int(t): p for p, t in enumerate(targets)}


@pytest.mark.parametrize("key", ["id % 997", "string(id % 997)"])
def test_partial_groups_bound_emits_early_and_loses_nothing(spark, key):
    spark.conf.set("spark.sparkagg.udaf.partialGroups", "50")
    try:
        f = udaf(Spread, pa.int64(), pa.int64(), [pa.int64(), pa.int64()])
        df = spark.range(0, 5000, 1, 2).selectExpr(f"{key} AS k", "id AS n")
        rows = {int(k): s for k, s in aggregate(df, "k", s=f("n")).collect()}
    finally:
        spark.conf.unset("spark.sparkagg.udaf.partialGroups")
    assert rows == {k: max(range(k, 5000, 997)) - k for k in range(997)}


def test_wrong_input_type_fails_before_any_job_naming_udaf_and_types(spark):
    f = udaf(WeightedMean, [pa.float64(), pa.float64()], pa.float64(), [pa.float64(), pa.float64()])
    df = spark.createDataFrame([("a", 1.0)], "s string, x double")
    with pytest.raises(TypeError, match=r"udaf weightedmean .*argument 1 \(s\) is string \(string\); it takes double"):
        aggregate(df, None, m=f("s", "x"))
    with pytest.raises(TypeError, match="takes 2 argument"):
        f("x")


def test_wrong_state_and_user_errors_name_the_udaf_and_keep_the_traceback(spark):
    class BadState(Spread):
        def state(self):
            return [pa.scalar("low"), pa.scalar("high")]

    class Boom(Spread):
        def update(self, n):
            raise ValueError("boom in the user's update")

    df = spark.range(0, 10, 1, 2).selectExpr("id % 2 AS k", "id AS n")
    bad = udaf(BadState, pa.int64(), pa.int64(), [pa.int64(), pa.int64()], name="bad_state")
    with pytest.raises(Exception, match=r"udaf bad_state: state field 0 is string, declared int64"):
        aggregate(df, "k", s=bad("n")).collect()
    boom = udaf(Boom, pa.int64(), pa.int64(), [pa.int64(), pa.int64()], name="boom")
    with pytest.raises(Exception) as raised:
        aggregate(df, "k", s=boom("n")).collect()
    text = str(raised.value)
    assert "udaf boom: update raised ValueError: boom in the user's update" in text
    assert "test_python_udaf.py" in text and 'raise ValueError("boom' in text  # the user's own traceback


def test_udaf_as_a_decorator_and_errors_of_declaration():
    @udaf([pa.int64()], pa.int64(), [pa.int64(), pa.int64()], name="spread2")
    class Decorated(Spread):
        pass

    assert repr(Decorated) == "AggregateUDF(spread2(int64) -> int64)" and not Decorated.retracts
    assert udaf(RetractingSum, pa.int64(), pa.int64(), [pa.int64(), pa.int64()]).retracts
    with pytest.raises(TypeError, match="neither an Accumulator"):
        udaf(object, pa.int64(), pa.int64(), [pa.int64()])
    with pytest.raises(ValueError, match="volatility"):
        udaf(Spread, pa.int64(), pa.int64(), [pa.int64()], "sometimes")
    assert issubclass(UdafError, RuntimeError)


# What tests/apps/python_udaf_job.py prints when every form of the call agrees with Spark's own figures.
JOB_AGREES = {"groups": 100, "grouped_ok": True, "window_rows": 600, "window_ok": True, "column_ok": True,
              "sql_ok": True, "sql_window_ok": True, "expression_ok": True, "global_ok": True,
              "column_window_ok": True}


def _run_job(*args: str, env: dict | None = None) -> dict:
    """The job as a user starts it, `.venv/bin/python job.py`, with no PYSPARK_PYTHON: sparkagg.session()
    points the Python workers at that interpreter (else they take `python3` from PATH, without pyarrow)."""
    import pyspark
    if env is None:
        env = {k: v for k, v in os.environ.items() if k not in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON")}
        env["SPARK_HOME"] = str(Path(pyspark.__file__).parent)
    run = subprocess.run([sys.executable, str(ROOT / "tests" / "apps" / "python_udaf_job.py"), *args],
                         capture_output=True, text=True, timeout=600, env=env)
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads([line for line in run.stdout.splitlines() if line.startswith("{")][-1])


@pytest.mark.spark
@pytest.mark.slow
def test_on_a_local_cluster_of_separate_executor_jvms():
    assert _run_job("--master", "local-cluster[2,1,1024]") == JOB_AGREES


@pytest.mark.spark
@pytest.mark.slow
def test_over_spark_connect(connect_server):
    """Every form over a Connect server with the extension, its Python workers running the udaf: on 3.5 (whose
    client requires Connect Columns in agg) as on 4.x."""
    assert _run_job("--remote", connect_server.url, env=connect_server.env) == \
        {**JOB_AGREES, "nulls_1_3_17_ok": True, "empty_ok": True}


@pytest.mark.parametrize("module", ["api", "aggregate", "window", "column"])
def test_docstring_examples_run(spark, module):
    import doctest
    import importlib
    result = doctest.testmod(importlib.import_module(f"sparkagg.udaf.{module}"), extraglobs={"spark": spark})
    assert result.attempted >= 3 and result.failed == 0


def test_the_readme_example_runs(spark, capsys):
    section = (ROOT / "docs" / "python-aggregates.md").read_text()
    code = section[section.index("```python\n") + 10: section.index("\n```", section.index("```python"))]
    # Run as a user's script runs: in __main__, whose classes travel to the workers by value.
    script = compile(code.replace("spark = sparkagg.session()\n", ""), "docs/python-aggregates.md", "exec")
    exec(script, {"spark": spark, "__name__": "__main__"})
    shown = capsys.readouterr().out
    rows = [line.replace(" ", "").strip("|").split("|") for line in shown.upper().splitlines() if line.startswith("|")]
    # Hand-worked: a = (2*1 + 4*3) / (1 + 3) over 2 rows; b's only row has no weight; FILTER (t > 1) keeps a's
    # second row alone (4.0); the window's first frame is row 1.
    assert ["A", "3.5", "2"] in rows and ["B", "NULL", "1"] in rows
    assert ["A", "4.0"] in rows and ["B", "NULL"] in rows
    assert ["A", "1", "2.0", "1.0", "2.0"] in rows and ["A", "2", "4.0", "3.0", "3.5"] in rows
    assert ["B", "3", "5.0", "NULL", "NULL"] in rows and ["A", "3.5"] in rows


def test_calls_named_by_alias_or_udaf_name_and_a_wrong_result_type(spark):
    class TextResult(Spread):
        def evaluate(self):
            return pa.scalar("wide")

    df = spark.createDataFrame([(1, 5), (1, 9), (2, 4)], "k long, n long")
    spread = udaf(Spread, pa.int64(), pa.int64(), [pa.int64(), pa.int64()])
    out = aggregate(df, "k", spread("n").alias("range"), spread("n"), again=spread("n"))
    assert out.columns == ["k", "range", "spread", "again"]
    assert sorted(tuple(r) for r in out.collect()) == [(1, 4, 4, 4), (2, 0, 0, 0)]
    with pytest.raises(ValueError, match="two output columns named spread"):
        aggregate(df, "k", spread("n"), spread("n"))
    text = udaf(TextResult, pa.int64(), pa.int64(), [pa.int64(), pa.int64()], name="text_result")
    with pytest.raises(Exception, match="udaf text_result: result is string, declared int64"):
        aggregate(df, None, text("n")).collect()
