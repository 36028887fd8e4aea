"""A Spark Connect server of the installed pyspark, for the tests that need one (test_connect.py,
test_concurrency.py, test_python_udaf.py)."""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

# Spark 3.5's Connect server, which PySpark 3.5 does not ship (its client it does): 3.5.7, the newest 3.5 release
# of it the Maven repository here serves (3.5.8 and 3.5.9 it does not); PySpark 3.5.9's client runs against it.
CONNECT_35 = "3.5.7"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ConnectServer:
    """A Spark Connect server of the installed pyspark on a free port, with the given settings; its whole
    process group is stopped on exit (the script's JVM outlives a terminated bash)."""

    def __init__(self, folder: Path, *settings: str, master: str = "local[2]"):
        import pyspark
        home = Path(pyspark.__file__).parent
        self.port = free_port()
        self.url = f"sc://127.0.0.1:{self.port}"
        self.log = open(folder / "server.log", "w")
        self.env = {**os.environ, "SPARK_HOME": str(home), "PYSPARK_PYTHON": sys.executable,
                    "SPARK_LOG_DIR": str(folder), "SPARK_PID_DIR": str(folder)}
        script = home / "sbin" / "start-connect-server.sh"
        if script.exists():
            start = ["bash", str(script), "--wait"]
        else:  # PySpark 3.5's package has neither the script nor the server: the server's JAR from Maven
            start = [str(home / "bin" / "spark-submit"),
                     "--class", "org.apache.spark.sql.connect.service.SparkConnectServer",
                     "--packages", f"org.apache.spark:spark-connect_2.12:{CONNECT_35}"]
        self.process = subprocess.Popen(
            [*start, "--master", master, *settings,
             "--conf", f"spark.connect.grpc.binding.port={self.port}", "--conf", "spark.ui.enabled=false"],
            stdout=self.log, stderr=subprocess.STDOUT, env=self.env, start_new_session=True)

    def __enter__(self):
        deadline = time.time() + 180
        while time.time() < deadline:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", self.port)) == 0:
                    return self
            if self.process.poll() is not None:
                pytest.fail(f"the Spark Connect server exited: {Path(self.log.name).read_text()[-3000:]}")
            time.sleep(1)
        self.__exit__()
        pytest.fail("the Spark Connect server did not open its port in 180 s")

    def __exit__(self, *_):
        try:
            os.killpg(self.process.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        self.process.wait(timeout=60)
        self.log.close()
