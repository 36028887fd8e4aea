"""The wheel carries the JAR: built from python/ with target/sparkagg.jar inside, installed into a fresh
virtual environment beside nothing but its dependencies, `sparkagg demo` runs outside the source tree."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import sparkagg

pytestmark = pytest.mark.spark  # runs Spark in a subprocess

ROOT = Path(__file__).resolve().parent.parent


def test_wheel_carries_the_jar_and_runs_the_demo_in_a_fresh_venv(tmp_path):
    source = tmp_path / "src"
    shutil.copytree(ROOT / "python", source, ignore=shutil.ignore_patterns("*.egg-info", "__pycache__", "build"))
    (source / "sparkagg" / "jars").mkdir(exist_ok=True)
    shutil.copy(sparkagg.jar_path(), source / "sparkagg" / "jars" / "sparkagg.jar")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(tmp_path / "dist"), str(source)],
                   check=True, timeout=300)
    wheel = next((tmp_path / "dist").glob("sparkagg-*.whl"))
    assert "sparkagg/jars/sparkagg.jar" in zipfile.ZipFile(wheel).namelist()

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", str(wheel)], check=True, timeout=900)
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
