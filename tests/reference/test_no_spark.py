"""The reference model is pure Python over pyarrow: importing it loads no PySpark (nor py4j) module, so it
runs where Spark is not installed and ``pytest -m "not spark"`` needs no JVM."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import sparkagg

CODE = ("import sys, sparkagg.reference; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pyspark', 'py4j')))")


def test_importing_the_reference_model_imports_no_pyspark():
    source = str(Path(sparkagg.__file__).resolve().parent.parent)  # this checkout's package, not an installed one
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([source, os.environ.get("PYTHONPATH", "")])}
    run = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True, timeout=120, env=env)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "[]"
