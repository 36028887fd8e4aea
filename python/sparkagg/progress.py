"""Progress of running Spark jobs on stderr, for the ``sparkagg`` CLI.

On a classic session a thread polls the SparkContext's status tracker for the active stages (tasks
done / total, running) while a statement runs. A Spark Connect session has no SparkContext: there the
server's own progress reports are shown (``registerProgressHandler``), if the server sends any.

On a terminal one line is rewritten in place and erased when the statement ends; elsewhere (a log,
a pipe) a line is written when the figures change, at most every ``interval`` seconds, and a last
``done in`` line closes the statement. Nothing is shown for statements that end within ``delay``.

    with JobProgress(spark, tty=sys.stderr.isatty()):
        rows = spark.sql(query).collect()
"""
from __future__ import annotations

import os
import sys
import threading
import time

PREFIX = "sparkagg:"


def status_tracker(spark):
    """The SparkContext's status tracker of a classic session; None for Spark Connect (no SparkContext)."""
    try:
        return spark.sparkContext.statusTracker()
    except Exception:  # Spark Connect: PySparkNotImplementedError (or an attribute missing)
        return None


def describe(stages: list[tuple[int, int, int, int]], elapsed: float) -> str:
    """One progress line: ``sparkagg: 3.1 s, stage 2: 5/8 tasks (2 running)``, stages in order.
    A stage is (id, completed tasks, total tasks, running tasks)."""
    parts = [f"stage {sid}: {done}/{total} tasks" + (f" ({running} running)" if running else "")
             for sid, done, total, running in sorted(stages)]
    return f"{PREFIX} {elapsed:.1f} s, " + "; ".join(parts)


class JobProgress:
    """Shows the progress of the jobs started while it is entered. ``tty``: rewrite one line in place
    (a terminal) rather than write lines. Classic sessions are polled every ``interval`` seconds (a
    quarter of a second on a terminal); Spark Connect sessions report as often as their server does."""

    def __init__(self, spark, stream=None, tty: bool = False, delay: float = 1.0,
                 interval: float | None = None):
        self.spark = spark
        self.stream = stream if stream is not None else sys.stderr
        self.tty = tty
        self.delay = delay
        self.interval = interval if interval is not None else (0.25 if tty else 1.0)
        self.tracker = status_tracker(spark)
        self._handler = None
        self._thread: threading.Thread | None = None
        self._stopped = threading.Event()
        self._lock = threading.Lock()
        self._start = 0.0
        self._shown = 0          # width of the line on the terminal
        self._last = None        # the figures last written (line mode)
        self._last_time = 0.0
        self._wrote = False

    # -- the two sources -------------------------------------------------------------------------
    def _poll(self) -> None:
        if self._stopped.wait(self.delay):
            return
        while True:
            try:
                stages = []
                for sid in self.tracker.getActiveStageIds():
                    info = self.tracker.getStageInfo(sid)
                    if info is not None:
                        stages.append((sid, info.numCompletedTasks, info.numTasks, info.numActiveTasks))
            except Exception:  # the JVM went away (shutdown, interrupt): stop showing
                return
            self._show(stages)
            if self._stopped.wait(self.interval):
                return

    def _on_connect_progress(self, stages, inflight_tasks, operation_id, done) -> None:
        if done or time.monotonic() - self._start < self.delay:
            return
        active = [(s.stage_id, s.num_completed_tasks, s.num_tasks, 0) for s in (stages or []) if not s.done]
        if active:  # Connect reports tasks in flight for the whole query: put them on the last stage
            sid, completed, total, _ = active[-1]
            active[-1] = (sid, completed, total, inflight_tasks)
        self._show(active)

    # -- output ----------------------------------------------------------------------------------
    def _width(self) -> int:
        try:
            columns = os.get_terminal_size(self.stream.fileno()).columns
        except (OSError, AttributeError, ValueError):
            columns = 0
        return columns - 1 if columns > 20 else 79

    def _write(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):
            pass

    def _show(self, stages: list[tuple[int, int, int, int]]) -> None:
        with self._lock:
            if self._stopped.is_set():
                return
            now = time.monotonic()
            if self.tty:
                if not stages:  # between jobs, or the result is being printed: leave the line clear
                    self._clear()
                    return
                line = describe(stages, now - self._start)[: self._width()]
                self._write("\r" + line.ljust(self._shown))
                self._shown = len(line)
            elif stages:
                figures = sorted(stages)
                if figures != self._last or now - self._last_time >= 10 * self.interval:
                    self._write(describe(stages, now - self._start) + "\n")
                    self._last, self._last_time, self._wrote = figures, now, True

    def _clear(self) -> None:
        if self._shown:
            self._write("\r" + " " * self._shown + "\r")
            self._shown = 0

    # -- life cycle ------------------------------------------------------------------------------
    def start(self) -> "JobProgress":
        self._start = time.monotonic()
        if self.tracker is not None:
            self._thread = threading.Thread(target=self._poll, name="sparkagg-progress", daemon=True)
            self._thread.start()
        elif hasattr(self.spark, "registerProgressHandler"):
            self._handler = self._on_connect_progress
            try:
                self.spark.registerProgressHandler(self._handler)
            except Exception:  # an older client: no progress
                self._handler = None
        return self

    def stop(self, failed: bool = False) -> None:
        self._stopped.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        if self._handler is not None:
            try:
                self.spark.removeProgressHandler(self._handler)
            except Exception:
                pass
        with self._lock:
            if self.tty:
                self._clear()
            elif self._wrote:
                outcome = "failed after" if failed else "done in"
                self._write(f"{PREFIX} {outcome} {time.monotonic() - self._start:.1f} s\n")

    def __enter__(self) -> "JobProgress":
        return self.start()

    def __exit__(self, exc_type, exc, tb) -> None:
        self.stop(failed=exc_type is not None)
