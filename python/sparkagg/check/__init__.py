"""Differential check: run a query of sparkagg aggregates on Spark and compute it again with the reference model.

    >>> from sparkagg.check import check
    >>> check(spark, "SELECT k, df_avg(x) FROM VALUES ('a', 1), ('a', 2), ('b', 4) AS t(k, x) GROUP BY k")
    []

Scope: one ``SELECT`` over any ``FROM`` (tables, subqueries, joins, VALUES) with an optional ``WHERE``, whose
sparkagg calls ``df_f([DISTINCT] args | *) [WITHIN GROUP (ORDER BY ...)] [FILTER (WHERE ...)]`` take
constant parameters where the function has them (``df_approx_percentile_cont(x, 0.9)``,
``df_string_agg(s, ',')``), and either

- aggregate: ``GROUP BY`` keys (expressions, ordinals, select aliases, ``ALL``) or none, ``HAVING``, and
  calls anywhere in the select items (``df_sum(x) / df_count(x)``); or
- window: every call ``OVER ([PARTITION BY ...] [ORDER BY ...] [ROWS | RANGE frame])``, beside plain
  columns of the row; RANGE offsets need one numeric ORDER BY key.

Anything else (Spark's own aggregates, state forms, ROLLUP, LIMIT, set operations, WITH, a window over
an aggregate) raises ``UnsupportedQuery`` naming what and why, and so does input the model cannot judge
(a ROWS frame over an ORDER BY with ties, whose frames depend on Spark's choice among equal rows).

How: the query is parsed with sqlglot's Spark dialect. Spark runs a projection of the same FROM and
WHERE that computes each row's keys (group, partition, order), every call's arguments, filter and
WITHIN GROUP keys, and hands it over as Arrow. The model groups those rows (NULL is a group, all NaNs
one group, -0.0 and 0.0 one group, as Spark groups), applies DISTINCT and FILTER, and runs each call
through ``drivers.aggregate_groups`` (GroupsAccumulators, multi-phase) or, over windows, each
partition sorted as Spark sorts it through ``drivers.framed`` with the frame's bounds per row. Where
an item is more than a call or a key (an expression over calls, HAVING), Spark evaluates that expression
over the model's values (it is Spark's own arithmetic, not under test). Spark's result of the query (also as
Arrow) is compared row by row: rows are matched by their items without calls, ORDER BY is ignored,
floats agree within ``rel_tol`` (NaN equals NaN), everything else exactly, except where the answer is
free: collections without WITHIN GROUP compare as multisets (string_agg's pieces between its delimiter),
first_value, last_value, nth_value without WITHIN GROUP, any_value and a tie of max_by / min_by
must give one of the values that could come first, the t-digest functions (approx_percentile_cont,
its weighted form, approx_median) must rank within 3% of the model's estimate among the values, and
approx_distinct (whose model hashes with a function of its own) must be within 3% (+2) of the exact count
of distinct values. A query
both sides refuse with an arithmetic overflow (ANSI mode) counts as equal.

Modules: ``query`` (the query parsed, or refused), ``model`` (the input from Spark and the model's rows over
it), ``judge`` (the two sides compared).
"""
from __future__ import annotations

from .. import DEFAULT_PREFIX, PREFIX_CONF
from ..reference import registry
from .judge import Difference, compare
from .model import columns_of, from_arrow, model_rows, to_arrow
from .query import UnsupportedQuery, parse

__all__ = ["Difference", "UnsupportedQuery", "check", "compare", "from_arrow", "parse", "to_arrow"]


def _overflow_error(e: BaseException) -> bool:
    text = str(e)
    return isinstance(e, OverflowError) or "ARITHMETIC_OVERFLOW" in text or "overflow" in text.lower()


def check(spark, sql: str, rel_tol: float = 1e-9, abs_tol: float = 0.0, seed: int = 0,
          partitions: int = 3, models: dict[str, str] | None = None) -> list[Difference]:
    """Run ``sql`` on Spark and with the reference model; the differences (empty when they agree).

    Raises ``UnsupportedQuery`` for a query outside the scope described in the module docstring,
    and Spark's own error when Spark cannot run the query for another reason than an overflow.
    ``seed`` and ``partitions`` choose the model's plan (see ``aggregate_groups``); ``models``
    ({function: other}) deliberately computes a function with another's model, to see check fail."""
    for other in (models or {}).values():
        registry.get(other)
    prefix = spark.conf.get(PREFIX_CONF, DEFAULT_PREFIX)
    query = parse(sql, prefix)
    ansi = str(spark.conf.get("spark.sql.ansi.enabled", "true")).lower() == "true"
    spark_error = model_error = None
    try:
        table = to_arrow(spark.sql(sql.strip().rstrip(";")))
        spark_rows = list(zip(*[c.to_pylist() for c in columns_of(table)])) if table.num_columns else []
    except Exception as e:  # noqa: BLE001 - Spark's error is part of the answer
        if not _overflow_error(e):
            raise  # the query itself is wrong: not a difference
        spark_error = e
    try:
        model = model_rows(spark, query, ansi, seed=seed, partitions=partitions, models=models)
    except OverflowError as e:
        model_error = e
    except Exception as e:
        if spark_error is None or isinstance(e, UnsupportedQuery):
            raise
        model_error = e  # Spark overflowed; Spark's evaluation of the model's values may too
    if spark_error is not None or model_error is not None:
        if spark_error is not None and model_error is not None:
            return []
        first_line = lambda e: "no error" if e is None else str(e).strip().splitlines()[0]  # noqa: E731
        return [Difference("error", (), spark=first_line(spark_error), model=first_line(model_error))]
    return compare(spark_rows, model, query, rel_tol, abs_tol)
