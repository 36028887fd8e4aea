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
"""
from __future__ import annotations

import bisect
import decimal
import math
from dataclasses import dataclass, field
from typing import Any, Callable

import pyarrow as pa
import sqlglot
from sqlglot import exp

from . import DEFAULT_PREFIX, PREFIX_CONF, STATE_FORMS
from .reference import drivers, registry
from .reference.ordering import Ordering

RANK_TOLERANCE = 0.03


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


def from_arrow(spark, table: pa.Table):
    """``table`` as a DataFrame, its rows in order (Spark 3.5's createDataFrame takes no Arrow table: rows,
    with the Arrow schema)."""
    from . import spark_minor

    if spark_minor() == "3.5":
        from pyspark.sql.pandas.types import from_arrow_schema
        return spark.createDataFrame(table.to_pylist(), from_arrow_schema(table.schema))
    return spark.createDataFrame(table)


def _show(value: Any) -> str:
    if isinstance(value, tuple):
        return "(" + ", ".join(_show(v) for v in value) + ")"
    return "NULL" if value is None else repr(value)


# --- parsing ----------------------------------------------------------------------------------

@dataclass
class Frame:
    """A window frame: ``unit`` ROWS or RANGE; each bound ("unbounded" | "current" | signed offset)."""

    unit: str
    lower: Any
    upper: Any


@dataclass
class Window:
    partition: list[str]
    order: list[tuple[str, bool, bool]]  # (expression, descending, nulls_first)
    frame: Frame


@dataclass
class Aggregate:
    """One sparkagg call: ``name`` without the prefix, its argument expressions (Spark SQL), DISTINCT,
    FILTER's condition, WITHIN GROUP's keys, and its window (None in an aggregation)."""

    name: str
    args: list[str]
    distinct: bool = False
    filter: str | None = None
    within: list[tuple[str, bool, bool]] = field(default_factory=list)
    window: Window | None = None
    sql: str = ""


@dataclass
class Item:
    """A select item: its text (without alias), its alias, and whether it holds calls (``computed``);
    an item without calls identifies its row (a group key, a column of the row)."""

    text: str
    alias: str | None
    computed: bool


@dataclass
class Query:
    items: list[Item]
    source: str  # the FROM clause, joins included
    where: str | None
    group_by: list[str] | None  # expressions; None without GROUP BY
    calls: list[Aggregate] = field(default_factory=list)
    bare: list[int | None] = field(default_factory=list)  # per item: the call it is, if it is only a call
    outer: list[str] | None = None  # per item, over __k<i> / __a<j> columns: when Spark must finish it
    having: str | None = None  # over the same columns

    @property
    def windowed(self) -> bool:
        return any(c.window for c in self.calls)


_UNSUPPORTED = {"with_": "WITH", "with": "WITH", "distinct": "SELECT DISTINCT", "limit": "LIMIT",
                "offset": "OFFSET", "qualify": "QUALIFY", "laterals": "LATERAL VIEW", "sort": "SORT BY",
                "cluster": "CLUSTER BY", "distribute": "DISTRIBUTE BY", "windows": "a named WINDOW clause"}


def _sql(node: exp.Expression) -> str:
    return node.sql(dialect="spark", normalize_functions=False)


def parse(sql: str, prefix: str = DEFAULT_PREFIX) -> Query:
    """The structure of a query in ``check``'s scope, or ``UnsupportedQuery`` saying why not."""
    if not prefix:
        raise UnsupportedQuery("check tells sparkagg's calls by their prefix; with the prefix '' they are "
                               "Spark's own names")
    try:
        statements = [s for s in sqlglot.parse(sql.strip().rstrip(";"), read="spark") if s is not None]
    except sqlglot.errors.SqlglotError as e:
        raise UnsupportedQuery(f"cannot parse the query: {str(e).splitlines()[0]}") from None
    if len(statements) != 1:
        raise UnsupportedQuery("only one statement is checked at a time")
    tree = statements[0]
    if not isinstance(tree, exp.Select):
        raise UnsupportedQuery("only SELECT queries are checked (no set operations, WITH or other statements)")
    for key, what in _UNSUPPORTED.items():
        if tree.args.get(key):
            raise UnsupportedQuery(f"{what} is not in scope")
    source = tree.args.get("from_") or tree.args.get("from")
    if source is None:
        raise UnsupportedQuery("the query needs a FROM clause")
    source_sql = " ".join([_sql(source.this), *(_sql(j) for j in tree.args.get("joins") or [])])
    where = tree.args.get("where")

    having = tree.args.get("having")
    scanned = [*tree.expressions, *([having.this] if having else [])]
    for node in scanned:
        for sub in node.find_all(exp.AggFunc):
            raise UnsupportedQuery(f"Spark's own aggregate {_sql(sub)} is not in scope: the model computes "
                                   f"{prefix} calls only")
        for sub in node.find_all(exp.Subquery, exp.Select):
            raise UnsupportedQuery(f"a subquery among the select items ({_sql(sub)}) is not in scope")
    sites: dict[int, int] = {}  # id(call site node) -> index into calls
    calls: list[Aggregate] = []
    for node in scanned:
        for call in list(node.find_all(exp.Anonymous)):
            if call.name.lower().startswith(prefix.lower()):
                outer = call.find_ancestor(exp.Anonymous)
                while outer is not None and not outer.name.lower().startswith(prefix.lower()):
                    outer = outer.find_ancestor(exp.Anonymous)
                if outer is not None:
                    raise UnsupportedQuery(f"a call inside another call's arguments ({_sql(outer)}) is not in "
                                           f"scope")
                site, aggregate = _call(call, prefix)
                sites[id(site)] = len(calls)
                calls.append(aggregate)
        for window in node.find_all(exp.Window):
            if id(window) not in sites:
                raise UnsupportedQuery(f"a window over something other than a {prefix} call ({_sql(window)}) "
                                       f"is not in scope")
    if not calls:
        raise UnsupportedQuery(f"no {prefix} aggregate call among the select items")

    items, bare = [], []
    for e in tree.expressions:
        inner = e.this if isinstance(e, exp.Alias) else e
        alias = e.alias if isinstance(e, exp.Alias) else None
        if isinstance(inner, exp.Star):
            raise UnsupportedQuery("SELECT * with aggregates is not in scope")
        holds = [sites[id(n)] for n in inner.walk() if id(n) in sites]
        items.append(Item(_sql(inner), alias, bool(holds)))
        bare.append(sites.get(id(inner)))

    windowed = [c.window is not None for c in calls]
    group = tree.args.get("group")
    if any(windowed):
        if not all(windowed):
            raise UnsupportedQuery("calls with and without OVER in one query (a window over an aggregation) "
                                   "are not in scope")
        if group or having:
            raise UnsupportedQuery("GROUP BY or HAVING with window calls is not in scope")
        for i, it in enumerate(items):
            if it.computed and bare[i] is None:
                raise UnsupportedQuery(f"a window call inside an expression ({it.text}) is not in scope")
        return Query(items, source_sql, _sql(where.this) if where else None, None, calls, bare)

    keys: list[exp.Expression] | None = None
    if group is not None:
        for what in ("rollup", "cube", "grouping_sets", "totals"):
            if group.args.get(what):
                raise UnsupportedQuery("GROUPING SETS, ROLLUP and CUBE are not in scope")
        if any(isinstance(g, (exp.GroupingSets, exp.Rollup, exp.Cube)) for g in group.expressions):
            raise UnsupportedQuery("GROUPING SETS, ROLLUP and CUBE are not in scope")
        if group.args.get("all"):
            keys = [(e.this if isinstance(e, exp.Alias) else e) for e, it in zip(tree.expressions, items)
                    if not it.computed]
        else:
            keys = [_resolve_key(g, tree.expressions, items) for g in group.expressions]
    elif any(not it.computed for it in items):
        raise UnsupportedQuery("without GROUP BY every select item must hold a sparkagg call")

    query = Query(items, source_sql, _sql(where.this) if where else None,
                  None if keys is None else [_sql(k) for k in keys], calls, bare)
    if having is not None or any(it.computed and b is None for it, b in zip(items, bare)):
        def over_columns(node: exp.Expression) -> str:
            def swap(n: exp.Expression) -> exp.Expression:
                if id(n) in sites:
                    return exp.column(f"__a{sites[id(n)]}", quoted=True)
                for i, k in enumerate(keys or []):
                    if n == k:
                        return exp.column(f"__k{i}", quoted=True)
                return n
            return _sql(node.transform(swap, copy=False))
        query.outer = [over_columns(e.this if isinstance(e, exp.Alias) else e) for e in tree.expressions]
        query.having = over_columns(having.this) if having is not None else None
    return query


def _call(call: exp.Anonymous, prefix: str) -> tuple[exp.Expression, Aggregate]:
    """The call's site (the call with its WITHIN GROUP, FILTER and OVER) and what it asks."""
    full = call.name
    name = full[len(prefix):].lower()
    if name.endswith(STATE_FORMS):
        raise UnsupportedQuery(f"{full}: the state-as-data forms are not in scope (check compares values, "
                               f"not states, whose layout only the JVM fixes)")
    try:
        registry.get(name)
    except KeyError:
        raise UnsupportedQuery(f"{full}: no reference model of {name!r}") from None
    args, distinct = list(call.expressions), False
    if len(args) == 1 and isinstance(args[0], exp.Distinct):
        distinct, args = True, list(args[0].expressions)
    args = [] if len(args) == 1 and isinstance(args[0], exp.Star) else args
    aggregate = Aggregate(name, [_sql(a) for a in args], distinct)
    site: exp.Expression = call
    while isinstance(site.parent, (exp.WithinGroup, exp.Filter, exp.Window)) and site.parent.this is site:
        site = site.parent
        if isinstance(site, exp.WithinGroup):
            aggregate.within = _ordering(site.expression)
        elif isinstance(site, exp.Filter):
            aggregate.filter = _sql(site.expression.this)
        else:
            aggregate.window = _window(site)
    aggregate.sql = _sql(site)
    return site, aggregate


def _ordering(order: exp.Order | None) -> list[tuple[str, bool, bool]]:
    """ORDER BY keys as (expression, descending, nulls_first); sqlglot's Spark dialect fills in Spark's
    defaults (ASC NULLS FIRST, DESC NULLS LAST)."""
    if order is None:
        return []
    out = []
    for o in order.expressions:
        descending = bool(o.args.get("desc"))
        nulls_first = o.args.get("nulls_first")
        out.append((_sql(o.this), descending, (not descending) if nulls_first is None else bool(nulls_first)))
    return out


def _window(node: exp.Window) -> Window:
    if node.args.get("alias"):
        raise UnsupportedQuery("a named window is not in scope")
    order = _ordering(node.args.get("order"))
    spec = node.args.get("spec")
    if spec is None:  # Spark's default frames
        frame = Frame("RANGE", "unbounded", "current") if order else Frame("ROWS", "unbounded", "unbounded")
    else:
        if spec.args.get("exclude"):
            raise UnsupportedQuery("EXCLUDE in a frame is not in scope")
        lower = _bound(spec.args.get("start"), spec.args.get("start_side"))
        upper = _bound(spec.args.get("end"), spec.args.get("end_side")) if spec.args.get("end") else "current"
        frame = Frame(spec.args["kind"].upper(), lower, upper)
        if not order and (frame.lower, frame.upper) != ("unbounded", "unbounded"):
            raise UnsupportedQuery("a bounded frame without ORDER BY depends on the order rows arrive in")
    return Window([_sql(p) for p in node.args.get("partition_by") or []], order, frame)


def _bound(value: Any, side: str | None) -> Any:
    """A frame bound: "unbounded", "current", or the offset, negative before the current row."""
    text = value if isinstance(value, str) else None
    if text is not None and text.upper() == "UNBOUNDED":
        return "unbounded"
    if text is not None and text.upper() == "CURRENT ROW":
        return "current"
    if not isinstance(value, exp.Literal) or value.is_string:
        raise UnsupportedQuery(f"a frame bound must be a number, UNBOUNDED or CURRENT ROW, got {value}")
    offset = decimal.Decimal(value.this)
    offset = int(offset) if offset == offset.to_integral_value() else offset
    return -offset if (side or "").upper() == "PRECEDING" else offset


def _resolve_key(key: exp.Expression, expressions: list[exp.Expression], items: list[Item]) -> exp.Expression:
    """A GROUP BY entry as an expression: ordinals and select aliases stand for the item."""
    if isinstance(key, exp.Literal) and not key.is_string:
        position = int(key.this)
        if not 1 <= position <= len(items) or items[position - 1].computed:
            raise UnsupportedQuery(f"GROUP BY {key.this} does not name a select item without calls")
        chosen = expressions[position - 1]
        return chosen.this if isinstance(chosen, exp.Alias) else chosen
    if isinstance(key, exp.Column) and not key.table:
        named = key.name.lower()
        if not any(isinstance(e, exp.Column) and e.name.lower() == named for e in expressions):
            for e, it in zip(expressions, items):
                if isinstance(e, exp.Alias) and e.alias.lower() == named and not it.computed:
                    return e.this
    return key


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


@dataclass
class Judged:
    """A model answer that more than one Spark answer matches: an order-free or approximate result.
    ``value`` is the model's own answer (what Spark evaluates expressions over calls with)."""

    value: Any

    def accepts(self, value: Any, equal: Callable[[Any, Any], bool]) -> bool:
        raise NotImplementedError


@dataclass
class AnyOrder(Judged):
    """A collection whose order is the order rows arrive in: equal as a multiset."""

    def accepts(self, value, equal):
        if value is None or self.value is None:
            return value is None and self.value is None
        return len(value) == len(self.value) and all(
            equal(a, b) for a, b in zip(sorted(value, key=_sort_one), sorted(self.value, key=_sort_one)))

    def __repr__(self) -> str:
        return f"in any order {self.value!r}"


@dataclass
class Pieces(Judged):
    """string_agg without WITHIN GROUP: the same pieces between the delimiter, in any order."""

    delimiter: str

    def accepts(self, value, equal):
        if value is None or self.value is None:
            return value is None and self.value is None
        split = (lambda s: s.split(self.delimiter)) if self.delimiter else list
        return sorted(split(value)) == sorted(split(self.value))

    def __repr__(self) -> str:
        return f"pieces in any order of {self.value!r}"


@dataclass
class OneOf(Judged):
    """A value whichever row arrives first decides: any of the candidates."""

    candidates: list

    def accepts(self, value, equal):
        return any(equal(value, c) if c is not None else value is None for c in self.candidates)

    def __repr__(self) -> str:
        return f"one of {self.candidates!r}"


@dataclass
class NearRank(Judged):
    """A t-digest estimate: Spark's must rank within RANK_TOLERANCE of the total weight (plus one value)
    of where the model's ranks among the (value, weight) pairs; the digests differ by merge order."""

    values: list[tuple[float, float]]

    def _ranks(self, v: float) -> tuple[float, float]:
        # An estimate between two values ranks anywhere from the lower one's first copy to the upper's last.
        keys = [x for x, _ in self.values]
        lower = max((x for x in keys if x <= v), default=v)
        upper = min((x for x in keys if x >= v), default=v)
        return (sum(w for x, w in self.values if x < lower), sum(w for x, w in self.values if x <= upper))

    def accepts(self, value, equal):
        if value is None or self.value is None:
            return value is None and self.value is None
        if math.isnan(value) or math.isnan(self.value):
            return math.isnan(value) and math.isnan(self.value)
        total = sum(w for _, w in self.values)
        slack = RANK_TOLERANCE * total + max((w for _, w in self.values), default=1.0)
        lo_s, hi_s = self._ranks(float(value))
        lo_m, hi_m = self._ranks(float(self.value))
        return lo_s - slack <= hi_m and lo_m - slack <= hi_s

    def __repr__(self) -> str:
        return f"{self.value!r} within {RANK_TOLERANCE:.0%} of rank"


@dataclass
class NearCount(Judged):
    """An approx_distinct estimate: the model hashes with its own function, not the JVM's, so the sketches
    differ; Spark's must be within RANK_TOLERANCE (plus 2) of the exact count of distinct values."""

    exact: int

    def accepts(self, value, equal):
        return value is not None and abs(value - self.exact) <= RANK_TOLERANCE * self.exact + 2

    def __repr__(self) -> str:
        return f"{self.value!r} (exactly {self.exact} distinct values, {RANK_TOLERANCE:.0%} allowed)"


_UNORDERED_PICKERS = {"first_value", "last_value", "nth_value", "any_value"}
_DIGESTS = {"approx_percentile_cont", "approx_percentile_cont_with_weight", "approx_median"}


@dataclass
class Model:
    """One call as the model runs it: the bound function, its column expressions (arguments, then
    WITHIN GROUP keys), and how a group's answer is judged (``judge(value, rows' columns)``)."""

    function: Any
    columns: list[str]
    judge: Callable[[Any, list[list[Any]]], Any] | None = None
    keys: int = 0  # how many of the columns are WITHIN GROUP keys that order the values


def _model(call: Aggregate, constant: Callable[[str], Any], models: dict[str, str], grouped: bool) -> Model:
    """The model of ``call`` with its constant parameters bound (``constant`` evaluates one)."""
    function = registry.get(models.get(call.name, call.name))
    name = registry.get(call.name).name
    args, within = call.args, call.within
    options: dict[str, Any] = {}
    ordering = [(d, n) for _, d, n in within]
    columns = list(args)

    def number(text: str) -> Any:
        value = constant(text)
        return float(value) if isinstance(value, decimal.Decimal) else value

    if name in ("percentile_cont", "approx_percentile_cont", "approx_percentile_cont_with_weight"):
        weighted = name.endswith("with_weight")
        own = 1 if weighted else 0  # the arguments before p: the weight (WITHIN GROUP) or none
        if within:
            if len(within) != 1:
                raise UnsupportedQuery(f"{call.sql}: one WITHIN GROUP key expected")
            columns, options["descending"] = [within[0][0], *args[:own]], within[0][1]
            params = args[own:]
        else:
            columns, params = args[:own + 1], args[own + 1:]
        if not params:
            raise UnsupportedQuery(f"{call.sql}: the percentile is missing")
        options["p"] = number(params[0])
        if len(params) > 1:
            options["max_size"] = constant(params[1])
        ordering = []
    elif name == "string_agg":
        columns = args[:1]
        options["delimiter"] = constant(args[1]) if len(args) > 1 else None
    elif name in ("first_value", "last_value"):
        columns = args[:1]
        if len(args) > 1:
            options["ignore_nulls"] = bool(constant(args[1]))
    elif name == "nth_value":
        columns = args[:1]
        options["n"] = constant(args[1]) if len(args) > 1 else None
    if ordering:
        options["ordering"] = ordering
        columns += [k for k, _, _ in within]
    # Another function's model (``models``, to see check fail) takes the same columns, none of the literals.
    bind = options and call.name not in models
    model = Model(function.bind(**options) if bind else function, columns, keys=len(ordering))

    if name in _DIGESTS:
        weighted = name.endswith("with_weight")
        model.judge = lambda v, cols: NearRank(v, [
            (float(x), float(w)) for x, w in zip(cols[0], cols[1] if weighted else [1.0] * len(cols[0]))
            if x is not None and w is not None and (not weighted or float(w) > 0)])
    elif name == "approx_distinct":
        model.judge = lambda v, cols: NearCount(v, len({_freeze(x) for x in cols[0] if x is not None}))
    elif not grouped or ordering:
        pass  # a window's frame arrives in the window's order; WITHIN GROUP fixes it
    elif name == "array_agg":
        model.judge = lambda v, cols: AnyOrder(v)
    elif name == "string_agg":
        model.judge = lambda v, cols: Pieces(v, options["delimiter"] or "")
    elif name in _UNORDERED_PICKERS:
        skip_nulls = name == "any_value" or options.get("ignore_nulls", False)
        n = abs(options.get("n") or 1)
        model.judge = lambda v, cols: OneOf(v, _may_come_first(cols[0], skip_nulls, n))
    elif name in ("max_by", "min_by"):
        model.judge = lambda v, cols: OneOf(v, _best_by(cols, name == "max_by", v))
    return model


def _may_come_first(values: list, skip_nulls: bool, n: int) -> list:
    """What first_value, last_value, nth_value or any_value may give when no order is asked for."""
    kept = [v for v in values if v is not None] if skip_nulls else values
    return [None] if len(kept) < n else list(kept)


def _best_by(cols: list[list[Any]], largest: bool, model_value: Any) -> list:
    """max_by / min_by: the x of every row whose y ties for the best (Spark's order: NaN greatest)."""
    pairs = [(x, y) for x, y in zip(cols[0], cols[1]) if y is not None]
    if not pairs:
        return [None]
    key = lambda y: (1, 0.0) if isinstance(y, float) and math.isnan(y) else (0, y)  # noqa: E731
    best = (max if largest else min)(key(y) for _, y in pairs)
    return [x for x, y in pairs if key(y) == best] or [model_value]


def _sort_one(v: Any) -> tuple:
    if v is None:
        return (0, "")
    if isinstance(v, float) and math.isnan(v):
        return (2, "")
    if isinstance(v, (int, float, decimal.Decimal)) and not isinstance(v, bool):
        return (1, f"{float(v):+.17e}")
    return (3, repr(v))


class _Projection:
    """Spark's rows of the query's FROM and WHERE, one column per distinct expression the model needs."""

    def __init__(self) -> None:
        self.exprs: dict[str, int] = {}

    def add(self, expr: str) -> int:
        return self.exprs.setdefault(expr, len(self.exprs))

    def run(self, spark, query: Query) -> tuple[list[pa.Array], int]:
        exprs = list(self.exprs) or ["1"]
        sql = f"SELECT {', '.join(f'({e}) AS `__c{i}`' for i, e in enumerate(exprs))} FROM {query.source}"
        if query.where:
            sql += f" WHERE {query.where}"
        table = to_arrow(spark.sql(sql))
        return _columns(table), table.num_rows


def _constants(spark, texts: list[str]) -> Callable[[str], Any]:
    """The values of the calls' constant parameters, folded by Spark in one query."""
    wanted = list(dict.fromkeys(texts))
    values = {}
    if wanted:
        row = spark.sql("SELECT " + ", ".join(f"{t} AS `__p{i}`" for i, t in enumerate(wanted))).collect()[0]
        values = dict(zip(wanted, row))
    return lambda text: values[text]


_PARAMETERS = {"percentile_cont", "approx_percentile_cont", "approx_percentile_cont_with_weight", "string_agg",
               "first_value", "last_value", "nth_value"}


def _parameter_texts(call: Aggregate) -> list[str]:
    """The arguments of ``call`` that are constant parameters, as written."""
    name = registry.get(call.name).name
    if name not in _PARAMETERS:
        return []
    if name.startswith(("percentile", "approx_percentile")):
        own = (1 if name.endswith("with_weight") else 0) + (0 if call.within else 1)
        return call.args[own:]
    return call.args[1:]


def model_rows(spark, query: Query, ansi: bool, seed: int = 0, partitions: int = 3,
               models: dict[str, str] | None = None) -> list[tuple]:
    """The query's result rows as the reference model computes them from Spark's projection.
    ``models`` ({function: other function}) computes a function with another's model instead."""
    constant = _constants(spark, [t for c in query.calls for t in _parameter_texts(c)])
    try:
        calls = [_model(c, constant, models or {}, not query.windowed) for c in query.calls]
        if query.windowed:
            return _window_rows(spark, query, calls, ansi)
        return _grouped_rows(spark, query, calls, ansi, seed, partitions)
    except TypeError as e:  # the model's accumulators check their argument types and literals
        raise UnsupportedQuery(f"the reference model cannot take the call: {e}") from None


def _grouped_rows(spark, query: Query, calls: list[Model], ansi: bool, seed: int, partitions: int) -> list[tuple]:
    projection = _Projection()
    keys = [projection.add(k) for k in query.group_by or []]
    plain = {i: projection.add(it.text) for i, it in enumerate(query.items) if not it.computed}
    wiring = [([projection.add(c) for c in m.columns],
               None if a.filter is None else projection.add(a.filter)) for a, m in zip(query.calls, calls)]
    columns, rows = projection.run(spark, query)

    grouped = query.group_by is not None
    group_of_row: list[int] = []
    firsts: list[int] = []  # the first row of each group, for the items without calls
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

    results: list[list[Any]] = []
    for call, model, (arg_cols, filter_col) in zip(query.calls, calls, wiring):
        selected = list(range(rows))
        if filter_col is not None:
            flags = columns[filter_col].to_pylist()
            selected = [r for r in selected if flags[r] is True]
        if call.distinct:
            selected = _distinct_rows(selected, [columns[c].to_pylist() for c in arg_cols],
                                      group_of_row if grouped else None)
        taken = pa.array(selected, pa.int64())
        args = [columns[c].take(taken) for c in arg_cols]
        group_keys = pa.array([group_of_row[r] for r in selected], pa.int64()) if grouped else None
        by_group = drivers.aggregate_groups(
            model.function, [a.type for a in args], args, keys=group_keys, partitions=partitions, seed=seed,
            ansi=ansi, num_rows=len(selected))
        empty = None
        if grouped and len(by_group) < groups:  # every row filtered out of some group: its empty value
            accumulator = model.function.groups([a.type for a in args], ansi)
            accumulator.update_batch([a.slice(0, 0) for a in args] or [pa.array([], pa.int64())], [], None, 1)
            empty = accumulator.evaluate().to_pylist()[0]
        values = [by_group.get(g, empty) for g in range(groups)] if grouped else [by_group[None]]
        if model.keys:
            _refuse_ties(call, [columns[c].to_pylist() for c in arg_cols[-model.keys:]], selected,
                         group_of_row if grouped else None)
        if model.judge is not None:
            members: list[list[int]] = [[] for _ in range(groups)]
            for r in selected:
                members[group_of_row[r] if grouped else 0].append(r)
            lists = [columns[c].to_pylist() for c in arg_cols]
            values = [model.judge(v, [[col[r] for r in rs] for col in lists]) for v, rs in zip(values, members)]
        results.append(values)

    if query.outer is None:
        plain_values = {i: columns[c].to_pylist() for i, c in plain.items()}
        return [tuple(plain_values[i][firsts[g]] if i in plain_values else results[query.bare[i]][g]
                      for i in range(len(query.items))) for g in range(groups)]
    return _finish_in_spark(spark, query, columns, keys, firsts if grouped else [0], results)


def _refuse_ties(call: Aggregate, keys: list[list[Any]], selected: list[int], group_of_row: list[int] | None) -> None:
    """WITHIN GROUP keys that tie within a group leave the tied rows in the order they arrive in, which
    Spark's plan chooses: such input cannot be judged."""
    if len(_distinct_rows(selected, keys, group_of_row)) < len(selected):
        raise UnsupportedQuery(f"{call.sql}: its WITHIN GROUP keys tie within a group, so the order among "
                               f"the tied rows is the order they arrive in")


def _distinct_rows(selected: list[int], arg_values: list[list[Any]], group_of_row: list[int] | None) -> list[int]:
    """The first row of each distinct argument tuple (per group), floats normalised as Spark's DISTINCT."""
    seen, kept = set(), []
    for r in selected:
        marker = (group_of_row[r] if group_of_row else 0, tuple(_freeze(col[r]) for col in arg_values))
        if marker not in seen:
            seen.add(marker)
            kept.append(r)
    return kept


def _finish_in_spark(spark, query: Query, columns: list[pa.Array], keys: list[int], firsts: list[int],
                     results: list[list[Any]]) -> list[tuple]:
    """The items and HAVING that are expressions over calls, evaluated by Spark over the model's values
    (``__k<i>``: the group's keys, ``__a<j>``: the calls' values); bare calls keep the model's judgement."""
    typing = f"SELECT {', '.join(f'{c.sql} AS `__a{j}`' for j, c in enumerate(query.calls))} FROM {query.source}"
    if query.where:
        typing += f" WHERE {query.where}"
    if query.group_by:
        typing += f" GROUP BY {', '.join(query.group_by)}"
    types = to_arrow(spark.sql(typing).limit(0)).schema.types  # the calls' result types, as Arrow has them
    taken = pa.array(firsts, pa.int64())
    table = {"__g": pa.array(range(len(firsts)), pa.int64())}
    table.update({f"__k{i}": columns[k].take(taken) for i, k in enumerate(keys)})

    table.update({f"__a{j}": pa.array([v.value if isinstance(v, Judged) else v for v in values], t)
                  for j, (values, t) in enumerate(zip(results, types))})
    view = "__sparkagg_check_model"
    from_arrow(spark, pa.table(table)).createOrReplaceTempView(view)
    try:
        sql = f"SELECT `__g`, {', '.join(f'({e}) AS `__o{i}`' for i, e in enumerate(query.outer))} FROM {view}"
        if query.having:
            sql += f" WHERE {query.having}"
        out = to_arrow(spark.sql(sql))
    finally:
        spark.catalog.dropTempView(view)
    cols = [c.to_pylist() for c in _columns(out)]
    return [tuple(results[query.bare[i]][g] if query.bare[i] is not None else cols[i + 1][r]
                  for i in range(len(query.items))) for r, g in enumerate(cols[0])]


def _window_rows(spark, query: Query, calls: list[Model], ansi: bool) -> list[tuple]:
    projection = _Projection()
    plain = {i: projection.add(it.text) for i, it in enumerate(query.items) if not it.computed}
    wiring = []
    for call, model in zip(query.calls, calls):
        if call.filter is not None:
            raise UnsupportedQuery(f"{call.sql}: FILTER over a window is not in scope")
        w = call.window
        wiring.append(([projection.add(p) for p in w.partition], [projection.add(o) for o, _, _ in w.order],
                       [projection.add(c) for c in model.columns]))
    columns, rows = projection.run(spark, query)
    lists = [c.to_pylist() for c in columns]

    results = []
    for call, model, (part_cols, order_cols, arg_cols) in zip(query.calls, calls, wiring):
        window = call.window
        partitions: dict[Any, list[int]] = {}
        for r in range(rows):
            partitions.setdefault(tuple(_freeze(lists[c][r]) for c in part_cols), []).append(r)
        ordering = Ordering("window", [(d, n) for _, d, n in window.order], [columns[c].type for c in order_cols],
                            own=(0,))
        out: list[Any] = [None] * rows
        for members in partitions.values():
            sort_keys = {r: ordering.key([lists[c][r] for c in order_cols]) for r in members}
            members.sort(key=sort_keys.__getitem__)
            bounds = _frame_bounds(window, [sort_keys[r] for r in members],
                                   [[lists[c][r] for c in order_cols] for r in members])
            taken = pa.array(members, pa.int64())
            args = [columns[c].take(taken) for c in arg_cols]
            types = [a.type for a in args]
            if call.distinct:
                values = []
                for start, end in bounds:
                    kept = _distinct_rows(list(range(start, max(start, end))), [a.to_pylist() for a in args], None)
                    accumulator = model.function(types, ansi)
                    accumulator.update_batch([a.take(pa.array(kept, pa.int64())) for a in args])
                    values.append(accumulator.evaluate())
            else:
                values = drivers.framed(model.function, types, args, bounds, ansi, len(members))
            for r, (start, end), v in zip(members, bounds, values):
                if model.judge is not None:
                    v = model.judge(v, [a.slice(start, max(0, end - start)).to_pylist() for a in args])
                out[r] = v
        results.append(out)
    plain_values = {i: lists[c] for i, c in plain.items()}
    return [tuple(plain_values[i][r] if i in plain_values else results[query.bare[i]][r]
                  for i in range(len(query.items))) for r in range(rows)]


def _frame_bounds(window: Window, sort_keys: list[tuple], order_values: list[list[Any]]) -> list[tuple[int, int]]:
    """Each row's frame [start, end) within its partition, sorted by ``sort_keys``, as Spark bounds it."""
    frame, n = window.frame, len(sort_keys)
    if frame.unit == "ROWS":
        if (frame.lower, frame.upper) != ("unbounded", "unbounded") and any(
                a == b for a, b in zip(sort_keys, sort_keys[1:])):
            raise UnsupportedQuery("a ROWS frame over an ORDER BY with ties: which rows a frame holds depends "
                                   "on Spark's order among equal keys")

        def rows_bound(i: int, bound: Any, upper: bool) -> int:
            if bound == "unbounded":
                return n if upper else 0
            at = i + (0 if bound == "current" else int(bound))
            return at + 1 if upper else at
        return [(min(n, max(0, rows_bound(i, frame.lower, False))), min(n, max(0, rows_bound(i, frame.upper, True))))
                for i in range(n)]
    # RANGE: peers (equal keys) share a frame; offsets move along the one numeric key
    first_peer, last_peer = [0] * n, [0] * n
    for i in range(n):
        first_peer[i] = i if i == 0 or sort_keys[i] != sort_keys[i - 1] else first_peer[i - 1]
    for i in reversed(range(n)):
        last_peer[i] = i if i == n - 1 or sort_keys[i] != sort_keys[i + 1] else last_peer[i + 1]
    offsets = [b for b in (frame.lower, frame.upper) if b not in ("unbounded", "current")]
    if offsets:
        if len(window.order) != 1:
            raise UnsupportedQuery("a RANGE frame with an offset needs one ORDER BY key")
        keys = [v[0] for v in order_values]
        if any(k is None or isinstance(k, bool) or not isinstance(k, (int, float, decimal.Decimal))
               or (isinstance(k, float) and not math.isfinite(k)) for k in keys):
            raise UnsupportedQuery("a RANGE frame with an offset over an ORDER BY key with NULL, NaN, an "
                                   "infinity or a non-numeric value is not in scope")
        sign = -1 if window.order[0][1] else 1  # descending: offsets move against the values
        line = [sign * k for k in keys]  # ascending along the partition

    def range_bound(i: int, bound: Any, upper: bool) -> int:
        if bound == "unbounded":
            return n if upper else 0
        if bound == "current":
            return last_peer[i] + 1 if upper else first_peer[i]
        target = line[i] + bound
        return bisect.bisect_right(line, target) if upper else bisect.bisect_left(line, target)
    return [(range_bound(i, frame.lower, False), range_bound(i, frame.upper, True)) for i in range(n)]


# --- comparing --------------------------------------------------------------------------------

def _equal(a: Any, b: Any, rel_tol: float, abs_tol: float) -> bool:
    if isinstance(b, Judged):
        return b.accepts(a, lambda x, y: _equal(x, y, rel_tol, abs_tol))
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
    return tuple((4, "") if isinstance(v, Judged) else _sort_one(v) for v in row)


def compare(spark_rows: list[tuple], model: list[tuple], query: Query, rel_tol: float,
            abs_tol: float = 0.0) -> list[Difference]:
    """Differences between Spark's rows and the model's, matched by their items without calls."""
    key_at = [i for i, it in enumerate(query.items) if not it.computed]
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
