"""Many clients at once (tests/apps/concurrent_clients.py): 16 threads, each running its own mix of grouped,
windowed and state-form queries whose every result is checked against Spark's built-ins, on a classic
session, on a Spark Connect server (a session per client), and on a local-cluster with an executor killed
mid-run. Nothing wrong, no query failed, none hanging. `make test` runs each for SECONDS; docs/testing.md's figures
come from the same app run for three minutes."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import sparkagg

pytestmark = [pytest.mark.spark, pytest.mark.slow] # runs Spark in subprocesses

APP = Path(__file__).parent / "apps" / "concurrent_clients.py"
THREADS = 16
SECONDS = 6


def _run(*args: str, env=None) -> dict:
    import pyspark
    env = env or {**os.environ, "SPARK_HOME": str(Path(pyspark.__file__).parent), "PYSPARK_PYTHON": sys.executable}
    run = subprocess.run([sys.executable, str(APP), "--threads", str(THREADS), "--seconds", str(SECONDS), *args],
                         capture_output=True, text=True, timeout=SECONDS + 600, env=env)
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads([line for line in run.stdout.splitlines() if line.startswith("{")][-1])


def _assert_all_right(result: dict) -> None:
    assert not result["wrong"], result["wrong"][:3]
    assert not result["errors"], result["errors"][:3]
    assert not result["hanging"], result["hanging"]
    # every kind ran, and the threads did run at once: more queries than one client finishes alone
    assert set(result["by_kind"]) == {"grouped", "windowed", "state"}, result["by_kind"]
    assert result["queries"] >= THREADS, result


def test_a_classic_session_shared_by_16_threads():
    _assert_all_right(_run("--master", "local[2]", "--jar", sparkagg.jar_path()))


def test_16_spark_connect_clients(connect_server):
    _assert_all_right(_run("--remote", connect_server.url, env=connect_server.env))


def test_16_threads_on_a_cluster_losing_an_executor():
    result = _run("--master", "local-cluster[2,1,1024]", "--jar", sparkagg.jar_path(), "--kill-executor-after", "3")
    assert result["killed"], "no executor was killed"
    _assert_all_right(result)
