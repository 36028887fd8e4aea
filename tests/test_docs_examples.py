"""The code examples of the docs pages that are whole programs run, in page order, each page in a session of
its own beside the tests' (``sparkagg.session()`` returns the tests' one): a ```python block is executed in one
namespace per page, a ```sql block statement by statement, its last statement's result shown
(``show(truncate=False)``). A ```text block right after one is what it must print, compared on every run; the
tables a page creates are dropped after it, its temporary views go with its session."""
from __future__ import annotations

import contextlib
import io
import re

import pytest

from readme_make import ROOT

# The pages whose examples are programs; the others show fragments (a Connect server's, Scala), which the
# tests of what they describe run.
PAGES = ["getting-started.md", "windows.md", "ordered-aggregates.md", "state-as-data.md"]
BLOCK = re.compile(r"^```(python|sql)\n(.*?)^```\n(?:\n```text\n(.*?)^```\n)?", re.M | re.S)


def examples(page: str) -> list[tuple[str, str, str]]:
    """(language, code, what it prints or "") for each python or sql block of ``page``, in order."""
    return BLOCK.findall((ROOT / "docs" / page).read_text())


def _run(spark, language: str, code: str, namespace: dict, where: str) -> None:
    if language == "python":
        exec(compile(code, where, "exec"), namespace)
        return
    *statements, last = [s.strip() for s in re.split(r";\s*(?:\n|$)", code) if s.strip()]
    for statement in statements:
        spark.sql(statement).collect()
    spark.sql(last).show(truncate=False)


@pytest.mark.parametrize("page", PAGES)
def test_the_examples_run_and_print_what_the_page_shows(spark, page):
    found = examples(page)
    assert found, f"{page} has no python or sql block"
    spark = spark.newSession()  # another test's temporary view may bear the name of a page's table
    tables = {t.name for t in spark.catalog.listTables()}
    namespace: dict = {"spark": spark}
    try:
        for i, (language, code, documented) in enumerate(found):
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                _run(spark, language, code, namespace, f"docs/{page}, block {i + 1}")
            if documented:
                assert out.getvalue().strip() == documented.strip(), f"docs/{page}, block {i + 1}:\n{code}"
    finally:
        for table in {t.name for t in spark.catalog.listTables()} - tables:
            spark.sql(f"DROP TABLE IF EXISTS {table}")


# docs/own-accumulators.md's "Your own accumulator" shows code that runs elsewhere: the tests' own accumulator
# (compiled and run by ScalaTest) and the lines that register it (SqlSuite, test_python_api). The page's
# Connect lines, with a JAR's name where test_connect.py passes a path, are that test's.
OWN = ROOT / "docs" / "own-accumulators.md"
OWN_SOURCES = {"whole": ROOT / "jvm/src/test/scala/sparkagg/testing/MyAvg.scala",
               "lines": [ROOT / "jvm/src/test/scala/sparkagg/SqlSuite.scala", ROOT / "tests/test_python_api.py"]}


def test_own_accumulator_code_is_the_tested_code():
    section = OWN.read_text().split("# Your own accumulator", 1)[1]
    blocks = re.findall(r"^```(?:scala|python)\n(.*?)^```\n", section, re.M | re.S)
    whole = OWN_SOURCES["whole"].read_text()
    run = "\n".join(p.read_text() for p in OWN_SOURCES["lines"])
    assert sum(b in whole for b in blocks) == 4, "the imports, FunctionDef, Accumulator and GroupsAccumulator"
    for block in blocks:
        if block not in whole:
            for line in block.splitlines():
                assert line.strip() in run, f"docs/own-accumulators.md: {line.strip()!r} is run by no test"
