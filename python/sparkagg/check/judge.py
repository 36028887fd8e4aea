"""sparkagg.check's last part: Spark's rows against the model's, row by row; where more than one answer is
right (an order-free collection, a first value among ties, an estimate), the model's answer says which
it accepts (``Judged``)."""
from __future__ import annotations

import decimal
import math
from dataclasses import dataclass
from typing import Any, Callable

from ..reference import drivers
from .query import Query

RANK_TOLERANCE = 0.03


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


def _show(value: Any) -> str:
    if isinstance(value, tuple):
        return "(" + ", ".join(_show(v) for v in value) + ")"
    return "NULL" if value is None else repr(value)


def freeze(value: Any) -> Any:
    """A hashable grouping key, normalised as Spark groups: NaN one value, -0.0 == 0.0."""
    if isinstance(value, list):
        return tuple(freeze(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((k, freeze(v)) for k, v in value.items()))
    return drivers._group_key(value)


def sort_one(v: Any) -> tuple:
    if v is None:
        return (0, "")
    if isinstance(v, float) and math.isnan(v):
        return (2, "")
    if isinstance(v, (int, float, decimal.Decimal)) and not isinstance(v, bool):
        return (1, f"{float(v):+.17e}")
    return (3, repr(v))


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
            equal(a, b) for a, b in zip(sorted(value, key=sort_one), sorted(self.value, key=sort_one)))

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
    return tuple((4, "") if isinstance(v, Judged) else sort_one(v) for v in row)


def compare(spark_rows: list[tuple], model: list[tuple], query: Query, rel_tol: float,
            abs_tol: float = 0.0) -> list[Difference]:
    """Differences between Spark's rows and the model's, matched by their items without calls."""
    key_at = [i for i, it in enumerate(query.items) if not it.computed]
    names = [it.alias or it.text for it in query.items]

    def buckets(rows):
        out: dict[Any, list[tuple]] = {}
        for row in rows:
            out.setdefault(tuple(freeze(row[i]) for i in key_at), []).append(row)
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
