"""Differential check: run an aggregate query on Spark and compute it again with the reference model.

    >>> from sparkagg.check import check
    >>> check(spark, "SELECT k, df_avg(x) FROM VALUES ('a', 1), ('a', 2), ('b', 4) AS t(k, x) GROUP BY k")
    []

Scope: ``SELECT <items> FROM <anything> [WHERE ...] [GROUP BY <keys> | GROUP BY ALL] [ORDER BY ...]``
where every item is either a sparkagg aggregate call ``df_f([DISTINCT] args | *)`` with an optional
``FILTER (WHERE cond)`` and alias, or a grouping expression (no aggregate inside it). Without GROUP BY
every item must be an aggregate call. Anything else (HAVING, LIMIT, set operations, an aggregate
inside an expression, window functions with OVER) raises ``UnsupportedQuery`` with the reason.

How: the query is split at its top-level clauses (a small scanner that knows quotes, comments and
parentheses; the expressions themselves are left to Spark). Spark runs a projection of the same FROM
and WHERE that computes each row's group keys, the non-aggregate items and every aggregate's
arguments and filter, and hands it over as Arrow. The model groups those rows (NULL is a group, all
NaNs one group, -0.0 and 0.0 one group, as Spark groups), applies DISTINCT (per group, as Spark's
DISTINCT keyword does, floats normalised the same way) and runs each aggregate through
``reference.aggregate_groups`` (GroupsAccumulators, multi-phase). Spark's own result of the query
(also as Arrow) is compared row by row: rows are matched by their non-aggregate items, ORDER BY is
ignored, floats agree within ``rel_tol`` (NaN equals NaN), everything else exactly. A query both
sides refuse with an arithmetic overflow (ANSI mode) counts as equal.
"""
from __future__ import annotations

import decimal
import math
import re
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from . import DEFAULT_PREFIX, PREFIX_CONF
from .reference import drivers, registry


class UnsupportedQuery(ValueError):
    """The query is outside what ``check`` can recompute; the message says why."""


@dataclass
class Difference:
    """One disagreement: ``kind`` is "value", "only in Spark", "only in model" or "error"."""

    kind: str
    key: tuple
    column: str | None = None
    spark: Any = None
    model: Any = None

    def __str__(self) -> str:
        where = f"group {_show(self.key)}" if self.key else "row"
        if self.kind == "value":
            return f"{where}, {self.column}: Spark {_show(self.spark)} != model {_show(self.model)}"
        if self.kind == "error":
            return f"error: Spark {self.spark}; model {self.model}"
        row = self.spark if self.kind == "only in Spark" else self.model
        return f"{self.kind}: {where}: {_show(row)}"



def to_arrow(df) -> pa.Table:
    """The DataFrame's rows as an Arrow table (Spark 3.5's DataFrame has no toArrow)."""
    if hasattr(df, "toArrow"):
        return df.toArrow()
    from pyspark.sql import Row
    from pyspark.sql.pandas.types import to_arrow_schema

    def plain(v):
        if isinstance(v, Row):
            return {k: plain(x) for k, x in v.asDict().items()}
        if isinstance(v, list):
            return [plain(x) for x in v]
        if isinstance(v, dict):
            return [(k, plain(x)) for k, x in v.items()]
        return v

    schema = to_arrow_schema(df.schema)
    rows = df.collect()
    return pa.Table.from_arrays([pa.array([plain(r[i]) for r in rows], type=f.type) for i, f in enumerate(schema)],
                                schema=schema)

def _show(value: Any) -> str:
    if isinstance(value, tuple):
        return "(" + ", ".join(_show(v) for v in value) + ")"
    return "NULL" if value is None else repr(value)


# --- scanning ---------------------------------------------------------------------------------

def _mask(sql: str) -> str:
    """``sql`` with string literals, quoted identifiers and comments blanked (same length), so that
    keywords and punctuation found in the mask are real ones."""
    out = list(sql)
    i, n = 0, len(sql)
    while i < n:
        c = sql[i]
        if c == "-" and sql.startswith("--", i):
            j = sql.find("\n", i)
            j = n if j < 0 else j
        elif c == "/" and sql.startswith("/*", i):
            j = sql.find("*/", i + 2)
            if j < 0:
                raise UnsupportedQuery("unterminated /* comment")
            j += 2
        elif c in "'\"`":
            j = i + 1
            while j < n and sql[j] != c:
                j += 2 if sql[j] == "\\" and c != "`" else 1
            if j >= n:
                raise UnsupportedQuery(f"unterminated {c} quote")
            j += 1
            for k in range(i + 1, j - 1):  # keep the quotes themselves, blank the inside
                out[k] = " "
            i = j
            continue
        else:
            i += 1
            continue
        for k in range(i, j):
            out[k] = " "
        i = j
    return "".join(out)


def _depths(masked: str) -> list[int]:
    """The parenthesis depth at each character (an opening parenthesis belongs to the outside)."""
    depth, out = 0, []
    for c in masked:
        if c == ")":
            depth -= 1
            if depth < 0:
                raise UnsupportedQuery("unbalanced parentheses")
        out.append(depth)
        if c == "(":
            depth += 1
    if depth:
        raise UnsupportedQuery("unbalanced parentheses")
    return out


def _top_level(masked: str) -> str:
    """The mask with everything inside parentheses blanked as well."""
    depths = _depths(masked)
    return "".join(c if d == 0 else " " for c, d in zip(masked, depths))


def _split_commas(text: str) -> list[str]:
    """``text`` split at its top-level commas."""
    top = _top_level(_mask(text))
    parts, start = [], 0
    for i, c in enumerate(top):
        if c == ",":
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p.strip() for p in parts]


_CLAUSES = re.compile(
    r"\b(FROM|WHERE|GROUP\s+BY|HAVING|ORDER\s+BY|SORT\s+BY|CLUSTER\s+BY|DISTRIBUTE\s+BY|LIMIT|OFFSET|"
    r"WINDOW|QUALIFY|UNION|INTERSECT|EXCEPT|MINUS|LATERAL\s+VIEW)\b", re.IGNORECASE)
_UNSUPPORTED_CLAUSES = ("HAVING", "LIMIT", "OFFSET", "WINDOW", "QUALIFY", "UNION", "INTERSECT", "EXCEPT",
                        "MINUS", "SORT BY", "CLUSTER BY", "DISTRIBUTE BY", "LATERAL VIEW")
_IDENT = r"(?:[A-Za-z_][A-Za-z0-9_]*|`[^`]*`)"


@dataclass
class Aggregate:
    """One aggregate item: ``name`` without the prefix, its argument expressions, DISTINCT, FILTER."""

    name: str
    args: list[str]
    distinct: bool = False
    filter: str | None = None


@dataclass
class Item:
    text: str  # the expression as written (without alias)
    alias: str | None
    aggregate: Aggregate | None


@dataclass
class Query:
    items: list[Item]
    source: str  # the FROM clause's text, verbatim
    where: str | None
    group_by: list[str] | None  # expressions; None without GROUP BY


def parse(sql: str, prefix: str = "df_") -> Query:
    """The structure of an aggregate query in ``check``'s scope, or ``UnsupportedQuery``."""
    sql = sql.strip().rstrip(";").strip()
    masked = _mask(sql)
    top = _top_level(masked)
    m = re.match(r"\s*SELECT\b", top, re.IGNORECASE)
    if not m:
        raise UnsupportedQuery("only SELECT queries are checked (no WITH, no other statements)")
    if re.match(r"\s*(DISTINCT|ALL)\b", top[m.end():], re.IGNORECASE):
        raise UnsupportedQuery("SELECT DISTINCT / SELECT ALL is not in scope")
    if re.search(r"\bOVER\b", masked, re.IGNORECASE):
        raise UnsupportedQuery("window function (OVER ...): check covers grouped and global aggregates only")
    clauses = [(c.start(), re.sub(r"\s+", " ", c.group(1).upper()), c.end()) for c in _CLAUSES.finditer(top)]
    if not clauses or clauses[0][1] != "FROM":
        raise UnsupportedQuery("the query needs a FROM clause")
    for _, name, _ in clauses:
        if name in _UNSUPPORTED_CLAUSES:
            raise UnsupportedQuery(f"{name} is not in scope")
    seen = [name for _, name, _ in clauses]
    if len(set(seen)) != len(seen):
        raise UnsupportedQuery("a clause appears twice at the top level")
    bodies = {name: sql[end:(clauses[i + 1][0] if i + 1 < len(clauses) else len(sql))].strip()
              for i, (_, name, end) in enumerate(clauses)}
    items = [_item(text, prefix) for text in _split_commas(sql[m.end():clauses[0][0]])]
    group_by = None
    if "GROUP BY" in bodies:
        body = bodies["GROUP BY"]
        if re.match(r"(GROUPING\s+SETS|ROLLUP|CUBE)\b", body, re.IGNORECASE) or re.search(
                r"\bWITH\s+(ROLLUP|CUBE)\b", body, re.IGNORECASE):
            raise UnsupportedQuery("GROUPING SETS, ROLLUP and CUBE are not in scope")
        if body.upper() == "ALL":
            group_by = [it.text for it in items if it.aggregate is None]
        else:
            group_by = [_resolve_key(k, items) for k in _split_commas(body)]
    elif any(it.aggregate is None for it in items):
        raise UnsupportedQuery("without GROUP BY every select item must be a sparkagg aggregate call")
    if not any(it.aggregate for it in items):
        raise UnsupportedQuery(f"no {prefix} aggregate call among the select items")
    return Query(items, bodies["FROM"], bodies.get("WHERE"), group_by)


def _resolve_key(key: str, items: list[Item]) -> str:
    """A GROUP BY entry as an expression: ordinals and select aliases stand for the item."""
    if re.fullmatch(r"\d+", key):
        position = int(key)
        if not 1 <= position <= len(items) or items[position - 1].aggregate:
            raise UnsupportedQuery(f"GROUP BY {key} does not name a non-aggregate select item")
        return items[position - 1].text
    for it in items:
        if it.alias is not None and it.alias.strip("`").lower() == key.strip("`").lower() and it.aggregate is None:
            if not any(other.text.strip("`").lower() == key.strip("`").lower() for other in items):
                return it.text
    return key


def _item(text: str, prefix: str) -> Item:
    if not text:
        raise UnsupportedQuery("an empty select item")
    top = _top_level(_mask(text))
    alias = None
    m = re.search(rf"\s+AS\s+({_IDENT})\s*$", top, re.IGNORECASE)
    cut = m.start() if m else None
    if m is None:  # a bare alias right after a call: df_sum(x) total
        m = re.search(rf"\)\s+({_IDENT})\s*$", top)
        if m and m.group(1).upper() in ("FILTER", "OVER"):
            m = None
        cut = m.start(1) if m else None
    if m:
        alias = text[m.start(1):m.end(1)]
        text = text[:cut].strip()
        top = top[:cut].rstrip()
    call = re.match(rf"\s*({re.escape(prefix)}[A-Za-z0-9_]+)\s*\(", top, re.IGNORECASE)
    masked = _mask(text)
    if call is None:
        if re.search(rf"\b{re.escape(prefix)}[A-Za-z0-9_]+\s*\(", masked, re.IGNORECASE):
            raise UnsupportedQuery(f"an aggregate call inside an expression ({text}) is not in scope")
        return Item(text, alias, None)
    open_at = call.end() - 1
    depths = _depths(masked)
    close_at = next((i for i in range(open_at + 1, len(text))
                     if masked[i] == ")" and depths[i] == depths[open_at]), None)
    if close_at is None:
        raise UnsupportedQuery(f"unbalanced call in {text}")
    rest = text[close_at + 1:].strip()
    filter_expr = None
    if rest:
        f = re.fullmatch(r"FILTER\s*\(\s*WHERE\b(.*)\)", rest, re.IGNORECASE | re.DOTALL)
        if f is None:
            raise UnsupportedQuery(f"an aggregate call inside an expression ({text}) is not in scope")
        filter_expr = f.group(1).strip()
    inner = text[open_at + 1:close_at].strip()
    distinct = False
    q = re.match(r"(DISTINCT|ALL)\b", inner, re.IGNORECASE)
    if q:
        distinct = q.group(1).upper() == "DISTINCT"
        inner = inner[q.end():].strip()
    args = [] if inner in ("", "*") else _split_commas(inner)
    full = call.group(1)
    name = full[len(prefix):].lower()
    if re.search(r"_(state|merge|merge_state|finalize)$", name):
        raise UnsupportedQuery(f"{full}: the state-as-data forms are not in scope")
    try:
        registry.get(name)
    except KeyError:
        raise UnsupportedQuery(f"{full}: no reference model of {name!r}") from None
    return Item(text, alias, Aggregate(name, args, distinct, filter_expr))


# --- the model's side -------------------------------------------------------------------------

def _freeze(value: Any) -> Any:
    """A hashable grouping key, normalised as Spark groups: NaN one value, -0.0 == 0.0."""
    if isinstance(value, list):
        return tuple(_freeze(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((k, _freeze(v)) for k, v in value.items()))
    return drivers._group_key(value)


def _columns(table: pa.Table) -> list[pa.Array]:
    return [c.combine_chunks() if isinstance(c, pa.ChunkedArray) else c for c in table.columns]


def _with_parameters(name: str, args: list[pa.Array]):
    """The model of ``name`` with its literal parameters bound: string_agg's delimiter, which Spark's
    projection hands over as a constant column."""
    function = registry.get(name)
    if name == "string_agg" and len(args) == 2:
        delimiters = set(args[1].to_pylist())
        if len(delimiters) > 1:
            raise UnsupportedQuery("string_agg's delimiter must be a constant")
        function = function.bind(delimiter=delimiters.pop() if delimiters else "")
    return function


def model_rows(spark, query: Query, ansi: bool, seed: int = 0, partitions: int = 3,
               models: dict[str, str] | None = None) -> list[tuple]:
    """The query's result rows as the reference model computes them from Spark's projection.
    ``models`` ({function: other function}) computes a function with another's model instead."""
    models = models or {}
    exprs: list[str] = []

    def add(expr: str) -> int:
        exprs.append(f"({expr}) AS `__c{len(exprs)}`")
        return len(exprs) - 1

    keys = [add(k) for k in query.group_by or []]
    plain = {i: add(it.text) for i, it in enumerate(query.items) if it.aggregate is None}
    calls = {}
    for i, it in enumerate(query.items):
        if it.aggregate is not None:
            agg = it.aggregate
            calls[i] = ([add(a) for a in agg.args], None if agg.filter is None else add(agg.filter))
    if not exprs:
        add("1")
    projection = f"SELECT {', '.join(exprs)} FROM {query.source}"
    if query.where:
        projection += f" WHERE {query.where}"
    table = to_arrow(spark.sql(projection))
    columns = _columns(table)
    rows = table.num_rows

    grouped = query.group_by is not None
    group_of_row: list[int] = []
    firsts: list[int] = []  # the first row of each group, for the non-aggregate items
    if grouped:
        ids: dict[Any, int] = {}
        key_values = [columns[k].to_pylist() for k in keys]
        for r in range(rows):
            key = tuple(_freeze(col[r]) for col in key_values)
            if key not in ids:
                ids[key] = len(ids)
                firsts.append(r)
            group_of_row.append(ids[key])
    groups = len(firsts) if grouped else 1

    results: dict[int, list[Any]] = {}
    for i, (arg_cols, filter_col) in calls.items():
        agg = query.items[i].aggregate
        name = models.get(agg.name, agg.name)
        selected = list(range(rows))
        if filter_col is not None:
            flags = columns[filter_col].to_pylist()
            selected = [r for r in selected if flags[r] is True]
        if agg.distinct:
            arg_values = [columns[c].to_pylist() for c in arg_cols]
            seen, kept = set(), []
            for r in selected:
                marker = (group_of_row[r] if grouped else 0, tuple(_freeze(col[r]) for col in arg_values))
                if marker not in seen:
                    seen.add(marker)
                    kept.append(r)
            selected = kept
        taken = pa.array(selected, pa.int64())
        args = [columns[c].take(taken) for c in arg_cols]
        group_keys = pa.array([group_of_row[r] for r in selected], pa.int64()) if grouped else None
        function = _with_parameters(name, args)
        by_group = drivers.aggregate_groups(
            function, [a.type for a in args], args, keys=group_keys, partitions=partitions, seed=seed,
            ansi=ansi, num_rows=len(selected))
        empty = None
        if grouped and len(by_group) < groups:  # every row filtered out of some group: its empty value
            accumulator = function.groups([a.type for a in args], ansi)
            accumulator.update_batch([a.slice(0, 0) for a in args] or [pa.array([], pa.int64())], [], None, 1)
            empty = accumulator.evaluate().to_pylist()[0]
        results[i] = [by_group.get(g, empty) for g in range(groups)] if grouped else [by_group[None]]

    plain_values = {i: columns[c].to_pylist() for i, c in plain.items()}
    out = []
    for g in range(groups):
        out.append(tuple(plain_values[i][firsts[g]] if i in plain_values else results[i][g]
                         for i in range(len(query.items))))
    return out


# --- comparing --------------------------------------------------------------------------------

def _equal(a: Any, b: Any, rel_tol: float, abs_tol: float) -> bool:
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b or (type(a) is type(b) and a == b)
    if isinstance(a, float) or isinstance(b, float):
        if not isinstance(a, (int, float, decimal.Decimal)) or not isinstance(b, (int, float, decimal.Decimal)):
            return False
        a, b = float(a), float(b)
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        if math.isinf(a) or math.isinf(b):
            return a == b
        return math.isclose(a, b, rel_tol=rel_tol, abs_tol=abs_tol)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_equal(x, y, rel_tol, abs_tol) for x, y in zip(a, b))
    return a == b


def _sort_key(row: tuple) -> tuple:
    def one(v: Any) -> tuple:
        if v is None:
            return (0, "")
        if isinstance(v, float) and math.isnan(v):
            return (2, "")
        if isinstance(v, (int, float, decimal.Decimal)) and not isinstance(v, bool):
            return (1, f"{float(v):+.6e}")
        return (3, repr(v))
    return tuple(one(v) for v in row)


def compare(spark_rows: list[tuple], model: list[tuple], query: Query, rel_tol: float,
            abs_tol: float = 0.0) -> list[Difference]:
    """Differences between Spark's rows and the model's, matched by their non-aggregate items."""
    key_at = [i for i, it in enumerate(query.items) if it.aggregate is None]
    names = [it.alias or it.text for it in query.items]

    def buckets(rows):
        out: dict[Any, list[tuple]] = {}
        for row in rows:
            out.setdefault(tuple(_freeze(row[i]) for i in key_at), []).append(row)
        return out

    ours, theirs = buckets(model), buckets(spark_rows)
    diffs = []
    for key in list(dict.fromkeys([*theirs, *ours])):
        s_rows = sorted(theirs.get(key, []), key=_sort_key)
        m_rows = sorted(ours.get(key, []), key=_sort_key)
        shown = tuple(s_rows[0][i] if s_rows else m_rows[0][i] for i in key_at)
        unmatched = []
        for m_row in m_rows:  # greedy: the first Spark row equal to it, else the next in order
            j = next((j for j, s_row in enumerate(s_rows)
                      if all(_equal(a, b, rel_tol, abs_tol) for a, b in zip(s_row, m_row))), None)
            if j is None:
                unmatched.append(m_row)
            else:
                s_rows.pop(j)
        for s_row, m_row in zip(s_rows, unmatched):
            for i, (a, b) in enumerate(zip(s_row, m_row)):
                if not _equal(a, b, rel_tol, abs_tol):
                    diffs.append(Difference("value", shown, names[i], a, b))
        for s_row in s_rows[len(unmatched):]:
            diffs.append(Difference("only in Spark", shown, spark=s_row))
        for m_row in unmatched[len(s_rows):]:
            diffs.append(Difference("only in model", shown, model=m_row))
    return diffs


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
        spark_rows = list(zip(*[c.to_pylist() for c in _columns(table)])) if table.num_columns else []
    except Exception as e:  # noqa: BLE001 - Spark's error is part of the answer
        spark_error = e
    try:
        model = model_rows(spark, query, ansi, seed=seed, partitions=partitions, models=models)
    except OverflowError as e:
        model_error = e
    if spark_error is not None or model_error is not None:
        if spark_error is not None and model_error is not None and _overflow_error(spark_error):
            return []
        first_line = lambda e: "no error" if e is None else str(e).strip().splitlines()[0]  # noqa: E731
        if spark_error is not None and model_error is None and not _overflow_error(spark_error):
            raise spark_error  # the query itself is wrong (or the projection would be): not a difference
        return [Difference("error", (), spark=first_line(spark_error), model=first_line(model_error))]
    return compare(spark_rows, model, query, rel_tol, abs_tol)
