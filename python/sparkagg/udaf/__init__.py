"""Aggregate functions written in Python, run by Spark in two phases.

Write an :class:`Accumulator` (datafusion-python's contract: ``update``, ``merge``, ``state``,
``evaluate``, and optionally ``retract``) or a :class:`GroupsAccumulator` (every group of a partition
at once over Arrow arrays, DataFusion's contract, ``contract``: ``update_batch``, ``merge_batch``,
``state(emit_to)``, ``evaluate(emit_to)``, ``size``) and make it a function with :func:`udaf`. Its calls
are Spark Columns (``df.groupBy("k").agg(f("x"))``, ``f("x").over(w)``) and :func:`register` makes it a SQL
function, on classic and Spark Connect sessions; :func:`aggregate` (GROUP BY) and :func:`window` (sliding
ROWS frames) run it as functions of the DataFrame. A class written for datafusion-python runs
unchanged, and datafusion need not be installed.

Unlike PySpark's ``pandas_udf`` / ``arrow_udf`` aggregates, which shuffle every row and hand each whole
group to one call, a udaf aggregates each input partition in the Python workers first and shuffles
only the states (``aggregate.py`` tells the plan). It works the same on classic and Spark Connect
sessions; user classes travel to the workers with cloudpickle as PySpark's UDFs do.

Modules: ``contract`` (GroupsAccumulator and EmitTo, which the reference model's accumulators follow
too), ``api`` (the Accumulator contract, ``udaf`` and the adapter that runs an Accumulator per group),
``grouping`` (dense group indices per partition), ``plan`` (argument types, checked on the driver),
``aggregate`` and ``window`` (the two runners), ``column`` (SQL registration, for Columns too) and
``runner`` (the phases the JAR's optimizer rule plans for Columns and SQL).
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

# Each public name and the module that defines it. The modules are imported on first use (PEP 562), so that
# importing ``sparkagg.udaf.contract`` (the reference model does; it imports no Spark) does not import pyspark.
_DEFINED_IN = {
    "PARTIAL_GROUPS_CONF": "aggregate", "aggregate": "aggregate",
    "Accumulator": "api", "AggregateUDF": "api", "UdafCall": "api", "UdafError": "api", "udaf": "api",
    "register": "column",
    "EmitTo": "contract", "GroupsAccumulator": "contract",
    "window": "window",
}

if TYPE_CHECKING:  # the same names, for type checkers and the docs' static reader
    from .aggregate import PARTIAL_GROUPS_CONF, aggregate
    from .api import Accumulator, AggregateUDF, UdafCall, UdafError, udaf
    from .column import register
    from .contract import EmitTo, GroupsAccumulator
    from .window import window

__all__ = ["Accumulator", "AggregateUDF", "EmitTo", "GroupsAccumulator", "PARTIAL_GROUPS_CONF", "UdafCall",
           "UdafError", "aggregate", "register", "udaf", "window"]


def __getattr__(name: str):
    if name not in _DEFINED_IN:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{_DEFINED_IN[name]}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_DEFINED_IN))
