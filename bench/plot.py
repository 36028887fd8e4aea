"""Draws the benchmarks' ratios (bench/results/*.json, written by the bench scripts) as bar charts in one PNG.

    .venv/bin/python bench/plot.py [--results DIR] [--out FILE]      (default bench/results/bench.png)

Every bar is a time ratio a / b from one run of one script (sparkagg's time over the other's: left of 1,
sparkagg is faster), on a log scale so that 2x faster and 2x slower are the same length. One chart per
chart of the JSON files, one colour per group (1k / 1M groups, frame width w); a ratio a script did not
measure shows as "not run".
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # headless: no display needed
import matplotlib.pyplot as plt  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
TICKS = [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 50, 100, 200, 500]
FINE_TICKS = [0.5, 0.6, 0.7, 0.8, 0.9, 1, 1.2, 1.5, 2, 2.5, 3, 4, 5]
ORDER = ["bench_avg_sum", "bench_numeric", "bench_collections", "bench_window"]


def load(folder: Path) -> list[dict]:
    """The results files of the folder, in the scripts' usual order, then any other by name."""
    runs = []
    for path in sorted(folder.glob("*.json")):
        data = json.loads(path.read_text())
        if not isinstance(data, dict) or "charts" not in data:
            continue
        runs.append(data)
    rank = {name: i for i, name in enumerate(ORDER)}
    return sorted(runs, key=lambda d: (rank.get(d.get("script"), len(ORDER)), d.get("script", "")))


def _label(value: float) -> str:
    return f"{value:.2f}x" if value < 10 else f"{value:.0f}x" if value >= 100 else f"{value:.1f}x"


def draw(runs: list[dict], out: Path) -> Path:
    charts = [(run, chart) for run in runs for chart in run["charts"] if chart["bars"]]
    if not charts:
        raise SystemExit("bench/plot.py: no ratios to draw (no results JSON with bars)")
    heights = [1.2 + 0.28 * len(c["bars"]) * len(c["groups"]) for _, c in charts]
    fig, axes = plt.subplots(len(charts), 1, figsize=(11, sum(heights) + 0.6 * len(charts)),
                             gridspec_kw={"height_ratios": heights}, squeeze=False)
    colours = plt.get_cmap("tab10").colors
    for ax, (run, chart) in zip(axes[:, 0], charts):
        groups, bars = chart["groups"], chart["bars"]
        n = len(groups)
        width = 0.8 / n
        values = [v for b in bars for v in b["ratios"].values() if v and v > 0]
        lo = min(values + [1.0]) / 1.6
        hi = max(values + [1.0]) * 2.2
        for gi, group in enumerate(groups):
            labelled = False
            for bi, bar in enumerate(bars):
                y = bi + (gi - (n - 1) / 2) * width
                value = bar["ratios"].get(group)
                if value is None or value <= 0:
                    ax.text(lo * 1.05, y, f"{group}: not run", va="center", fontsize=7, color="grey")
                    continue
                # On a log axis a bar starts at the left edge: it spans lo .. value.
                ax.barh(y, value - lo, height=width * 0.9, left=lo, color=colours[gi % len(colours)],
                        label=None if labelled else group)
                labelled = True
                ax.text(value * 1.04, y, _label(value), va="center", fontsize=7)
        ax.set_xscale("log")
        ax.set_xlim(lo, hi)
        ax.set_xticks([t for t in (TICKS if hi / lo > 10 else FINE_TICKS) if lo <= t <= hi])
        ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.axvline(1.0, color="black", linewidth=0.8)
        ax.set_yticks(range(len(bars)))
        ax.set_yticklabels([f"{b['a']} / {b['b']}" for b in bars], fontsize=8)
        ax.invert_yaxis()
        ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}x"))
        ax.tick_params(axis="x", labelsize=8)
        ax.set_title(chart["title"], fontsize=10, loc="left")
        note = (f"{run.get('source', '?')}, {run.get('measured', '?')}; {run.get('machine', '')}; "
                f"Spark {run.get('spark') or '?'}; best of {run.get('repeat', '?')}")
        ax.set_xlabel(note, fontsize=6.5, color="dimgrey", loc="right")
        ax.legend(fontsize=7, loc="lower right")
        ax.grid(axis="x", which="both", alpha=0.25)
    fig.suptitle("sparkagg benchmarks: time ratio a / b (log scale; left of 1x: a is faster)", fontsize=11)
    fig.tight_layout(rect=(0, 0, 1, 0.985))
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--results", type=Path, default=RESULTS, help="folder of the scripts' JSON (bench/results)")
    parser.add_argument("--out", type=Path, default=None, help="the PNG (default RESULTS/bench.png)")
    args = parser.parse_args(argv)
    out = args.out or args.results / "bench.png"
    path = draw(load(args.results), out)
    print(f"plot written to {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
