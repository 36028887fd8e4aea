"""One local Spark session with sparkagg for the whole pytest run (and the doctests of sparkagg)."""
from __future__ import annotations

from pathlib import Path

import pytest

import sparkagg

ROOT = Path(__file__).resolve().parent.parent
TEST_JAR = ROOT / "target" / "sparkagg-tests.jar"


@pytest.fixture(scope="session")
def spark():
    session = sparkagg.session(
        master="local[2]", app_name="sparkagg-pytest", extra_jars=[str(TEST_JAR)],
        **{"spark.sql.shuffle.partitions": "4", "spark.ui.enabled": "false", "spark.log.level": "ERROR",
           "spark.ui.showConsoleProgress": "false"})
    yield session
    session.stop()


@pytest.fixture(autouse=True)
def _doctest_spark(request, doctest_namespace):
    if "doctest_namespace" in request.fixturenames or request.node.__class__.__name__ == "DoctestItem":
        doctest_namespace["spark"] = request.getfixturevalue("spark")
