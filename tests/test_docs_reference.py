"""The function reference `make docs` generates (sparkagg.docs_reference): an entry for every function of the
JAR's catalogue on its family's page, each example with the result Spark gives now, a documented result Spark
does not give failing the generation, and docs/reference/ (committed, so that the README's links work where
the repository is read) the pages the catalogue gives now."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

import sparkagg
from sparkagg import docs_reference

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = re.compile(r"```sql\n(.+);\n-- (.*)\n```")


# Writing the pages runs every function's examples in Spark, for seconds: the tests that read them are slow.
@pytest.fixture(scope="module")
def pages(spark, tmp_path_factory):
    out = tmp_path_factory.mktemp("reference")
    docs_reference.write(spark, out)
    return out


@pytest.mark.slow
def test_every_function_has_an_entry_on_its_family_page(spark, pages):
    index = (pages / docs_reference.INDEX).read_text()
    for f in sparkagg.catalogue(spark):
        name = sparkagg.DEFAULT_PREFIX + f["name"]
        assert (ROOT / docs_reference.SOURCES / f"{f['family']}.scala").is_file(), f["family"]
        page = (pages / f"{f['family']}.md").read_text()
        assert f"\n## {name}\n" in page, name
        assert f"({f['family']}.md#{name})" in index, name


@pytest.mark.slow
def test_every_example_shows_a_result(spark, pages):
    # each result is the one Spark gave while the pages were written (docs_reference.reference), which
    # fails unless it agrees with the documented one; by hand, the slope of (1, 1), (2, 3), (4, 4) is 13/14
    shown = [m for page in pages.glob("*.md") for m in EXAMPLE.findall(page.read_text())]
    assert len(shown) == sum(len(f["examples"]) for f in sparkagg.catalogue(spark))
    regr = (pages / "regr.md").read_text()
    assert "SELECT df_regr_slope(y, x) FROM VALUES (1, 1), (3, 2), (4, 4) AS tab(y, x);\n-- 0.928571428571428" in regr


def test_a_result_other_than_documented_fails_the_generation(spark, monkeypatch):
    catalogue = sparkagg.catalogue(spark)[:1]
    catalogue[0]["examples"] = [["SELECT _FUNC_(col) FROM VALUES (1), (2) AS tab(col)", "3"]]
    monkeypatch.setattr(sparkagg, "catalogue", lambda _spark: catalogue)
    with pytest.raises(docs_reference.ExampleMismatch, match="gives 2, documented: 3"):
        docs_reference.reference(spark)


@pytest.mark.slow
def test_the_committed_pages_are_the_generated_ones(pages):
    committed = ROOT / "docs" / "reference"
    assert sorted(p.name for p in committed.glob("*.md")) == sorted(p.name for p in pages.glob("*.md"))
    stale = [p.name for p in pages.glob("*.md") if (committed / p.name).read_text() != p.read_text()]
    assert not stale, f"docs/reference/ is not what the catalogue gives now ({', '.join(stale)}): run `make docs`"
