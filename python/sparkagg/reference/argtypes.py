"""The argument type rules the families share: which Arrow types count as numeric or orderable, how a
one-argument function checks its call, and the bounds of Spark's decimal and bigint."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Callable

import pyarrow as pa

MAX_DECIMAL_PRECISION = 38
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1

DataTypes = Sequence[pa.DataType]
StateFields = list[tuple[str, pa.DataType]]


def _is_float(t: pa.DataType) -> bool:
    """float32 and float64; half floats have no Spark type."""
    return pa.types.is_float32(t) or pa.types.is_float64(t)


def _is_numeric(t: pa.DataType) -> bool:
    return pa.types.is_integer(t) or _is_float(t) or pa.types.is_decimal128(t)


def _is_orderable(t: pa.DataType) -> bool:
    """The types min/max accept: numbers, decimal, string, binary, boolean, date, timestamp."""
    return (
        _is_numeric(t)
        or pa.types.is_string(t)
        or pa.types.is_large_string(t)
        or pa.types.is_binary(t)
        or pa.types.is_large_binary(t)
        or pa.types.is_boolean(t)
        or pa.types.is_date(t)
        or pa.types.is_timestamp(t)
    )


def _one_argument(name: str, arg_types: DataTypes, accepts: Callable[[pa.DataType], bool]) -> pa.DataType:
    """The single argument type of ``name``, rejecting other arities and unsupported types at plan
    time, as DataFusion's signature check does."""
    if len(arg_types) != 1:
        raise TypeError(f"{name} takes exactly one argument, got {len(arg_types)}")
    (t,) = arg_types
    if not accepts(t):
        raise TypeError(f"{name} does not support argument type {t}")
    return t


def _decimal(precision: int, scale: int) -> pa.DataType:
    return pa.decimal128(min(MAX_DECIMAL_PRECISION, precision), min(MAX_DECIMAL_PRECISION, scale))
