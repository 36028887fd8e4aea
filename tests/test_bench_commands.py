"""The bench script command docs/benchmarks.md shows, run exactly as written (the make lines, whose quick trial runs
every bench script and the plot: test_make_targets.py), bench/profile_grouped.py's charging of samples to
parts, on made-up stacks, and the task CPU bench/common.py reads."""
from __future__ import annotations

import sys

import pytest

from readme_make import ROOT, readme_bench_commands, run_documented

sys.path.insert(0, str(ROOT / "bench"))

import common  # noqa: E402  (bench/common.py)
import profile_grouped  # noqa: E402  (bench/profile_grouped.py)

PROFILE_TRIAL = ".venv/bin/python bench/profile_grouped.py --rows 200000 --repeat 1"


def test_every_readme_bench_command_is_run_here():
    assert readme_bench_commands() == {PROFILE_TRIAL}


@pytest.mark.spark
@pytest.mark.slow
def test_the_profile_splits_the_samples_into_parts():
    result = run_documented(PROFILE_TRIAL, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    shares = {part: float(line.rsplit(None, 1)[1].rstrip("%")) for line in result.stdout.splitlines()
              for part, _ in profile_grouped.PARTS + [(profile_grouped.OTHER, ())] if line.strip().startswith(part)}
    assert "sparkagg operator" in shares and abs(sum(shares.values()) - 100) < 0.5, result.stdout


def test_a_sample_is_charged_to_the_first_part_from_the_leaf():
    part = profile_grouped.part_of
    # a JDK leaf under sparkagg's code is sparkagg's; an UnsafeRow read passes the charge on too
    assert part(["java.util.Arrays.fill", "sparkagg.common.NullState.resize", "sparkagg.exec.X.next"]) == \
        "sparkagg operator"
    assert part(["org.apache.spark.sql.catalyst.expressions.UnsafeRow.getLong", "sparkagg.exec.Batches.gather"]) == \
        "sparkagg operator"
    # the scan's decoding called from sparkagg's loop is the scan's; compression under the writer the shuffle's
    scan = "scan (Parquet, column vectors, cache)"
    assert part(["org.apache.parquet.column.values.plain.PlainValuesReader.readDouble",
                 "sparkagg.exec.GroupedAggregation.next"]) == scan
    assert part(["net.jpountz.lz4.LZ4JNI.compress", "org.apache.spark.shuffle.sort.UnsafeShuffleWriter.write"]) == \
        "shuffle (write, read, compression)"
    assert part(["org.apache.spark.executor.Executor$TaskRunner.run"]) == profile_grouped.OTHER
    assert part([]) == profile_grouped.OTHER


def test_a_collapsed_stack_charges_native_frames_to_their_java_caller():
    # LZ4's native code under the shuffle writer, as async-profiler writes the stack: thread first, leaf last
    thread, frames, count = profile_grouped.parse(
        "[Executor task launch worker for task 1.0 in stage 2.0 (TID 3) tid=77];java/lang/Thread.run;"
        "org/apache/spark/shuffle/sort/BypassMergeSortShuffleWriter.write_[j];"
        "net/jpountz/lz4/LZ4JNI.LZ4_compress_limitedOutput;/tmp/liblz4-java-123.so;LZ4_compress_fast_extState 7")
    assert count == 7 and profile_grouped.kind_of(thread) == "executor"
    assert frames == ["net.jpountz.lz4.LZ4JNI.LZ4_compress_limitedOutput",
                      "org.apache.spark.shuffle.sort.BypassMergeSortShuffleWriter.write", "java.lang.Thread.run"]
    assert profile_grouped.part_of(frames) == "shuffle (write, read, compression)"
    assert [profile_grouped.kind_of(t) for t in ("GC Thread#0 tid=9]", "C2 CompilerThread0 tid=12]", "Thread-4]")] \
        == ["garbage collector", "JIT compiler", "other"]


@pytest.mark.spark
@pytest.mark.slow
def test_task_cpu_is_what_the_tasks_of_each_query_used(spark):
    cpu = {}
    common.timed_together(spark, {"5M rows": "SELECT sum(id * 3 % 7) FROM range(5000000)",
                                  "one row": "SELECT 1 AS one"}, repeat=2, cpu=cpu)
    # 5M rows take some milliseconds of a task thread's CPU at the least; one row next to nothing
    assert cpu["5M rows"] > 0.002 and cpu["one row"] < cpu["5M rows"], cpu
