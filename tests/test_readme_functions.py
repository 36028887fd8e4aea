"""The README's function table against the live registry and the JAR's own catalogue
(sparkagg.Catalogue): every function and alias the session registers has a row, no row names a
function that is gone, each row's retract and grouped-path columns say what the accumulators say, its
other columns what the function's FunctionDoc says, its function links to the function's entry in the
reference `make docs` generates, and each deviation a FunctionDoc claims is explained in
docs/deviations.md. A failure lists every row to fix."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

import sparkagg

README = Path(__file__).resolve().parent.parent / "README.md"
FORMS = ("_merge_state", "_state", "_merge", "_finalize")
COLUMNS = ["function", "arguments", "result", "empty input", "retract", "grouped path", "DataFusion 55", "notes"]
# The columns that are FunctionDoc's facts, as the catalogue names them.
DOCUMENTED = {"arguments": "accepts", "result": "result", "empty input": "empty_input", "DataFusion 55": "datafusion",
              "notes": "note"}


def _section(text: str, heading: str) -> str:
    start = text.index(heading)
    rest = text[start + len(heading):]
    end = re.search(r"^#{2,3} ", rest, re.M)
    return rest[: end.start()] if end else rest


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def readme_table() -> dict[str, dict]:
    """The function table's rows by the first name in their function cell (df_avg), each with its
    cells by column and every name it gives (df_avg, df_mean)."""
    section = _section(README.read_text(), "## Functions\n")
    lines = [line for line in section.splitlines() if line.startswith("|")]
    assert lines and _cells(lines[0]) == COLUMNS, f"README function table header: {lines[:1]}"
    rows = {}
    for line in lines[2:]:
        cells = _cells(line)
        assert len(cells) == len(COLUMNS), f"README row with {len(cells)} cells, not {len(COLUMNS)}: {line}"
        row = dict(zip(COLUMNS, cells))
        names = re.findall(r"`(df_[a-z0-9_]+)", row["function"])
        assert names, f"README row naming no df_ function: {line}"
        row["names"] = set(names)
        assert names[0] not in rows, f"README has two rows for {names[0]}"
        rows[names[0]] = row
    return rows


def registered(spark, prefix: str = sparkagg.DEFAULT_PREFIX) -> set[str]:
    """The plain functions and aliases the session has under `prefix`: SHOW USER FUNCTIONS without
    the state forms (a name that is another registered name plus _state, _merge, ...)."""
    names = {r[0].split(".")[-1] for r in spark.sql(f"SHOW USER FUNCTIONS LIKE '{prefix}*'").collect()}
    return {n for n in names if not any(n.endswith(f) and n[: -len(f)] in names for f in FORMS)}


@pytest.fixture(scope="module")
def facts(spark):
    return readme_table(), sparkagg.catalogue(spark), registered(spark)


def test_every_registered_function_and_alias_has_a_readme_row(facts):
    table, cat, names = facts
    in_readme = set().union(*(r["names"] for r in table.values()))
    missing = sorted(names - in_readme)
    assert not missing, ("README function table lacks rows (or alias mentions) for: " + ", ".join(missing) +
                         "\nAdd a row per function to the table under '## Functions' in README.md.")
    # The catalogue and the registry agree (every function and alias, under the prefix).
    expected = {sparkagg.DEFAULT_PREFIX + n for r in cat for n in [r["name"], *r["aliases"]]}
    assert expected == names, f"registry vs catalogue: {sorted(expected ^ names)}"


def test_no_readme_row_names_a_function_that_is_not_registered(facts):
    table, _, names = facts
    stale = sorted(n for r in table.values() for n in r["names"] if n not in names)
    assert not stale, f"README function table names functions the JAR does not register: {', '.join(stale)}"


def test_retract_and_grouped_path_columns_agree_with_the_jar(facts):
    table, cat, _ = facts
    wrong = []
    for r in cat:
        name = sparkagg.DEFAULT_PREFIX + r["name"]
        row = table.get(name)
        if row is None:
            wrong.append(f"{name}: no row of its own (first name of a row)")
            continue
        if row["retract"] != r["retract"] and not row["retract"].startswith(r["retract"] + " ("):
            wrong.append(f"{name}: retract is {r['retract']!r}, README says {row['retract']!r}")
        if row["grouped path"] != r["grouped"]:
            wrong.append(f"{name}: grouped path is {r['grouped']!r}, README says {row['grouped path']!r}")
        aliases = {sparkagg.DEFAULT_PREFIX + a for a in r["aliases"]}
        if not aliases <= row["names"]:
            wrong.append(f"{name}: its row does not name its aliases {sorted(aliases - row['names'])}")
    assert not wrong, "README function table disagrees with the JAR:\n  " + "\n  ".join(wrong)


def test_documented_columns_say_what_the_function_docs_say(facts):
    table, cat, _ = facts
    wrong = []
    for r in cat:
        name = sparkagg.DEFAULT_PREFIX + r["name"]
        row = table.get(name, {})
        for column, key in DOCUMENTED.items():
            if row.get(column) != r[key]:
                wrong.append(f"{name}: {column} is {r[key]!r} (its FunctionDoc), README says {row.get(column)!r}")
        link = f"](docs/reference/{r['family']}.md#{name})"
        if link not in row.get("function", link):
            wrong.append(f"{name}: its function cell does not link to its reference entry ({link[2:-1]})")
    assert not wrong, "README function table disagrees with the FunctionDocs:\n  " + "\n  ".join(wrong)


def test_each_claimed_deviation_is_explained(facts):
    _, cat, _ = facts
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
