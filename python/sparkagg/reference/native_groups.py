"""Native ``GroupsAccumulator``s: count, sum, avg, min, max, bool_and/or, bit_and/or/xor and the
variance family (var_samp, var_pop, stddev, stddev_pop), one Python list per state field.

Each computes exactly what its single-group ``Accumulator`` computes, in the same order of
operations, so that for the same rows in the same order it equals ``GroupsAccumulatorAdapter`` over
that ``Accumulator`` value for value (floats bit for bit): the tests hold them to it. Validity (which
groups output NULL) comes from ``NullState`` where DataFusion's accumulators use it (min, max, bool,
bit); sum, avg and the moments keep a count per group, which both decides NULL and is state.

Importing the module attaches each class to its function in the registry (``AggregateFunction.groups``);
functions without one here (covar, corr, regr_*) run through the adapter.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from .bitwise import BitwiseAccumulator
from .functions import (
    AvgAccumulator,
    CountAccumulator,
    MinMaxAccumulator,
    SumAccumulator,
    _float_order_key,
    _is_float,
    _overflow,
    _scaled,
    _sum_type,
    _unscaled,
    get,
)
from .groups import EmitTo, NativeGroupsAccumulator, NullState, _check_batch, included_rows
from .moments import VarianceAccumulator

# Flags of the NaN and infinities a double sum has seen (no retract here, so flags suffice where the
# single-group sum counts them).
_NAN, _POS_INF, _NEG_INF = 1, 2, 4


class CountGroupsAccumulator(NativeGroupsAccumulator):
    """count: per group, the rows whose arguments are all non-NULL. Never NULL. State: [count]."""

    LISTS = ("counts",)

    def __init__(self, arg_types, ansi=True, **options) -> None:
        super().__init__(arg_types, ansi, **options)
        self.return_type = CountAccumulator.return_type(arg_types)
        self.state_fields = CountAccumulator.state_fields(arg_types)
        self._arity = max(1, len(arg_types))
        self.counts: list[int] = []

    def update_batch(self, values, group_indices, opt_filter, total_num_groups) -> None:
        if len(values) != self._arity:
            raise ValueError(f"expected {self._arity} arrays, got {len(values)}")
        _check_batch(values, group_indices, total_num_groups)
        self._resize(total_num_groups)
        for g, row in included_rows(values, group_indices, opt_filter):
            if None not in row:
                self.counts[g] += 1

    def merge_batch(self, values, group_indices, opt_filter, total_num_groups) -> None:
        _check_batch(values, group_indices, total_num_groups)
        self._resize(total_num_groups)
        for g, (count,) in included_rows(values, group_indices, opt_filter):
            self.counts[g] += count

    def evaluate(self, emit_to=EmitTo.All) -> pa.Array:
        return pa.array(self._take(emit_to)["counts"], self.return_type)

    def state(self, emit_to=EmitTo.All) -> list[pa.Array]:
        return [self.evaluate(emit_to)]


class _SumGroups(NativeGroupsAccumulator):
    """What sum and avg share: per group a running sum of the non-NULL inputs (a double, with flags
    for NaN and infinities, or an exact integer of 10**-scale units), their count, and whether a
    merged partial sum had overflowed (its sum NULL with a positive count)."""

    LISTS = ("sums", "flags", "counts", "overflowed")

    def _setup(self, sum_type: pa.DataType) -> None:
        self._float = pa.types.is_floating(sum_type)
        self._decimal = pa.types.is_decimal(sum_type)
        if self._decimal:
            self._scale = sum_type.scale
            self._lo, self._hi = 1 - 10**sum_type.precision, 10**sum_type.precision - 1
        else:
            self._scale = 0
            self._lo, self._hi = -(2**63), 2**63 - 1
        self.sums: list[Any] = []
        self.flags: list[int] = []
        self.counts: list[int] = []
        self.overflowed: list[bool] = []
        self._nulls = NullState()

    def _initial(self, name: str) -> Any:
        if name == "sums":
            return 0.0 if self._float else 0
        return False if name == "overflowed" else 0

    def _add(self, g: int, value: Any) -> None:
        if self._float:
            x = float(value)
            if math.isnan(x):
                self.flags[g] |= _NAN
            elif x == math.inf:
                self.flags[g] |= _POS_INF
            elif x == -math.inf:
                self.flags[g] |= _NEG_INF
            else:
                self.sums[g] += x
        else:
            self.sums[g] += _unscaled(value, self._scale) if self._decimal else value

    def _update_one(self, g: int, value: Any) -> None:
        self._add(g, value)
        self.counts[g] += 1

    def update_batch(self, values, group_indices, opt_filter, total_num_groups) -> None:
        (column,) = values
        self._resize(total_num_groups)
        self._nulls.accumulate(group_indices, column, opt_filter, total_num_groups, self._update_one)

    def _merge(self, counts: pa.Array, sums: pa.Array, group_indices, opt_filter, total_num_groups) -> None:
        _check_batch([counts, sums], group_indices, total_num_groups)
        self._resize(total_num_groups)
        for g, (count, total) in included_rows([counts, sums], group_indices, opt_filter):
            if not count:
                continue
            self.counts[g] += count
            if total is None:
                self.overflowed[g] = True
            else:
                self._add(g, total)

    def _exported(self, total: Any, flags: int, count: int, overflowed: bool) -> Any:
        """A group's sum as its state type holds it (see ``_SumAndCount._exported_sum``)."""
        if count == 0:
            return None
        if self._float:
            if flags & _NAN or flags & (_POS_INF | _NEG_INF) == _POS_INF | _NEG_INF:
                return math.nan
            if flags & _POS_INF:
                return math.inf
            if flags & _NEG_INF:
                return -math.inf
            return total
        if overflowed or not self._lo <= total <= self._hi:
            return _overflow(self._ansi, "sum")
        return _scaled(total, self._scale) if self._decimal else total

    def _emit(self, emit_to) -> list[tuple[Any, int]]:
        """(exported sum, count) of the emitted groups."""
        self._nulls.build(emit_to)  # kept as long as the lists; the counts decide NULL
        lists = self._take(emit_to)
        return [(self._exported(s, f, c, o), c) for s, f, c, o in
                zip(lists["sums"], lists["flags"], lists["counts"], lists["overflowed"])]

    def _resize(self, total_num_groups: int) -> None:
        super()._resize(total_num_groups)
        self._nulls._resize(total_num_groups)

    def size(self) -> int:
        return super().size() + self._nulls.size()


class SumGroupsAccumulator(_SumGroups):
    """sum: as ``SumAccumulator``. State: [sum, count]."""

    def __init__(self, arg_types, ansi=True, **options) -> None:
        super().__init__(arg_types, ansi, **options)
        self.return_type = SumAccumulator.return_type(arg_types)
        self.state_fields = SumAccumulator.state_fields(arg_types)
        self._setup(self.return_type)

    def merge_batch(self, values, group_indices, opt_filter, total_num_groups) -> None:
        sums, counts = values
        self._merge(counts, sums, group_indices, opt_filter, total_num_groups)

    def evaluate(self, emit_to=EmitTo.All) -> pa.Array:
        return pa.array([s for s, _ in self._emit(emit_to)], self.return_type)

    def state(self, emit_to=EmitTo.All) -> list[pa.Array]:
        emitted = self._emit(emit_to)
        (_, sum_type), (_, count_type) = self.state_fields
        return [pa.array([s for s, _ in emitted], sum_type), pa.array([c for _, c in emitted], count_type)]


class AvgGroupsAccumulator(_SumGroups):
    """avg: as ``AvgAccumulator``. State: [count, sum]."""

    def __init__(self, arg_types, ansi=True, **options) -> None:
        super().__init__(arg_types, ansi, **options)
        self.return_type = AvgAccumulator.return_type(arg_types)
        self.state_fields = AvgAccumulator.state_fields(arg_types)
        (t,) = arg_types
        self._setup(_sum_type(t) if pa.types.is_decimal(t) else pa.float64())

    def merge_batch(self, values, group_indices, opt_filter, total_num_groups) -> None:
        counts, sums = values
        self._merge(counts, sums, group_indices, opt_filter, total_num_groups)

    def _mean(self, total: Any, count: int) -> Any:
        if total is None:
            return None
        if self._float:
            return total / count
        result = self.return_type
        numerator = _unscaled(total, self._scale) * 10 ** (result.scale - self._scale)
        quotient = abs(numerator) // count  # truncation toward zero, sign applied after
        if quotient >= 10**result.precision:
            return _overflow(self._ansi, "avg")
        return _scaled(-quotient if numerator < 0 else quotient, result.scale)

    def evaluate(self, emit_to=EmitTo.All) -> pa.Array:
        return pa.array([self._mean(s, c) for s, c in self._emit(emit_to)], self.return_type)

    def state(self, emit_to=EmitTo.All) -> list[pa.Array]:
        emitted = self._emit(emit_to)
        (_, count_type), (_, sum_type) = self.state_fields
        return [pa.array([c for _, c in emitted], count_type), pa.array([s for s, _ in emitted], sum_type)]


class _OneValueGroups(NativeGroupsAccumulator):
    """Accumulators whose state is one value of the input type per group, valid where ``NullState``
    has seen a value: min, max, bool_and/or, bit_and/or/xor. Merging is updating."""

    LISTS = ("values",)

    def _setup(self, return_type: pa.DataType, state_fields) -> None:
        self.return_type = return_type
        self.state_fields = state_fields
        self.values: list[Any] = []
        self._nulls = NullState()

    def _fold(self, g: int, v: Any) -> None:
        raise NotImplementedError

    def _accumulate(self, column: pa.Array, group_indices, opt_filter, total_num_groups) -> None:
        self._resize(total_num_groups)
        self._nulls.accumulate(group_indices, column, opt_filter, total_num_groups, self._fold)

    def update_batch(self, values, group_indices, opt_filter, total_num_groups) -> None:
        (column,) = values
        self._accumulate(column, group_indices, opt_filter, total_num_groups)

    def merge_batch(self, values, group_indices, opt_filter, total_num_groups) -> None:
        self.update_batch(values, group_indices, opt_filter, total_num_groups)

    def evaluate(self, emit_to=EmitTo.All) -> pa.Array:
        self._nulls._resize(self._groups)
        valid = self._nulls.build(emit_to)
        values = self._take(emit_to)["values"]
        return pa.array([v if ok else None for v, ok in zip(values, valid)], self.return_type)

    def state(self, emit_to=EmitTo.All) -> list[pa.Array]:
        return [self.evaluate(emit_to)]

    def size(self) -> int:
        return super().size() + self._nulls.size()


class MinMaxGroupsAccumulator(_OneValueGroups):
    """min / max (``kind``): as ``MinMaxAccumulator``, one total order on floats in every path."""

    def __init__(self, arg_types, ansi=True, *, kind: str) -> None:
        super().__init__(arg_types, ansi, kind=kind)
        self._setup(MinMaxAccumulator.return_type(arg_types, kind=kind),
                    MinMaxAccumulator.state_fields(arg_types, kind=kind))
        self._min = kind == "min"
        self._key = _float_order_key if _is_float(arg_types[0]) else (lambda v: v)

    def _initial(self, name: str) -> Any:
        return None

    def _fold(self, g: int, v: Any) -> None:
        current = self.values[g]
        if current is None:
            self.values[g] = v
        elif self._min and self._key(v) < self._key(current):
            self.values[g] = v
        elif not self._min and self._key(v) > self._key(current):
            self.values[g] = v


class BitwiseGroupsAccumulator(_OneValueGroups):
    """bit_and / bit_or / bit_xor on integers and bool_and / bool_or on booleans (``kind``): each
    group starts at the operator's identity (all ones, zero, true, false), NULL until it sees a value."""

    _IDENTITY = {"bit_and": -1, "bit_or": 0, "bit_xor": 0, "bool_and": True, "bool_or": False}

    def __init__(self, arg_types, ansi=True, *, kind: str) -> None:
        super().__init__(arg_types, ansi, kind=kind)
        self._setup(BitwiseAccumulator.return_type(arg_types, kind=kind),
                    BitwiseAccumulator.state_fields(arg_types, kind=kind))
        self._kind = kind

    def _initial(self, name: str) -> Any:
        return self._IDENTITY[self._kind]

    def _fold(self, g: int, v: Any) -> None:
        kind, values = self._kind, self.values
        if kind == "bit_and":
            values[g] &= v
        elif kind == "bit_or":
            values[g] |= v
        elif kind == "bit_xor":
            values[g] ^= v
        elif kind == "bool_and":
            values[g] = values[g] and v
        else:
            values[g] = values[g] or v

    def update_batch(self, values, group_indices, opt_filter, total_num_groups) -> None:
        (column,) = values
        if self._kind.startswith("bool"):
            self._resize(total_num_groups)
            self._nulls.accumulate_boolean(group_indices, column, opt_filter, total_num_groups, self._fold)
        else:
            self._accumulate(column, group_indices, opt_filter, total_num_groups)


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


def _attach() -> None:
    natives = {
        "count": CountGroupsAccumulator, "sum": SumGroupsAccumulator, "avg": AvgGroupsAccumulator,
        "min": MinMaxGroupsAccumulator, "max": MinMaxGroupsAccumulator,
        "var_samp": VarianceGroupsAccumulator, "var_pop": VarianceGroupsAccumulator,
        "stddev": VarianceGroupsAccumulator, "stddev_pop": VarianceGroupsAccumulator,
    }
    natives.update({k: BitwiseGroupsAccumulator for k in ("bit_and", "bit_or", "bit_xor", "bool_and", "bool_or")})
    for name, cls in natives.items():
        get(name).groups_accumulator = cls


_attach()

NATIVE = ("count", "sum", "avg", "min", "max", "bit_and", "bit_or", "bit_xor", "bool_and", "bool_or",
          "var_samp", "var_pop", "stddev", "stddev_pop")
