"""Where one grouped aggregation spends its time: Java Flight Recorder execution samples of the executor
threads while the query runs (default: df_avg of x GROUP BY the 1M-group key over a Parquet file of 5M
rows, the query bench_grouped.py compares with DataFusion), each sample charged to the first frame, from the
leaf down, that belongs to one of the parts below; frames of the JDK, of Spark's row formats and of
generated code pass the charge on to their caller. Prints the split, the garbage collection pauses and the
methods most often on top.

    .venv/bin/python bench/profile_grouped.py [--rows N] [--repeat R] [--query "df_sum(x)"] [--groups kbig|k|skey|...]
                                              [--input parquet|cached|ranged] [--recording FILE]

A profile explains a ratio measured elsewhere; it measures no ratio itself and records nothing.
"""
from __future__ import annotations

import collections
import json
import subprocess
import tempfile
import time
from pathlib import Path

import bench_grouped
import common

# (part, class-name prefixes), tried in this order on each frame.
PARTS = [
    ("sparkagg operator", ("sparkagg.",)),
    ("shuffle (write, read, compression)", (
        "org.apache.spark.shuffle.", "org.apache.spark.storage.", "org.apache.spark.io.", "net.jpountz.",
        "com.github.luben.zstd.", "org.apache.spark.util.collection.", "org.apache.spark.network.",
        "org.apache.spark.serializer.", "org.apache.spark.sql.execution.UnsafeRowSerializer",
        "org.apache.spark.sql.execution.ShuffledRowRDD", "org.apache.spark.sql.execution.exchange.",
        "org.apache.spark.unsafe.memory.")),
    ("scan (Parquet, column vectors, cache)", (
        "org.apache.parquet.", "org.apache.spark.sql.execution.datasources.", "org.xerial.snappy.",
        "org.apache.spark.sql.execution.vectorized.", "org.apache.spark.sql.execution.columnar.",
        "org.apache.spark.sql.execution.FileSourceScan", "org.apache.spark.sql.execution.ColumnarToRow",
        "shaded.parquet.", "org.apache.spark.sql.execution.datasources.parquet.")),
]
# Frames that charge their caller instead: the JDK, Scala's library, Hadoop's streams, Spark's row and
# vector accessors, generated code (a projection belongs to whoever calls it).
PASS_ON = ("java.", "jdk.", "sun.", "scala.", "org.apache.hadoop.", "org.apache.spark.sql.catalyst.",
           "org.apache.spark.unsafe.types.",
           "org.apache.spark.unsafe.Platform", "org.apache.spark.unsafe.bitset.", "org.apache.spark.unsafe.hash.",
           "org.apache.spark.sql.vectorized.")
OTHER = "other Spark (task loop, generated stages)"


def part_of(frames: list[str]) -> str:
    """The part a sample's stack (leaf first, as class.method names) is charged to."""
    for frame in frames:
        for part, prefixes in PARTS:
            if frame.startswith(prefixes):
                return part
        if not frame.startswith(PASS_ON):
            return OTHER
    return OTHER


def main() -> None:
    parser = common.arguments(__doc__)
    parser.add_argument("--query", default="df_avg(x)", help="the aggregate call(s) (default df_avg(x))")
    parser.add_argument("--groups", default="kbig",
                        help="the grouping key(s), any of bench_grouped.py's columns: kbig (1M groups, the default), "
                             "k (1k), skey (1M strings), day, ksparse, 'k1, k2'")
    parser.add_argument("--input", default="parquet", choices=["parquet", "cached", "ranged"],
                        help="the Parquet file (default), the same rows cached, or the spark.range query itself")
    parser.add_argument("--recording", type=Path,
                        help="keep the JFR recording in FILE, for `jfr print` or JDK Mission Control")
    args = parser.parse_args()
    # Without DebugNonSafepoints a sample is charged to the nearest safepoint (a loop's header, a call),
    # not to the inlined method it was taken in.
    spark = common.session(
        **{"spark.driver.extraJavaOptions": "-XX:+UnlockDiagnosticVMOptions -XX:+DebugNonSafepoints"})
    # The input file, and the recording unless --recording names a file, are deleted at the end.
    with tempfile.TemporaryDirectory(prefix="sparkagg-profile-") as scratch:
        folder = Path(scratch)
        if args.input == "ranged":
            table = spark.sql(bench_grouped.rows_sql(args.rows))
        else:
            spark.sql(bench_grouped.rows_sql(args.rows)).write.parquet(str(folder / "input.parquet"))
            table = spark.read.parquet(str(folder / "input.parquet"))
        if args.input == "cached":
            table = table.cache()
            table.count()
        table.createOrReplaceTempView("input")
        sql = f"SELECT {args.groups}, {args.query} FROM input GROUP BY {args.groups}"
        common.timed(spark, "warm-up", sql, repeat=2)
        pid = spark._jvm.java.lang.ProcessHandle.current().pid()
        assert "-XX:+DebugNonSafepoints" in str(spark._jvm.java.lang.management.ManagementFactory.getRuntimeMXBean()
                                                .getInputArguments()), "the driver JVM lacks -XX:+DebugNonSafepoints"
        recording = args.recording.resolve() if args.recording else folder / "query.jfr"
        subprocess.run(["jcmd", str(pid), "JFR.start", "name=sparkagg", "settings=profile"], check=True,
                       capture_output=True)
        start = time.perf_counter()
        best = common.timed(spark, sql, sql, repeat=args.repeat)
        wall = time.perf_counter() - start
        subprocess.run(["jcmd", str(pid), "JFR.stop", "name=sparkagg", f"filename={recording}"], check=True,
                       capture_output=True)
        spark.stop()
        report(recording, wall, best, args.repeat)


def _events(recording: Path, event: str) -> list[dict]:
    out = subprocess.run(["jfr", "print", "--json", "--stack-depth", "96", "--events", event, str(recording)],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)["recording"]["events"]


def report(recording: Path, wall: float, best: float, repeat: int) -> None:
    parts, tops = collections.Counter(), collections.Counter()
    for event in _events(recording, "jdk.ExecutionSample"):
        values = event["values"]
        # Spark names its task threads "Executor task launch worker ..." while they run a task; the
        # recording may keep the name a thread had when first seen ("Executor task idle worker#N").
        if not (values["sampledThread"] or {}).get("javaName", "").startswith("Executor task"):
            continue
        frames = [f"{f['method']['type']['name'].replace('/', '.')}.{f['method']['name']}"
                  for f in (values["stackTrace"] or {}).get("frames", [])]
        parts[part_of(frames)] += 1
        if frames:
            tops[frames[0]] += 1
    pauses, concurrent = gc_split(_events(recording, "jdk.GarbageCollection"))
    samples = sum(parts.values())
    if not samples:
        raise SystemExit("profile_grouped: no execution samples of the executor threads were recorded")
    print(f"{repeat} runs in {wall:.2f} s (best {best:.2f} s); {samples:,} samples of the executor threads; "
          f"garbage collection pauses {pauses:.2f} s ({100 * pauses / wall:.0f}% of the wall time), "
          f"concurrent collection {concurrent:.2f} s beside the threads")
    for part, n in parts.most_common():
        print(f"  {part:44s} {100 * n / samples:5.1f}%")
    print("methods most often on top:")
    for frame, n in tops.most_common(15):
        print(f"  {100 * n / samples:5.1f}%  {frame}")


def gc_split(collections_recorded: list[dict]) -> tuple[float, float]:
    """(seconds the threads were stopped, seconds of concurrent work) of JFR's jdk.GarbageCollection events.
    A young collection's span is its pause; an old (concurrent) cycle of G1 spans seconds of marking while the
    threads run, and only its remark and cleanup pauses stop them."""
    pauses = sum(_seconds(e["values"]["sumOfPauses"]) for e in collections_recorded)
    spans = sum(_seconds(e["values"]["duration"]) for e in collections_recorded)
    return pauses, max(0.0, spans - pauses)


def _seconds(duration: str) -> float:
    """A JFR duration as jfr print writes it in JSON (ISO 8601, e.g. "PT0.012345S")."""
    return float(duration.removeprefix("PT").removesuffix("S") or 0) if duration.endswith("S") else 0.0


if __name__ == "__main__":
    main()
