"""Reads sql/*.sql conformance files and renders result rows the way they are written there."""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path


@dataclass
class Case:
    name: str
    query: str
    expected: list[str]


def parse(path: Path) -> list[Case]:
    cases, name, query, expected, in_expect = [], None, [], [], False
    def flush():
        if name is not None:
            cases.append(Case(name, " ".join(query).rstrip(";"), expected))
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("-- case:"):
            flush()
            name, query, expected, in_expect = line[len("-- case:"):].strip(), [], [], False
        elif line.strip() == "-- expect:":
            in_expect = True
        elif in_expect and line.startswith("-- "):
            expected.append(line[3:].strip())
        elif line.strip() and not in_expect:
            query.append(line.strip())
    flush()
    return cases


def render(value) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, float) and math.isnan(value):
        return "nan"
    return str(value)


def render_row(row) -> str:
    return " | ".join(render(v) for v in row)
