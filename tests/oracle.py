"""The DataFusion oracle: the same Arrow data and query run by DataFusion 50 in-process."""
from __future__ import annotations

import math
from decimal import Decimal

import datafusion
import pyarrow as pa


def run(table: pa.Table, sql: str) -> list[tuple]:
    """Rows of ``sql`` over ``table`` registered as ``t``, as tuples of Python values."""
    ctx = datafusion.SessionContext()
    ctx.register_record_batches("t", [table.to_batches() or [pa.RecordBatch.from_pylist([], schema=table.schema)]])
    result = ctx.sql(sql).to_arrow_table()
    return [tuple(r.values()) for r in result.to_pylist()]


def same(a, b, rel: float = 1e-9) -> bool:
    """Equal results: floats to ``rel`` (NaN equals NaN, infinities exactly), decimals by value."""
    if isinstance(a, float) and isinstance(b, float):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return math.isclose(a, b, rel_tol=rel, abs_tol=1e-300)
    if isinstance(a, Decimal) and isinstance(b, Decimal):
        return a == b
    return a == b


def same_rows(x: list[tuple], y: list[tuple], rel: float = 1e-9) -> bool:
    return len(x) == len(y) and all(len(r) == len(s) and all(same(u, v, rel) for u, v in zip(r, s))
                                    for r, s in zip(x, y))
