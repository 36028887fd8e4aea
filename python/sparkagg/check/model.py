"""sparkagg.check's middle part: the query's input rows from Spark as Arrow, and the model's rows over
them (grouped, or over window frames)."""
from __future__ import annotations

import bisect
import decimal
import math
from dataclasses import dataclass
from typing import Any, Callable

import pyarrow as pa

from ..reference import drivers, registry
from ..reference.ordering import Ordering
from .judge import AnyOrder, Judged, NearCount, NearRank, OneOf, Pieces, freeze
from .query import Aggregate, Query, UnsupportedQuery, Window


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
    from .. import spark_minor

    if spark_minor() == "3.5":
        from pyspark.sql.pandas.types import from_arrow_schema
        return spark.createDataFrame(table.to_pylist(), from_arrow_schema(table.schema))
    return spark.createDataFrame(table)


def columns_of(table: pa.Table) -> list[pa.Array]:
    return [c.combine_chunks() if isinstance(c, pa.ChunkedArray) else c for c in table.columns]


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
        model.judge = lambda v, cols: NearCount(v, len({freeze(x) for x in cols[0] if x is not None}))
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
        return columns_of(table), table.num_rows


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
            key = tuple(freeze(col[r]) for col in key_values)
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
        marker = (group_of_row[r] if group_of_row else 0, tuple(freeze(col[r]) for col in arg_values))
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
    cols = [c.to_pylist() for c in columns_of(out)]
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
            partitions.setdefault(tuple(freeze(lists[c][r]) for c in part_cols), []).append(r)
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
