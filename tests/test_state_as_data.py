"""State as data from PySpark: daily states kept in Parquet, rolled up by month with _merge_state,
finished with _merge / _finalize and with the Java UDF classes through registerJavaFunction."""
from __future__ import annotations

import pytest
from pyspark.errors import AnalysisException

import oracle

# (call, finalize UDF class, return type to pass or None where the class declares it)
CALLS = [
    ("count(x)", "CountFinalize", None),
    ("sum(n)", "SumFinalize", "bigint"),
    ("avg(x)", "AvgFinalize", "double"),
    ("min(x)", "MinFinalize", "double"),
    ("max(n)", "MaxFinalize", "bigint"),
    ("bit_or(n)", "BitOrFinalize", "bigint"),
    ("bool_or(flag)", "BoolOrFinalize", None),
    ("var_samp(x)", "VarSampFinalize", None),
    ("stddev(x)", "StddevFinalize", None),
    ("covar_pop(x, n)", "CovarPopFinalize", None),
    ("corr(x, n)", "CorrFinalize", None),
    ("regr_slope(x, n)", "RegrSlopeFinalize", None),
    ("regr_count(x, n)", "RegrCountFinalize", None),
]


def _name(call):
    return call.split("(")[0]


def _args(call):
    return call[call.index("("):]


@pytest.fixture(scope="module")
def daily(spark, tmp_path_factory):
    spark.sql("""SELECT id % 7 AS k, CAST(id % 365 AS INT) AS day,
                        IF(id % 11 = 0, NULL, (id * 7919 % 1000) / 7.0D) AS x,
                        IF(id % 13 = 0, NULL, id * 31 % 1000 - 500) AS n, id % 3 = 0 AS flag
                 FROM range(20000)""").createOrReplaceTempView("events")
    path = str(tmp_path_factory.mktemp("states") / "daily")
    states = ", ".join(f"df_{_name(c)}_state{_args(c)} AS s{i}" for i, (c, _, _) in enumerate(CALLS))
    spark.sql(f"SELECT k, day, {states} FROM events GROUP BY k, day").write.parquet(path)
    spark.read.parquet(path).createOrReplaceTempView("daily")
    merged = ", ".join(f"df_{_name(c)}_merge_state(s{i}) AS s{i}" for i, (c, _, _) in enumerate(CALLS))
    spark.sql(f"SELECT k, day DIV 30 AS month, {merged} FROM daily GROUP BY k, day DIV 30") \
        .createOrReplaceTempView("monthly")
    return path


def _direct(spark):
    cols = ", ".join(f"df_{c}" for c, _, _ in CALLS)
    return [tuple(r) for r in spark.sql(f"SELECT k, {cols} FROM events GROUP BY k ORDER BY k").collect()]


@pytest.mark.slow
def test_monthly_rollup_of_stored_daily_states_equals_direct(spark, daily):
    cols = ", ".join(f"df_{_name(c)}_merge(s{i})" for i, (c, _, _) in enumerate(CALLS))
    rolled = [tuple(r) for r in spark.sql(f"SELECT k, {cols} FROM monthly GROUP BY k ORDER BY k").collect()]
    assert oracle.same_rows(rolled, _direct(spark))


@pytest.mark.slow
def test_finalize_through_register_java_function(spark, daily):
    for i, (call, cls, return_type) in enumerate(CALLS):
        if return_type is None:
            spark.udf.registerJavaFunction(f"final_{i}", f"sparkagg.udf.{cls}")
        else:
            spark.udf.registerJavaFunction(f"final_{i}", f"sparkagg.udf.{cls}", return_type)
    merged = ", ".join(f"df_{_name(c)}_merge_state(s{i}) AS s{i}" for i, (c, _, _) in enumerate(CALLS))
    finals = ", ".join(f"final_{i}(s{i})" for i in range(len(CALLS)))
    got = [tuple(r) for r in spark.sql(
        f"SELECT k, {finals} FROM (SELECT k, {merged} FROM monthly GROUP BY k) ORDER BY k").collect()]
    assert oracle.same_rows(got, _direct(spark))


def test_wrong_state_is_rejected_at_analysis(spark, daily):
    with pytest.raises(AnalysisException, match="df_corr_merge.*df_corr_state"):
        spark.sql("SELECT df_corr_merge(s2) FROM daily").schema
