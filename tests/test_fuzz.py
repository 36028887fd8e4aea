"""The differential fuzzer (tests/fuzz/) in `make test`: a short seeded run of generated queries on Spark
against DataFusion 55 and `sparkagg check` with no difference, the regression cases it saved (sql/fuzz/)
agreeing now, and generated invalid queries all refused at analysis naming the function. `make fuzz` runs
it longer."""
from __future__ import annotations

import random

import pytest
from pyspark.errors import AnalysisException

import data
import sparkagg
from fuzz import queries, runner, tables

SHORT_RUN = 50
SEED = 20261125
WITHIN_GROUP = sparkagg.spark_minor() != "3.5"


@pytest.mark.slow
def test_generated_queries_agree_with_datafusion(spark):
    messages = []
    report = runner.fuzz(spark, SEED, count=SHORT_RUN, ordered=WITHIN_GROUP, save_to=None, progress=messages.append)
    assert report.run == SHORT_RUN
    assert not report.failures, "\n".join(messages)
    # the short run reaches every shape of query, not only the easy ones
    for feature in ("aggregate", "window", "reference_window", "state", "merge_state", "frame=ROWS", "frame=RANGE",
                    "filter", "distinct", "having", "keys=0", "keys=3", "checked by sparkagg check"):
        assert report.features[feature] > 0, (feature, report.summary())
    if WITHIN_GROUP:
        assert report.features["within_group"] > 0


@pytest.mark.slow  # a dozen whole-table queries: make test replays them, make check leaves them
@pytest.mark.parametrize("path", sorted(runner.REGRESSIONS.glob("*.json")), ids=lambda p: p.stem)
def test_saved_regression_cases_agree(spark, path, tmp_path):
    case = runner.load(path)
    assert runner.difference(spark, case, tmp_path) is None


@pytest.mark.slow
def test_generated_invalid_queries_are_refused_at_analysis(spark):
    rng = random.Random(SEED)
    data.frame(spark, tables.random_table(random.Random(7))).createOrReplaceTempView("t")
    refused = set()
    for _ in range(60):
        sql, name = queries.invalid_query(rng)
        with pytest.raises(AnalysisException) as error:
            spark.sql(sql)  # analysis only: a query that got past it would be refused by no job
        assert name in str(error.value), (sql, str(error.value)[:300])
        refused.add(sql)
    assert len(refused) > 30
