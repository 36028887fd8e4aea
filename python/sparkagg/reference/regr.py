"""The linear regression aggregates regr_slope, regr_intercept, regr_count, regr_r2, regr_avgx,
regr_avgy, regr_sxx, regr_syy and regr_sxy (the JVM's functions/regr.scala) on the shared
``comoments`` state."""
from __future__ import annotations

import pyarrow as pa

from .argtypes import DataTypes
from .comoments import CO, COUNT, M2_0, M2_1, MEAN0, MEAN1, MomentsAccumulator
from .function import AggregateFunction


class RegrAccumulator(MomentsAccumulator):
    """regr_*(y, x): the least-squares line y = slope * x + intercept over the rows with neither NULL.

    With var_x = m2_x / n, var_y = m2_y / n and cov = c / n (as DataFusion divides):
    regr_slope = cov / var_x and regr_intercept = mean_y - slope * mean_x, NULL for n <= 1 or
    var_x == 0; regr_r2 = cov^2 / (var_x * var_y), NULL for n <= 1 or var_x == 0 or var_y == 0 (not
    1.0 for a constant y, as PostgreSQL has it); regr_count = n (bigint, 0 for no rows, never NULL);
    regr_avgx / regr_avgy = the means, regr_sxx / regr_syy = m2_x / m2_y, regr_sxy = c, all NULL for
    n = 0 (one row: the value, 0.0, 0.0, 0.0). State: [count, mean_x, mean_y, m2_x, m2_y, algo_const]."""

    ARITY = 2
    STATE = (("count", COUNT), ("mean_x", MEAN1), ("mean_y", MEAN0), ("m2_x", M2_1), ("m2_y", M2_0),
             ("algo_const", CO))

    @classmethod
    def return_type(cls, arg_types: DataTypes, *, kind: str) -> pa.DataType:
        result = super().return_type(arg_types, kind=kind)
        return pa.int64() if kind == "regr_count" else result

    def evaluate(self) -> float | int | None:
        m, n, kind = self.m, self.m.rows, self.kind
        if kind == "regr_count":
            return n
        if n == 0:
            return None
        simple = {"regr_avgx": m.mean(1), "regr_avgy": m.mean(0), "regr_sxx": m.m2(1),
                  "regr_syy": m.m2(0), "regr_sxy": m.c()}
        if kind in simple:
            return simple[kind]
        cov, var_x, var_y = m.c() / n, m.m2(1) / n, m.m2(0) / n
        if n <= 1 or var_x == 0.0 or (kind == "regr_r2" and var_y == 0.0):
            return None
        if kind == "regr_slope":
            return cov / var_x
        if kind == "regr_intercept":
            return m.mean(0) - cov / var_x * m.mean(1)
        return cov * cov / (var_x * var_y)  # regr_r2


class SlidingRegrAccumulator(RegrAccumulator):
    SLIDING = True


def _regr(name: str) -> AggregateFunction:
    return AggregateFunction(name, RegrAccumulator, SlidingRegrAccumulator, kind=name)


REGR_SLOPE = _regr("regr_slope")
REGR_INTERCEPT = _regr("regr_intercept")
REGR_COUNT = _regr("regr_count")
REGR_R2 = _regr("regr_r2")
REGR_AVGX = _regr("regr_avgx")
REGR_AVGY = _regr("regr_avgy")
REGR_SXX = _regr("regr_sxx")
REGR_SYY = _regr("regr_syy")
REGR_SXY = _regr("regr_sxy")
