"""var_samp (var, var_sample), var_pop (var_population), stddev (stddev_samp) and stddev_pop (the JVM's
functions/variance.scala) on the shared ``comoments`` state: the single-group accumulators, their
sliding variants and the native GroupsAccumulator."""
from __future__ import annotations

import math
from typing import Any

import pyarrow as pa

from .comoments import COUNT, M2_0, MEAN0, MomentsAccumulator
from .function import AggregateFunction
from .groups import EmitTo, NativeGroupsAccumulator, _check_batch, included_rows


class VarianceAccumulator(MomentsAccumulator):
    """var_samp (var, var_sample), var_pop (var_population), stddev (stddev_samp), stddev_pop.

    m2 / (n - 1) for the sample forms, m2 / n for the population forms, the stddevs their square
    roots. NULL for no rows; the sample forms are NULL for one row, the population forms 0.0 (NaN
    when that row is NaN or infinite). State: [count, mean, m2]."""

    STATE = (("count", COUNT), ("mean", MEAN0), ("m2", M2_0))

    def evaluate(self) -> float | None:
        n = self.m.rows
        sample = self.kind in ("var_samp", "stddev")
        if n == 0 or (sample and n == 1):
            return None
        variance = self.m.m2(0) / (n - 1 if sample else n)
        return math.sqrt(variance) if self.kind.startswith("stddev") else variance


class SlidingVarianceAccumulator(VarianceAccumulator):
    SLIDING = True


class VarianceGroupsAccumulator(NativeGroupsAccumulator):
    """var_samp, var_pop, stddev, stddev_pop (``kind``): as ``VarianceAccumulator``, Welford per group
    with NaN and infinities counted apart. State: [count, mean, m2]."""

    LISTS = ("rows", "n", "mean", "m2", "nan", "pos_inf", "neg_inf")

    def __init__(self, arg_types, ansi=True, *, kind: str) -> None:
        super().__init__(arg_types, ansi, kind=kind)
        self.return_type = VarianceAccumulator.return_type(arg_types, kind=kind)
        self.state_fields = VarianceAccumulator.state_fields(arg_types, kind=kind)
        self._kind = kind
        for name in self.LISTS:
            setattr(self, name, [])

    def _initial(self, name: str) -> Any:
        return 0.0 if name in ("mean", "m2") else 0

    def update_batch(self, values, group_indices, opt_filter, total_num_groups) -> None:
        (column,) = values
        _check_batch(values, group_indices, total_num_groups)
        self._resize(total_num_groups)
        rows, n, mean, m2 = self.rows, self.n, self.mean, self.m2
        for g, (v,) in included_rows(values, group_indices, opt_filter):
            if v is None:
                continue
            v = float(v)
            rows[g] += 1
            if math.isnan(v):
                self.nan[g] += 1
            elif v == math.inf:
                self.pos_inf[g] += 1
            elif v == -math.inf:
                self.neg_inf[g] += 1
            elif n[g] == 0:
                n[g], mean[g], m2[g] = 1, v + 0.0, 0.0
            else:
                n[g] += 1
                delta = v - mean[g]
                mean[g] += delta / n[g]
                m2[g] += delta * (v - mean[g])

    def merge_batch(self, values, group_indices, opt_filter, total_num_groups) -> None:
        _check_batch(values, group_indices, total_num_groups)
        self._resize(total_num_groups)
        n, mean, m2 = self.n, self.mean, self.m2
        for g, (count, other_mean, other_m2) in included_rows(values, group_indices, opt_filter):
            if not count:
                continue
            self.rows[g] += count
            if math.isnan(other_mean):
                self.nan[g] += 1
            elif other_mean == math.inf:
                self.pos_inf[g] += 1
            elif other_mean == -math.inf:
                self.neg_inf[g] += 1
            elif n[g] == 0:
                n[g], mean[g], m2[g] = count, other_mean, other_m2
            else:
                total = n[g] + count
                d = other_mean - mean[g]
                mean[g] += d * count / total
                m2[g] += other_m2 + d * d * n[g] * count / total
                n[g] = total

    def _emit(self, emit_to) -> list[tuple[int, float, float]]:
        """(rows, exported mean, exported m2) of the emitted groups."""
        lists = self._take(emit_to)
        out = []
        for rows, mean, m2, nan, pos, neg in zip(lists["rows"], lists["mean"], lists["m2"],
                                                 lists["nan"], lists["pos_inf"], lists["neg_inf"]):
            if nan or (pos and neg):
                exported_mean = math.nan
            elif pos:
                exported_mean = math.inf
            elif neg:
                exported_mean = -math.inf
            else:
                exported_mean = mean
            out.append((rows, exported_mean, math.nan if nan or pos or neg else m2))
        return out

    def evaluate(self, emit_to=EmitTo.All) -> pa.Array:
        sample = self._kind in ("var_samp", "stddev")
        out = []
        for n, _, m2 in self._emit(emit_to):
            if n == 0 or (sample and n == 1):
                out.append(None)
                continue
            variance = m2 / (n - 1 if sample else n)
            out.append(math.sqrt(variance) if self._kind.startswith("stddev") else variance)
        return pa.array(out, self.return_type)

    def state(self, emit_to=EmitTo.All) -> list[pa.Array]:
        emitted = self._emit(emit_to)
        return [pa.array([e[f] for e in emitted], t) for f, (_, t) in enumerate(self.state_fields)]


def _variance(name: str, aliases: tuple[str, ...] = ()) -> AggregateFunction:
    return AggregateFunction(name, VarianceAccumulator, SlidingVarianceAccumulator, aliases=aliases, kind=name,
                             groups_accumulator=VarianceGroupsAccumulator)


VAR_SAMP = _variance("var_samp", ("var", "var_sample"))
VAR_POP = _variance("var_pop", ("var_population",))
STDDEV = _variance("stddev", ("stddev_samp",))
STDDEV_POP = _variance("stddev_pop")
