"""Spark Connect: a server started with the sparkagg JAR and spark.sql.extensions, and a remote client in
its own process (tests/apps/connect_client.py) running SQL and sparkagg.functions (no py4j); and a server
started without either, to which a client adds the JAR and registers functions by class name. A Python udaf
over Spark Connect: test_python_udaf.py."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import sparkagg
from connect_server import ConnectServer

pytestmark = [pytest.mark.spark, pytest.mark.slow]  # Spark Connect servers and clients, each a process

# 8 one-row tasks sleeping 0.7 s each.
SLOW_QUERY = ("SELECT df_sum(id) AS s, df_count(*) AS n FROM (SELECT id, java_method('java.lang.Thread', "
              "'sleep', 700L) AS r FROM range(0, 8, 1, 8)) WHERE r IS NOT NULL")


@pytest.fixture(scope="module")
def remote(connect_server) -> dict:
    """Runs the client against the run's server, returns the client's results by check."""
    server = connect_server
    port, env = server.port, server.env
    client = subprocess.run([sys.executable, str(Path(__file__).parent / "apps" / "connect_client.py"),
                             f"sc://127.0.0.1:{port}"], capture_output=True, text=True, timeout=300, env=env)
    # The CLI against the same server: a job of a few seconds, its progress from the server's reports.
    cli = subprocess.run([sys.executable, "-m", "sparkagg.cli", "sql", "--remote", f"sc://127.0.0.1:{port}",
                          "--progress", "--format", "csv", SLOW_QUERY],
                         capture_output=True, text=True, timeout=300, env=env)
    listing = subprocess.run([sys.executable, "-m", "sparkagg.cli", "functions", "--remote", server.url],
                             capture_output=True, text=True, timeout=300, env=env)
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


def test_a_forged_state_is_refused_with_sparkaggs_error_class_over_spark_connect(remote):
    [[kind, error_class, sql_state, message]] = remote["forged"]
    assert (kind, error_class, sql_state) == ("IllegalArgumentException", "SPARKAGG_INVALID_STATE", "22023")
    assert message.startswith("[SPARKAGG_INVALID_STATE] df_avg_merge: invalid state, count: -5 is negative")


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


# A client of a server that has never heard of sparkagg: it ships the JAR and registers by class name.
BY_CLASS_NAME_CLIENT = r"""
import json, sys
from pyspark.sql import SparkSession
spark = SparkSession.builder.remote(sys.argv[1]).getOrCreate()
spark.addArtifacts(sys.argv[2])
spark.udf.registerJavaUDAF("df_avg", "sparkagg.udaf.Avg")
spark.udf.registerJavaUDAF("df_string_agg", "sparkagg.udaf.StringAgg")
rows = spark.sql("SELECT k, df_avg(x), df_string_agg(s, '-') FROM VALUES (1, 2, 'a'), (1, 4, 'b'), (2, NULL, NULL) "
                 "AS t(k, x, s) GROUP BY k ORDER BY k").collect()
print(json.dumps([list(r) for r in rows]))
"""


def test_registered_by_class_name_on_a_server_without_the_extension(tmp_path):
    with ConnectServer(tmp_path) as server:
        client = subprocess.run([sys.executable, "-c", BY_CLASS_NAME_CLIENT, server.url, sparkagg.jar_path()],
                                capture_output=True, text=True, timeout=300, env=server.env)
    assert client.returncode == 0, client.stderr[-3000:]
    # Hand-worked: group 1 averages 2 and 4 and joins 'a' and 'b' (in either order); group 2 has only NULLs.
    (k1, avg1, joined), second = json.loads(client.stdout.splitlines()[-1])
    assert (k1, avg1, sorted(joined.split("-")), second) == (1, 3.0, ["a", "b"], [2, None, None])
