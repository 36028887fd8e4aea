"""One local Spark session with sparkagg for the whole pytest run (and the doctests of sparkagg), and the
``spark`` marker: every test that needs Spark or the built JAR has it, so ``pytest -m "not spark"`` runs
the pure-Python model (tests/reference/) and the other Spark-free tests alone. Tests using the ``spark``
or ``remote`` fixture are marked here; tests that start Spark in a subprocess are marked where they
are written."""
from __future__ import annotations

from pathlib import Path

import pytest

import sparkagg

ROOT = Path(__file__).resolve().parent.parent
TEST_JAR = ROOT / "target" / "jars" / sparkagg.jar_name(tests=True)  # for the running pyspark
SPARK_FIXTURES = {"spark", "remote"}  # remote: a Spark Connect server (test_connect.py)


def pytest_configure(config):
    config.addinivalue_line("markers", "spark: needs a Spark session, a Spark subprocess or the built JAR")


def pytest_collection_modifyitems(items):
    for item in items:
        if SPARK_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.spark)


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
