"""One local Spark session with sparkagg for the whole pytest run (and the doctests of sparkagg), and the
``spark`` marker: every test that needs Spark or the built JAR has it, so ``pytest -m "not spark"`` runs
the pure-Python model (tests/reference/) and the other Spark-free tests alone. Tests using the ``spark``
or ``remote`` fixture are marked here; tests that start Spark in a subprocess are marked where they
are written.

The ``slow`` marker: a test that starts Spark applications of its own (a subprocess, a local-cluster, a Connect
server, spark-submit, a make target) or runs for seconds (every function through Spark, large inputs, long
property runs). ``make check`` leaves them to ``make test``."""
from __future__ import annotations

from pathlib import Path

import pytest

import sparkagg
from connect_server import ConnectServer

ROOT = Path(__file__).resolve().parent.parent
TEST_JAR = ROOT / "target" / "jars" / sparkagg.jar_name(tests=True)  # for the running pyspark
SPARK_FIXTURES = {"spark", "remote"}  # remote: a Spark Connect server (test_connect.py)


def pytest_configure(config):
    config.addinivalue_line("markers", "spark: needs a Spark session, a Spark subprocess or the built JAR")
    config.addinivalue_line("markers", "slow: starts Spark applications of its own, or runs for seconds")


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


@pytest.fixture(scope="session")
def connect_server(tmp_path_factory):
    """One Spark Connect server with the JAR and the extension for the run (test_connect.py, test_concurrency.py,
    test_python_udaf.py): a server takes a JVM's start, and its clients each get a session of their own anyway."""
    with ConnectServer(tmp_path_factory.mktemp("connect"), "--jars", sparkagg.jar_path(),
                       "--conf", f"spark.sql.extensions={sparkagg.EXTENSIONS}",
                       "--conf", "spark.connect.progress.reportInterval=500ms") as server:
        yield server


@pytest.fixture(autouse=True)
def _doctest_spark(request):
    # Only a doctest gets the session: asking for it from every test started Spark for the Spark-free ones too.
    if request.node.__class__.__name__ == "DoctestItem":
        request.getfixturevalue("doctest_namespace")["spark"] = request.getfixturevalue("spark")
