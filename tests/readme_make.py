"""The `make` lines and bench script commands README.md shows, and a runner that runs one of them exactly as
written."""
from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"


def readme_make_lines() -> set[str]:
    """Each `make ...` line of the README's code blocks (without its comment) and inline code."""
    text = README.read_text()
    lines = {line.split("#")[0].strip()
             for block in re.findall(r"^```[^\n]*\n(.*?)^```", text, re.M | re.S)
             for line in block.splitlines() if line.startswith("make ")}
    return lines | set(re.findall(r"`(make [^`]*)`", text))


def readme_bench_commands() -> set[str]:
    """Each bench script command the README shows as inline code (`.venv/bin/python bench/...`)."""
    return set(re.findall(r"`(\.venv/bin/python bench/[^`]*)`", README.read_text()))


def run_documented(line: str, timeout: float) -> subprocess.CompletedProcess:
    """Runs a README make line or bench command from the repository root, as a reader would; refuses a line
    the README does not show, so a test cannot drift from what is documented."""
    assert line in readme_make_lines() | readme_bench_commands(), f"{line!r} is not a command of README.md"
    return subprocess.run(shlex.split(line), cwd=ROOT, capture_output=True, text=True, timeout=timeout)
