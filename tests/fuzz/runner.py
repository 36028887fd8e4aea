"""The fuzzer's loop: a random table, a random query, random Spark settings and partitioning; the query on
Spark and on the oracle (DataFusion 55 with datafusion-extra-functions); the results judged (compare.py).
A difference is shrunk (parts of the query dropped, then rows) to a small case that still fails, printed
with its seed, and saved under sql/fuzz/ as a regression case that tests/test_fuzz.py replays."""
from __future__ import annotations

import contextlib
import json
import random
import shutil
import tempfile
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

import pyarrow as pa

import data
import oracle
from sparkagg import check, reference

from . import compare, queries, tables

ROOT = Path(__file__).resolve().parents[2]
REGRESSIONS = ROOT / "sql" / "fuzz"
# Each query runs with every setting drawn anew: sparkagg's operators on or off, codegen, AQE, ANSI (the
# generated data cannot overflow), small batches, an eager convert_to_state and states in packets or a row
# per group on the grouped operator.
SETTINGS = {
    "spark.sparkagg.groups.enabled": ("true", "false"),
    "spark.sparkagg.groups.batchSize": ("8192", "3"),
    "spark.sparkagg.groups.skipPartialRows": ("100000", "1"),
    "spark.sparkagg.groups.packets": ("true", "false"),
    "spark.sparkagg.window.enabled": ("true", "false"),
    "spark.sql.codegen.wholeStage": ("true", "false"),
    "spark.sql.codegen.factoryMode": ("FALLBACK", "NO_CODEGEN"),
    "spark.sql.adaptive.enabled": ("true", "false"),
    "spark.sql.ansi.enabled": ("true", "false"),
    "spark.sql.shuffle.partitions": ("1", "4", "17"),
}


@dataclass
class Case:
    """One generated check: everything needed to run it again."""
    seed: int
    table: pa.Table
    query: queries.Query
    partitions: int
    settings: dict


@dataclass
class Report:
    run: int = 0
    oracle_refused: int = 0
    features: Counter = field(default_factory=Counter)
    failures: list = field(default_factory=list)

    def summary(self) -> str:
        lines = [f"{self.run} queries compared, {self.oracle_refused} refused by the oracle, "
                 f"{len(self.failures)} differences"]
        lines += [f"  {name}: {n}" for name, n in sorted(self.features.items())]
        return "\n".join(lines)


def generate(seed: int, ordered: bool) -> Case:
    rng = random.Random(seed)
    table = tables.random_table(rng)
    query = queries.random_query(rng, ordered)
    settings = {name: rng.choice(values) for name, values in SETTINGS.items()}
    return Case(seed, table, query, rng.randint(1, 17), settings)


def _rows(frame) -> list[tuple]:
    return [tuple(r) for r in frame.collect()]


@contextlib.contextmanager
def settings(spark, case: Case):
    """The case's Spark settings and its table as view `t`, for the duration."""
    for name, value in case.settings.items():
        spark.conf.set(name, value)
    try:
        data.to_spark(spark, case.table, case.partitions).createOrReplaceTempView("t")
        yield
    finally:
        for name in case.settings:
            spark.conf.unset(name)


def run_spark(spark, case: Case, scratch: Path) -> list[tuple]:
    with settings(spark, case):
        if not case.query.state_keys:
            return _rows(spark.sql(case.query.spark()))
        # Each state step is written to Parquet and read back, as stored partial aggregates are.
        *partials, final = case.query.state_steps()
        for n, sql in enumerate(partials, start=1):
            path = str(scratch / f"s{n}")
            spark.sql(sql).write.mode("overwrite").parquet(path)
            spark.read.parquet(path).createOrReplaceTempView(f"s{n}")
        return _rows(spark.sql(final))


def second_opinion(spark, case: Case) -> str | None:
    """What `sparkagg check` (the reference model over Spark's own projection of the query) finds wrong
    with Spark's answer (None: agreed). State rollups are outside check's scope (it compares values, not
    states); any other query it cannot check is a difference, so that check keeps up with the fuzzer."""
    if case.query.state_keys:
        return None
    abs_tol = max(_near_zero(case, c) for c in case.query.calls)
    with settings(spark, case):
        try:
            found = check.check(spark, case.query.spark(), rel_tol=compare.REL, abs_tol=abs_tol, seed=case.seed)
        except check.UnsupportedQuery as e:
            return f"check cannot check it: {e}"
    return f"check: {found[0]}" + (f" (and {len(found) - 1} more)" if len(found) > 1 else "") if found else None


def difference(spark, case: Case, scratch: Path, second: bool = True) -> str | None:
    """What differs between Spark and the oracle on `case`, then (with `second`) between Spark and
    `sparkagg check` (None: agreed). Raises OracleRefused when DataFusion cannot run the query."""
    if case.query.shape == "reference_window":
        want = reference_window(case.table, case.query)
    else:
        try:
            want = oracle.run(case.table, case.query.datafusion())
        except Exception as e:  # DataFusion's errors have no common class in its Python binding
            raise OracleRefused(str(e).splitlines()[0]) from e
    try:
        got = run_spark(spark, case, scratch)
    except Exception as e:
        return f"Spark failed: {str(e).splitlines()[0][:300]}"
    leading = 1 if case.query.frame else len(case.query.keys)
    kinds = [c.kind for c in case.query.calls]
    found = compare.rows(kinds, leading, got, want, [_near_zero(case, c) for c in case.query.calls])
    if found or not second:
        return found
    return second_opinion(spark, case)


def _near_zero(case: Case, call: queries.Call) -> float:
    """How far from 0 a float result of `call` may be and still equal 0: its arguments' rounding. A mean
    or intercept over values of magnitude M rounds to about 1e-16 M (1e-12 M allowed); over a sliding
    frame, variances and covariances retract each leaving row's terms, whose rounding is of the products'
    size: 1e-12 M^2."""
    columns = [a for a in call.args.split(", ") if a in queries.NUMERIC]
    largest = max((abs(float(v)) for c in columns for v in case.table[c].to_pylist()
                   if v is not None and abs(float(v)) != float("inf")), default=0.0)
    return compare.ABS + 1e-12 * (largest * largest if case.query.frame else largest)


class OracleRefused(Exception):
    pass


def reference_window(table: pa.Table, query: queries.Query) -> list[tuple]:
    """The rows of a window query by the reference model: each partition in `o` order through its sliding
    driver, which retracts where the model's function does and recomputes each frame where it does not."""
    preceding, following = queries.reference_bounds(query.frame)
    partitions: dict[tuple, list[int]] = {}
    for r, key in enumerate(zip(*(table[k].to_pylist() for k in query.keys)) if query.keys
                            else ((),) * table.num_rows):
        partitions.setdefault(key, []).append(r)
    rows = []
    for members in partitions.values():
        part = table.take(members).sort_by("o")
        columns = [[part[a].combine_chunks() for a in c.args.split(", ")] for c in query.calls]
        results = [reference.drivers.sliding(c.name, [a.type for a in cols], cols, preceding, following)
                   for c, cols in zip(query.calls, columns)]
        rows += [(o, *values) for o, *values in zip(part["o"].to_pylist(), *results)]
    return rows


def shrink(spark, case: Case, scratch: Path, budget: int = 80) -> tuple[Case, str]:
    """A smaller case that still fails: the query's parts dropped one by one while it fails, then rows
    in ever smaller chunks. At most `budget` reruns."""
    reason = difference(spark, case, scratch)
    runs = 0

    def still(candidate: Case) -> str | None:
        nonlocal runs
        runs += 1
        try:
            return difference(spark, candidate, scratch)
        except OracleRefused:
            return None

    progress = True
    while progress and runs < budget:
        progress = False
        for part in case.query.parts():
            smaller = Case(case.seed, case.table, part, case.partitions, case.settings)
            why = still(smaller)
            if why:
                case, reason, progress = smaller, why, True
                break
    chunk = case.table.num_rows // 2
    while chunk >= 1 and runs < budget:
        start, removed = 0, False
        while start < case.table.num_rows and runs < budget:
            rest = pa.concat_tables([case.table.slice(0, start), case.table.slice(start + chunk)])
            smaller = Case(case.seed, rest, case.query, case.partitions, case.settings)
            why = still(smaller)
            if why:
                case, reason, removed = smaller, why, True
            else:
                start += chunk
        if not removed:
            chunk //= 2
    return case, reason


def save(case: Case, reason: str, directory: Path = REGRESSIONS) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"seed-{case.seed}.json"
    path.write_text(json.dumps({
        "seed": case.seed, "found": reason, "partitions": case.partitions, "settings": case.settings,
        "spark_sql": case.query.spark(), "oracle_sql": case.query.datafusion(),
        "query": asdict(case.query), "table": tables.values_sql(case.table),
    }, indent=1) + "\n", encoding="utf-8")
    return path


def load(path: Path) -> Case:
    """A saved regression case: its table rebuilt by DataFusion from the VALUES clause it carries."""
    saved = json.loads(path.read_text(encoding="utf-8"))
    q = saved["query"]
    query = queries.Query(
        calls=tuple(queries.Call(**c) for c in q["calls"]), keys=tuple(q["keys"]), having=q["having"],
        frame=queries.Frame(**q["frame"]) if q["frame"] else None,
        state_keys=tuple(tuple(k) for k in q["state_keys"]), shape=q["shape"])
    table = oracle.context().sql(f"SELECT * FROM {saved['table']}").to_arrow_table()
    schema = pa.schema([tables.SCHEMA.field(n) for n in table.column_names])
    return Case(saved["seed"], table.cast(schema), query, saved["partitions"], saved["settings"])


def fuzz(spark, seed: int, count: int | None = None, seconds: float | None = None, ordered: bool = True,
         save_to: Path | None = REGRESSIONS, progress=print) -> Report:
    """Cases seed, seed + 1, ... until `count` have been compared or `seconds` have passed."""
    report, started, n = Report(), time.monotonic(), seed
    scratch = Path(tempfile.mkdtemp(prefix="sparkagg-fuzz-"))
    try:
        while (count is None or report.run < count) and (seconds is None or time.monotonic() - started < seconds):
            case, n = generate(n, ordered), n + 1
            try:
                reason = difference(spark, case, scratch)
            except OracleRefused:
                report.oracle_refused += 1
                continue
            report.run += 1
            report.features.update(queries.features(case.query))
            if not case.query.state_keys:
                report.features["checked by sparkagg check"] += 1
            if reason:
                small, small_reason = shrink(spark, case, scratch)
                where = save(small, small_reason, save_to) if save_to else None
                report.failures.append((case.seed, small_reason, small.query.spark(), where))
                progress(f"seed {case.seed}: {reason}\n  shrunk to {small.table.num_rows} rows: "
                         f"{small.query.spark()}\n  {small_reason}\n  settings {small.settings}, "
                         f"{small.partitions} partitions" + (f"\n  saved as {where}" if where else ""))
            if report.run % 100 == 0:
                progress(f"{report.run} queries, {len(report.failures)} differences, "
                         f"{time.monotonic() - started:.0f} s")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return report
