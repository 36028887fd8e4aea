"""The JVM packages' layers, as docs/building.md states them: each package of jvm/src/main/scala/sparkagg names
only the packages below it. `api` none (nothing of Catalyst either); `common` the api; `functions` the api and
`common`; the hosts and operators (`catalyst`, and `window` and `exec`, which reach a function only through
`catalyst.Call`) never the function list, which `SparkAgg` hands them; the registration classes by name (`udf`,
`udaf`) the functions they register. `compat` (the Scala library's version shims, under scala-2.12/ and
scala-2.13/) is open to all."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

SOURCES = Path(__file__).resolve().parent.parent / "jvm" / "src" / "main" / "scala" / "sparkagg"
BELOW = {
    "api": set(),
    "common": {"api"},
    "functions": {"api", "common"},
    "catalyst": {"api", "common"},
    "window": {"api", "common", "catalyst"},
    "exec": {"api", "common", "catalyst"},
    "udf": {"api", "common", "catalyst", "functions"},
    "udaf": {"api", "common", "catalyst", "functions"},
    "python": {"api"},
}
NAMED = re.compile(r"\bsparkagg\.(" + "|".join(BELOW) + r")\b")
# Comments and string literals (a Python module named in a string is no Scala dependency)
COMMENT = re.compile(r'/\*.*?\*/|//[^\n]*|""".*?"""|"(?:[^"\\\n]|\\.)*"', re.S)


def _named(path: Path) -> set[str]:
    """The sparkagg packages a source file names in its code (imports or qualified names), comments and strings
    aside."""
    code = COMMENT.sub("", path.read_text())
    code = re.sub(r"^package .*$", "", code, flags=re.M)
    return set(NAMED.findall(code))


def test_every_package_is_a_layer():
    assert {p.name for p in SOURCES.iterdir() if p.is_dir()} == set(BELOW)


@pytest.mark.parametrize("package", sorted(BELOW))
def test_a_package_names_only_the_layers_below_it(package):
    wrong = {str(path.relative_to(SOURCES)): sorted(_named(path) - BELOW[package] - {package})
             for path in sorted((SOURCES / package).rglob("*.scala"))}
    assert not {path: names for path, names in wrong.items() if names}, wrong


def test_catalyst_is_handed_the_functions_it_stands_in_with():
    # the one place catalyst met the function list: Spark's own count, sum, avg, min and max on the grouped path
    assert "sparkagg.functions" not in COMMENT.sub("", (SOURCES / "catalyst" / "SparkAggregates.scala").read_text())
