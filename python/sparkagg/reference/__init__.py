"""Pure-Python reference model of sparkagg's aggregate functions (pyarrow only).

It restates DataFusion's ``Accumulator`` model (update_batch, state, merge_batch, evaluate,
retract_batch) function by function, so the JVM implementation and the DataFusion oracle can both be
checked against something small enough to read. ``functions`` has count, sum, avg, min, max and the
registry; ``bitwise`` bit_and/or/xor and bool_and/or; ``moments`` variance, stddev, covar, corr and
regr_* on one shared Welford state; ``listagg`` array_agg, string_agg (its delimiter literal bound
with ``get("string_agg").bind(delimiter=",")``) and median; ``ordered`` first_value, last_value,
nth_value and the ORDER BY of an aggregate (``bind(ordering=[(descending, nulls_first), ...])``, keys
as trailing columns); ``percentile`` percentile_cont; ``tdigest`` approx_percentile_cont,
approx_median and approx_percentile_cont_with_weight; ``approx_distinct`` its HyperLogLog. Importing
the package registers all.

``groups`` restates ``GroupsAccumulator`` (all groups of a hash aggregation in one object), ``EmitTo``
and ``NullState``; ``native_groups`` has native GroupsAccumulators, and every function has
``groups(arg_types, ansi)`` (native, or its Accumulator through ``GroupsAccumulatorAdapter``).
``check`` runs a query on Spark and compares its rows with the model's (``sparkagg.check``).

>>> import pyarrow as pa
>>> from sparkagg import reference
>>> acc = reference.get("sum")([pa.int64()])
>>> acc.update_batch([pa.array([1, None, 2])])
>>> acc.state(), acc.evaluate()
([3, 2], 3)
>>> reference.aggregate("avg", [pa.int64()], [pa.array([1, 2, 4])], partitions=3)
{None: 2.3333333333333335}
>>> sorted(reference.aggregate_groups("sum", [pa.int64()], [pa.array([1, 2, 4])],
...                                   keys=pa.array(["a", "b", "a"])).items())
[('a', 5), ('b', 2)]
"""
from __future__ import annotations

from .accumulator import Accumulator
from .approx_distinct import ApproxDistinctAccumulator  # noqa: F401  (registers approx_distinct)
from .percentile import PercentileContAccumulator  # noqa: F401  (registers percentile_cont)
from .tdigest import (  # noqa: F401  (registers approx_percentile_cont, approx_median, ..._with_weight)
    ApproxMedianAccumulator,
    ApproxPercentileContAccumulator,
    ApproxPercentileContWithWeightAccumulator,
    TDigest,
)
from .bitwise import BitwiseAccumulator
from .drivers import aggregate, aggregate_groups, sliding
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
from .groups import (
    EmitTo,
    GroupsAccumulator,
    GroupsAccumulatorAdapter,
    NativeGroupsAccumulator,
    NullState,
)
from .listagg import ArrayAggAccumulator, MedianAccumulator, StringAggAccumulator
from .ordered import FirstLastValueAccumulator, NthValueAccumulator, Ordering
from .moments import (
    CoMoments,
    CorrelationAccumulator,
    CovarianceAccumulator,
    RegrAccumulator,
    VarianceAccumulator,
)
from .native_groups import (
    AvgGroupsAccumulator,
    BitwiseGroupsAccumulator,
    CountGroupsAccumulator,
    MinMaxGroupsAccumulator,
    SumGroupsAccumulator,
    VarianceGroupsAccumulator,
)

__all__ = [
    "Accumulator",
    "AggregateFunction",
    "ArrayAggAccumulator",
    "AvgGroupsAccumulator",
    "BitwiseGroupsAccumulator",
    "CountGroupsAccumulator",
    "EmitTo",
    "FirstLastValueAccumulator",
    "GroupsAccumulator",
    "GroupsAccumulatorAdapter",
    "MinMaxGroupsAccumulator",
    "NativeGroupsAccumulator",
    "NthValueAccumulator",
    "Ordering",
    "NullState",
    "SumGroupsAccumulator",
    "VarianceGroupsAccumulator",
    "AvgAccumulator",
    "BitwiseAccumulator",
    "CoMoments",
    "CorrelationAccumulator",
    "CovarianceAccumulator",
    "CountAccumulator",
    "MedianAccumulator",
    "MinMaxAccumulator",
    "RegrAccumulator",
    "SlidingMinMaxAccumulator",
    "StringAggAccumulator",
    "SumAccumulator",
    "VarianceAccumulator",
    "aggregate",
    "aggregate_groups",
    "check",
    "get",
    "names",
    "sliding",
]


def check(spark, sql: str, rel_tol: float = 1e-9, **options):
    """Run ``sql`` on Spark and with the model; the list of differences (see ``sparkagg.check``)."""
    from ..check import check as run

    return run(spark, sql, rel_tol=rel_tol, **options)
