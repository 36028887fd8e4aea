"""Aggregate functions written in Python, run by Spark in two phases.

Write an :class:`Accumulator` (datafusion-python's contract: ``update``, ``merge``, ``state``,
``evaluate``, and optionally ``retract``) or a :class:`GroupsAccumulator` (every group of a partition
at once over Arrow arrays, the reference model's contract: ``update_batch``, ``merge_batch``,
``state(emit_to)``, ``evaluate(emit_to)``, ``size``) and make it a function with :func:`udaf`. Its calls
are Spark Columns (``df.groupBy("k").agg(f("x"))``, ``f("x").over(w)``) and :func:`register` makes it a SQL
function, on classic and Spark Connect sessions; :func:`aggregate` (GROUP BY) and :func:`window` (sliding
ROWS frames) run it as functions of the DataFrame. A class written for datafusion-python runs
unchanged, and datafusion need not be installed.

Unlike PySpark's ``pandas_udf`` / ``arrow_udf`` aggregates, which shuffle every row and hand each whole
group to one call, a udaf aggregates each input partition in the Python workers first and shuffles
only the states (``aggregate.py`` tells the plan). It works the same on classic and Spark Connect
sessions; user classes travel to the workers with cloudpickle as PySpark's UDFs do.

Modules: ``api`` (the contracts, ``udaf`` and the adapter that runs an Accumulator per group),
``grouping`` (dense group indices per partition), ``plan`` (argument types, checked on the driver),
``aggregate`` and ``window`` (the two runners), ``column`` (SQL registration, for Columns too) and
``runner`` (the phases the JAR's optimizer rule plans for Columns and SQL).
"""
from __future__ import annotations

from ..reference.groups import EmitTo, GroupsAccumulator
from .aggregate import PARTIAL_GROUPS_CONF, aggregate
from .api import Accumulator, AggregateUDF, UdafCall, UdafError, udaf
from .column import register
from .window import window

__all__ = ["Accumulator", "AggregateUDF", "EmitTo", "GroupsAccumulator", "PARTIAL_GROUPS_CONF", "UdafCall",
           "UdafError", "aggregate", "register", "udaf", "window"]
