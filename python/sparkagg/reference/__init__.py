"""Pure-Python reference model of sparkagg's aggregate functions (pyarrow only, no Spark).

It restates DataFusion's ``Accumulator`` model (update_batch, state, merge_batch, evaluate,
retract_batch) function by function, so the JVM implementation and the DataFusion oracle can both be
checked against something small enough to read.

The modules mirror the JVM's jvm/src/main/scala/sparkagg/functions/: each function family has its twin
of the same name (``count``, ``sum``, ``average``, ``min_max``, ``bitwise``, ``boolean``, ``variance``,
``covariance``, ``correlation``, ``regr``, ``array_agg``, ``string_agg``, ``first_last``,
``nth_value``, ``median``, ``percentile``, ``approx_percentile``, ``approx_distinct``), holding its
accumulators and the ``AggregateFunction``s it defines, and ``registry`` lists every function in one
place, as Functions.scala does. Literal arguments are bound to a function (string_agg's delimiter:
``get("string_agg").bind(delimiter=",")``; the ORDER BY of an aggregate:
``bind(ordering=[(descending, nulls_first), ...])``, keys as trailing columns).

Shared machinery, each named for what it is: ``accumulator`` (the Accumulator contract), ``function``
(``AggregateFunction``), ``argtypes`` (argument type rules), ``sums`` (the running sums of sum and
avg), ``comoments`` (the Welford co-moment state of the variance, covariance, correlation and regr
families), ``ordering`` (the total order on floats and the ORDER BY keys), ``tdigest`` (the sketch of
approx_percentile), ``groups`` (``GroupsAccumulator``, ``EmitTo``, ``NullState`` and the adapter that
runs any Accumulator per group; every function has ``groups(arg_types, ansi)``, native or adapted) and
``drivers`` (``aggregate``, ``aggregate_groups`` and ``sliding`` run accumulators as a query engine
does). Running a query on Spark and comparing with the model is ``sparkagg.check``, outside this
package, which imports no Spark.

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
from .approx_distinct import ApproxDistinctAccumulator
from .approx_percentile import (
    ApproxMedianAccumulator,
    ApproxPercentileContAccumulator,
    ApproxPercentileContWithWeightAccumulator,
)
from .array_agg import ArrayAggAccumulator
from .average import AvgAccumulator, AvgGroupsAccumulator
from .bitwise import BitwiseAccumulator, BitwiseGroupsAccumulator
from .boolean import BooleanAccumulator, BooleanGroupsAccumulator
from .comoments import CoMoments
from .correlation import CorrelationAccumulator
from .count import CountAccumulator, CountGroupsAccumulator
from .covariance import CovarianceAccumulator
from .drivers import aggregate, aggregate_groups, sliding
from .first_last import FirstLastValueAccumulator
from .function import AggregateFunction
from .groups import EmitTo, GroupsAccumulator, GroupsAccumulatorAdapter, NativeGroupsAccumulator, NullState
from .median import MedianAccumulator
from .min_max import MinMaxAccumulator, MinMaxGroupsAccumulator, SlidingMinMaxAccumulator
from .nth_value import NthValueAccumulator
from .ordering import Ordering
from .percentile import PercentileContAccumulator
from .registry import get, names
from .regr import RegrAccumulator
from .string_agg import StringAggAccumulator
from .sum import SumAccumulator, SumGroupsAccumulator
from .tdigest import TDigest
from .variance import VarianceAccumulator, VarianceGroupsAccumulator

__all__ = [
    "Accumulator",
    "AggregateFunction",
    "ApproxDistinctAccumulator",
    "ApproxMedianAccumulator",
    "ApproxPercentileContAccumulator",
    "ApproxPercentileContWithWeightAccumulator",
    "ArrayAggAccumulator",
    "AvgAccumulator",
    "AvgGroupsAccumulator",
    "BitwiseAccumulator",
    "BitwiseGroupsAccumulator",
    "BooleanAccumulator",
    "BooleanGroupsAccumulator",
    "CoMoments",
    "CorrelationAccumulator",
    "CountAccumulator",
    "CountGroupsAccumulator",
    "CovarianceAccumulator",
    "EmitTo",
    "FirstLastValueAccumulator",
    "GroupsAccumulator",
    "GroupsAccumulatorAdapter",
    "MedianAccumulator",
    "MinMaxAccumulator",
    "MinMaxGroupsAccumulator",
    "NativeGroupsAccumulator",
    "NthValueAccumulator",
    "NullState",
    "Ordering",
    "PercentileContAccumulator",
    "RegrAccumulator",
    "SlidingMinMaxAccumulator",
    "StringAggAccumulator",
    "SumAccumulator",
    "SumGroupsAccumulator",
    "TDigest",
    "VarianceAccumulator",
    "VarianceGroupsAccumulator",
    "aggregate",
    "aggregate_groups",
    "get",
    "names",
    "sliding",
]
