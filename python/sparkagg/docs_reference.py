"""The docs site's function reference, generated from the JAR's catalogue (``sparkagg.catalogue``): one
Markdown page per family of built-in functions (the file of functions/ that defines them) and an index,
written by ``make docs`` into docs/reference/ before mkdocs builds the site, and the README's function table
(between its two ``FUNCTION_TABLE`` markers)::

    python -m sparkagg.docs_reference docs/reference README.md

Every documented example runs in Spark, and the page shows the result Spark gives. A result that differs
from the one the function's FunctionDoc documents (which ``DESCRIBE FUNCTION EXTENDED`` shows) fails the
generation. Loaded as an mkdocs hook (mkdocs.yml's ``hooks``), this module also puts the family pages into
the site's nav (``on_config``)."""
from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

import sparkagg

INDEX = "index.md"
NAV_ENTRY = "Function reference"  # mkdocs.yml's nav entry that on_config expands
DEVIATIONS = "../deviations.md"
STATE_AS_DATA = "../state-as-data.md"
SOURCES = "jvm/src/main/scala/sparkagg/functions"
# The lines around the README's function table, which ``write_readme`` replaces.
FUNCTION_TABLE = ("<!-- function table: `make docs` writes it from the catalogue -->", "<!-- end of function table -->")


class ExampleMismatch(AssertionError):
    """A documented example whose result in Spark is not the one its FunctionDoc documents."""


# Spark's settings while the examples run: a few rows each, for which compiling the union's generated code
# costs more than it saves (27 s -> 7 s for the union on a fresh session). The results are the same either way,
# which the fuzzer checks with code generation on and off.
INTERPRETED = {"spark.sql.codegen.wholeStage": "false", "spark.sql.codegen.factoryMode": "NO_CODEGEN"}


def run_examples(spark, queries: list[str]) -> list[str]:
    """The one value each query returns, as Spark casts it to a string (NULL as ``NULL``). One Spark job
    runs them all: a job each would take twice as long."""
    union = " UNION ALL ".join(f"SELECT {i} AS i, CAST(r AS STRING) AS v FROM ({q}) AS e{i}(r)"
                               for i, q in enumerate(queries))
    before = {key: spark.conf.get(key, None) for key in INTERPRETED}
    for key, value in INTERPRETED.items():
        spark.conf.set(key, value)
    try:
        values = dict(spark.sql(union).collect())
    finally:
        for key, value in before.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)
    return ["NULL" if values[i] is None else values[i] for i in range(len(queries))]


def _agrees(got: str, documented: str) -> bool:
    # As SqlSuite holds the examples: a documented double is the exact result correctly rounded, and the
    # computed one may differ from it in the last bits.
    if got == documented:
        return True
    try:
        return abs(float(got) - float(documented)) < 1e-12
    except ValueError:
        return False


def _state(spark, call: str) -> str:
    """The state fields of the function's state form over an example's arguments, as name: type."""
    fields = spark.sql(call).schema.fields[0].dataType.fields
    return ", ".join(f"{f.name}: {f.dataType.simpleString()}" for f in fields)


def reference(spark, prefix: str = sparkagg.DEFAULT_PREFIX) -> list[dict]:
    """The catalogue's functions, each with ``examples`` as [query, Spark's result] pairs (``_FUNC_`` replaced
    by the function's name) and ``states``: the state fields the examples' arguments give, distinct, in order.
    Raises ExampleMismatch, listing them all, when examples give other results than documented."""
    functions = sparkagg.catalogue(spark)
    queries = [q.replace("_FUNC_", prefix + f["name"]) for f in functions for q, _ in f["examples"]]
    results, wrong = iter(run_examples(spark, queries)), []
    for f in functions:
        name = prefix + f["name"]
        examples, states = [], []
        for query, documented in f["examples"]:
            sql, got = query.replace("_FUNC_", name), next(results)
            if not _agrees(got, documented):
                wrong.append(f"{sql}\n    gives {got}, documented: {documented}")
            examples.append([sql, got])
            state = _state(spark, query.replace("_FUNC_", name + "_state"))
            if state not in states:
                states.append(state)
        f.update(examples=examples, states=states)
    if wrong:
        raise ExampleMismatch("examples whose result in Spark is not the documented one (FunctionDoc):\n  " +
                              "\n  ".join(wrong))
    return functions


def _text(s: str) -> str:
    """Plain text (usage, argument descriptions) safe in Markdown: its *, _, [, ], < and ` are literal."""
    return re.sub(r"([\\`*_\[\]])", r"\\\1", s).replace("<", "&lt;")


def _entry(f: dict, prefix: str) -> str:
    name = prefix + f["name"]
    datafusion = f["datafusion"]
    if datafusion != "yes":  # a deviation, or a function DataFusion 55 does not have: both are explained there
        datafusion = f"[{datafusion}]({DEVIATIONS})"
    facts = [
        ("Signature", f"`{name}{f['signature']}`"),
        ("Aliases", ", ".join(f"`{prefix}{a}`" for a in f["aliases"]) or "none"),
        ("Accepts", f["accepts"]),
        ("Result", f["result"]),
        ("Empty input", f["empty_input"]),
        ("NaN", f["nan"]),
        ("State fields, for the examples' arguments", "; ".join(f"`{s}`" for s in f["states"])),
        ("State forms", ", ".join(f"`{name}{form}`" for form in sparkagg.STATE_FORMS)
         + f" ([state as data]({STATE_AS_DATA}))"),
        ("Sliding windows retract", f["retract"]),
        ("Grouped path", f["grouped"]),
        ("WITHIN GROUP", f["within_group"]),
        ("DataFusion 55", datafusion),
        ("Nearest Spark built-in", f["spark"]),
    ] + ([("Note", f["note"])] if f["note"] else [])
    lines = [f"## {name}", "", _text(f["usage"].replace("_FUNC_", name)), ""]
    lines += [f"- **{label}:** {value}" for label, value in facts]
    lines += ["", "Arguments:", ""] + [f"- `{a}`: {_text(d)}" for a, d in f["arguments"]]
    lines += ["", "Examples, with the results Spark gives:", ""]
    for query, result in f["examples"]:
        lines += ["```sql", f"{query};", f"-- {result}", "```", ""]
    return "\n".join(lines)


def _families(functions: list[dict]) -> dict[str, list[dict]]:
    families: dict[str, list[dict]] = {}
    for f in functions:
        families.setdefault(f["family"], []).append(f)
    return families


def family_page(functions: list[dict], prefix: str = sparkagg.DEFAULT_PREFIX) -> str:
    """The Markdown page of one family's functions (entries of ``reference``)."""
    family, title = functions[0]["family"], functions[0]["family_title"]
    head = [f"# {title}", "",
            f"Defined in `{SOURCES}/{family}.scala`: " +
            ", ".join(f"[`{prefix}{f['name']}`](#{prefix}{f['name']})" for f in functions) + ".", ""]
    return "\n".join(head + [_entry(f, prefix) for f in functions])


def _cell(s: str) -> str:
    """Text for a Markdown table's cell."""
    return s.replace("|", "\\|")


def index_page(functions: list[dict], prefix: str = sparkagg.DEFAULT_PREFIX) -> str:
    """The reference's index: every function, linked to its entry, with its family and main facts."""
    lines = ["# Function reference", "",
             "Every built-in function as the JAR's catalogue describes it, one page per family; each example was "
             "run in Spark when `make docs` wrote these pages. State forms (`_state`, `_merge`, `_merge_state`, "
             "`_finalize`): [State as data](../state-as-data.md).", "",
             "| function | aliases | family | accepts | result | empty input | DataFusion 55 |",
             "|---|---|---|---|---|---|---|"]
    for f in functions:
        name = prefix + f["name"]
        lines.append(" | ".join([
            f"| [`{name}`]({f['family']}.md#{name})", ", ".join(f"`{prefix}{a}`" for a in f["aliases"]),
            f"[{f['family_title']}]({f['family']}.md)", _cell(f["accepts"]), _cell(f["result"]),
            _cell(f["empty_input"]), _cell(f["datafusion"])]) + " |")
    lines += ["", "## Against Spark's built-ins", "",
              "Each function's nearest Spark built-in and how their results differ, and what a NaN among the values "
              "does (from each entry).", "",
              "| function | nearest Spark built-in | NaN |", "|---|---|---|"]
    for f in functions:
        name = prefix + f["name"]
        lines.append(f"| [`{name}`]({f['family']}.md#{name}) | {_cell(f['spark'])} | {_cell(f['nan'])} |")
    return "\n".join(lines) + "\n"


def readme_table(functions: list[dict], prefix: str = sparkagg.DEFAULT_PREFIX) -> str:
    """The README's function table: a row per function of the catalogue (entries of ``sparkagg.catalogue``),
    its call as its usage writes it, linked to its reference entry, and its aliases."""
    lines = ["| function | arguments | result | empty input | retract | grouped path | DataFusion 55 | notes |",
             "|---|---|---|---|---|---|---|---|"]
    for f in functions:
        name = prefix + f["name"]
        call = f["usage"].split(" - ")[0].replace("_FUNC_", name)
        names = ", ".join([f"[`{call}`](docs/reference/{f['family']}.md#{name})"] +
                          [f"`{prefix}{a}`" for a in f["aliases"]])
        lines.append("| " + " | ".join([_cell(names)] + [_cell(f[k]) for k in (
            "accepts", "result", "empty_input", "retract", "grouped", "datafusion", "note")]) + " |")
    return "\n".join(lines) + "\n"


def write_readme(readme: Path, functions: list[dict], prefix: str = sparkagg.DEFAULT_PREFIX) -> None:
    """Replace the table between the README's ``FUNCTION_TABLE`` markers with ``readme_table``'s."""
    text = readme.read_text()
    start, end = (text.index(marker) for marker in FUNCTION_TABLE)
    readme.write_text(text[: start + len(FUNCTION_TABLE[0])] + "\n" + readme_table(functions, prefix) + text[end:])


def write(spark, out: Path, prefix: str = sparkagg.DEFAULT_PREFIX) -> list[Path]:
    """Write the reference into ``out`` (emptied first): index.md and a page per family. Returns the pages,
    the index first, then the families in the catalogue's order."""
    functions = reference(spark, prefix)
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    pages = [out / INDEX]
    pages[0].write_text(index_page(functions, prefix))
    for family, members in _families(functions).items():
        pages.append(out / f"{family}.md")
        pages[-1].write_text(family_page(members, prefix))
    return pages


def on_config(config):
    """mkdocs hook: the nav entry "Function reference" (the index) becomes a section of the generated pages,
    the index and then the family pages in the order the index lists them."""
    folder = Path(config["docs_dir"]) / "reference"
    if not (folder / INDEX).is_file():
        raise SystemExit(f"{folder / INDEX} is missing: `make docs` generates the function reference")
    index = (folder / INDEX).read_text()
    families = list(dict.fromkeys(re.findall(r"\]\(([a-z0-9_]+)\.md\)", index)))
    section = [{"Every function": "reference/" + INDEX}]
    for family in families:
        title = (folder / f"{family}.md").read_text().splitlines()[0].removeprefix("# ")
        section.append({title: f"reference/{family}.md"})
    nav = config["nav"]
    at = next(i for i, item in enumerate(nav) if isinstance(item, dict) and NAV_ENTRY in item)
    nav[at] = {NAV_ENTRY: section}
    return config


def main(argv: list[str] | None = None) -> int:
    """``python -m sparkagg.docs_reference <folder> [README]``: write the reference into the folder (and the
    function table into the README), from a local Spark session with sparkagg."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) not in (1, 2):
        print("usage: python -m sparkagg.docs_reference <folder> [README]", file=sys.stderr)
        return 2
    spark = sparkagg.session(master="local[2]", app_name="sparkagg-docs-reference",
                             **{"spark.ui.enabled": "false", "spark.log.level": "ERROR",
                                "spark.ui.showConsoleProgress": "false", "spark.sql.shuffle.partitions": "2"})
    try:
        pages = write(spark, Path(args[0]))
        if len(args) == 2:
            write_readme(Path(args[1]), sparkagg.catalogue(spark))
    except ExampleMismatch as e:
        print(f"sparkagg.docs_reference: {e}", file=sys.stderr)
        return 1
    finally:
        spark.stop()
    print(f"sparkagg.docs_reference: {len(pages)} pages in {args[0]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
