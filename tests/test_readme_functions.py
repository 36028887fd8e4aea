"""The README's function table against the live registry and the JAR's own catalogue
(sparkagg.Catalogue): the table is what `make docs` writes from the catalogue now (a row per function, its call
linked to its reference entry, its aliases, retract and grouped path as the accumulators say, the other columns as
its FunctionDoc says), the catalogue names every function and alias the session registers, and each deviation a
FunctionDoc claims is explained in docs/deviations.md."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

import sparkagg
from sparkagg import docs_reference

README = Path(__file__).resolve().parent.parent / "README.md"
FORMS = ("_merge_state", "_state", "_merge", "_finalize")


def registered(spark, prefix: str = sparkagg.DEFAULT_PREFIX) -> set[str]:
    """The plain functions and aliases the session has under `prefix`: SHOW USER FUNCTIONS without
    the state forms (a name that is another registered name plus _state, _merge, ...)."""
    names = {r[0].split(".")[-1] for r in spark.sql(f"SHOW USER FUNCTIONS LIKE '{prefix}*'").collect()}
    return {n for n in names if not any(n.endswith(f) and n[: -len(f)] in names for f in FORMS)}


@pytest.fixture(scope="module")
def facts(spark):
    return sparkagg.catalogue(spark), registered(spark)


def test_the_readme_table_is_the_one_the_catalogue_gives(facts):
    cat, _ = facts
    start, end = docs_reference.FUNCTION_TABLE
    text = README.read_text()
    table = text[text.index(start) + len(start) + 1: text.index(end)]
    assert table == docs_reference.readme_table(cat), "README's function table is not the catalogue's: run `make docs`"
    # Every row links to its function's entry on its family's reference page.
    for f in cat:
        name = sparkagg.DEFAULT_PREFIX + f["name"]
        assert f"](docs/reference/{f['family']}.md#{name})" in table, name
        assert f"\n## {name}\n" in (README.parent / "docs" / "reference" / f"{f['family']}.md").read_text(), name


def test_the_catalogue_names_every_registered_function_and_alias(facts):
    cat, names = facts
    expected = {sparkagg.DEFAULT_PREFIX + n for r in cat for n in [r["name"], *r["aliases"]]}
    assert expected == names, f"registry vs catalogue: {sorted(expected ^ names)}"


def test_the_generated_table_shows_calls_aliases_and_facts(facts):
    # A hand-worked row: avg's, whose usage writes `_FUNC_(expr)` and whose alias is mean.
    cat, _ = facts
    row = next(line for line in docs_reference.readme_table(cat).splitlines() if "#df_avg)" in line)
    cells = [c.strip() for c in re.split(r"(?<!\\)\|", row.strip().strip("|"))]
    assert cells[0] == "[`df_avg(expr)`](docs/reference/average.md#df_avg), `df_mean`"
    assert cells[4:6] == ["yes", "native"]


def test_each_claimed_deviation_is_explained(facts):
    cat, _ = facts
    deviations = (README.parent / "docs" / "deviations.md").read_text()
    wrong = []
    for r in cat:
        cell, bare = r["datafusion"], r["name"]
        for key in ("accepts", "result", "empty_input", "nan", "spark"):
            if not r[key]:
                wrong.append(f"{bare}: its FunctionDoc does not say {key}")
        if cell == "yes" or cell == "not in DataFusion 55" and f"`{bare}`" in deviations:
            continue
        if not cell.startswith("deviation: "):
            wrong.append(f"{bare}: its FunctionDoc's dataFusion is {cell!r}: say 'yes', 'deviation: ...' or "
                         "'not in DataFusion 55'")
        elif f"`{bare}`" not in deviations:
            wrong.append(f"{bare}: a deviation is claimed, but docs/deviations.md does not name `{bare}`")
    assert not wrong, "\n  ".join(wrong)
