"""sparkagg.check's first part: the query, parsed (sqlglot's Spark dialect) into what the model needs, or
refused with ``UnsupportedQuery`` naming what and why."""
from __future__ import annotations

import decimal
from dataclasses import dataclass, field
from typing import Any

import sqlglot
from sqlglot import exp

from .. import DEFAULT_PREFIX, STATE_FORMS
from ..reference import registry


class UnsupportedQuery(ValueError):
    """The query is outside what ``check`` can recompute; the message says why."""


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
