"""bench/plot.py draws the ratios the bench scripts record (bench/common.py's Recorder), on small made-up
results: no benchmark runs here."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

pytest.importorskip("matplotlib")

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

import common  # noqa: E402  (bench/common.py)
import plot  # noqa: E402  (bench/plot.py)

PNG = b"\x89PNG\r\n\x1a\n"


def test_recorder_writes_what_plot_draws(tmp_path):
    groups = ["1k groups", "1M groups"]
    r = common.Recorder("bench_fake", "fake", rows=1000, repeat=1)
    r.add("Grouped: sparkagg / other", groups, "df_avg", "Spark avg", "1k groups", 1.0, 2.0)
    r.add("Grouped: sparkagg / other", groups, "df_avg", "Spark avg", "1M groups", 3.0, 1.5)
    r.add("Grouped: sparkagg / other", groups, "df_sum", "Spark sum", "1k groups", 0.2, None)  # not run
    w = ["w = 10", "w = 100"]
    r.add("Windows", w, "df_avg", "Spark avg, recompute", "w = 10", 0.5, 40.0)
    r.add("Windows", w, "df_avg", "Spark avg, recompute", "w = 100", 0.5, 0.6)
    path = r.write(out=tmp_path)
    data = json.loads(path.read_text())
    assert path.name == "bench_fake.json" and data["rows"] == 1000
    grouped, windows = data["charts"]
    assert grouped["groups"] == groups
    assert grouped["bars"][0]["ratios"] == {"1k groups": 0.5, "1M groups": 2.0}
    assert grouped["bars"][0]["seconds"]["1M groups"] == [3.0, 1.5]
    assert grouped["bars"][1]["ratios"] == {}  # the missing time leaves the bar out
    assert windows["bars"][0]["ratios"]["w = 10"] == 0.0125

    (tmp_path / "notes.json").write_text("[1, 2]")  # not a results file: ignored
    assert plot.main(["--results", str(tmp_path)]) == 0
    png = tmp_path / "bench.png"
    assert png.read_bytes()[:8] == PNG and png.stat().st_size > 10_000


def test_plot_refuses_a_folder_without_ratios(tmp_path):
    with pytest.raises(SystemExit, match="no ratios"):
        plot.main(["--results", str(tmp_path), "--out", str(tmp_path / "x.png")])
    assert not (tmp_path / "x.png").exists()


@pytest.mark.slow
def test_the_committed_results_draw_and_the_docs_show_the_plot(tmp_path):
    runs = plot.load(ROOT / "bench" / "results")
    assert {r["script"] for r in runs} >= {"bench_avg_sum", "bench_numeric", "bench_window"}
    plot.draw(runs, tmp_path / "bench.png")
    assert (tmp_path / "bench.png").read_bytes()[:8] == PNG
    assert (ROOT / "bench" / "results" / "bench.png").read_bytes()[:8] == PNG
    assert "](img/bench.png)" in (ROOT / "docs" / "benchmarks.md").read_text()
    assert (ROOT / "docs" / "img" / "bench.png").resolve() == (ROOT / "bench" / "results" / "bench.png").resolve()
