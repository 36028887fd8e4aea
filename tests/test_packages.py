"""`spark-submit --packages io.github.sparkagg:sparkagg-spark4.3_2.13:0.1.0` (the running pyspark's minor)
resolves sparkagg from the local Maven repository (`make jar` runs `sbt publishM2`) and runs the sql/
conformance file with the extension."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import maven_local
import sparkagg
import sqlcases

pytestmark = [pytest.mark.spark, pytest.mark.slow] # runs Spark in a subprocess

ROOT = Path(__file__).resolve().parent.parent
ARTIFACT = sparkagg.jar_name().removesuffix(".jar")  # sparkagg-spark4.3_2.13
COORDINATES = f"io.github.sparkagg:{ARTIFACT}:0.1.0"


def test_spark_submit_with_packages(tmp_path):
    import pyspark
    m2 = maven_local.published(ARTIFACT)
    assert (m2 / f"{ARTIFACT}-0.1.0.jar").is_file(), "run `make jar` (sbt publishM2) first"
    submit = Path(pyspark.__file__).parent / "bin" / "spark-submit"
    path = ROOT / "sql" / "basic.sql"
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    proc = subprocess.run(
        [str(submit), "--master", "local[1]", "--packages", COORDINATES, "--conf", f"spark.jars.ivy={tmp_path}",
         "--conf", "spark.sql.extensions=sparkagg.SparkAggExtensions", "--conf", "spark.ui.enabled=false",
         str(ROOT / "tests" / "apps" / "run_sql_file.py"), str(path)],
        capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert COORDINATES.replace(":", "#", 1).split(":")[0] in proc.stderr or "sparkagg" in proc.stderr
    got = [line for line in proc.stdout.splitlines() if line.startswith("ROW ")]
    assert len(got) == sum(len(c.expected) for c in sqlcases.parse(path))
