"""A real multi-JVM cluster (local-cluster: a master, workers and executors in separate JVMs), with one
executor killed in the middle of a job: grouped and windowed sparkagg queries still give Spark's results."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import sparkagg

pytestmark = pytest.mark.spark  # runs Spark in a subprocess


def test_grouped_and_windowed_queries_survive_a_killed_executor():
    import pyspark
    env = {**os.environ, "SPARK_HOME": str(Path(pyspark.__file__).parent), "PYSPARK_PYTHON": sys.executable}
    run = subprocess.run([sys.executable, str(Path(__file__).parent / "apps" / "cluster_job.py"), sparkagg.jar_path()],
                         capture_output=True, text=True, timeout=600, env=env)
    assert run.returncode == 0, run.stderr[-3000:]
    result = json.loads([line for line in run.stdout.splitlines() if line.startswith("{")][-1])
    assert result["killed"], "no executor was killed: the job finished too fast to test recovery"
    assert result["grouped_rows"] == 1000 and result["grouped_ok"]
    assert result["windowed_rows"] == 200_000 and result["windowed_ok"]
