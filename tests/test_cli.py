"""`sparkagg sql`: progress of long jobs on stderr (forced with --progress, by default on a terminal,
silenced with --no-progress), and the exit codes (0 ok, 1 a failing statement, 2 bad usage).
The Spark Connect side (--remote, progress from the server's reports) is in test_connect.py."""
from __future__ import annotations

import fcntl
import io
import os
import pty
import select
import struct
import subprocess
import sys
import termios
import time
from types import SimpleNamespace

import pytest

from sparkagg.progress import JobProgress, describe

CLI = [sys.executable, "-m", "sparkagg.cli"]
ENV = {**os.environ, "PYSPARK_PYTHON": sys.executable}

# A job of a few seconds: 8 one-row tasks sleeping 0.7 s each (about 3 s on local[2]). The filter keeps
# java_method from being pruned; it returns the string "null" for a void method.
SLOW = ("SELECT df_sum(id) AS s, df_count(*) AS n FROM (SELECT id, java_method('java.lang.Thread', 'sleep', 700L) "
        "AS r FROM range(0, 8, 1, 8)) WHERE r IS NOT NULL")


def _cli(*args, timeout=300):
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=timeout, env=ENV)


def _cli_on_a_terminal(*args, timeout=300) -> tuple[int, str, str]:
    """Runs the CLI with stderr on a pseudo-terminal (120 columns), stdout on a pipe."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    proc = subprocess.Popen([*CLI, *args], stdout=subprocess.PIPE, stderr=slave, env=ENV)
    os.close(slave)
    err = bytearray()
    deadline = time.time() + timeout
    while time.time() < deadline:
        ready, _, _ = select.select([master], [], [], 0.5)
        if not ready:
            if proc.poll() is not None:  # the CLI is done (Spark's JVM may hold the terminal a while longer)
                break
            continue
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: every holder of the terminal has closed it
            break
        if not chunk:
            break
        err += chunk
    os.close(master)
    out = proc.stdout.read().decode()
    return proc.wait(timeout=60), out, err.decode(errors="replace")


def _progress_lines(stderr: str) -> list[str]:
    return [line for line in stderr.replace("\r", "\n").splitlines()
            if line.startswith("sparkagg: ") and " tasks" in line]


@pytest.mark.spark
@pytest.mark.slow
def test_progress_lines_with_the_flag_then_a_failing_statement_exits_1(tmp_path):
    script = tmp_path / "q.sql"
    script.write_text(f"{SLOW};\n"
                      "SELECT df_sum(x) FROM VALUES (9223372036854775807L), (1L) AS t(x);\n"
                      "SELECT 'never run' AS t;\n")
    run = _cli("sql", "--master", "local[2]", "--progress", "--format", "csv", "-f", str(script))
    assert run.returncode == 1, run.stderr[-3000:]
    # The first statement's result, printed before the failure; nothing after it ran.
    assert run.stdout.splitlines() == ["s,n", "28,8"]
    lines = _progress_lines(run.stderr)
    assert lines, run.stderr[-3000:]
    assert all("stage " in line for line in lines) and any("/8 tasks" in line for line in lines), lines
    assert "\r" not in run.stderr  # not a terminal: whole lines, for logs
    assert any(line.startswith("sparkagg: done in ") for line in run.stderr.splitlines())
    # Spark's message, as the last line, with the error class.
    assert run.stderr.rstrip().splitlines()[-1].startswith("sparkagg sql: [ARITHMETIC_OVERFLOW] df_sum")


@pytest.mark.spark
@pytest.mark.slow
def test_progress_on_a_terminal_by_default_and_erased():
    code, out, err = _cli_on_a_terminal("sql", "--master", "local[2]", "--format", "csv", SLOW)
    assert code == 0, err[-3000:]
    assert out.splitlines() == ["s,n", "28,8"]
    assert "\rsparkagg: " in err and _progress_lines(err), err[-3000:]
    assert "done in" not in err  # on a terminal the line is erased, not closed
    last = err.rsplit("\rsparkagg: ", 1)[1]
    assert "\r" in last and last.split("\r", 1)[1].strip() == "", "the progress line is erased at the end"


@pytest.mark.spark
@pytest.mark.slow
def test_no_progress_silences_it_on_a_terminal():
    code, out, err = _cli_on_a_terminal("sql", "--master", "local[2]", "--format", "csv", "--no-progress", SLOW)
    assert code == 0, err[-3000:]
    assert out.splitlines() == ["s,n", "28,8"]
    assert not _progress_lines(err), err[-3000:]


def test_usage_errors_exit_2_before_spark_starts(tmp_path):
    for args in (["sql"], ["sql", "-f", str(tmp_path / "missing.sql")],
                 ["sql", "--progress", "--no-progress", "SELECT 1"],
                 ["sql", "-- only a comment"], ["sql", "--format", "xml", "SELECT 1"], ["nonsense"]):
        run = _cli(*args, timeout=60)
        assert run.returncode == 2, (args, run.stderr)
        assert "sparkagg" in run.stderr and "Traceback" not in run.stderr, (args, run.stderr)


def test_describe_orders_stages_and_shows_running_tasks():
    assert describe([(3, 1, 4, 0), (2, 5, 8, 2)], 3.14) == \
        "sparkagg: 3.1 s, stage 2: 5/8 tasks (2 running); stage 3: 1/4 tasks"


def test_job_progress_polls_the_status_tracker(spark):
    stream = io.StringIO()
    with JobProgress(spark, stream, tty=False, delay=0.2, interval=0.2):
        assert spark.sql(SLOW.replace("700L", "300L")).collect()[0] == (28, 8)
    lines = stream.getvalue().splitlines()
    assert lines and all(line.startswith("sparkagg: ") for line in lines), lines
    assert any("tasks" in line for line in lines) and lines[-1].startswith("sparkagg: done in "), lines


def test_job_progress_on_a_session_without_a_spark_context():
    class ConnectLike:  # Spark Connect: no SparkContext; progress comes from the server's reports
        handlers = []

        @property
        def sparkContext(self):
            raise NotImplementedError("[NOT_IMPLEMENTED] sparkContext() is not implemented.")

        def registerProgressHandler(self, h):
            self.handlers.append(h)

        def removeProgressHandler(self, h):
            self.handlers.remove(h)

    session, stream = ConnectLike(), io.StringIO()
    progress = JobProgress(session, stream, tty=False, delay=0.0)
    assert progress.tracker is None
    with progress:
        assert len(session.handlers) == 1
        stage = SimpleNamespace(stage_id=4, num_tasks=8, num_completed_tasks=3, num_bytes_read=0, done=False)
        session.handlers[0]([stage], 2, "op", False)
        session.handlers[0]([], 0, "op", True)
    assert session.handlers == []
    assert stream.getvalue().splitlines()[0].endswith("stage 4: 3/8 tasks (2 running)")
    # A session with neither (an older Connect client): nothing shown, nothing fails.
    with JobProgress(SimpleNamespace(), io.StringIO(), delay=0.0) as quiet:
        assert quiet.tracker is None


def test_functions_lists_the_catalogue(spark):
    from sparkagg.cli import list_functions

    out = io.StringIO()
    n = list_functions(spark, "df_", out)
    text = out.getvalue()
    assert n >= 37 and text.count("retract: ") == n
    lines = text.splitlines()
    avg = lines.index(next(line for line in lines if line.startswith("df_avg(")))
    assert lines[avg + 1].strip() == "aliases: df_mean; retract: yes; grouped path: native; WITHIN GROUP: no"
    assert any(line.startswith("df_max(") for line in lines) and "retract: sliding variant" in text
