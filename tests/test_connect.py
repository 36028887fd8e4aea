"""Spark Connect: a server started with the sparkagg JAR and spark.sql.extensions, and a remote client in
its own process (tests/apps/connect_client.py) running SQL and sparkagg.functions (no py4j)."""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

import sparkagg

# 8 one-row tasks sleeping 0.7 s each.
SLOW_QUERY = ("SELECT df_sum(id) AS s, df_count(*) AS n FROM (SELECT id, java_method('java.lang.Thread', "
              "'sleep', 700L) AS r FROM range(0, 8, 1, 8)) WHERE r IS NOT NULL")


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
         "--conf", f"spark.connect.grpc.binding.port={port}", "--conf", "spark.ui.enabled=false",
         "--conf", "spark.connect.progress.reportInterval=500ms"],
        stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)

    def stop_server() -> None:  # the script's JVM outlives a terminated bash: stop its whole group
        try:
            os.killpg(server.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        server.wait(timeout=60)

    deadline = time.time() + 180
    while time.time() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                break
        if server.poll() is not None:
            pytest.fail(f"the Spark Connect server exited: {Path(log.name).read_text()[-3000:]}")
        time.sleep(1)
    else:
        stop_server()
        pytest.fail("the Spark Connect server did not open its port in 180 s")
    client = subprocess.run([sys.executable, str(Path(__file__).parent / "apps" / "connect_client.py"),
                             f"sc://127.0.0.1:{port}"], capture_output=True, text=True, timeout=300, env=env)
    # The CLI against the same server: a job of a few seconds, its progress from the server's reports.
    cli = subprocess.run([sys.executable, "-m", "sparkagg.cli", "sql", "--remote", f"sc://127.0.0.1:{port}",
                          "--progress", "--format", "csv", SLOW_QUERY],
                         capture_output=True, text=True, timeout=300, env=env)
    listing = subprocess.run([sys.executable, "-m", "sparkagg.cli", "functions", "--remote", f"sc://127.0.0.1:{port}"],
                             capture_output=True, text=True, timeout=300, env=env)
    stop_server()
    log.close()
    assert client.returncode == 0, client.stderr[-3000:]
    results = {}
    for line in client.stdout.splitlines():
        if line.startswith("{"):
            results.update(json.loads(line))
    results["cli"], results["listing"] = cli, listing
    return results


def test_sql_over_spark_connect(remote):
    assert remote["sql"] == [[1, 3.0, 2], [2, None, 1]]


def test_column_functions_over_spark_connect(remote):
    assert remote["functions"] == [["a", 2.0, 1.0, 6, 2], ["b", None, None, 5, 0]]


def test_sliding_window_and_state_forms_over_spark_connect(remote):
    assert remote["window"] == [[10, 1], [20, 1], [15, 2]]
    assert remote["state"] == [[1.5]]


def test_cli_over_spark_connect_with_progress(remote):
    cli = remote["cli"]
    assert cli.returncode == 0, cli.stderr[-3000:]
    assert cli.stdout.splitlines() == ["s,n", "28,8"]
    progress = [line for line in cli.stderr.splitlines() if line.startswith("sparkagg: ") and "/8 tasks" in line]
    assert progress, cli.stderr[-3000:]


def test_cli_lists_the_functions_over_spark_connect(remote):
    listing = remote["listing"]
    assert listing.returncode == 0, listing.stderr[-3000:]
    lines = listing.stdout.splitlines()
    assert any(line.startswith("df_avg(") for line in lines) and any(line.startswith("df_mean(") for line in lines)
    assert not any(line.startswith("df_avg_state") for line in lines)  # the state forms are summed up in one line
