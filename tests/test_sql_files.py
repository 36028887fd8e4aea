"""The sql/ conformance files: in this process, and through spark-submit with --jars and the extension."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import sparkagg
import sqlcases

ROOT = Path(__file__).resolve().parent.parent
FILES = sorted((ROOT / "sql").glob("*.sql"))
CASES = [(f, c) for f in FILES for c in sqlcases.parse(f)]


def test_files_have_cases():
    assert len(CASES) >= 9


@pytest.mark.parametrize("path,case", CASES, ids=[f"{p.stem}:{c.name}" for p, c in CASES])
def test_case(spark, path, case):
    assert [sqlcases.render_row(r) for r in spark.sql(case.query).collect()] == case.expected


@pytest.mark.spark
@pytest.mark.slow
def test_spark_submit_with_jars_and_extension(tmp_path):
    import pyspark
    submit = Path(pyspark.__file__).parent / "bin" / "spark-submit"
    path = ROOT / "sql" / "basic.sql"
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    proc = subprocess.run(
        [str(submit), "--master", "local[2]", "--jars", sparkagg.jar_path(),
         "--conf", "spark.sql.extensions=sparkagg.SparkAggExtensions", "--conf", "spark.ui.enabled=false",
         str(ROOT / "tests" / "apps" / "run_sql_file.py"), str(path)],
        capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = {}
    for line in proc.stdout.splitlines():
        if line.startswith("ROW "):
            name, row = line[4:].split(" :: ", 1)
            got.setdefault(name, []).append(row)
    for case in sqlcases.parse(path):
        assert got.get(case.name, []) == case.expected, case.name
