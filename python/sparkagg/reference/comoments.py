"""The co-moment algebra shared by variance, stddev, covariance, corr and regr_* (the JVM's
common/CoMoments.scala, with functions/CoMomentAggregate.scala).

All of them share one state, ``CoMoments``: Welford's running count, means and centred second
moments of one or two columns (``m2`` = sum of squared deviations from the mean, ``c`` = sum of
products of the two columns' deviations), merged with Chan's parallel formula and retracted by
running Welford backwards. Each function is a few lines on top: which moments its state exports
(DataFusion's state fields, in DataFusion's order) and how it evaluates them.

Arguments are numbers of any kind (integers, floats, decimals), converted to double; a row whose
argument (or either argument of a two-argument function) is NULL is skipped. Python floats are
doubles, so the arithmetic is plain float arithmetic, in DataFusion's order of operations. Welford
needs no small common offset: on 1e9 + noise of about 1 the results keep some 1e-7 relative, bounded
by the state's mean being a double (noise of 1e-3 on 1e9 keeps about 1e-5, DataFusion alike).

Semantics are DataFusion 55's (checked against the ``datafusion`` package) with these choices where
DataFusion 55 disagrees with itself or depends on arrival order:

* NaN and infinite inputs are counted per column apart from the finite ones, which alone enter the
  Welford moments. A column holding any makes its ``m2`` and the co-moment ``c`` NaN (as DataFusion
  gives, except its ungrouped covar, which says inf when an infinity is the last row); its mean is
  what ``avg`` gives (+-inf for infinities of one sign, else NaN), where
  DataFusion's Welford mean depends on where the infinity arrives (regr_avgy of (inf, 1) is NaN, of
  (1, inf) inf). Counting them apart also lets a sliding frame recover once they have left it, as
  the sliding sum does (DataFusion's sliding variance stays NaN).
* var_pop / stddev_pop of one NaN or infinite value is NaN (DataFusion 55's grouped path; its
  ungrouped path says 0.0).
* corr: NULL for fewer than two rows and NULL for a zero variance, as DataFusion 55 (50's ungrouped
  path gave 0.0 for both), checked before NaN propagates: a constant column beside a NaN is NULL, as
  regr_slope and regr_r2 have it. Otherwise a NaN or infinity in one column gives NaN, as covar_pop
  does; DataFusion 55 gives NULL there (its grouped path NaN for an infinity).
* Window frames: retract is implemented for every function here (DataFusion has none for covar and
  corr). The sliding accumulators, whose frames retract rows in arrival order, also notice a frame
  whose values in a column are all equal and give it exactly the moments a recomputation gives
  (mean = that value, m2 = c = 0), so a constant frame's zero variance stays zero rather than a
  rounding residue of the retracts (which would turn regr_slope's NULL into a huge number).
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from .accumulator import SLOT_BYTES, Accumulator, columns_to_pylists
from .argtypes import DataTypes, StateFields, _is_numeric

# Keys of the moments a function's state exports, in ``CoMoments.get`` / ``CoMoments.merge``.
COUNT, MEAN0, MEAN1, M2_0, M2_1, CO = "count", "mean0", "mean1", "m2_0", "m2_1", "c"
_TYPES = {COUNT: pa.int64()}  # every other moment is a double


class _Column:
    """Welford moments of one column's finite values, and how many NaN, +inf and -inf it holds."""

    __slots__ = ("n", "mean", "m2", "nan", "pos_inf", "neg_inf")

    def __init__(self) -> None:
        self.n = 0
        self.mean = 0.0
        self.m2 = 0.0
        self.nan = self.pos_inf = self.neg_inf = 0

    def finite(self) -> bool:
        return not (self.nan or self.pos_inf or self.neg_inf)

    def _count_special(self, v: float, sign: int) -> bool:
        """Count a NaN or infinity in (``sign`` 1) or out (-1); False for a finite value."""
        if math.isnan(v):
            self.nan += sign
        elif v == math.inf:
            self.pos_inf += sign
        elif v == -math.inf:
            self.neg_inf += sign
        else:
            return False
        return True

    def add(self, v: float) -> None:
        if self._count_special(v, 1):
            return
        if self.n == 0:  # what the step below gives from the empty state, whatever mean a snap left
            self.n, self.mean, self.m2 = 1, v + 0.0, 0.0  # + 0.0: a lone -0.0 has mean 0.0, as in DataFusion
            return
        self.n += 1
        delta = v - self.mean
        self.mean += delta / self.n
        self.m2 += delta * (v - self.mean)

    def remove(self, v: float) -> None:
        """Reverse Welford: mean_{n-1} = mean_n - (v - mean_n) / (n - 1), then m2 loses
        (v - mean_{n-1}) * (v - mean_n). One value left has m2 = 0 exactly; none, the empty state."""
        if self._count_special(v, -1):
            return
        if self.n <= 1:
            self.n, self.mean, self.m2 = 0, 0.0, 0.0
            return
        self.n -= 1
        delta = v - self.mean
        self.mean -= delta / self.n
        self.m2 = 0.0 if self.n == 1 else max(0.0, self.m2 - delta * (v - self.mean))

    def merge(self, n: int, mean: float, m2: float) -> None:
        """Chan et al.'s parallel formula; a state that carried a NaN or infinity in this column
        (its exported mean is not finite) only marks the column."""
        if n == 0:
            return
        if math.isnan(mean):
            self.nan += 1
        elif mean == math.inf:
            self.pos_inf += 1
        elif mean == -math.inf:
            self.neg_inf += 1
        elif self.n == 0:
            self.n, self.mean, self.m2 = n, mean, m2
        else:
            total = self.n + n
            d = mean - self.mean
            self.mean += d * n / total
            self.m2 += m2 + d * d * self.n * n / total
            self.n = total

    def exported_mean(self) -> float:
        """The column's mean as avg gives it: NaN with a NaN or with infinities of both signs."""
        if self.nan or (self.pos_inf and self.neg_inf):
            return math.nan
        if self.pos_inf:
            return math.inf
        if self.neg_inf:
            return -math.inf
        return self.mean

    def exported_m2(self) -> float:
        return self.m2 if self.finite() else math.nan

    def snap(self, value: float) -> None:
        """The moments of values all equal to ``value`` (finite), as Welford computes them."""
        self.mean, self.m2 = value + 0.0, 0.0


class _CoMoment:
    """Welford co-moment of two columns over the rows where both are finite: the means of those
    rows and c = sum((a - mean_a) * (b - mean_b))."""

    __slots__ = ("n", "mean_a", "mean_b", "c")

    def __init__(self) -> None:
        self.n = 0
        self.mean_a = self.mean_b = self.c = 0.0

    def add(self, a: float, b: float) -> None:
        if self.n == 0:
            self.n, self.mean_a, self.mean_b, self.c = 1, a + 0.0, b + 0.0, 0.0
            return
        self.n += 1
        delta_a = a - self.mean_a
        self.mean_a += delta_a / self.n
        self.mean_b += (b - self.mean_b) / self.n
        self.c += delta_a * (b - self.mean_b)

    def remove(self, a: float, b: float) -> None:
        if self.n <= 1:
            self.n, self.mean_a, self.mean_b, self.c = 0, 0.0, 0.0, 0.0
            return
        self.n -= 1
        mean_b = self.mean_b  # the forward step multiplied by (b - the mean that includes b)
        self.mean_a -= (a - self.mean_a) / self.n
        self.mean_b -= (b - self.mean_b) / self.n
        self.c = 0.0 if self.n == 1 else self.c - (a - self.mean_a) * (b - mean_b)

    def merge(self, n: int, mean_a: float, mean_b: float, c: float) -> None:
        if n == 0:
            return
        if self.n == 0:
            self.n, self.mean_a, self.mean_b, self.c = n, mean_a, mean_b, c
            return
        total = self.n + n
        d_a, d_b = mean_a - self.mean_a, mean_b - self.mean_b
        self.mean_a += d_a * n / total
        self.mean_b += d_b * n / total
        self.c += c + d_a * d_b * self.n * n / total
        self.n = total


class CoMoments:
    """The shared state: the row count, each column's moments and (for two columns) their co-moment.

    ``rows`` counts the rows taken (no argument NULL), NaN and infinities included: it is the n of
    every formula. ``get`` reads one exported moment (COUNT, MEAN0, MEAN1, M2_0, M2_1, CO: what the
    state fields hold) and ``merge`` folds in exported states given by the same keys, whichever
    subset a function exports (covariance exports no m2, variance no co-moment).

    With ``arrival_order`` (sliding frames, which retract their oldest rows) each column also keeps
    its newest value and how many of the newest rows repeat it: when that run covers the whole frame
    the column is constant, and its moments are set to exactly those of a constant column."""

    def __init__(self, arity: int, arrival_order: bool = False) -> None:
        self.rows = 0
        self.columns = [_Column() for _ in range(arity)]
        self.co = _CoMoment() if arity == 2 else None
        self._arrival_order = arrival_order
        self._last: list[float | None] = [None] * arity
        self._run = [0] * arity
        self.cancelled = False  # a retract cancelled m2's digits: the frame is to be recomputed

    # --- rows in and out -------------------------------------------------------------------------

    def update(self, row: Sequence[float]) -> None:
        self.rows += 1
        for column, v in zip(self.columns, row):
            column.add(v)
        if self.co is not None and all(math.isfinite(v) for v in row):
            self.co.add(*row)
        if self._arrival_order:
            for i, v in enumerate(row):
                self._run[i] = self._run[i] + 1 if v == self._last[i] else 1  # NaN never repeats
                self._last[i] = v
            self._snap_constant_columns()

    def retract(self, row: Sequence[float]) -> None:
        self.rows -= 1
        before = [column.m2 for column in self.columns]
        for column, v in zip(self.columns, row):
            column.remove(v)
        if self.co is not None and all(math.isfinite(v) for v in row):
            self.co.remove(*row)
        # Welford backwards subtracts the leaving value's share of m2; when that was nearly all of it
        # (a large value leaving small ones) what remains has lost its digits, even gone below 0,
        # unless the column is left constant, which the snap below sets exactly.
        lost = [column.m2 < m2 * 1e-6 for column, m2 in zip(self.columns, before)]
        if self._arrival_order:
            self._snap_constant_columns()
        self.cancelled = self.cancelled or any(
            lost_digits and not 0 < self.rows <= self._run[i] for i, lost_digits in enumerate(lost))

    def _snap_constant_columns(self) -> None:
        for i, column in enumerate(self.columns):
            if 0 < self.rows <= self._run[i] and column.finite():
                value = self._last[i]
                column.snap(value)
                if self.co is not None and self.co.n > 0:
                    if i == 0:
                        self.co.mean_a = value + 0.0
                    else:
                        self.co.mean_b = value + 0.0
                    self.co.c = 0.0

    # --- exported moments ------------------------------------------------------------------------

    def get(self, key: str) -> Any:
        if key == COUNT:
            return self.rows
        if key == CO:
            if self.co is None or not all(c.finite() for c in self.columns):
                return math.nan
            return self.co.c
        column = self.columns[int(key[-1])]
        return column.exported_mean() if key.startswith("mean") else column.exported_m2()

    def merge(self, state: dict[str, Any]) -> None:
        """Fold in one exported state, given as {key: value}; a key it lacks counts as 0.0."""
        n = state[COUNT]
        if not n:
            return
        self.rows += n
        means = [state[MEAN0], state.get(MEAN1, 0.0)][: len(self.columns)]
        m2s = [state.get(M2_0, 0.0), state.get(M2_1, 0.0)]
        for column, mean, m2 in zip(self.columns, means, m2s):
            column.merge(n, mean, m2)
        if self.co is not None and all(math.isfinite(m) for m in means):
            self.co.merge(n, means[0], means[1], state.get(CO, 0.0))

    # --- what the functions read -----------------------------------------------------------------

    def mean(self, i: int) -> float:
        return self.columns[i].exported_mean()

    def m2(self, i: int) -> float:
        return self.columns[i].exported_m2()

    def c(self) -> float:
        return self.get(CO)


# --- the accumulator shared by every function here ---------------------------------------------

def _numeric_arguments(name: str, arg_types: DataTypes, arity: int) -> None:
    if len(arg_types) != arity:
        raise TypeError(f"{name} takes exactly {arity} argument{'s' if arity > 1 else ''}, got {len(arg_types)}")
    for t in arg_types:
        if not _is_numeric(t):
            raise TypeError(f"{name} does not support argument type {t}")


class MomentsAccumulator(Accumulator):
    """Feeds ``CoMoments`` and exports the moments listed in ``STATE`` as the state.

    Subclasses set ``ARITY`` and ``STATE`` ((field name, moment key) pairs, in DataFusion's order) and
    write ``evaluate``; ``kind`` is the function name (var_samp, regr_slope, ...). ``SLIDING`` marks
    the variants window frames use (see ``CoMoments``)."""

    ARITY = 1
    STATE: tuple[tuple[str, str], ...] = ()
    SLIDING = False

    def __init__(self, arg_types: DataTypes, ansi: bool = True, *, kind: str) -> None:
        _numeric_arguments(kind, arg_types, self.ARITY)
        self.kind = kind
        self.m = CoMoments(self.ARITY, arrival_order=self.SLIDING)

    @classmethod
    def return_type(cls, arg_types: DataTypes, *, kind: str) -> pa.DataType:
        _numeric_arguments(kind, arg_types, cls.ARITY)
        return pa.float64()

    @classmethod
    def state_fields(cls, arg_types: DataTypes, *, kind: str) -> StateFields:
        _numeric_arguments(kind, arg_types, cls.ARITY)
        return [(name, _TYPES.get(key, pa.float64())) for name, key in cls.STATE]

    def _rows(self, values: Sequence[pa.Array]) -> list[list[float]]:
        columns = columns_to_pylists(values, self.ARITY)
        return [[float(v) for v in row] for row in zip(*columns) if None not in row]

    def update_batch(self, values: Sequence[pa.Array]) -> None:
        for row in self._rows(values):
            self.m.update(row)

    def retract_batch(self, values: Sequence[pa.Array]) -> None:
        for row in self._rows(values):
            self.m.retract(row)

    def supports_retract_batch(self) -> bool:
        return True

    def needs_rebuild(self) -> bool:
        return self.m.cancelled

    def merge_batch(self, states: Sequence[pa.Array]) -> None:
        columns = columns_to_pylists(states, len(self.STATE))
        keys = [key for _, key in self.STATE]
        for row in zip(*columns):
            self.m.merge(dict(zip(keys, row)))

    def state(self) -> list[Any]:
        return [self.m.get(key) for _, key in self.STATE]

    def size(self) -> int:
        """The row count, per column a count, mean, m2 and three special counters, and for two
        columns the co-moment's count, two means and c."""
        return SLOT_BYTES * (1 + 6 * self.ARITY + (4 if self.ARITY == 2 else 0))
