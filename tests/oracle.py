"""The DataFusion oracle: the same Arrow data and query run in-process by DataFusion 55, with the functions of
DataFusion's companion crate of extra aggregates (datafusion-extra-functions: mode, skewness, kurtosis,
kurtosis_pop, max_by, min_by) registered under their own names."""
from __future__ import annotations

import math
from decimal import Decimal

import datafusion
import datafusion_extra_functions as extra
import pyarrow as pa

assert datafusion.__version__.startswith("55."), datafusion.__version__


def context(config: datafusion.SessionConfig | None = None) -> datafusion.SessionContext:
    """A DataFusion session with the extra aggregates registered."""
    ctx = datafusion.SessionContext(config) if config else datafusion.SessionContext()
    for name in extra.list_functions():
        ctx.register_udaf(datafusion.AggregateUDF.from_pycapsule(extra.udaf_by_name(name)))
    return ctx


def run(table: pa.Table, sql: str, config: datafusion.SessionConfig | None = None) -> list[tuple]:
    """Rows of ``sql`` over ``table`` registered as ``t``, as tuples of Python values."""
    ctx = context(config)
    ctx.register_record_batches("t", [table.to_batches() or [pa.RecordBatch.from_pylist([], schema=table.schema)]])
    result = ctx.sql(sql).to_arrow_table()
    return [tuple(r.values()) for r in result.to_pylist()]


def same(a, b, rel: float = 1e-9, abs_tol: float = 1e-300) -> bool:
    """Equal results: floats to ``rel`` or within ``abs_tol`` (NaN equals NaN, an infinity only itself),
    decimals by value."""
    if isinstance(a, float) and isinstance(b, float):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return math.isclose(a, b, rel_tol=rel, abs_tol=abs_tol)
    if isinstance(a, Decimal) and isinstance(b, Decimal):
        return a == b
    return a == b


def same_rows(x: list[tuple], y: list[tuple], rel: float = 1e-9) -> bool:
    return len(x) == len(y) and all(len(r) == len(s) and all(same(u, v, rel) for u, v in zip(r, s))
                                    for r, s in zip(x, y))
