"""Shared benchmark harness: one local[2] session with sparkagg, timing by a noop write (the whole
query runs, nothing is collected), best of N runs, ratios printed against anchors measured in the same run;
a call and its anchor take turns, round by round (timed_together).
Each script also records its ratios in bench/results/<script>.json (a Recorder), which bench/plot.py draws."""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import sparkagg

ROWS = 5_000_000
RESULTS = Path(__file__).resolve().parent / "results"


def arguments(doc: str, rows: int = ROWS) -> argparse.ArgumentParser:
    """The options every script takes: --rows (a smaller run to try things), --repeat, --out."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=rows, help=f"rows of the table (default {rows:,})")
    parser.add_argument("--repeat", type=int, default=3, help="runs per query, the best is kept (default 3)")
    parser.add_argument("--out", type=Path, default=RESULTS,
                        help="folder of the results JSON (default bench/results, drawn in docs/benchmarks.md)")
    return parser


class Recorder:
    """The ratios of one script's run, as bench/plot.py reads them: charts of bars, each bar the time of
    ``a`` over the time of ``b`` for one group (a column: "1k groups", "w = 100"), with both times."""

    def __init__(self, script: str, title: str, rows: int, repeat: int, source: str | None = None):
        self.data = {"script": script, "title": title, "rows": rows, "repeat": repeat,
                     "measured": time.strftime("%Y-%m-%d %H:%M"), "source": source or f"bench/{script}.py",
                     "machine": f"{platform.machine()}, {os.cpu_count()} cores, local[2]",
                     "spark": None, "charts": []}

    def chart(self, title: str, groups: list[str]) -> dict:
        for c in self.data["charts"]:
            if c["title"] == title:
                return c
        c = {"title": title, "groups": list(groups), "bars": []}
        self.data["charts"].append(c)
        return c

    def add(self, chart: str, groups: list[str], a: str, b: str, group: str, a_seconds: float | None,
            b_seconds: float | None) -> None:
        """One ratio a / b in ``group``; a missing time (a query not run) leaves the bar out."""
        c = self.chart(chart, groups)
        bar = next((x for x in c["bars"] if x["a"] == a and x["b"] == b), None)
        if bar is None:
            bar = {"a": a, "b": b, "ratios": {}, "seconds": {}}
            c["bars"].append(bar)
        if a_seconds is not None and b_seconds is not None and b_seconds > 0:
            bar["ratios"][group] = round(a_seconds / b_seconds, 4)
            bar["seconds"][group] = [round(a_seconds, 4), round(b_seconds, 4)]

    def write(self, spark=None, out: Path = RESULTS) -> Path:
        if spark is not None:
            self.data["spark"] = spark.version
        out.mkdir(parents=True, exist_ok=True)
        path = out / f"{self.data['script']}.json"
        path.write_text(json.dumps(self.data, indent=1) + "\n")
        print(f"ratios recorded in {path}")
        return path


# The settings a comparison runs at. "default": what `sparkagg.session()` gives a user on this machine (1 GB of
# driver memory, 200 shuffle partitions coalesced by adaptive execution, the UI on), quiet in the log.
# "tuned": a driver of 6 GB and 4 shuffle partitions, one per core and a few more, without the UI.
SETTINGS = {
    "default": {},
    "tuned": {"spark.sql.shuffle.partitions": "4", "spark.driver.memory": "6g", "spark.ui.enabled": "false"},
}


def session(setting: str = "tuned", **conf):
    """The benches' Spark: local[2] at ``setting`` (SETTINGS), without the console's progress bar and with
    errors alone in the log; ``conf`` adds settings. A driver's memory is fixed when its JVM starts, so one
    process runs one setting."""
    return sparkagg.session(master="local[2]", app_name="sparkagg-bench", **{
        "spark.ui.showConsoleProgress": "false", "spark.log.level": "ERROR", **SETTINGS[setting], **conf})


def datafusion_alone(file: Path, queries: list[str], partitions: int = 2, repeat: int = 5) -> dict[str, dict]:
    """{query: bench/anchor_datafusion.py's record} of DataFusion's queries over the Parquet ``file`` (table
    t), each timed best of ``repeat`` in a process of its own. Call it once the bench's Spark has stopped."""
    run = subprocess.run([sys.executable, str(Path(__file__).with_name("anchor_datafusion.py")), str(file), *queries,
                          "--partitions", str(partitions), "--repeat", str(repeat)],
                         capture_output=True, text=True, check=False)
    if run.returncode != 0:
        raise SystemExit(f"bench/anchor_datafusion.py failed:\n{run.stderr[-3000:]}")
    records = [json.loads(line) for line in run.stdout.splitlines() if line.startswith("{")]
    for r in records:
        print(f"  DataFusion {r['datafusion']} alone ({r['target_partitions']} partitions): {r['query']:40s} "
              f"{r['seconds']:7.3f} s", flush=True)
    return {r["query"]: r for r in records}


GROUPINGS = (("k", "1k groups"), ("kbig", "1M groups"))


def base_table(spark, rows: int = ROWS):
    """k: 1k groups, kbig: 1M groups, x and y: uniform doubles (y correlated with x)."""
    df = spark.sql(f"SELECT id % 1000 AS k, id % 1000000 AS kbig, rand(1) * 100 AS x, "
                   f"rand(1) * 50 + rand(2) * 10 AS y, id AS t FROM range({rows})")
    df = df.cache()
    df.count()
    df.createOrReplaceTempView("base")
    return df


def timed(spark, label: str, sql: str, repeat: int = 3) -> float:
    return timed_together(spark, {label: sql}, repeat)[label]


def task_cpu(spark) -> dict:
    """{thread id: CPU nanoseconds so far} of the threads that run tasks (in local mode, in the driver's
    JVM): what the executors did, without the driver's planning, the JIT compiler's threads or a stolen core."""
    bean = spark.sparkContext._jvm.java.lang.management.ManagementFactory.getThreadMXBean()
    used = {}
    for thread in bean.getAllThreadIds():
        info = bean.getThreadInfo(thread)
        if info is not None and info.getThreadName().startswith("Executor task "):
            used[thread] = bean.getThreadCpuTime(thread)
    return used


def gc_seconds(spark) -> float:
    """The seconds the driver's JVM (in local mode, the executors' too) has spent in garbage collection so far."""
    beans = spark.sparkContext._jvm.java.lang.management.ManagementFactory.getGarbageCollectorMXBeans()
    return sum(max(bean.getCollectionTime(), 0) for bean in beans) / 1000


def timed_together(spark, queries: dict, repeat: int = 3, cpu: dict | None = None) -> dict:
    """{label: best seconds} of the queries ({label: SQL, or a function that runs its query}), taking
    turns in each of ``repeat`` rounds: on a machine whose cores other guests steal for seconds at a time,
    the queries compared then see the same spells, where all the runs of one and then all of the other
    could fall on either side of one. Given ``cpu``, it is filled with {label: least seconds of task CPU}
    (task_cpu), read between the timed runs."""
    def run(query) -> float:
        df = spark.sql(query) if isinstance(query, str) else None
        start = time.perf_counter()
        if df is None:
            query()
        else:
            df.write.format("noop").mode("overwrite").save()
        return time.perf_counter() - start
    best = {label: float("inf") for label in queries}
    for _ in range(repeat):
        for label, query in queries.items():
            before = task_cpu(spark) if cpu is not None else {}
            best[label] = min(best[label], run(query))
            if cpu is not None:
                # A thread that ended since `before` is not counted: the pool keeps its threads for a minute.
                used = sum(t - before.get(thread, 0) for thread, t in task_cpu(spark).items()) / 1e9
                cpu[label] = min(cpu.get(label, float("inf")), used)
    for label in queries:
        print(f"  {label:48s} {best[label]:7.2f} s", flush=True)
    return best


def ratio_line(label: str, ours: float, anchor: float, note: str = "") -> str:
    return f"  {label:48s} {ours / anchor:6.2f}x {note}"


def compare(spark, calls: list[tuple[str, str]], recorder: Recorder | None = None, chart: str = "",
            repeat: int = 3, names: dict[str, str] | None = None) -> dict[str, dict[str, float]]:
    """Times each (sparkagg call, Spark built-in call) at 1k and 1M groups, prints both and their ratio,
    and records the ratios in ``chart`` of ``recorder`` (bars named by ``names`` of the calls, if given).
    Returns {grouping label: {call: seconds}}."""
    timings = {}
    for key, label in GROUPINGS:
        print(f"{label}:")
        t = {}
        for ours, theirs in calls:
            t.update(timed_together(spark, {call: f"SELECT {key}, {call} FROM base GROUP BY {key}"
                                            for call in (theirs, ours)}, repeat))
        timings[label] = t
    print("ratios, sparkagg / Spark built-in (lower is better for sparkagg):")
    groups = [label for _, label in GROUPINGS]
    for label in groups:
        for ours, theirs in calls:
            print(ratio_line(f"{ours} / {theirs}, {label}", timings[label][ours], timings[label][theirs]))
            if recorder is not None:
                name = (names or {}).get
                recorder.add(chart, groups, name(ours, ours), name(theirs, theirs), label,
                             timings[label][ours], timings[label][theirs])
    return timings
