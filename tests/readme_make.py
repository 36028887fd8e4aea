"""The `make` lines and bench script commands README.md and the docs pages (docs/*.md) show, and a runner that
runs one of them exactly as written."""
from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"


def documented_text() -> str:
    """README.md and every docs page, which show commands alike."""
    return "\n".join(p.read_text() for p in [README, *sorted((ROOT / "docs").glob("*.md"))])


def readme_make_lines() -> set[str]:
    """Each `make ...` line of the README's and the docs' code blocks (without its comment) and inline code."""
    text = documented_text()
    lines = {line.split("#")[0].strip()
             for block in re.findall(r"^```[^\n]*\n(.*?)^```", text, re.M | re.S)
             for line in block.splitlines() if line.startswith("make ")}
    return lines | set(re.findall(r"`(make [^`]*)`", text))


def readme_bench_commands() -> set[str]:
    """Each bench script command the README or the docs show as inline code (`.venv/bin/python bench/...`)."""
    return set(re.findall(r"`(\.venv/bin/python bench/[^`]*)`", documented_text()))


def run_documented(line: str, timeout: float) -> subprocess.CompletedProcess:
    """Runs a documented make line or bench command from the repository root, as a reader would; refuses a
    line neither the README nor the docs show, so a test cannot drift from what is documented."""
    assert line in readme_make_lines() | readme_bench_commands(), f"{line!r} is not a command of README.md or docs/"
    return subprocess.run(shlex.split(line), cwd=ROOT, capture_output=True, text=True, timeout=timeout)
