"""Column functions for sparkagg's SQL functions.

Each calls the SQL function by name (``pyspark.sql.functions.call_function``), so they work on classic
and Spark Connect sessions alike, once the functions are registered (:func:`sparkagg.session`, the
``spark.sql.extensions`` setting, or :func:`sparkagg.register`). The prefix follows the last
``session``/``register`` call (default ``df_``).

The examples run as doctests against a local session where ``spark`` has sparkagg registered.
"""
from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F

_prefix = "df_"

__all__ = ["count", "sum", "avg", "mean", "min", "max", "use_prefix"]


def use_prefix(prefix: str) -> None:
    """Call the SQL functions under ``prefix`` from now on (as registered)."""
    global _prefix
    _prefix = prefix


def _call(name: str, *cols) -> Column:
    return F.call_function(_prefix + name, *[F.col(c) if isinstance(c, str) else c for c in cols])


def count(*cols) -> Column:
    """Rows where every argument is non-NULL; with no argument, all rows. Never NULL (0 on empty input).

    >>> df = spark.createDataFrame([(1, "a"), (None, "b"), (3, None)], "x int, y string")
    >>> df.select(count().alias("rows"), count("x").alias("x"), count("x", "y").alias("xy")).first()
    Row(rows=3, x=2, xy=1)
    """
    return _call("count", *cols)


def sum(col) -> Column:  # noqa: A001 - mirrors pyspark.sql.functions.sum
    """Sum of the non-NULL values: bigint for integers, double for floats, decimal(min(38,p+10),s) for
    decimals; NULL if there are none. Overflow raises in ANSI mode, gives NULL otherwise.

    >>> df = spark.createDataFrame([(5,), (10,), (None,)], "x int")
    >>> df.select(sum("x").alias("s")).first()
    Row(s=15)
    """
    return _call("sum", col)


def avg(col) -> Column:
    """Mean of the non-NULL values: double for integers and floats, decimal(min(38,p+4),min(38,s+4))
    (truncated) for decimals; NULL if there are none.

    >>> df = spark.createDataFrame([(1,), (2,), (4,)], "x int")
    >>> df.select(avg("x").alias("a")).first()
    Row(a=2.3333333333333335)
    """
    return _call("avg", col)


def mean(col) -> Column:
    """Alias of :func:`avg`.

    >>> spark.createDataFrame([(1.0,), (2.0,)], "x double").select(mean("x").alias("m")).first()
    Row(m=1.5)
    """
    return _call("mean", col)


def min(col) -> Column:  # noqa: A001
    """Smallest non-NULL value, of the input type; NaN only if every value is NaN.

    >>> df = spark.createDataFrame([(float("nan"),), (2.0,), (None,)], "x double")
    >>> df.select(min("x").alias("m")).first()
    Row(m=2.0)
    """
    return _call("min", col)


def max(col) -> Column:  # noqa: A001
    """Largest non-NULL value, of the input type; NaN as soon as one value is NaN.

    >>> df = spark.createDataFrame([("apple",), ("pear",), (None,)], "s string")
    >>> df.select(max("s").alias("m")).first()
    Row(m='pear')
    """
    return _call("max", col)
