"""The Spark side of a Python udaf call, decided on the driver before any job runs: the argument
columns checked against ``input_types`` (and widened where that loses nothing), and the Spark types of
what the Python workers hand back."""
from __future__ import annotations

from typing import Any

import pyarrow as pa
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.pandas.types import from_arrow_type, to_arrow_type

from .api import Call

PREFIX = "__sparkagg_"  # the staged columns' names, out of the way of the user's


def column(c: Any) -> Column:
    return c if isinstance(c, Column) else F.col(c)


def arrow_type(spark_type: T.DataType) -> pa.DataType:
    """The Arrow type of a Spark column in the workers' batches; a TIMESTAMP is an instant, named here in
    UTC whatever the session's zone (PySpark's own conversion wants the zone from 4.2 on)."""
    if isinstance(spark_type, T.NullType):
        return pa.null()
    if isinstance(spark_type, T.TimestampType):
        return pa.timestamp("us", tz="UTC")
    return to_arrow_type(spark_type)


def spark_type(udaf_name: str, what: str, arrow: pa.DataType) -> T.DataType:
    try:
        return from_arrow_type(arrow)
    except Exception as e:
        raise TypeError(f"udaf {udaf_name}: {what} type {arrow} has no Spark SQL type") from e


def _widens(actual: pa.DataType, expected: pa.DataType) -> bool:
    """Whether Spark can cast ``actual`` to ``expected`` without losing a value's meaning: NULL to
    anything, a narrower to a wider integer, any number to a double, float to double."""
    t = pa.types
    if t.is_null(actual):
        return True
    if t.is_integer(actual) and t.is_signed_integer(expected):
        return actual.bit_width <= expected.bit_width
    if t.is_float64(expected):
        return t.is_integer(actual) or t.is_floating(actual) or t.is_decimal(actual)
    return False


def arguments(df: DataFrame, call: Call, label: str) -> list[Column]:
    """The call's argument columns, of exactly its ``input_types``; a column that does not fit is an
    error here, naming the udaf, the argument and both types."""
    udaf = call.udaf
    staged = df.select(*[column(c) for c in call.columns])
    out = []
    for j, (c, field, expected) in enumerate(zip(call.columns, staged.schema.fields, udaf.input_types)):
        actual = arrow_type(field.dataType)
        if actual == expected:
            out.append(column(c))
        elif _widens(actual, expected):
            out.append(column(c).cast(spark_type(udaf.name, "input", expected)))
        else:
            raise TypeError(
                f"udaf {udaf.name} ({label}): argument {j + 1} ({field.name}) is {field.dataType.simpleString()} "
                f"({actual}); it takes {expected}")
    return out


def as_list(columns: Any) -> list:
    """None, one column (a name or Column) or several, as a list."""
    return [] if columns is None else [columns] if isinstance(columns, (str, Column)) else list(columns)


def keys(df: DataFrame, columns: list, prefix: str) -> list[Column]:
    """Key columns named ``<PREFIX><prefix><i>``, float keys with -0.0 made 0.0 (``normal_key``)."""
    fields = df.select(*[column(k) for k in columns]).schema.fields
    return [normal_key(column(k), f).alias(f"{PREFIX}{prefix}{i}") for i, (k, f) in enumerate(zip(columns, fields))]


def named_calls(caller: str, calls: tuple, named: dict[str, Any]) -> dict[str, Call]:
    """The output columns in order: ``calls`` named by their ``.alias`` (else the udaf's name), then the
    keywords; ``caller`` (aggregate, window) names the function in errors."""
    out: dict[str, Call] = {}
    for name, call in [*[(getattr(c, "name", None), c) for c in calls], *named.items()]:
        if not isinstance(call, Call):
            raise TypeError(f"{caller}: {name or 'an argument'} must be a udaf call such as f('x'), "
                            f"got {type(call).__name__}")
        name = name or call.udaf.name
        if name in out:
            raise ValueError(f"{caller}: two output columns named {name}; name them with .alias() or keywords")
        out[name] = call
    if not out:
        raise TypeError(f"{caller} needs at least one udaf call: f('x').alias('name'), or name=f('x')")
    return out


def calls(df: DataFrame, named: dict[str, Call]) -> tuple[list[Column], list, list[int]]:
    """The argument columns of every call (``<PREFIX>a<call>_<argument>``), the udafs, and how many
    arguments each takes."""
    columns, udafs, widths = [], [], []
    for i, (name, call) in enumerate(named.items()):
        args = arguments(df, call, name)
        columns += [a.alias(f"{PREFIX}a{i}_{j}") for j, a in enumerate(args)]
        udafs.append(call.udaf)
        widths.append(len(args))
    return columns, udafs, widths


def normal_key(c: Column, field: T.StructField) -> Column:
    """A float key with -0.0 made 0.0, so that the shuffle hashes both to one group as GROUP BY does."""
    if isinstance(field.dataType, (T.FloatType, T.DoubleType)):
        return c + F.lit(0.0).cast(field.dataType)
    return c
