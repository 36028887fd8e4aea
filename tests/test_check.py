"""sparkagg.check and `sparkagg check`: Spark's results against the reference model over the same input.

Also the inventory: every df_ function Spark has registered must have a reference twin.
"""
from __future__ import annotations

import math
import shlex
from pathlib import Path

import pytest

import sqlcases
import sweep
from sparkagg import STATE_FORMS, cli, reference
from sparkagg.check import Difference, UnsupportedQuery, check, parse

ROOT = Path(__file__).resolve().parent.parent
SQL_CASES = [(f, c) for f in sorted((ROOT / "sql").glob("*.sql")) for c in sqlcases.parse(f)]

# 40 rows: keys with NULLs, ints with NULLs, doubles with a NaN, an infinity and -0.0, booleans, y/x pairs,
# a small integer g, a unique u (an order without ties).
ROWS = []
for i in range(40):
    k = None if i % 11 == 0 else "abc"[i % 3]
    x = None if i % 7 == 3 else (i * 37) % 23 - 9
    special = {5: "double('NaN')", 17: "double('Infinity')", 21: "-0.0D"}
    d = special.get(i, "NULL" if i % 9 == 4 else f"{(i * 13) % 17 / 4}D")
    b = "NULL" if i % 10 == 6 else ("true" if i % 4 else "false")
    y = "NULL" if i % 8 == 2 else f"{(i * 7) % 19 - 4.5}D"
    ROWS.append(f"({'NULL' if k is None else repr(k)}, {'NULL' if x is None else x}, {d}, {b}, {y}, {i % 5}, "
                f"{(i * 17) % 40})")
DATA = f"VALUES {', '.join(ROWS)} AS t(k, x, d, b, y, g, u)"

ONE_ARG = {"count": "x", "sum": "x", "avg": "d", "mean": "x", "min": "d", "max": "d", "bit_and": "x",
           "bit_or": "x", "bit_xor": "x", "bool_and": "b", "bool_or": "b", "var": "x", "var_samp": "d",
           "var_pop": "x", "var_sample": "x", "var_population": "x", "stddev": "x", "stddev_samp": "x",
           "stddev_pop": "x", "median": "d", "approx_distinct": "x", "skewness": "d", "kurtosis": "x",
           "kurtosis_pop": "d", "mode": "x", "array_agg": "d", "first_value": "d", "any_value": "k",
           "approx_median": "y"}
# Functions with constant parameters or another shape. Without WITHIN GROUP, array_agg and string_agg
# compare as multisets, first/last/nth_value and any_value as one of the values that may come first, the
# t-digest functions by rank (check's module docstring).
OTHER = {"string_agg": "df_string_agg(k, ',')", "last_value": "df_last_value(x, true)",
         "nth_value": "df_nth_value(x, 2)", "max_by": "df_max_by(x, y)", "min_by": "df_min_by(d, x)",
         "percentile_cont": "df_percentile_cont(x, 0.25)", "quantile_cont": "df_quantile_cont(y, 0.5)",
         "approx_percentile_cont": "df_approx_percentile_cont(x, 0.9)",
         "approx_percentile_cont_with_weight": "df_approx_percentile_cont_with_weight(x, g, 0.5)"}


def calls() -> list[str]:
    """One call of every registered reference function (aliases included) over DATA's columns."""
    out = []
    for name in reference.names():
        if name in OTHER:
            out.append(OTHER[name])
        elif name in ONE_ARG:
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
    checked = {c.split("(")[0] for c in calls()}
    assert set(registered(spark)) <= checked


@pytest.mark.parametrize("grouping", [sweep.slow("GROUP BY k"), sweep.slow("GROUP BY k, g"), ""])
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
    # calls inside expressions, HAVING over calls (Spark evaluates them over the model's values)
    f"SELECT k, df_sum(x) / df_count(x) AS mean, df_max(x) - df_min(x) FROM {DATA} GROUP BY k HAVING df_count(*) > 3",
    # timestamps and dates among the calls' results when Spark finishes HAVING over the model's values
    "SELECT k, df_max(ts), df_min(dt) FROM VALUES (1, TIMESTAMP'2020-01-01 10:00:00', DATE'2020-01-01'), "
    "(1, TIMESTAMP'1920-01-01 10:00:00', NULL), (2, NULL, DATE'1960-03-01') AS t(k, ts, dt) GROUP BY k "
    "HAVING df_count(*) > 1",
    # constant parameters, WITHIN GROUP in both directions, FILTER with WITHIN GROUP, a join in FROM
    f"SELECT k, df_percentile_cont(0.75) WITHIN GROUP (ORDER BY y DESC), df_approx_percentile_cont(0.1, 50) "
    f"WITHIN GROUP (ORDER BY x), df_string_agg(k, '-') WITHIN GROUP (ORDER BY g DESC, u), "
    f"df_array_agg(d) WITHIN GROUP (ORDER BY u) FILTER (WHERE b), df_nth_value(x, -2) WITHIN GROUP (ORDER BY g, u), "
    f"df_first_value(y, true) WITHIN GROUP (ORDER BY x DESC NULLS FIRST, u) FROM {DATA} GROUP BY k",
    "SELECT a.k, df_sum(a.x * b.w), df_array_agg(b.w) FROM VALUES ('a', 1), ('a', 2), ('b', 3) AS a(k, x) "
    "JOIN VALUES ('a', 10), ('b', 20), ('b', 30) AS b(k, w) ON a.k = b.k GROUP BY a.k",
    # windows: ROWS and RANGE frames, both directions, empty frames at the edges, DISTINCT, the defaults
    f"SELECT g, y, df_sum(x) OVER (PARTITION BY k ORDER BY y, g ROWS BETWEEN 2 PRECEDING AND 1 FOLLOWING), "
    f"df_avg(d) OVER (ORDER BY y DESC, g ROWS BETWEEN 3 PRECEDING AND 1 PRECEDING), "
    f"df_count(DISTINCT x) OVER (PARTITION BY g ORDER BY y, k ROWS BETWEEN 1 FOLLOWING AND 4 FOLLOWING) "
    f"FROM (SELECT * FROM {DATA} WHERE y IS NOT NULL AND k IS NOT NULL)",
    "SELECT o, df_sum(x) OVER (ORDER BY o RANGE BETWEEN 5 PRECEDING AND 2 FOLLOWING), "
    "df_median(x) OVER (PARTITION BY p ORDER BY o DESC RANGE BETWEEN 3 PRECEDING AND CURRENT ROW), "
    "df_array_agg(x) OVER (ORDER BY o), df_max(x) OVER (PARTITION BY p) FROM VALUES (1, 4, 0), (2, NULL, 1), "
    "(2, 7, 0), (5, -1, 1), (9, 3, 0), (10, 8, 1), (10, 2, 1), (17, 5, 0) AS t(o, x, p)",
]


# make check takes the first four (grouped and global, over rows and over none, expressions as keys); make
# test every one.
@pytest.mark.parametrize("query", [q if i < 4 else sweep.slow(q) for i, q in enumerate(QUERIES)],
                         ids=range(len(QUERIES)))
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
    ("SELECT count(*), df_sum(x) FROM t", "Spark's own aggregate"),
    ("SELECT df_sum(x), df_avg(x) OVER (ORDER BY x) FROM t", "with and without OVER"),
    ("SELECT df_sum(x) OVER (ORDER BY x) + 1 FROM t", "window call inside an expression"),
    ("SELECT df_sum(df_avg(x)) FROM t", "inside another call"),
    ("SELECT k, df_sum(x) FROM t", "GROUP BY"),
    ("SELECT k, df_sum(x) FROM t GROUP BY k WITH ROLLUP", "ROLLUP"),
    ("SELECT df_sum(x) FROM t LIMIT 3", "LIMIT"),
    ("SELECT df_sum(x) FROM t UNION ALL SELECT df_sum(x) FROM t", "set operations"),
    ("SELECT df_sum(x) OVER (ROWS 1 PRECEDING) FROM t", "without ORDER BY"),
    ("SELECT (SELECT df_sum(x) FROM t) FROM u", "subquery"),
    ("SELECT df_sum_state(x) FROM t", "state-as-data"),
    ("SELECT df_nope(x) FROM t", "no reference model"),
    ("SELECT k FROM t GROUP BY k", "no df_ aggregate"),
    ("SHOW TABLES", "only SELECT"),
])
def test_out_of_scope_queries_say_why(sql, reason):
    with pytest.raises(UnsupportedQuery, match=reason):
        parse(sql)


@pytest.mark.parametrize("sql", [
    "SELECT df_sum(x) OVER (ORDER BY o ROWS 1 PRECEDING) FROM VALUES (1, 1), (1, 2), (2, 3) AS t(o, x)",
    "SELECT df_array_agg(x) WITHIN GROUP (ORDER BY o) FROM VALUES (1, 1), (1, 2), (2, 3) AS t(o, x)",
])
def test_orders_with_ties_are_refused(spark, sql):
    with pytest.raises(UnsupportedQuery, match="tie"):
        check(spark, sql)


@pytest.mark.parametrize("sql,model", [
    ("SELECT o, df_sum(x) OVER (ORDER BY o DESC RANGE BETWEEN 2 PRECEDING AND 1 FOLLOWING) FROM "
     "VALUES (1, 1), (5, 2), (6, 3), (8, 4), (9, 5) AS t(o, x)", {"sum": "count"}),
    (f"SELECT k, df_approx_percentile_cont(x, 0.9) FROM {DATA} GROUP BY k", {"approx_percentile_cont": "min"}),
    (f"SELECT k, df_array_agg(x) FROM {DATA} GROUP BY k", {"array_agg": "nth_value"}),
])
def test_a_wrong_model_of_windows_and_judged_answers_is_reported(spark, sql, model):
    # nth_value's model refuses without its n: a model that cannot take the call is said so
    if model.get("array_agg") == "nth_value":
        with pytest.raises(UnsupportedQuery, match="reference model cannot take"):
            check(spark, sql, models=model)
    else:
        assert check(spark, sql, models=model)


@pytest.mark.parametrize("path,case", SQL_CASES, ids=[f"{p.stem}:{c.name}" for p, c in SQL_CASES])
def test_sql_conformance_cases(spark, path, case):
    # An aggregate in a scalar subquery must be refused as such; every other case must agree with the model.
    if "(SELECT " in case.query.upper():
        with pytest.raises(UnsupportedQuery, match="subquery"):
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


@pytest.mark.slow
def test_cli_file_skips_what_it_cannot_check_with_reason(spark, capsys, tmp_path):
    code, out, _ = run_cli(capsys, "-f", str(ROOT / "sql" / "basic.sql"))
    assert code == 0, out
    assert out.count("SKIP") == 1 and "reason: a subquery among the select items" in out
    script = tmp_path / "two.sql"
    script.write_text("SELECT df_count(*) FROM VALUES (1) AS t(x);\n"
                      "SELECT df_sum(x) FROM VALUES (1), (2) AS t(x);\n")
    code, out, _ = run_cli(capsys, "-f", str(script), "--model-of", "sum=count")
    assert code == 1 and out.count("OK") == 1 and out.count("DIFF") == 1


@pytest.mark.parametrize("args", [
    [],
    ["SELECT df_sum(1) FROM t", "-f", "x.sql"],
    ["SELECT count(*), df_sum(x) FROM t"],
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


def test_the_readme_check_line(spark, capsys):
    line = next(s.strip() for s in (ROOT / "README.md").read_text().splitlines()
                if s.startswith('sparkagg check "'))
    code = cli.main(shlex.split(line)[1:])
    out = capsys.readouterr().out
    assert code == 0 and out.startswith("OK"), out
