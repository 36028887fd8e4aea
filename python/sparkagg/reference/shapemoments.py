"""The shared state of skewness, kurtosis and kurtosis_pop (the JVM's common/ShapeMoments.scala): the
count, mean and central moment sums M2, M3 (and M4) of the non-NULL values read as floats, updated by
Welford's step extended to the higher moments and merged by Pébay's pairwise formulas. The count, mean
and M2 move as variance's do: a NaN or infinity makes M2 NaN and the mean what ``avg`` gives (+-inf for
infinities of one sign, else NaN), whatever the order. DataFusion-extra keeps sums of powers, which cancel
when the values share an offset; the results are its formulas over these moments. No retract (sliding
frames merge states)."""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import pyarrow as pa

from .accumulator import SLOT_BYTES, Accumulator, columns_to_pylists, non_null
from .argtypes import DataTypes, StateFields, _is_numeric, _one_argument
from .function import AggregateFunction

# The final formula of a function: (n, m2, m3, m4), the moments divided by n -> float or None.
Formula = Callable[[int, float, float, float], "float | None"]


def _mean_beside_non_finite(x: float, y: float) -> float:
    """The mean of values of which ``x`` or ``y`` (a mean or a value) is NaN or infinite: the other one when one
    is finite, else NaN for a NaN or opposite infinities, else that infinity (what a sum would give)."""
    if math.isfinite(x):
        return y
    if math.isfinite(y):
        return x
    return x + y


class ShapeMomentAccumulator(Accumulator):
    """``kind``(x) over count, mean, M2, M3 (and M4 when ``fourth``); ``formula`` gives the result."""

    def __init__(self, arg_types: DataTypes, ansi: bool = True, *, kind: str, fourth: bool,
                 formula: Formula) -> None:
        _one_argument(kind, arg_types, _is_numeric)
        self._fourth = fourth
        self._formula = formula
        self._n, self._mean, self._m2, self._m3, self._m4 = 0, 0.0, 0.0, 0.0, 0.0

    @staticmethod
    def return_type(arg_types: DataTypes, *, kind: str, **_: Any) -> pa.DataType:
        _one_argument(kind, arg_types, _is_numeric)
        return pa.float64()

    @staticmethod
    def state_fields(arg_types: DataTypes, *, kind: str, fourth: bool, **_: Any) -> StateFields:
        _one_argument(kind, arg_types, _is_numeric)
        return [("count", pa.int64())] + [(f, pa.float64()) for f in ("mean", "m2", "m3", "m4")[: 4 if fourth else 3]]

    def update_batch(self, values: Sequence[pa.Array]) -> None:
        for v in non_null(values):
            x = float(v)
            n1 = float(self._n)
            n = n1 + 1
            delta = x - self._mean
            delta_n = delta / n
            term = delta * delta_n * n1
            if self._fourth:
                self._m4 += (term * delta_n * delta_n * (n * n - 3 * n + 3) + 6 * delta_n * delta_n * self._m2
                             - 4 * delta_n * self._m3)
            self._m3 += term * delta_n * (n - 2) - 3 * delta_n * self._m2
            self._n += 1
            if math.isfinite(x) and math.isfinite(self._mean):
                self._mean += delta / self._n
                self._m2 += delta * (x - self._mean)
            else:
                self._mean, self._m2 = _mean_beside_non_finite(self._mean, x), math.nan

    def merge_batch(self, states: Sequence[pa.Array]) -> None:
        columns = columns_to_pylists(states, 5 if self._fourth else 4)
        for count, mean, m2, m3, *rest in zip(*columns):
            if count:
                self._merge(count, mean, m2, m3, rest[0] if rest else 0.0)

    def _merge(self, nb: int, mean_b: float, m2b: float, m3b: float, m4b: float) -> None:
        if self._n == 0:
            self._n, self._mean, self._m2, self._m3, self._m4 = nb, mean_b, m2b, m3b, m4b
            return
        na, b = float(self._n), float(nb)
        n = na + b
        delta = mean_b - self._mean
        m2a, m3a = self._m2, self._m3
        if self._fourth:
            self._m4 += (m4b + delta * delta * delta * delta * na * b * (na * na - na * b + b * b) / (n * n * n)
                         + 6 * delta * delta * (na * na * m2b + b * b * m2a) / (n * n)
                         + 4 * delta * (na * m3b - b * m3a) / n)
        self._m3 += m3b + delta * delta * delta * na * b * (na - b) / (n * n) + 3 * delta * (na * m2b - b * m2a) / n
        if math.isfinite(self._mean) and math.isfinite(mean_b):
            self._mean += delta * nb / (self._n + nb)
            self._m2 += m2b + delta * delta * (self._n * nb / (self._n + nb))
        else:
            self._mean, self._m2 = _mean_beside_non_finite(self._mean, mean_b), math.nan
        self._n += nb

    def state(self) -> list[Any]:
        return [self._n, self._mean, self._m2, self._m3] + ([self._m4] if self._fourth else [])

    def evaluate(self) -> float | None:
        n = self._n
        if n == 0:
            return self._formula(0, float("nan"), float("nan"), float("nan"))
        m2 = self._m2 / n  # infinite (huge values' squares overflow): read as NaN, as the JVM's resultOf does
        return self._formula(n, float("nan") if math.isinf(m2) else m2, self._m3 / n, self._m4 / n)

    def size(self) -> int:
        return SLOT_BYTES * 6


def shape_moment_function(name: str, fourth: bool, formula: Formula) -> AggregateFunction:
    return AggregateFunction(name, ShapeMomentAccumulator, kind=name, fourth=fourth, formula=formula)
