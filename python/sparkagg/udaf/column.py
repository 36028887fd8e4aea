"""A udaf call as a Spark Column, and a udaf as a SQL function (classic sessions).

``register(spark, "wmean", wmean)`` makes ``wmean`` an aggregate function of the session's SQL; a call
``wmean("x", "w")`` is a Column that does the same under a name of its own. Either way the JVM
(``sparkagg.python.PythonUdafs``) holds the pickled udaf, checks argument types when the query is analysed,
and its optimizer rule runs the udaf in two phases in the Python workers (``runner.py``), beside the JVM's
aggregates of the same query. The rule copies its Python environment from a probe: a ``mapInArrow`` this
driver builds (and never runs), so the workers run the Python and the settings PySpark would give them.

On Spark Connect, whose protocol carries SQL but no Python aggregate, ``register`` sends the statement
``CREATE TEMPORARY PYTHON AGGREGATE name FROM '<spec>'``, which the extension's parser turns into the same
registration on the server; the server runs the workers' Python as it does for its clients' ``mapInArrow``.
There ``f("x")`` is a Connect Column of the call of a name registered that way (``connect_call``): in
``agg``, in expressions and over windows, on Spark 3.5 as on 4.x.
"""
from __future__ import annotations

import base64
import functools
import json
import re
import sys

from pyspark import cloudpickle
from pyspark.sql import types as T

from .api import AggregateUDF, Call
from .plan import spark_type


def _probe(spark):
    from . import runner
    return spark.range(0).mapInArrow(runner.identity, "id long")._jdf.queryExecution().analyzed()


def register(spark, name: str, udaf: AggregateUDF) -> None:
    """Make ``name`` a SQL aggregate function of this (classic) session that runs ``udaf``: grouped or
    global, with HAVING and ``FILTER (WHERE ...)``, beside any other aggregate.

    >>> import pyarrow as pa
    >>> from sparkagg.udaf import Accumulator, udaf, register
    >>> class Present(Accumulator):  # how many values are not NULL
    ...     def __init__(self): self.n = 0
    ...     def update(self, values): self.n += len(values) - values.null_count
    ...     def merge(self, states): self.n += sum(states[0].to_pylist())
    ...     def state(self): return [self.n]
    ...     def evaluate(self): return self.n
    >>> register(spark, "present", udaf(Present, pa.int64(), pa.int64(), [pa.int64()]))
    >>> spark.sql("SELECT k, present(x) AS n, present(x) FILTER (WHERE x > 1) AS big "
    ...           "FROM VALUES ('a', 1), ('b', NULL), ('a', 3) AS v(k, x) GROUP BY k ORDER BY k").collect()
    [Row(k='a', n=2, big=1), Row(k='b', n=0, big=0)]
    """
    import sparkagg

    if not isinstance(udaf, AggregateUDF):
        raise TypeError(f"sparkagg.udaf.register: {name} must be made by sparkagg.udaf.udaf, "
                        f"got {type(udaf).__name__}")
    if not re.fullmatch(r"[A-Za-z_]\w*", name):
        raise ValueError(f"sparkagg.udaf.register: {name!r} is not a plain SQL name (letters, digits, _)")
    inputs = T.StructType([T.StructField(f"_{i}", spark_type(udaf.name, "input", t))
                           for i, t in enumerate(udaf.input_types)])
    result = spark_type(udaf.name, "return", udaf.return_type)
    payload = base64.b64encode(cloudpickle.dumps(udaf)).decode("ascii")
    if getattr(spark, "_jvm", None) is None:  # Spark Connect: the statement the extension's parser knows
        spec = json.dumps({"udaf": udaf.name, "payload": payload, "input": inputs.json(), "result": result.json(),
                           "python": "%d.%d" % sys.version_info[:2]})
        if "'" in spec:
            raise ValueError(f"sparkagg.udaf.register: the udaf's name {udaf.name!r} holds a quote")
        spark.sql(f"CREATE TEMPORARY PYTHON AGGREGATE {name} FROM '{spec}'")
        return
    jvm = sparkagg._jvm_of(spark)
    jvm.sparkagg.python.PythonUdafs.register(spark._jsparkSession, name, udaf.name, payload, inputs.json(),
                                             result.json(), _probe(spark))


def registered_name(spark, udaf: AggregateUDF) -> str:
    """The session's SQL name for ``udaf``'s Column calls, registered on first use. A name of its own per udaf,
    so that two udafs sharing a name can meet in one query; result columns are named by the udaf's name."""
    plain = re.sub(r"\W", "_", udaf.name)
    name = f"__sparkagg_udaf_{plain}_{udaf.uid}"
    if not spark.catalog.functionExists(name):
        register(spark, name, udaf)
    return name


def active_connect_session():
    """The thread's active Spark Connect session, or None; Connect's modules are not imported for a
    classic session (they need grpc)."""
    session = sys.modules.get("pyspark.sql.connect.session")
    return None if session is None else session.SparkSession.getActiveSession()


def connect_call(spark, udaf: AggregateUDF, columns: list):
    """``udaf(*columns)`` on the Connect session ``spark``: the Connect Column of the call of the udaf's
    registered name, carrying the call for ``aggregate`` and ``window``."""
    from pyspark.sql.connect import functions as CF

    call = CF.call_function(registered_name(spark, udaf), *[CF.col(c) if isinstance(c, str) else c for c in columns])
    return _connect_call_class()(call, udaf, columns, None)


@functools.cache
def _connect_call_class():
    """Made on first use: its base class imports Connect's client."""
    from pyspark.sql.connect.column import Column as ConnectColumn

    class ConnectUdafCall(ConnectColumn, Call):
        """A udaf call on a Spark Connect session: a Connect Column, which Spark 3.5's client requires of
        ``agg``'s arguments, that ``.alias`` keeps a udaf call (``call``: the unnamed Column)."""

        def __init__(self, call, udaf: AggregateUDF, columns: list, name: str | None) -> None:
            ConnectColumn.__init__(self, (call.alias(name) if name else call)._expr)
            Call.__init__(self, udaf, columns, name)
            self._call = call

        def alias(self, *alias: str, **kwargs):
            if len(alias) != 1 or kwargs:
                return ConnectColumn.alias(self, *alias, **kwargs)
            return ConnectUdafCall(self._call, self.udaf, self.columns, alias[0])

    return ConnectUdafCall
