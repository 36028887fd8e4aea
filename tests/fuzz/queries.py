"""Random queries for the fuzzer, each written twice: for Spark with sparkagg's functions (`df_...`) and for
the oracle, DataFusion 55 with its companion crate of extra aggregates. Where DataFusion's answer is not
sparkagg's documented one (README, Deviations) the oracle's SQL asks DataFusion for what sparkagg promises,
or for the group's values, which compare.py then judges (any_value is one of them; approx_percentile_cont
is near the rank; NaN-aware min/max and percentile_cont; skewness and kurtosis by the model). Windows
DataFusion cannot slide as sparkagg does go to the reference model's sliding driver (runner.py).

A query is data (`Query`), so the shrinker can drop its parts and render it again."""
from __future__ import annotations

import random
from dataclasses import dataclass, field, replace

COLUMNS = {"*", "k", "ks", "kd", "o", "u", "i", "l", "d", "f", "m", "s", "b", "dt", "ts"}
NUMERIC = ("i", "l", "d", "f", "m")
FLOATS = ("d", "f")  # NaN, infinities and -0.0 among their values
EXACT_NUMERIC = ("i", "l", "m")  # no NaN or infinities: for the deviations that only they trigger
ORDERABLE = ("i", "l", "m", "s", "b", "dt", "ts")
DISTINCTABLE = ("i", "l", "m", "s", "dt", "ts")  # not doubles: DataFusion 55 counts -0.0 and 0.0 apart or not
# State forms are registered under each function's own name, not its aliases.
CANONICAL = {"var": "var_samp", "stddev_samp": "stddev", "quantile_cont": "percentile_cont"}
PREDICATES = ("i > 0", "b", "NOT b", "d > 0", "s <> ''", "l IS NOT NULL", "i % 3 = 0", "m < 0")
ROWS_BOUNDS = ("UNBOUNDED PRECEDING", "{n} PRECEDING", "CURRENT ROW", "{n} FOLLOWING", "UNBOUNDED FOLLOWING")


@dataclass(frozen=True)
class Call:
    """One aggregate call. `args` are written as they are for both engines; `oracle` is DataFusion's
    form with `{f}` where the FILTER clause goes (None: the same call as Spark's without the prefix).
    `kind` names the comparison (compare.py)."""
    name: str
    args: str
    kind: str = "exact"
    oracle: str | None = None
    distinct: bool = False
    within: str | None = None           # WITHIN GROUP's ORDER BY, for Spark; DataFusion takes it in the call
    filter: str | None = None
    within_in_call: bool = True         # DataFusion writes the ordering inside the call (else WITHIN GROUP too)

    def spark(self, prefix: str = "df_", name: str | None = None) -> str:
        head = f"{prefix}{name or self.name}({'DISTINCT ' if self.distinct else ''}{self.args})"
        if self.within:
            head += f" WITHIN GROUP (ORDER BY {self.within})"
        return head + (f" FILTER (WHERE {self.filter})" if self.filter else "")

    @property
    def constants(self) -> str:
        """The constant parameters, which `_merge` and `_merge_state` take after the state: ", ','"; for a
        percentile WITHIN GROUP (ORDER BY x DESC), p and the direction (", 0.25, true")."""
        literals = [a for a in self.args.split(", ") if a not in COLUMNS]
        if self.name in ("percentile_cont", "quantile_cont") and self.within and self.within.endswith(" DESC"):
            literals.append("true")
        return "".join(", " + a for a in literals)

    def datafusion(self) -> str:
        clause = f" FILTER (WHERE {self.filter})" if self.filter else ""
        if self.oracle is not None:
            return self.oracle.format(f=clause)
        inner = ("DISTINCT " if self.distinct else "") + self.args
        if self.within and self.within_in_call:
            return f"{self.name}({inner} ORDER BY {self.within}){clause}"
        if self.within:
            return f"{self.name}({inner}) WITHIN GROUP (ORDER BY {self.within}){clause}"
        return f"{self.name}({inner}){clause}"


@dataclass(frozen=True)
class Frame:
    unit: str                           # ROWS or RANGE
    lower: str
    upper: str

    def sql(self) -> str:
        return f"{self.unit} BETWEEN {self.lower} AND {self.upper}"


@dataclass(frozen=True)
class Query:
    calls: tuple[Call, ...]
    keys: tuple[str, ...] = ()
    having: bool = False
    frame: Frame | None = None           # a window query: PARTITION BY keys ORDER BY o
    state_keys: tuple[tuple[str, ...], ...] = ()  # a state rollup: _state by keys, _merge_state by these..., _merge
    shape: str = field(default="aggregate", compare=False)

    def spark(self, prefix: str = "df_") -> str:
        if self.frame:
            over = f"OVER ({self._partition()}ORDER BY o {self.frame.sql()})"
            cols = ", ".join(f"{c.spark(prefix)} {over} AS c{j}" for j, c in enumerate(self.calls))
            return f"SELECT o, {cols} FROM t"
        cols = ", ".join(f"{c.spark(prefix)} AS c{j}" for j, c in enumerate(self.calls))
        return self._grouped(cols, f"{prefix}count(1)")

    def datafusion(self) -> str:
        if self.frame:
            over = f"OVER ({self._partition()}ORDER BY o {self.frame.sql()})"
            cols = ", ".join(f"{c.datafusion()} {over} AS c{j}" for j, c in enumerate(self.calls))
            return f"SELECT o, {cols} FROM t"
        cols = ", ".join(f"{c.datafusion()} AS c{j}" for j, c in enumerate(self.calls))
        return self._grouped(cols, "count(1)")

    def _partition(self) -> str:
        return f"PARTITION BY {', '.join(self.keys)} " if self.keys else ""

    def _grouped(self, cols: str, count: str) -> str:
        keys = ", ".join(self.keys)
        sql = f"SELECT {keys + ', ' if keys else ''}{cols} FROM t"
        if keys:
            sql += f" GROUP BY {keys}"
        return sql + (f" HAVING {count} > 1" if self.having else "")

    def state_steps(self, prefix: str = "df_") -> list[str]:
        """The state rollup as Spark SQL steps over `t`, then `s1`, `s2`...: `_state` grouped by the first
        keys, `_merge_state` by each next keys, `_merge` by the query's keys (each step reads the last)."""
        names = [CANONICAL.get(c.name, c.name) for c in self.calls]

        def merged(form: str) -> str:
            return ", ".join(f"{prefix}{n}_{form}(c{j}{c.constants}) AS c{j}"
                             for j, (c, n) in enumerate(zip(self.calls, names)))
        states = ", ".join(f"{c.spark(prefix, n + '_state')} AS c{j}"
                           for j, (c, n) in enumerate(zip(self.calls, names)))
        steps = [_select(self.state_keys[0], states, "t")]
        steps += [_select(keys, merged("merge_state"), f"s{n}") for n, keys in enumerate(self.state_keys[1:], start=1)]
        steps.append(_select(self.keys, merged("merge"), f"s{len(self.state_keys)}"))
        return steps

    def parts(self) -> list[Query]:
        """Smaller queries, for the shrinker: one call fewer, a clause fewer, a key fewer."""
        out = [replace(self, calls=self.calls[:j] + self.calls[j + 1:]) for j in range(len(self.calls))
               if len(self.calls) > 1]
        out += [replace(self, calls=self.calls[:j] + (replace(c, filter=None),) + self.calls[j + 1:])
                for j, c in enumerate(self.calls) if c.filter]
        if self.having:
            out.append(replace(self, having=False))
        if self.frame is None and not self.state_keys:
            out += [replace(self, keys=self.keys[:j] + self.keys[j + 1:]) for j in range(len(self.keys))]
        return out


def _select(keys: tuple[str, ...], cols: str, source: str) -> str:
    group = ", ".join(keys)
    return f"SELECT {group + ', ' if group else ''}{cols} FROM {source}" + (f" GROUP BY {group}" if group else "")


def _pair(rng: random.Random, columns=NUMERIC) -> str:
    return f"{rng.choice(columns)}, {rng.choice(columns)}"


def _aggregate_call(rng: random.Random, ordered: bool) -> Call:
    """Any call of the catalogue with random valid arguments and constants. `ordered`: WITHIN GROUP calls
    too (Spark 4.0 and later parse it)."""
    pick = rng.randrange(100 if ordered else 78)
    x = rng.choice
    if pick < 4:
        return Call("count", x(("*", "i", "s", "d", "i, s")))
    if pick < 10:
        return Call(x(("sum", "avg")), x(NUMERIC))
    if pick < 16:
        fn, col = x(("min", "max")), x(ORDERABLE + FLOATS)
        if col in FLOATS:  # DataFusion's grouped min/max with NaN depend on row order: judged from the values
            return Call(fn, col, kind=f"nan_{fn}", oracle=f"array_agg({col}){{f}}")
        return Call(fn, col)
    if pick < 20:
        return Call(x(("bit_and", "bit_or", "bit_xor")), x(("i", "l")))
    if pick < 22:
        return Call(x(("bool_and", "bool_or")), "b")
    if pick < 27:
        fn, col = x(("var_samp", "var_pop", "stddev", "stddev_pop", "var", "stddev_samp")), x(NUMERIC)
        if col in FLOATS:  # one NaN or infinity: DataFusion's var_pop 0.0 or NaN by path (README's Deviations)
            return Call(fn, col, kind=f"model:{fn}:{col}", oracle=f"array_agg({col}){{f}}")
        return Call(fn, col)
    if pick < 33:
        # Pairs of finite columns: with an infinity DataFusion's Welford means depend on row order (README's
        # Deviations); test_oracle.py checks the pairs with NaN and infinities by a rule for each.
        return Call(x(("covar_samp", "covar_pop", "corr")), _pair(rng, EXACT_NUMERIC))
    if pick < 40:
        fn, args = x(("regr_slope", "regr_intercept", "regr_count", "regr_r2", "regr_sxx", "regr_syy", "regr_sxy",
                      "regr_avgx", "regr_avgy")), _pair(rng, EXACT_NUMERIC)
        return Call(fn, args)
    if pick < 44:
        distinct = rng.random() < 0.3
        return Call("median", x(EXACT_NUMERIC if distinct else NUMERIC), distinct=distinct)
    if pick < 47:
        return Call("mode", x(("i", "l", "s", "dt", "ts")))
    if pick < 51:
        fn, col = x(("skewness", "kurtosis", "kurtosis_pop")), x(NUMERIC)
        return Call(fn, col, kind=f"model:{fn}:{col}", oracle=f"array_agg({col}){{f}}")
    if pick < 55:
        fn, col = x(("max_by", "min_by")), x(ORDERABLE + FLOATS)
        # datafusion-extra-functions 0.5.5's min_by fails: its max_by of the negated key
        return Call(fn, f"{col}, u", oracle=f"max_by({col}, {'-u' if fn == 'min_by' else 'u'}){{f}}")
    if pick < 57:
        col = x(ORDERABLE + FLOATS)
        return Call("any_value", col, kind="member", oracle=f"array_agg({col}){{f}}")
    if pick < 63:
        distinct = rng.random() < 0.3
        col = x(DISTINCTABLE if distinct else ORDERABLE + FLOATS)
        return Call("array_agg", col, kind="multiset", distinct=distinct)
    if pick < 65:
        return Call("string_agg", "s, ','", kind="split_multiset")
    if pick < 69:
        col, p = x(("i", "l")), x((0.1, 0.5, 0.9, 0.99))
        if rng.random() < 0.3:
            return Call("approx_median", col, kind="rank:0.5", oracle=f"array_agg({col}){{f}}")
        return Call("approx_percentile_cont", f"{col}, {p}", kind=f"rank:{p}", oracle=f"array_agg({col}){{f}}")
    if pick < 72:
        col = x(DISTINCTABLE)
        return Call("approx_distinct", col, kind="approx_count", oracle=f"count(DISTINCT {col}){{f}}")
    if pick < 78:
        fn, col = x(("count", "sum", "avg", "min", "max")), x(DISTINCTABLE if rng.random() < 0.5 else EXACT_NUMERIC)
        if fn in ("sum", "avg") and col not in EXACT_NUMERIC:
            col = x(EXACT_NUMERIC)
        return Call(fn, col, distinct=True)
    # Ordered calls (WITHIN GROUP): u is unique, so every order is total.
    order = x(("u", "u DESC"))
    if pick < 83:
        col = x(ORDERABLE + FLOATS)
        return Call("array_agg", col, within=order)
    if pick < 86:
        return Call("string_agg", "s, '|'", within=order)
    if pick < 94:
        fn, col = x(("first_value", "last_value")), x(ORDERABLE + FLOATS)
        if rng.random() < 0.3:
            return Call(fn, f"{col}, true", within=order, oracle=f"{fn}({col} ORDER BY {order}) IGNORE NULLS{{f}}")
        return Call(fn, col, within=order)
    if pick < 97:
        return Call("nth_value", f"{x(ORDERABLE)}, {x((1, 2, 3, -1, -2, 9))}", within=order)
    # p * (n - 1) in quarters: DataFusion 55's six-decimal interpolation weight is then exact
    col, p, desc = x(("i", "l") + FLOATS), x((0.0, 0.25, 0.5, 0.75, 1.0)), x(("", " DESC"))
    fn = x(("percentile_cont", "quantile_cont"))
    if col in FLOATS:  # DataFusion 55's grouped percentile_cont passes over NaN: judged from the values
        return Call(fn, str(p), within=f"{col}{desc}", kind=f"percentile:{p}" + (":desc" if desc else ""),
                    oracle=f"array_agg({col}){{f}}")
    return Call(fn, str(p), within=f"{col}{desc}", within_in_call=False)


def _window_call(rng: random.Random) -> Call:
    """A call DataFusion 55 slides with sparkagg's results: not the sliding bugs of Deviations (sum/avg of
    doubles once an infinity leaves, bit_xor of only NULLs, the residue its variances and covariances
    keep of a large value that left), not its window-only first/last_value."""
    pick = rng.randrange(8)
    x = rng.choice
    if pick < 2:
        return Call(x(("count", "sum", "avg")), x(EXACT_NUMERIC))
    if pick < 4:
        return Call(x(("min", "max")), x(ORDERABLE))
    if pick < 5:
        return Call(x(("bit_and", "bit_or")), x(("i", "l")))
    if pick < 6:
        return Call(x(("bool_and", "bool_or")), "b")
    if pick < 7:
        return Call("median", x(("i", "l") + FLOATS))
    return Call("count", x(("i", "s", "l")), distinct=True)


def _reference_window_call(rng: random.Random) -> Call:
    """A call over a sliding frame that DataFusion 55 cannot slide with sparkagg's results (README's
    Deviations; functions of its extra crate have no retract), judged by the reference model's sliding driver."""
    x = rng.choice
    fn = x(("mode", "skewness", "kurtosis", "kurtosis_pop", "first_value", "last_value", "max_by", "min_by",
            "any_value", "sum", "avg", "bit_xor", "array_agg", "median", "var_samp", "stddev_pop",
            "covar_samp", "corr", "regr_slope", "regr_sxy"))
    if fn in ("covar_samp", "corr", "regr_slope", "regr_sxy"):
        return Call(fn, _pair(rng))
    if fn == "mode":
        return Call(fn, x(("i", "l", "s", "dt", "ts")))
    if fn in ("max_by", "min_by"):
        return Call(fn, f"{x(ORDERABLE + FLOATS)}, u")
    if fn == "bit_xor":
        return Call(fn, x(("i", "l")))
    if fn in ("first_value", "last_value", "any_value", "array_agg"):
        return Call(fn, x(ORDERABLE + FLOATS))
    return Call(fn, x(NUMERIC))


# Frames the reference driver slides: from n PRECEDING (or the partition's start) to n FOLLOWING (or its end).
REFERENCE_LOWER = ("UNBOUNDED PRECEDING", "{n} PRECEDING", "CURRENT ROW")
REFERENCE_UPPER = ("CURRENT ROW", "{n} FOLLOWING", "UNBOUNDED FOLLOWING")


def reference_bounds(frame: Frame) -> tuple[int, int]:
    """(preceding, following) of a reference frame, as the reference driver takes them."""
    def rows(bound: str) -> int:
        return 10**9 if bound.startswith("UNBOUNDED") else 0 if bound == "CURRENT ROW" else int(bound.split()[0])
    return rows(frame.lower), rows(frame.upper)


def _frame(rng: random.Random) -> Frame:
    """A valid frame: the lower bound never after the upper (frames may still be empty at the edges)."""
    unit = rng.choice(("ROWS", "RANGE"))
    while True:
        lo, hi = rng.randrange(4), rng.randrange(1, 5)
        n_lo, n_hi = rng.choice((0, 1, 2, 5, 30)), rng.choice((0, 1, 2, 5, 30))
        rank = {0: -10**9, 1: -n_lo, 2: 0, 3: n_lo, 4: 10**9}
        rank_hi = {1: -n_hi, 2: 0, 3: n_hi, 4: 10**9}
        if rank[lo] <= rank_hi[hi] and (lo, hi) != (0, 4):
            return Frame(unit, ROWS_BOUNDS[lo].format(n=n_lo), ROWS_BOUNDS[hi].format(n=n_hi))


def random_query(rng: random.Random, ordered: bool) -> Query:
    shape = rng.random()
    if shape < 0.08:
        calls = tuple(_reference_window_call(rng) for _ in range(rng.randint(1, 3)))
        keys = tuple(rng.sample(("k", "ks"), rng.randint(0, 2)))
        frame = Frame("ROWS", rng.choice(REFERENCE_LOWER).format(n=rng.choice((1, 3, 10))),
                      rng.choice(REFERENCE_UPPER).format(n=rng.choice((0, 2, 10))))
        return Query(calls, keys, frame=frame, shape="reference_window")
    if shape < 0.25:
        calls = tuple(_window_call(rng) for _ in range(rng.randint(1, 3)))
        keys = tuple(rng.sample(("k", "ks"), rng.randint(0, 2)))
        return Query(calls, keys, frame=_frame(rng), shape="window")
    calls = []
    for _ in range(rng.randint(1, 4)):
        call = _aggregate_call(rng, ordered)
        if rng.random() < 0.25 and not call.args.endswith("true"):
            call = replace(call, filter=rng.choice(PREDICATES))
        calls.append(call)
    keys = tuple(rng.sample(("k", "ks", "kd", "b"), rng.choice((0, 1, 1, 2, 3))))
    if shape < 0.35:
        # State forms merge states, which a DISTINCT's states cannot be: those calls go without DISTINCT.
        calls = [replace(c, distinct=False, args="i" if c.args == "*" else c.args) for c in calls]
        # a state rollup: _state by the query's keys and perhaps others,
        extra = tuple(c for c in ("k", "ks", "kd") if c not in keys)
        first = keys + tuple(rng.sample(extra, rng.randint(0, len(extra))))
        # then _merge_state steps, each by the keys of the last or fewer (a rollup of a rollup), then _merge
        chain, rest = [first], list(first[len(keys):])
        while rng.random() < 0.5:
            if rest and rng.random() < 0.7:
                rest.pop()
            chain.append(keys + tuple(rest))
        return Query(tuple(calls), keys, state_keys=tuple(chain), shape="state")
    return Query(tuple(calls), keys, having=bool(keys) and rng.random() < 0.2)


def features(q: Query) -> list[str]:
    """What a query exercises, for the report."""
    out = [q.shape]
    out.append(f"keys={len(q.keys)}")
    if q.frame:
        out.append(f"frame={q.frame.unit}")
    if q.having:
        out.append("having")
    if len(q.state_keys) > 1:
        out.append("merge_state")
    for c in q.calls:
        out.append(f"fn={c.name}")
        if c.filter:
            out.append("filter")
        if c.distinct:
            out.append("distinct")
        if c.within:
            out.append("within_group")
    return out


# Calls that must be refused at analysis, naming the function: {wrong} is a column of a type the function
# does not take; the others pass a column where a constant belongs, a constant out of range, a state of
# the wrong shape, DISTINCT of two arguments in a window, a frame that ends before it starts.
INVALID = (
    ("df_sum", "df_sum({wrong})", ("s", "b", "dt", "ts")),
    ("df_avg", "df_avg({wrong})", ("s", "b", "dt", "ts")),
    ("df_var_pop", "df_var_pop({wrong})", ("s", "b", "dt")),
    ("df_median", "df_median({wrong})", ("s", "b", "dt", "ts")),
    ("df_skewness", "df_skewness({wrong})", ("s", "b", "dt")),
    ("df_covar_pop", "df_covar_pop(d, {wrong})", ("s", "b", "dt")),
    ("df_regr_slope", "df_regr_slope({wrong}, i)", ("s", "b", "dt")),
    ("df_bit_and", "df_bit_and({wrong})", ("d", "f", "m", "s", "b", "dt", "ts")),
    ("df_bit_xor", "df_bit_xor({wrong})", ("d", "m", "s", "b", "dt")),
    ("df_bool_or", "df_bool_or({wrong})", ("i", "l", "d", "f", "s", "dt", "ts")),
    ("df_mode", "df_mode({wrong})", ("b", "m")),
    ("df_approx_percentile_cont", "df_approx_percentile_cont(i, {wrong})", ("l", "d", "i")),
    ("df_approx_percentile_cont", "df_approx_percentile_cont(i, 1.5)", ("-",)),
    ("df_percentile_cont", "df_percentile_cont(l, {wrong})", ("i", "d")),
    ("df_percentile_cont", "df_percentile_cont(l, -0.5)", ("-",)),
    ("df_string_agg", "df_string_agg(s, {wrong})", ("s",)),
    ("df_nth_value", "df_nth_value(i, {wrong})", ("l", "i")),
    ("df_nth_value", "df_nth_value(i, 0)", ("-",)),
    ("df_first_value", "df_first_value(i, {wrong})", ("b",)),
    ("df_approx_distinct", "df_approx_distinct({wrong})", ("d", "f")),
    ("df_avg_merge", "df_avg_merge({wrong})", ("i", "s")),
    ("df_avg_merge", "df_avg_merge(named_struct('count', 'x', 'sum', d))", ("-",)),
    ("df_sum_merge_state", "df_sum_merge_state(named_struct('sum', d))", ("-",)),
    ("df_count", "df_count(DISTINCT i, {wrong}) OVER (ORDER BY o ROWS 1 PRECEDING)", ("l", "s")),
    # a frame whose start follows its end: Spark's own error, which names no function
    ("", "df_sum(i) OVER (ORDER BY o ROWS BETWEEN {wrong} FOLLOWING AND 1 PRECEDING)", ("1", "3")),
)


def invalid_query(rng: random.Random) -> tuple[str, str]:
    """A query that must fail at analysis, and the function name its error must carry."""
    name, call, wrong = rng.choice(INVALID)
    sql = f"SELECT {call.format(wrong=rng.choice(wrong))} FROM t"
    if rng.random() < 0.5:
        sql += " GROUP BY k"
    return sql, name
