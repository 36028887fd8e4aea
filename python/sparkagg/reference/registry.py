"""Every function of the model, in one list (as the JVM's functions/Functions.scala lists every
FunctionDef); each family module defines its own ``AggregateFunction``s. ``get`` finds one by name or
alias, ``names`` lists them all, ``register`` adds a model of a function of one's own."""
from __future__ import annotations

from .approx_distinct import APPROX_DISTINCT
from .approx_percentile import APPROX_MEDIAN, APPROX_PERCENTILE_CONT, APPROX_PERCENTILE_CONT_WITH_WEIGHT
from .array_agg import ARRAY_AGG
from .average import AVG
from .bitwise import BIT_AND, BIT_OR, BIT_XOR
from .boolean import BOOL_AND, BOOL_OR
from .correlation import CORR
from .count import COUNT
from .covariance import COVAR_POP, COVAR_SAMP
from .first_last import ANY_VALUE, FIRST_VALUE, LAST_VALUE
from .function import AggregateFunction
from .kurtosis import KURTOSIS, KURTOSIS_POP
from .max_min_by import MAX_BY, MIN_BY
from .median import MEDIAN
from .min_max import MAX, MIN
from .mode import MODE
from .nth_value import NTH_VALUE
from .percentile import PERCENTILE_CONT
from .regr import (
    REGR_AVGX,
    REGR_AVGY,
    REGR_COUNT,
    REGR_INTERCEPT,
    REGR_R2,
    REGR_SLOPE,
    REGR_SXX,
    REGR_SXY,
    REGR_SYY,
)
from .skewness import SKEWNESS
from .string_agg import STRING_AGG
from .sum import SUM
from .variance import STDDEV, STDDEV_POP, VAR_POP, VAR_SAMP

FUNCTIONS: tuple[AggregateFunction, ...] = (
    COUNT, SUM, AVG, MIN, MAX,
    BIT_AND, BIT_OR, BIT_XOR, BOOL_AND, BOOL_OR,
    VAR_SAMP, VAR_POP, STDDEV, STDDEV_POP, SKEWNESS, KURTOSIS, KURTOSIS_POP,
    COVAR_SAMP, COVAR_POP, CORR,
    REGR_SLOPE, REGR_INTERCEPT, REGR_COUNT, REGR_R2, REGR_AVGX, REGR_AVGY, REGR_SXX, REGR_SYY, REGR_SXY,
    ARRAY_AGG, STRING_AGG, FIRST_VALUE, LAST_VALUE, ANY_VALUE, NTH_VALUE, MAX_BY, MIN_BY,
    MEDIAN, MODE, PERCENTILE_CONT, APPROX_PERCENTILE_CONT, APPROX_PERCENTILE_CONT_WITH_WEIGHT, APPROX_MEDIAN,
    APPROX_DISTINCT,
)

REGISTRY: dict[str, AggregateFunction] = {}

# The functions with a native GroupsAccumulator; the others run through GroupsAccumulatorAdapter.
NATIVE: tuple[str, ...] = tuple(f.name for f in FUNCTIONS if f.groups_accumulator is not None)


def register(functions: dict[str, AggregateFunction]) -> None:
    """Add ``functions`` ({name or alias: function}) to the registry; a name already taken by another
    function raises."""
    for name, function in functions.items():
        if REGISTRY.get(name, function) is not function:
            raise ValueError(f"{name!r} is already registered as {REGISTRY[name]!r}")
        REGISTRY[name] = function


register({name: f for f in FUNCTIONS for name in (f.name, *f.aliases)})


def get(name: str | AggregateFunction) -> AggregateFunction:
    """The function registered as ``name`` (aliases included); a function itself (one with bound
    literals, see ``AggregateFunction.bind``) is returned as it is."""
    if isinstance(name, AggregateFunction):
        return name
    try:
        return REGISTRY[name]
    except KeyError:
        raise KeyError(f"no reference model of {name!r}; known: {', '.join(names())}") from None


def names() -> list[str]:
    """Every registered function name, aliases included, sorted."""
    return sorted(REGISTRY)
