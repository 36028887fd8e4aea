"""sparkagg.check and `sparkagg check`: Spark's results against the reference model over the same input.

Also the inventory: every df_ function Spark has registered must have a reference twin.
"""
from __future__ import annotations

import math
from pathlib import Path

import pytest

import sqlcases
from sparkagg import cli, reference
from sparkagg.check import Difference, UnsupportedQuery, check, parse

ROOT = Path(__file__).resolve().parent.parent
SQL_CASES = [(f, c) for f in sorted((ROOT / "sql").glob("*.sql")) for c in sqlcases.parse(f)]
STATE_FORMS = ("_state", "_merge", "_merge_state", "_finalize")

# 40 rows: keys with NULLs, ints with NULLs, doubles with a NaN, an infinity and -0.0, booleans, y/x pairs.
ROWS = []
for i in range(40):
    k = None if i % 11 == 0 else "abc"[i % 3]
    x = None if i % 7 == 3 else (i * 37) % 23 - 9
    special = {5: "double('NaN')", 17: "double('Infinity')", 21: "-0.0D"}
    d = special.get(i, "NULL" if i % 9 == 4 else f"{(i * 13) % 17 / 4}D")
    b = "NULL" if i % 10 == 6 else ("true" if i % 4 else "false")
    y = "NULL" if i % 8 == 2 else f"{(i * 7) % 19 - 4.5}D"
    ROWS.append(f"({'NULL' if k is None else repr(k)}, {'NULL' if x is None else x}, {d}, {b}, {y}, {i % 5})")
DATA = f"VALUES {', '.join(ROWS)} AS t(k, x, d, b, y, g)"

ONE_ARG = {"count": "x", "sum": "x", "avg": "d", "mean": "x", "min": "d", "max": "d", "bit_and": "x",
           "bit_or": "x", "bit_xor": "x", "bool_and": "b", "bool_or": "b", "var": "x", "var_samp": "d",
           "var_pop": "x", "var_sample": "x", "var_population": "x", "stddev": "x", "stddev_samp": "x",
           "stddev_pop": "x", "median": "d", "approx_distinct": "x", "skewness": "d", "kurtosis": "x",
           "kurtosis_pop": "d", "mode": "x"}
# Unordered array_agg / string_agg give their elements in an order partitioning chooses, which check()
# compares as given; they are checked against DataFusion as multisets in test_oracle.py instead.
# first_value / last_value / nth_value without ORDER BY depend on arrival order the same way (and take
# their ORDER BY, and nth_value its n, as literals check()'s parser does not bind); their model is
# checked against DataFusion in reference/test_ordering_first_last_nth_value.py.
# max_by / min_by over keys that repeat take the first of the tied rows to arrive, the same way.
# any_value gives whichever non-NULL value arrives first.
ORDER_SENSITIVE = {"array_agg", "string_agg", "first_value", "last_value", "nth_value", "max_by", "min_by",
                   "any_value"}
# percentile_cont is written WITHIN GROUP (ORDER BY ...), which check()'s parser does not take; it is
# checked against Spark's own percentile_cont in jvm/src/test/scala/sparkagg/SqlSuite.scala and the model
# by hand in reference/test_percentile.py.
# The t-digest functions take a literal percentile (and are written WITHIN GROUP too); their model is
# checked against DataFusion in reference/test_approx_percentile.py.
WITHIN_GROUP = {"percentile_cont", "quantile_cont", "approx_percentile_cont", "approx_percentile_cont_with_weight"}
# A t-digest's estimate depends on how the rows are batched and partitioned, so Spark's and the model's
# differ within the sketch's error: reference/test_approx_percentile.py checks the model exactly against DataFusion
# on one partition and within 1% of rank across partitions.
APPROXIMATE = {"approx_median"}


def calls() -> list[str]:
    """One call of every registered reference function (aliases included) over DATA's columns."""
    out = []
    for name in reference.names():
        if name in ORDER_SENSITIVE | WITHIN_GROUP | APPROXIMATE:
            continue
        if name in ONE_ARG:
            out.append(f"df_{name}({ONE_ARG[name]})")
        else:  # (y, x) functions
            out.append(f"df_{name}(y, x)")
    return out


def registered(spark) -> list[str]:
    names = [r[0].split(".")[-1] for r in spark.sql("SHOW FUNCTIONS LIKE 'df_*'").collect()]
    return sorted(n for n in names if not n.endswith(STATE_FORMS))


def test_every_registered_function_has_a_reference_twin(spark):
    names = registered(spark)
    assert len(names) >= 30, names
    missing = []
    for name in names:
        try:
            reference.get(name[len("df_"):])
        except KeyError:
            missing.append(name)
    assert missing == [], f"no reference model for {missing}"


def test_every_reference_function_is_checked_here(spark):
    checked = {c.split("(")[0] for c in calls()} | {f"df_{n}" for n in ORDER_SENSITIVE | WITHIN_GROUP | APPROXIMATE}
    assert set(registered(spark)) <= checked


@pytest.mark.parametrize("grouping", ["GROUP BY k", "GROUP BY k, g", ""])
def test_every_function_grouped_and_global(spark, grouping):
    keys = grouping.replace("GROUP BY ", "") + ", " if grouping else ""
    query = f"SELECT {keys}{', '.join(calls())} FROM {DATA} {grouping}"
    assert check(spark, query) == []


QUERIES = [
    # grouped, NULL keys, WHERE, ORDER BY ignored
    f"SELECT k, df_sum(x), df_count(*), df_avg(d) FROM {DATA} WHERE x > -5 GROUP BY k ORDER BY k",
    # global over empty input: one row
    f"SELECT df_count(*), df_sum(x), df_max(d), df_var_pop(x), df_corr(y, x) FROM {DATA} WHERE x > 1000",
    # grouped over empty input: no rows
    f"SELECT k, df_count(*) FROM {DATA} WHERE x > 1000 GROUP BY k",
    # expressions as keys and arguments, aliases, ordinals
    f"SELECT upper(k) AS kk, x % 3 AS r, df_sum(x * 2) AS s, df_min(concat(k, '!')) m FROM {DATA} GROUP BY 1, r",
    # a key not selected; DISTINCT; FILTER
    f"SELECT df_count(DISTINCT x), df_sum(DISTINCT x), df_avg(d) FILTER (WHERE b) FROM {DATA} GROUP BY g",
    # double keys with NaN and -0.0 (one group each, as Spark groups)
    "SELECT d, df_count(*), df_sum(x) FROM VALUES (double('NaN'), 1), (double('NaN'), 2), (0.0D, 3), "
    "(-0.0D, 4), (NULL, 5), (NULL, NULL) AS t(d, x) GROUP BY d",
    # decimals and a subquery
    "SELECT k, df_sum(v), df_avg(v), df_min(v) FROM (SELECT k, CAST(v AS DECIMAL(10, 3)) AS v FROM "
    "VALUES ('a', 1.5), ('a', 2.25), ('b', NULL), ('b', -7.125) AS t(k, v)) GROUP BY ALL",
]


@pytest.mark.parametrize("query", QUERIES, ids=range(len(QUERIES)))
def test_check_queries(spark, query):
    assert check(spark, query) == []


def test_overflow_on_both_sides_is_agreement(spark):
    query = "SELECT df_sum(x) FROM VALUES (9223372036854775807L), (1L) AS t(x)"
    assert check(spark, query) == []


def test_a_wrong_model_is_reported(spark):
    query = f"SELECT k, df_avg(x) FROM {DATA} GROUP BY k"
    diffs = check(spark, query, models={"avg": "sum"})
    assert diffs and all(isinstance(d, Difference) and d.kind == "value" for d in diffs)
    assert len(diffs) == 4  # groups a, b, c and NULL
    assert "df_avg(x)" in str(diffs[0])


def test_rows_missing_on_one_side_are_reported(spark):
    from sparkagg.check import compare
    query = parse("SELECT k, df_sum(x) FROM t GROUP BY k")
    diffs = compare([("a", 1), ("b", 2.0)], [("a", 1), ("c", 2), ("b", math.nan)], query, 1e-9)
    assert sorted(d.kind for d in diffs) == ["only in model", "value"]


@pytest.mark.parametrize("sql,reason", [
    ("SELECT df_sum(x) OVER (ORDER BY x) FROM t", "window"),
    ("SELECT df_sum(x) + 1 FROM t", "inside an expression"),
    ("SELECT k, df_sum(x) FROM t", "GROUP BY"),
    ("SELECT k, df_sum(x) FROM t GROUP BY k HAVING df_sum(x) > 1", "HAVING"),
    ("SELECT df_sum_state(x) FROM t", "state-as-data"),
    ("SELECT df_nope(x) FROM t", "no reference model"),
    ("SELECT k FROM t GROUP BY k", "no df_ aggregate"),
    ("SHOW TABLES", "only SELECT"),
])
def test_out_of_scope_queries_say_why(sql, reason):
    with pytest.raises(UnsupportedQuery, match=reason):
        parse(sql)


@pytest.mark.parametrize("path,case", SQL_CASES, ids=[f"{p.stem}:{c.name}" for p, c in SQL_CASES])
def test_sql_conformance_cases(spark, path, case):
    # check covers grouped and global aggregates: a window case, or an aggregate in a scalar subquery,
    # must be refused as such, every other case must agree with the model.
    if " OVER " in case.query.upper():
        with pytest.raises(UnsupportedQuery, match="window"):
            check(spark, case.query)
    elif "(SELECT " in case.query.upper():
        with pytest.raises(UnsupportedQuery, match="inside an expression"):
            check(spark, case.query)
    else:
        assert check(spark, case.query) == []


# --- the CLI ---------------------------------------------------------------------------------

def run_cli(capsys, *args):
    code = cli.main(["check", "--master", "local[2]", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_cli_equal_is_exit_0(spark, capsys):
    code, out, _ = run_cli(capsys, "SELECT k, df_avg(x) FROM VALUES ('a', 1), ('a', 2) AS t(k, x) GROUP BY k")
    assert code == 0 and out.startswith("OK")


def test_cli_difference_is_exit_1_with_rows(spark, capsys):
    code, out, _ = run_cli(capsys, "--model-of", "avg=sum",
                           "SELECT k, df_avg(x) FROM VALUES ('a', 1), ('a', 2), ('b', 5) AS t(k, x) GROUP BY k")
    assert code == 1
    assert "DIFF" in out and "group ('a'), df_avg(x): Spark 1.5 != model 3" in out


def test_cli_file_skips_windows_with_reason(spark, capsys, tmp_path):
    code, out, _ = run_cli(capsys, "-f", str(ROOT / "sql" / "basic.sql"))
    assert code == 0, out
    assert "SKIP" in out and "reason: window function" in out
    script = tmp_path / "two.sql"
    script.write_text("SELECT df_count(*) FROM VALUES (1) AS t(x);\n"
                      "SELECT df_sum(x) FROM VALUES (1), (2) AS t(x);\n")
    code, out, _ = run_cli(capsys, "-f", str(script), "--model-of", "sum=count")
    assert code == 1 and out.count("OK") == 1 and out.count("DIFF") == 1


@pytest.mark.parametrize("args", [
    [],
    ["SELECT df_sum(1) FROM t", "-f", "x.sql"],
    ["SELECT df_sum(x) OVER () FROM t"],
    ["-f", "/nonexistent/file.sql"],
    ["--model-of", "avg", "SELECT df_avg(x) FROM t"],
    ["--model-of", "avg=nope", "SELECT df_avg(x) FROM t"],
])
def test_cli_bad_usage_is_exit_2(capsys, args):
    code, _, err = run_cli(capsys, *args)
    assert code == 2 and err.startswith("sparkagg check:")


def test_cli_analysis_error_is_exit_2(spark, capsys):
    code, _, err = run_cli(capsys, "SELECT df_sum(nope) FROM VALUES (1) AS t(x)")
    assert code == 2 and "sparkagg check:" in err
