"""corr(y, x) (the JVM's functions/correlation.scala) on the shared ``comoments`` state."""
from __future__ import annotations

import math

from .comoments import CO, COUNT, M2_0, M2_1, MEAN0, MEAN1, MomentsAccumulator
from .function import AggregateFunction


class CorrelationAccumulator(MomentsAccumulator):
    """corr(y, x) = covar_pop / (stddev_pop(y) * stddev_pop(x)), as (c / n) / sqrt(m2_1 / n) / sqrt(m2_2 / n).

    NULL for fewer than two rows; NULL when either column is constant (zero variance), even beside a
    NaN in the other; otherwise NaN when a NaN or infinity is among the rows. State: [count, mean1,
    m2_1, mean2, m2_2, algo_const]."""

    ARITY = 2
    STATE = (("count", COUNT), ("mean1", MEAN0), ("m2_1", M2_0), ("mean2", MEAN1), ("m2_2", M2_1),
             ("algo_const", CO))

    def evaluate(self) -> float | None:
        n = self.m.rows
        if n < 2:
            return None
        stddev_1, stddev_2 = math.sqrt(self.m.m2(0) / n), math.sqrt(self.m.m2(1) / n)  # NaN stays NaN
        if stddev_1 == 0.0 or stddev_2 == 0.0:
            return None
        return self.m.c() / n / stddev_1 / stddev_2


class SlidingCorrelationAccumulator(CorrelationAccumulator):
    SLIDING = True


CORR = AggregateFunction("corr", CorrelationAccumulator, SlidingCorrelationAccumulator, kind="corr")
