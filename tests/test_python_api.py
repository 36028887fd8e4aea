"""The Python surface: session / register / register_class, Column functions (their docstring examples
run), analysis errors as PySpark sees them, and the CLI."""
from __future__ import annotations

import doctest
import os
import subprocess
import sys
from pathlib import Path

import pytest
from pyspark.errors import AnalysisException

import sparkagg
import sparkagg.functions as SF

CLI = [sys.executable, "-m", "sparkagg.cli"]


@pytest.mark.spark
def test_jar_path_points_at_the_built_jar():
    assert Path(sparkagg.jar_path()).is_file() and sparkagg.jar_path().endswith(sparkagg.jar_name())


def test_a_column_function_for_every_function_and_alias_of_the_catalogue(spark):
    named = {n for f in sparkagg.catalogue(spark) for n in [f["name"], *f["aliases"]]}
    columns = set(SF.__all__) - {"with_prefix", "for_session"}
    assert columns <= named, f"Column functions the catalogue does not name: {sorted(columns - named)}"
    wanted = {f["name"] for f in sparkagg.catalogue(spark)}
    assert wanted <= columns, f"catalogue functions without a Column function: {sorted(wanted - columns)}"


@pytest.mark.slow
def test_column_function_examples_run(spark):
    functions = SF.__all__
    assert all(">>>" in getattr(SF, n).__doc__ for n in functions), "every function has an example"
    result = doctest.testmod(SF, extraglobs={"spark": spark}, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > len(functions) and result.failed == 0


@pytest.mark.slow
def test_column_functions_grouped(spark):
    df = spark.createDataFrame([("a", 1, 2.0), ("a", 3, None), ("b", None, 5.0)], "k string, x int, y double")
    rows = df.groupBy("k").agg(SF.count().alias("n"), SF.sum("x").alias("s"), SF.avg("y").alias("a"),
                               SF.min("x").alias("lo"), SF.max("y").alias("hi")).orderBy("k").collect()
    assert [tuple(r) for r in rows] == [("a", 2, 4, 2.0, 1, 2.0), ("b", 1, None, 5.0, None, 5.0)]


def test_register_on_a_running_session_with_another_prefix(spark):
    other = spark.newSession()
    sparkagg.register(other, prefix="p_")
    assert other.sql("SELECT p_sum(x), p_count() FROM VALUES (1), (2) AS t(x)").first() == (3, 2)


def test_each_session_s_columns_use_its_own_prefix(spark):
    """Two sessions of one process registered under different prefixes: a Column function called while
    a session is active (classic PySpark makes a session active when it creates a DataFrame) names that
    session's function, and a bound namespace names its own, whichever session is active."""
    other = spark.newSession()
    sparkagg.register(other, prefix="q_")
    rows = [(1,), (2,)]

    def column_names(session, columns):
        df = session.createDataFrame(rows, "x int")  # session is now the active one
        return df.select(*columns()).columns

    assert column_names(other, lambda: [SF.sum("x"), SF.nth_value("x", 1, order_by="x")]) == [
        "q_sum(x)", "q_nth_value(x, 1, x)"]  # Spark names a WITHIN GROUP call by its arguments
    assert column_names(spark, lambda: [SF.sum("x")]) == ["df_sum(x)"]
    assert column_names(other, lambda: [SF.for_session(spark).sum("x"), SF.with_prefix("q_").count()]) == [
        "df_sum(x)", "q_count()"]
    df = spark.createDataFrame(rows, "x int")
    with pytest.raises(AnalysisException, match="q_sum"):
        df.select(SF.for_session(other).sum("x")).schema  # q_sum is registered in the other session only


def test_register_class_from_python_by_class_name(spark):
    sparkagg.register_class(spark, "my_avg", "sparkagg.testing.MyAvg")
    rows = spark.sql("SELECT k, my_avg(x) FROM VALUES (1, 1.0), (1, 2.0), (2, 6.0), (2, NULL) AS t(k, x) "
                     "GROUP BY k ORDER BY k").collect()
    assert [tuple(r) for r in rows] == [(1, 1.5), (2, 6.0)]


def test_wrong_argument_type_fails_at_analysis(spark):
    df = spark.createDataFrame([("x",)], "s string")
    with pytest.raises(AnalysisException, match=r"df_avg.*numeric.*string"):
        df.select(SF.avg("s")).schema


def _cli(*args, timeout=300):
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=timeout, env=env)


@pytest.mark.spark
@pytest.mark.slow
def test_cli_sql_csv_and_exit_codes():
    ok = _cli("sql", "--master", "local[1]", "--format", "csv",
              "SELECT k, df_avg(x) AS a FROM VALUES (1, 2), (1, 4), (2, NULL) AS t(k, x) GROUP BY k ORDER BY k")
    assert ok.returncode == 0, ok.stderr[-2000:]
    assert ok.stdout.splitlines() == ["k,a", "1,3.0", "2,"]
    bad = _cli("sql", "--master", "local[1]", "SELECT df_avg('text')")
    assert bad.returncode == 1 and "df_avg" in bad.stderr
    assert _cli("sql").returncode == 2
