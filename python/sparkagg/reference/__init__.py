"""Pure-Python reference model of sparkagg's aggregate functions (pyarrow only).

It restates DataFusion's ``Accumulator`` model (update_batch, state, merge_batch, evaluate,
retract_batch) function by function, so the JVM implementation and the DataFusion oracle can both be
checked against something small enough to read. ``functions`` has count, sum, avg, min, max and the
registry; ``bitwise`` bit_and/or/xor and bool_and/or; ``moments`` variance, stddev, covar, corr and
regr_* on one shared Welford state. Importing the package registers all of them.

>>> import pyarrow as pa
>>> from sparkagg import reference
>>> acc = reference.get("sum")([pa.int64()])
>>> acc.update_batch([pa.array([1, None, 2])])
>>> acc.state(), acc.evaluate()
([3, 2], 3)
>>> reference.aggregate("avg", [pa.int64()], [pa.array([1, 2, 4])], partitions=3)
{None: 2.3333333333333335}
"""
from __future__ import annotations

from .accumulator import Accumulator
from .bitwise import BitwiseAccumulator
from .drivers import aggregate, sliding
from .functions import (
    AggregateFunction,
    AvgAccumulator,
    CountAccumulator,
    MinMaxAccumulator,
    SlidingMinMaxAccumulator,
    SumAccumulator,
    get,
    names,
)
from .moments import (
    CoMoments,
    CorrelationAccumulator,
    CovarianceAccumulator,
    RegrAccumulator,
    VarianceAccumulator,
)

__all__ = [
    "Accumulator",
    "AggregateFunction",
    "AvgAccumulator",
    "BitwiseAccumulator",
    "CoMoments",
    "CorrelationAccumulator",
    "CovarianceAccumulator",
    "CountAccumulator",
    "MinMaxAccumulator",
    "RegrAccumulator",
    "SlidingMinMaxAccumulator",
    "SumAccumulator",
    "VarianceAccumulator",
    "aggregate",
    "get",
    "names",
    "sliding",
]
