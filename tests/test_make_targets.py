"""The make targets README.md names, each run exactly as the README writes it (`make wheel`: test_wheel.py).
A make line added to the README without a test that runs it fails test_every_readme_make_line_is_run."""
from __future__ import annotations

import ast
import functools
import http.server
import json
import re
import shutil
import subprocess
import threading
from pathlib import Path

import pytest

import maven_local
import sparkagg
from connect_server import free_port
from readme_make import ROOT, readme_make_lines, run_documented

# README make lines no test runs, and why.
NOT_RUN = {
    "make test": "the CI's command, which runs this suite",
    "make lint": "its two commands are steps of make test, which runs this suite",
    "make check": "the subset of make test's suites at the short sweep, which make test runs in full",
    "make test-long": "make test's suites at the full sweeps and long volumes, an hour or more",
    "make bench": "the full benchmarks take many minutes; test_make_bench_quick_trial runs the same steps",
    "make fuzz": "five minutes of queries by default; test_make_fuzz runs the same target for a count",
}
BENCH_OUT = Path("/tmp/sparkagg-bench")
PNG = b"\x89PNG\r\n\x1a\n"  # a PNG file's first bytes
BENCH_SCRIPTS = ["bench_avg_sum", "bench_numeric", "bench_collections", "bench_window", "bench_grouped",
                 "bench_python_udaf"]


def _tail(result) -> str:
    return result.stdout[-3000:] + result.stderr[-3000:]


def _lines_run_by_tests() -> set[str]:
    run = set()
    for path in ROOT.joinpath("tests").glob("test_*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "run_documented"
                    and node.args and isinstance(node.args[0], ast.Constant)):
                run.add(node.args[0].value)
    return run


def test_every_readme_make_line_is_run():
    lines = readme_make_lines()
    assert {"make demo", "make test", "make jar", "make wheel", "make bench"} <= lines
    assert set(NOT_RUN) <= lines, "an exemption for a line the README no longer shows"
    assert lines - set(NOT_RUN) <= _lines_run_by_tests(), "a README make line that no test runs"


@pytest.mark.spark
@pytest.mark.slow
def test_make_jar():
    result = run_documented("make jar", timeout=1200)
    assert result.returncode == 0, _tail(result)
    jars = ROOT / "target" / "jars"
    assert (jars / sparkagg.jar_name()).is_file() and (jars / sparkagg.jar_name(tests=True)).is_file()
    artifact = sparkagg.jar_name().removesuffix(".jar")
    m2 = maven_local.published(artifact)
    assert (m2 / f"{artifact}-0.1.0.jar").is_file()


@pytest.mark.spark
@pytest.mark.slow
def test_make_jars():
    result = run_documented("make jars", timeout=1800)
    assert result.returncode == 0, _tail(result)
    for minor in sparkagg.SPARK_LINES:
        artifact = sparkagg.jar_name(minor).removesuffix(".jar")
        assert (ROOT / "target" / "jars" / f"{artifact}.jar").is_file()
        assert (ROOT / "target" / "jars" / sparkagg.jar_name(minor, tests=True)).is_file()
        m2 = maven_local.published(artifact)
        assert (m2 / f"{artifact}-0.1.0.jar").is_file(), artifact


@pytest.mark.spark
@pytest.mark.slow
def test_make_demo():
    result = run_documented("make demo", timeout=1200)
    assert result.returncode == 0, _tail(result)
    assert "every result matches the reference model" in result.stdout


@pytest.mark.spark
@pytest.mark.slow
def test_make_bench_quick_trial():
    shutil.rmtree(BENCH_OUT, ignore_errors=True)
    committed = {p.name: p.stat().st_mtime_ns for p in (ROOT / "bench" / "results").iterdir()}
    result = run_documented("make bench BENCH_ROWS=5000 BENCH_OUT=/tmp/sparkagg-bench", timeout=1500)
    assert result.returncode == 0, _tail(result)
    for script in BENCH_SCRIPTS + ["bench_grouped-spark3.5"]:  # bench_grouped also runs on Spark 3.5
        assert json.loads((BENCH_OUT / f"{script}.json").read_text())["rows"] == 5000
    assert (BENCH_OUT / "bench.png").read_bytes()[:8] == PNG
    assert {p.name: p.stat().st_mtime_ns for p in (ROOT / "bench" / "results").iterdir()} == committed


@pytest.mark.spark
@pytest.mark.slow
def test_make_docs():
    result = run_documented("make docs", timeout=1200)  # the JAR first, when the tree has none
    assert result.returncode == 0, _tail(result)
    site = ROOT / "site"
    assert "sparkagg" in (site / "index.html").read_text()
    # every page of docs/ is built, and the plot the benchmarks page shows is there
    for page in (ROOT / "docs").glob("*.md"):
        built = site / ("index.html" if page.stem == "index" else f"{page.stem}/index.html")
        assert built.is_file(), page.name
    assert (site / "img" / "bench.png").read_bytes()[:8] == PNG
    # the function reference generated from the JAR: a page per family, examples with Spark's results
    generated = sorted(p.stem for p in (ROOT / "docs" / "reference").glob("*.md"))
    assert "index" in generated and "regr" in generated and len(generated) > 20
    for stem in generated:
        built = site / "reference" / ("index.html" if stem == "index" else f"{stem}/index.html")
        assert built.is_file(), stem
    regr = (site / "reference" / "regr" / "index.html").read_text()
    assert 'id="df_regr_slope"' in regr and "0.928571428571428" in regr


# Debian's Chromium, headless, as root and offline: without the background-networking flags it keeps trying
# to reach Google's hosts, which this machine refuses.
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--window-size=1280,900"]
SCREENSHOTS = ROOT / "target" / "docs-screenshots"


def _chromium(url: str, profile: Path, *args: str) -> str:
    result = subprocess.run([CHROMIUM, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *args, url],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout


@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason="no chromium binary (.ci/run installs Debian's)")
def test_the_site_renders_in_a_browser(tmp_path):
    """The built site (test_make_docs builds it, in this file's order) served over HTTP and rendered by
    Chromium: the home page with its navigation, a function page with an example's result Spark gave."""
    site = ROOT / "site"
    if not (site / "index.html").is_file():
        assert run_documented("make docs", timeout=1200).returncode == 0
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", free_port()), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    try:
        home = _chromium(f"{base}/", tmp_path / "profile", "--dump-dom")
        for entry in ["Getting started", "Function reference", "Sliding windows", "Python API", "Contributing"]:
            assert re.search(rf">\s*{entry}\s*<", home), entry
        assert "Apache DataFusion" in home
        regr = _chromium(f"{base}/reference/regr/", tmp_path / "profile", "--dump-dom")
        assert 'id="df_regr_slope"' in regr and "0.928571428571428" in regr
        for name, path in [("home", "/"), ("regr", "/reference/regr/")]:
            shot = SCREENSHOTS / f"{name}.png"
            shot.unlink(missing_ok=True)
            _chromium(f"{base}{path}", tmp_path / "profile", f"--screenshot={shot}")
            assert shot.read_bytes()[:8] == PNG and shot.stat().st_size > 10_000, shot
    finally:
        server.shutdown()


def _fuzz_agreed(result, queries: int) -> None:
    assert result.returncode == 0, _tail(result)
    assert f"{queries} queries compared" in result.stdout and ", 0 differences" in result.stdout, _tail(result)


@pytest.mark.spark
@pytest.mark.slow
def test_make_fuzz():
    _fuzz_agreed(run_documented("make fuzz FUZZ_COUNT=5", timeout=1800), 5)


@pytest.mark.spark
@pytest.mark.slow
def test_make_fuzz_on_the_oldest_spark():
    _fuzz_agreed(run_documented("make fuzz FUZZ_SPARK=3.5 FUZZ_COUNT=5", timeout=1800), 5)
