"""Judging a Spark result against the oracle's, cell by cell, by the kind of each call (queries.Call.kind):

- exact: equal values; floats to a relative 1e-6 (sums and moments add in the order partitions arrive),
  NaN equal to NaN, lists element by element;
- multiset / split_multiset: an unordered collection (array_agg, string_agg without WITHIN GROUP), compared
  sorted;
- member: any_value, one of the group's non-NULL values (the oracle gives the group's values), NULL when none;
- nan_min / nan_max: min/max of doubles in Spark's order (NaN greatest), from the group's values;
- rank:p: a t-digest percentile, whose rank among the group's values (between its neighbours where it
  falls in a gap) is within 3% (+1 value) of p;
- approx_count: an HLL estimate within 3% (+2) of the exact count of distinct values;
- model:fn:column: the reference model's fn over the group's values of column (skewness and kurtosis:
  DataFusion-extra sums powers, which cancel into noise where values sit far from 0 relative to their
  spread, README's Deviations);
- percentile:p[:desc]: percentile_cont of doubles worked out here from the group's values, in Spark's order
  (NaN greatest), interpolated as DataFusion's ungrouped percentile_cont does (its grouped one, with a NaN
  among the values, passes over it: README's Deviations)."""
from __future__ import annotations

import datetime
import math
from decimal import Decimal

import pyarrow as pa

import oracle
from sparkagg import reference

from . import tables

REL = 1e-6
ABS = 1e-9
RANK_TOLERANCE = 0.03
COUNT_TOLERANCE = 0.03


def same(a, b, abs_tol: float = ABS) -> bool:
    """oracle.same to REL, element by element in lists, a decimal equal to a float of its value, and
    otherwise values of one type only (an integer is not a boolean)."""
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and isinstance(b, float):
        return oracle.same(a, b, REL, abs_tol)
    if isinstance(a, (float, Decimal)) and isinstance(b, (float, Decimal)) and type(a) is not type(b):
        return same(float(a), float(b), abs_tol)
    if isinstance(a, datetime.datetime) and isinstance(b, datetime.datetime):
        return _instant(a) == _instant(b)
    return type(a) is type(b) and a == b if a is not None and b is not None else a is b


def _instant(t: datetime.datetime) -> float:
    """A timestamp as seconds since the epoch: DataFusion's carry UTC, PySpark's are naive local times
    (its collect converts with the process's time zone, which timestamp() undoes)."""
    return t.timestamp()


def _sort_key(v):
    """A total order over cell values of one column (NULLs first, NaN after numbers)."""
    if v is None:
        return (0, "")
    if isinstance(v, float) and math.isnan(v):
        return (2, "")
    if isinstance(v, (int, float, Decimal)) and not isinstance(v, bool):
        return (1, float(v))
    if isinstance(v, datetime.datetime):
        return (1, _instant(v))
    return (1, repr(v))


def _values(group):
    return [v for v in (group or []) if v is not None]


def cell(kind: str, got, want, abs_tol: float = ABS) -> bool:
    if kind == "exact":
        return same(got, want, abs_tol)
    if kind == "multiset":
        return got is None and want is None or (
            got is not None and want is not None and same(sorted(got, key=_sort_key), sorted(want, key=_sort_key)))
    if kind == "split_multiset":
        return cell("multiset", None if got is None else got.split(","), None if want is None else want.split(","))
    if kind == "approx_count":
        return got is not None and abs(got - want) <= COUNT_TOLERANCE * want + 2
    values = _values(want)
    if kind == "member":
        return got is None if not values else any(same(got, v) for v in values)
    if kind in ("nan_min", "nan_max"):
        if not values:
            return got is None
        numbers = [v for v in values if not math.isnan(v)]
        if kind == "nan_max":
            expected = math.nan if len(numbers) < len(values) else max(numbers)
        else:
            expected = min(numbers) if numbers else math.nan
        return same(got, expected)
    if kind.startswith("model:"):
        _, fn, column = kind.split(":")
        arg_type = tables.SCHEMA.field(column).type
        expected = reference.drivers.aggregate(fn, [arg_type], [pa.array(want or [], arg_type)])[None]
        return same(got, expected, abs_tol)
    if kind.startswith("percentile:"):
        if not values:
            return got is None
        _, p, *desc = kind.split(":")
        ordered = sorted(values, key=lambda v: (math.isnan(v), v))
        # DESC reads the ascending order at 1 - p, as DataFusion and Spark do
        position = (1 - float(p) if desc else float(p)) * (len(ordered) - 1)
        low, fraction = int(position), position - int(position)
        lower = ordered[low]
        return same(got, lower + (ordered[low + 1] - lower) * fraction if fraction else lower, abs_tol)
    if kind.startswith("rank:"):
        if not values:
            return got is None
        if got is None:
            return False
        # A digest interpolates between centroids, so its answer may fall in a gap between two values:
        # it ranks anywhere from the lower neighbour's first copy to the upper neighbour's last.
        p, n = float(kind[5:]), len(values)
        lower = max((v for v in values if v <= got), default=got)
        upper = min((v for v in values if v >= got), default=got)
        below = sum(1 for v in values if v < lower)
        at_or_below = sum(1 for v in values if v <= upper)
        slack = RANK_TOLERANCE * n + 1
        return below - slack <= p * n <= at_or_below + slack
    raise ValueError(f"unknown comparison {kind!r}")


def _row_key(row, leading: int):
    return tuple(_sort_key(v) for v in row[:leading])


def rows(kinds: list[str], leading: int, got: list[tuple], want: list[tuple], near_zero: list[float]) -> str | None:
    """None when equal; else what differs. `leading` columns (keys, or the window's `o`) identify rows, in
    no particular order; the calls' cells follow them. `near_zero`, by call: how far from 0 a float may be
    and still equal 0 (rounding grows with the magnitude of the arguments)."""
    if len(got) != len(want):
        return f"{len(got)} rows where the oracle has {len(want)}"
    got, want = sorted(got, key=lambda r: _row_key(r, leading)), sorted(want, key=lambda r: _row_key(r, leading))
    for g, w in zip(got, want):
        if not all(same(a, b) for a, b in zip(g[:leading], w[:leading])):
            return f"rows {g[:leading]} and {w[:leading]}: different keys"
        for j, kind in enumerate(kinds):
            if not cell(kind, g[leading + j], w[leading + j], near_zero[j]):
                return f"row {g[:leading]}, c{j} ({kind}): Spark {g[leading + j]!r}, oracle {w[leading + j]!r}"
    return None
