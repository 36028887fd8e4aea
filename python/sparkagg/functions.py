"""Column functions for sparkagg's SQL functions.

Each calls the SQL function by name (``pyspark.sql.functions.call_function``), so they work on classic
and Spark Connect sessions alike, once the functions are registered (:func:`sparkagg.session`, the
``spark.sql.extensions`` setting, or :func:`sparkagg.register`). The name's prefix is read when the
Column is made, from the ``spark.sparkagg.prefix`` setting of the active session (``df_`` when it has
none), so sessions registered under different prefixes each get their own. :func:`with_prefix` and
:func:`for_session` give the same functions bound to one prefix, whichever session is active.

The examples run as doctests against a local session where ``spark`` has sparkagg registered.
"""
from __future__ import annotations

import contextvars
import functools
from types import SimpleNamespace

from pyspark.sql import Column, SparkSession
from pyspark.sql import functions as F

from . import DEFAULT_PREFIX, PREFIX_CONF

# The prefix a bound namespace (with_prefix) imposes while one of its functions builds its Column.
_bound_prefix: contextvars.ContextVar[str | None] = contextvars.ContextVar("sparkagg_bound_prefix", default=None)

__all__ = [
    "count", "sum", "avg", "mean", "min", "max",
    "bit_and", "bit_or", "bit_xor", "bool_and", "bool_or",
    "var_samp", "var_pop", "stddev", "stddev_pop", "skewness", "kurtosis", "kurtosis_pop",
    "covar_samp", "covar_pop", "corr",
    "regr_slope", "regr_intercept", "regr_count", "regr_r2", "regr_avgx", "regr_avgy",
    "regr_sxx", "regr_syy", "regr_sxy",
    "array_agg", "string_agg", "first_value", "last_value", "nth_value", "any_value", "max_by", "min_by",
    "median", "mode", "approx_distinct", "percentile_cont",
    "approx_percentile_cont", "approx_percentile_cont_with_weight", "approx_median",
    "with_prefix", "for_session",
]


def _sql_name(name: str) -> str:
    """``name`` under the bound prefix, else under the active session's ``spark.sparkagg.prefix``."""
    prefix = _bound_prefix.get()
    if prefix is None:
        spark = SparkSession.getActiveSession()
        prefix = DEFAULT_PREFIX if spark is None else spark.conf.get(PREFIX_CONF, DEFAULT_PREFIX)
    return prefix + name


def _call(name: str, *cols) -> Column:
    return F.call_function(_sql_name(name), *[F.col(c) if isinstance(c, str) else c for c in cols])


def with_prefix(prefix: str) -> SimpleNamespace:
    """The Column functions calling the SQL functions registered under ``prefix``, whichever session is
    active (``with_prefix("")`` for a session that replaced Spark's built-ins).

    >>> df_ = with_prefix("df_")
    >>> spark.createDataFrame([(1,), (2,)], "x int").select(df_.sum("x").alias("s")).first()
    Row(s=3)
    """
    def bind(function):
        @functools.wraps(function)
        def bound(*args, **kwargs):
            token = _bound_prefix.set(prefix)
            try:
                return function(*args, **kwargs)
            finally:
                _bound_prefix.reset(token)
        return bound

    namespace = globals()
    return SimpleNamespace(prefix=prefix, **{n: bind(namespace[n]) for n in __all__
                                             if n not in ("with_prefix", "for_session")})


def for_session(spark) -> SimpleNamespace:
    """The Column functions bound to the prefix ``spark`` registered them under (its
    ``spark.sparkagg.prefix``), for columns made while another session is active.

    >>> for_session(spark).prefix
    'df_'
    """
    return with_prefix(spark.conf.get(PREFIX_CONF, DEFAULT_PREFIX))


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


def bit_and(col) -> Column:
    """Bitwise AND of the non-NULL integers, of the input type; NULL if there are none.

    >>> spark.createDataFrame([(3,), (5,)], "x int").select(bit_and("x").alias("r")).first()
    Row(r=1)
    """
    return _call("bit_and", col)


def bit_or(col) -> Column:
    """Bitwise OR of the non-NULL integers, of the input type; NULL if there are none.

    >>> spark.createDataFrame([(3,), (5,)], "x int").select(bit_or("x").alias("r")).first()
    Row(r=7)
    """
    return _call("bit_or", col)


def bit_xor(col) -> Column:
    """Bitwise XOR of the non-NULL integers, of the input type; NULL if there are none.

    >>> spark.createDataFrame([(3,), (5,), (None,)], "x int").select(bit_xor("x").alias("r")).first()
    Row(r=6)
    """
    return _call("bit_xor", col)


def bool_and(col) -> Column:
    """True if every non-NULL value is true; NULL if there are none.

    >>> spark.createDataFrame([(True,), (None,), (False,)], "b boolean").select(bool_and("b").alias("r")).first()
    Row(r=False)
    """
    return _call("bool_and", col)


def bool_or(col) -> Column:
    """True if any non-NULL value is true; NULL if there are none.

    >>> spark.createDataFrame([(True,), (None,), (False,)], "b boolean").select(bool_or("b").alias("r")).first()
    Row(r=True)
    """
    return _call("bool_or", col)


def var_samp(col) -> Column:
    """Sample variance (as double); NULL for fewer than two values. Aliases var, var_sample.

    >>> spark.createDataFrame([(1,), (2,), (3,), (4,)], "x int").select(var_samp("x").alias("v")).first()
    Row(v=1.6666666666666667)
    """
    return _call("var_samp", col)


def var_pop(col) -> Column:
    """Population variance (as double); 0 for one value, NULL for none. Alias var_population.

    >>> spark.createDataFrame([(1,), (2,), (3,), (4,)], "x int").select(var_pop("x").alias("v")).first()
    Row(v=1.25)
    """
    return _call("var_pop", col)


def stddev(col) -> Column:
    """Sample standard deviation; NULL for fewer than two values. Alias stddev_samp.

    >>> df = spark.createDataFrame([(float(v),) for v in (2, 4, 4, 4, 5, 5, 7, 9)], "x double")
    >>> round(df.select(stddev("x")).first()[0], 12)
    2.138089935299
    """
    return _call("stddev", col)


def stddev_pop(col) -> Column:
    """Population standard deviation; 0 for one value, NULL for none.

    >>> df = spark.createDataFrame([(float(v),) for v in (2, 4, 4, 4, 5, 5, 7, 9)], "x double")
    >>> df.select(stddev_pop("x").alias("s")).first()
    Row(s=2.0)
    """
    return _call("stddev_pop", col)


def skewness(col) -> Column:
    """Sample skewness, adjusted for the sample size (DataFusion-extra's); NULL for fewer than three
    values and when they do not vary.

    >>> spark.createDataFrame([(1,), (2,), (2,), (10,)], "x int").select(skewness("x").alias("s")).first()
    Row(s=1.9225217141412747)
    """
    return _call("skewness", col)


def kurtosis(col) -> Column:
    """Excess kurtosis corrected for the sample size (DataFusion-extra's); NULL for fewer than four
    values and when they do not vary.

    >>> df = spark.createDataFrame([(1,), (2,), (2,), (3,), (10,)], "x int")
    >>> round(df.select(kurtosis("x")).first()[0], 12)
    4.272146531743
    """
    return _call("kurtosis", col)


def kurtosis_pop(col) -> Column:
    """Excess kurtosis without correction, m4 / m2^2 - 3 (DataFusion-extra's); NULL for no values and
    when they do not vary.

    >>> df = spark.createDataFrame([(1,), (2,), (2,), (3,), (10,)], "x int")
    >>> round(df.select(kurtosis_pop("x")).first()[0], 12)
    0.068036632936
    """
    return _call("kurtosis_pop", col)


def covar_samp(y, x) -> Column:
    """Sample covariance of the pairs where neither is NULL; NULL for fewer than two. Alias covar.

    >>> df = spark.createDataFrame([(1, 1), (2, 3), (4, 5), (None, 9)], "y int, x int")
    >>> df.select(covar_samp("y", "x").alias("c")).first()
    Row(c=3.0)
    """
    return _call("covar_samp", y, x)


def covar_pop(y, x) -> Column:
    """Population covariance of the pairs where neither is NULL; 0 for one pair, NULL for none.

    >>> df = spark.createDataFrame([(1, 1), (2, 3), (4, 5)], "y int, x int")
    >>> df.select(covar_pop("y", "x").alias("c")).first()
    Row(c=2.0)
    """
    return _call("covar_pop", y, x)


def corr(y, x) -> Column:
    """Pearson's correlation coefficient; NULL for fewer than two pairs or a zero variance.

    >>> df = spark.createDataFrame([(1, 2), (2, 4), (3, 6)], "y int, x int")
    >>> round(df.select(corr("y", "x")).first()[0], 12)
    1.0
    """
    return _call("corr", y, x)


def regr_slope(y, x) -> Column:
    """Slope of the least-squares line of y on x; NULL for fewer than two pairs or constant x.

    >>> df = spark.createDataFrame([(1, 1), (3, 2), (4, 4)], "y int, x int")
    >>> round(df.select(regr_slope("y", "x")).first()[0], 12)
    0.928571428571
    """
    return _call("regr_slope", y, x)


def regr_intercept(y, x) -> Column:
    """y-intercept of the least-squares line of y on x; NULL where the slope is.

    >>> df = spark.createDataFrame([(1, 1), (3, 2), (4, 4)], "y int, x int")
    >>> round(df.select(regr_intercept("y", "x")).first()[0], 12)
    0.5
    """
    return _call("regr_intercept", y, x)


def regr_count(y, x) -> Column:
    """Number of pairs where neither y nor x is NULL; 0 on empty input.

    >>> df = spark.createDataFrame([(1, 1), (None, 2), (4, None)], "y int, x int")
    >>> df.select(regr_count("y", "x").alias("n")).first()
    Row(n=1)
    """
    return _call("regr_count", y, x)


def regr_r2(y, x) -> Column:
    """Coefficient of determination of the least-squares line; NULL for constant x or constant y.

    >>> df = spark.createDataFrame([(1, 1), (3, 2), (4, 4)], "y int, x int")
    >>> round(df.select(regr_r2("y", "x")).first()[0], 12)
    0.862244897959
    """
    return _call("regr_r2", y, x)


def regr_avgx(y, x) -> Column:
    """Mean of x over the pairs where neither is NULL.

    >>> df = spark.createDataFrame([(1, 1), (3, 2), (None, 7), (4, 4)], "y int, x int")
    >>> df.select(regr_avgx("y", "x").alias("a")).first()
    Row(a=2.3333333333333335)
    """
    return _call("regr_avgx", y, x)


def regr_avgy(y, x) -> Column:
    """Mean of y over the pairs where neither is NULL.

    >>> df = spark.createDataFrame([(1, 1), (3, 2), (4, 4), (9, None)], "y int, x int")
    >>> df.select(regr_avgy("y", "x").alias("a")).first()
    Row(a=2.6666666666666665)
    """
    return _call("regr_avgy", y, x)


def regr_sxx(y, x) -> Column:
    """Sum of squares of x's deviations from its mean, over the non-NULL pairs.

    >>> df = spark.createDataFrame([(1, 1), (3, 2), (4, 4)], "y int, x int")
    >>> round(df.select(regr_sxx("y", "x")).first()[0], 12)
    4.666666666667
    """
    return _call("regr_sxx", y, x)


def regr_syy(y, x) -> Column:
    """Sum of squares of y's deviations from its mean, over the non-NULL pairs.

    >>> df = spark.createDataFrame([(1, 1), (3, 2), (4, 4)], "y int, x int")
    >>> round(df.select(regr_syy("y", "x")).first()[0], 12)
    4.666666666667
    """
    return _call("regr_syy", y, x)


def regr_sxy(y, x) -> Column:
    """Sum of products of x's and y's deviations from their means, over the non-NULL pairs.

    >>> df = spark.createDataFrame([(1, 1), (3, 2), (4, 4)], "y int, x int")
    >>> round(df.select(regr_sxy("y", "x")).first()[0], 12)
    4.333333333333
    """
    return _call("regr_sxy", y, x)


def _sql_text(value) -> str:
    """A column name (str) or a Python constant as SQL text, for calls that need SQL's own syntax."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, _Literal):
        return "'" + value.text.replace("\\", "\\\\").replace("'", "\\'") + "'"
    if isinstance(value, str):
        return "`" + value.replace("`", "``") + "`"
    raise TypeError(f"with order_by, pass columns by name (str), not {type(value).__name__}")


class _Literal:
    """A string constant, as opposed to a column name."""

    def __init__(self, text: str) -> None:
        self.text = text


def _ordered(name: str, args: list, order_by: str | None, literals: list | None = None) -> Column:
    """``name(args)`` or, with ``order_by``, ``name(args) WITHIN GROUP (ORDER BY order_by)``: SQL text
    (Spark Connect sends it to the server as it is), so the arguments must be column names there."""
    literals = literals or []
    if order_by is None:
        return _call(name, *args, *[F.lit(v.text if isinstance(v, _Literal) else v) for v in literals])
    call = ", ".join(_sql_text(a) for a in [*args, *literals])
    return F.expr(f"{_sql_name(name)}({call}) WITHIN GROUP (ORDER BY {order_by})")


def array_agg(col, order_by: str | None = None) -> Column:
    """The values, NULLs kept, as an array; NULL (not []) when there are no rows. ``order_by``, SQL
    text such as ``"t DESC, u"``, orders them (SQL's WITHIN GROUP); the column is then given by name.

    >>> df = spark.createDataFrame([(1, 3), (None, 1), (2, 2)], "x int, t int")
    >>> sorted(df.select(array_agg("x")).first()[0], key=lambda v: (v is None, v))
    [1, 2, None]
    >>> df.select(array_agg("x", order_by="t DESC").alias("a")).first()
    Row(a=[1, 2, None])
    """
    return _ordered("array_agg", [col], order_by)


def string_agg(col, delimiter: str, order_by: str | None = None) -> Column:
    """The non-NULL strings joined by ``delimiter`` (a constant); NULL when there are none. ``order_by``
    orders them, as in :func:`array_agg`.

    >>> df = spark.createDataFrame([("a", 3), (None, 1), ("c", 2)], "s string, t int")
    >>> df.select(string_agg("s", "-", order_by="t").alias("j")).first()
    Row(j='c-a')
    """
    return _ordered("string_agg", [col], order_by, [_Literal(delimiter)])


def first_value(col, ignore_nulls: bool = False, order_by: str | None = None) -> Column:
    """The value on the first row in the order of ``order_by`` (SQL text such as ``"t DESC"``); without
    it, on the first row seen. NULL values are skipped with ``ignore_nulls``.

    >>> df = spark.createDataFrame([(10, 3), (None, 1), (30, 2)], "x int, t int")
    >>> df.select(first_value("x", order_by="t").alias("a"), first_value("x", True, "t").alias("b")).first()
    Row(a=None, b=30)
    """
    return _ordered("first_value", [col], order_by, [ignore_nulls])


def last_value(col, ignore_nulls: bool = False, order_by: str | None = None) -> Column:
    """The value on the last row in the order of ``order_by``; without it, on the last row seen.

    >>> df = spark.createDataFrame([(10, 3), (None, 1), (30, 2)], "x int, t int")
    >>> df.select(last_value("x", order_by="t DESC").alias("a"), last_value("x", True, "t DESC").alias("b")).first()
    Row(a=None, b=30)
    """
    return _ordered("last_value", [col], order_by, [ignore_nulls])


def nth_value(col, n: int, order_by: str | None = None) -> Column:
    """The value on the ``n``-th row (1-based; negative counts from the last) in the order of
    ``order_by``; NULL when there is no such row.

    >>> df = spark.createDataFrame([(10, 3), (20, 1), (30, 2)], "x int, t int")
    >>> df.select(nth_value("x", 2, "t").alias("a"), nth_value("x", -1, "t").alias("b")).first()
    Row(a=30, b=10)
    """
    return _ordered("nth_value", [col], order_by, [n])


def median(col) -> Column:
    """The median: with an even count the two middle values averaged. A double for integers (as
    DataFusion reads them); floats and decimals keep their type (decimals truncate toward zero).

    >>> df = spark.createDataFrame([(1,), (2,), (None,)], "x int")
    >>> df.select(median("x").alias("m")).first()
    Row(m=1.5)
    """
    return _call("median", col)


def approx_distinct(col) -> Column:
    """An estimate of the number of distinct non-NULL values (HyperLogLog, p = 14, about 0.8% standard
    error); 0 on empty input. Integers, dates, timestamps, strings and binary.

    >>> df = spark.createDataFrame([(1,), (2,), (2,), (None,)], "x int")
    >>> df.select(approx_distinct("x").alias("n")).first()
    Row(n=2)
    """
    return _call("approx_distinct", col)


def any_value(col) -> Column:
    """Some non-NULL value of ``col`` (the first to arrive), NULL when there is none (DataFusion 55's).

    >>> spark.createDataFrame([(None,), (5,), (None,)], "x int").select(any_value("x").alias("a")).first()
    Row(a=5)
    """
    return _call("any_value", col)


def max_by(col, by) -> Column:
    """``col`` on the row with the largest ``by`` (rows where ``by`` is NULL skipped); of rows with equal
    ``by``, the first to arrive (DataFusion-extra's).

    >>> df = spark.createDataFrame([("a", 5), ("b", None), ("c", 7)], "x string, y int")
    >>> df.select(max_by("x", "y").alias("m")).first()
    Row(m='c')
    """
    return _call("max_by", col, by)


def min_by(col, by) -> Column:
    """``col`` on the row with the smallest ``by`` (rows where ``by`` is NULL skipped); of rows with equal
    ``by``, the first to arrive (DataFusion-extra's).

    >>> df = spark.createDataFrame([("a", 5), ("b", None), ("c", 7)], "x string, y int")
    >>> df.select(min_by("x", "y").alias("m")).first()
    Row(m='a')
    """
    return _call("min_by", col, by)


def mode(col) -> Column:
    """The most frequent non-NULL value, in its type; of equally frequent values, the smallest
    (DataFusion-extra's). Integers, floats, dates, timestamps and strings.

    >>> df = spark.createDataFrame([("b",), ("a",), ("b",), ("a",), (None,)], "s string")
    >>> df.select(mode("s").alias("m")).first()
    Row(m='a')
    """
    return _call("mode", col)


def percentile_cont(col, p: float, descending: bool = False) -> Column:
    """The ``p``-th percentile of the non-NULL values, interpolated linearly at index p * (n - 1): SQL's
    ``percentile_cont(p) WITHIN GROUP (ORDER BY col [DESC])``: a double, a float for a float column.

    >>> df = spark.createDataFrame([(0,), (10,), (20,), (30,)], "x int")
    >>> df.select(percentile_cont("x", 0.25).alias("q"), percentile_cont("x", 0.25, descending=True).alias("d")).first()
    Row(q=7.5, d=22.5)
    """
    return _call("percentile_cont", col, F.lit(float(p)), F.lit(bool(descending)))


def approx_percentile_cont(col, p: float, max_size: int | None = None, descending: bool = False) -> Column:
    """The approximate ``p``-th percentile by DataFusion's t-digest of at most about ``max_size``
    (default 100) centroids, a float for a float column, else a double; ``descending`` reads 1 - p, as
    SQL's ``approx_percentile_cont(p) WITHIN GROUP (ORDER BY col DESC)``.

    >>> df = spark.createDataFrame([(float(v),) for v in range(1, 5)], "x double")
    >>> df.select(approx_percentile_cont("x", 0.5).alias("m"),
    ...           approx_percentile_cont("x", 0.75, 50, True).alias("d")).first()
    Row(m=2.5, d=1.5)
    """
    size = [F.lit(int(max_size))] if max_size is not None else []
    return _call("approx_percentile_cont", col, F.lit(float(p)), *size, F.lit(bool(descending)))


def approx_percentile_cont_with_weight(col, weight, p: float, max_size: int | None = None) -> Column:
    """As :func:`approx_percentile_cont`, each value a centroid of its ``weight``, ranked against the
    total weight; rows with a NULL value or weight, or a weight not above 0, are skipped.

    >>> df = spark.createDataFrame([(1.0, 1), (2.0, 1), (3.0, 10)], "x double, w int")
    >>> df.select(approx_percentile_cont_with_weight("x", "w", 0.5).alias("m")).first()
    Row(m=2.9)
    """
    size = [F.lit(int(max_size))] if max_size is not None else []
    return _call("approx_percentile_cont_with_weight", col, weight, F.lit(float(p)), *size)


def approx_median(col) -> Column:
    """The approximate median by the t-digest: a float for a float column, else a double.

    >>> df = spark.createDataFrame([(1,), (2,), (3,), (4,)], "x int")
    >>> df.select(approx_median("x").alias("m")).first()
    Row(m=2.5)
    """
    return _call("approx_median", col)
