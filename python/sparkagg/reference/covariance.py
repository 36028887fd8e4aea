"""covar_samp (covar) and covar_pop (the JVM's functions/covariance.scala) on the shared ``comoments``
state; no native GroupsAccumulator (the adapter runs them per group)."""
from __future__ import annotations

from .comoments import CO, COUNT, MEAN0, MEAN1, MomentsAccumulator
from .function import AggregateFunction


class CovarianceAccumulator(MomentsAccumulator):
    """covar_samp(y, x) (covar) = c / (n - 1), NULL for fewer than two rows; covar_pop(y, x) = c / n,
    NULL for none. State: [count, mean1, mean2, algo_const] (algo_const is c)."""

    ARITY = 2
    STATE = (("count", COUNT), ("mean1", MEAN0), ("mean2", MEAN1), ("algo_const", CO))

    def evaluate(self) -> float | None:
        n = self.m.rows
        divisor = n - 1 if self.kind == "covar_samp" else n
        return None if divisor <= 0 else self.m.c() / divisor


class SlidingCovarianceAccumulator(CovarianceAccumulator):
    SLIDING = True


COVAR_SAMP = AggregateFunction("covar_samp", CovarianceAccumulator, SlidingCovarianceAccumulator,
                               aliases=("covar",), kind="covar_samp")
COVAR_POP = AggregateFunction("covar_pop", CovarianceAccumulator, SlidingCovarianceAccumulator, kind="covar_pop")
