"""The wheel carries every Spark minor's JAR: built by `make wheel` as the README writes it, installed into a
fresh virtual environment beside nothing but its dependencies, `sparkagg demo` runs outside the source tree.
`make test` has built the wheel before this suite, so the README's line finds it up to date (the target is a
file with every JAR and package source as prerequisites) and the run builds it once."""
from __future__ import annotations

import os
import subprocess
import sys
import zipfile

import pytest

import sparkagg
from readme_make import ROOT, run_documented

pytestmark = [pytest.mark.spark, pytest.mark.slow] # runs Spark in a subprocess

WHEEL = ROOT / "dist" / "sparkagg-0.1.0-py3-none-any.whl"


def test_wheel_carries_the_jar_and_runs_the_demo_in_a_fresh_venv(tmp_path):
    made = run_documented("make wheel", timeout=1200)
    assert made.returncode == 0, made.stdout[-3000:] + made.stderr[-3000:]
    carried = {n for n in zipfile.ZipFile(WHEEL).namelist() if n.startswith("sparkagg/jars/")}
    assert carried == {f"sparkagg/jars/{sparkagg.jar_name(m)}" for m in sparkagg.SPARK_LINES}, carried
    assert not (ROOT / "python" / "sparkagg" / "jars").exists(), "make wheel leaves the JAR out of the source tree"

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", str(WHEEL)], check=True, timeout=900)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "SPARKAGG_JAR")}
    located = subprocess.run([str(venv / "bin" / "python"), "-c", "import sparkagg; print(sparkagg.jar_path())"],
                             capture_output=True, text=True, cwd=elsewhere, env=env, timeout=60)
    assert located.stdout.strip().startswith(str(venv)), located.stdout + located.stderr
    demo = subprocess.run([str(venv / "bin" / "sparkagg"), "demo", "--master", "local[2]"],
                          capture_output=True, text=True, cwd=elsewhere, env=env, timeout=600)
    assert demo.returncode == 0, demo.stdout[-2000:] + demo.stderr[-2000:]
    assert "every result matches the reference model" in demo.stdout
