"""Spark Connect: a server started with the sparkagg JAR and spark.sql.extensions, and a remote client in
its own process (tests/apps/connect_client.py) running SQL and sparkagg.functions (no py4j)."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

import sparkagg


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def remote(tmp_path_factory) -> dict:
    """Starts the server, runs the client against it, returns the client's results by check."""
    import pyspark
    home = Path(pyspark.__file__).parent
    port = _free_port()
    log = open(tmp_path_factory.mktemp("connect") / "server.log", "w")
    env = {**os.environ, "SPARK_HOME": str(home), "PYSPARK_PYTHON": sys.executable,
           "SPARK_LOG_DIR": str(Path(log.name).parent), "SPARK_PID_DIR": str(Path(log.name).parent)}
    server = subprocess.Popen(
        ["bash", str(home / "sbin" / "start-connect-server.sh"), "--wait", "--master", "local[2]",
         "--jars", sparkagg.jar_path(), "--conf", f"spark.sql.extensions={sparkagg.EXTENSIONS}",
         "--conf", f"spark.connect.grpc.binding.port={port}", "--conf", "spark.ui.enabled=false"],
        stdout=log, stderr=subprocess.STDOUT, env=env)
    deadline = time.time() + 180
    while time.time() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                break
        if server.poll() is not None:
            pytest.fail(f"the Spark Connect server exited: {Path(log.name).read_text()[-3000:]}")
        time.sleep(1)
    else:
        server.terminate()
        pytest.fail("the Spark Connect server did not open its port in 180 s")
    client = subprocess.run([sys.executable, str(Path(__file__).parent / "apps" / "connect_client.py"),
                             f"sc://127.0.0.1:{port}"], capture_output=True, text=True, timeout=300, env=env)
    server.terminate()
    server.wait(timeout=60)
    log.close()
    assert client.returncode == 0, client.stderr[-3000:]
    results = {}
    for line in client.stdout.splitlines():
        if line.startswith("{"):
            results.update(json.loads(line))
    return results


def test_sql_over_spark_connect(remote):
    assert remote["sql"] == [[1, 3.0, 2], [2, None, 1]]


def test_column_functions_over_spark_connect(remote):
    assert remote["functions"] == [["a", 2.0, 1.0, 6, 2], ["b", None, None, 5, 0]]


def test_sliding_window_and_state_forms_over_spark_connect(remote):
    assert remote["window"] == [[10, 1], [20, 1], [15, 2]]
    assert remote["state"] == [[1.5]]
