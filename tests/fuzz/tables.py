"""Random test tables for the fuzzer: every column type sparkagg's functions take, NULL rates from none to
all, empty tables, single-row groups and skewed keys; and a table written back as a SQL VALUES clause, so
a regression case carries its own data."""
from __future__ import annotations

import datetime
import math
import random
import struct
from decimal import Decimal

import pyarrow as pa

# Group keys: an integer (skewed), a string, a date. `o` orders windows (unique, with gaps, so RANGE frames
# vary in size); `u` is a unique permutation: the order key of ordered aggregates and the y of max_by.
SCHEMA = pa.schema([
    ("k", pa.int64()),
    ("ks", pa.string()),
    ("kd", pa.date32()),
    ("o", pa.int64()),
    ("u", pa.int64()),
    ("i", pa.int32()),
    ("l", pa.int64()),
    ("d", pa.float64()),           # NaN, +-inf, -0.0 among gaussian values
    ("f", pa.float32()),           # as d, rounded to single precision
    ("m", pa.decimal128(10, 2)),
    ("s", pa.string()),            # empty and non-ASCII strings
    ("b", pa.bool_()),
    ("dt", pa.date32()),
    ("ts", pa.timestamp("us", tz="UTC")),  # microseconds, before and after 1970
])
KEYS = ("k", "ks", "kd")
VALUES = ("i", "l", "d", "f", "m", "s", "b", "dt", "ts")
ROW_COUNTS = (0, 1, 2, 3, 7, 40, 200, 1500)
NULL_RATES = (0.0, 0.0, 0.05, 0.3, 0.9, 1.0)
EPOCH = datetime.date(1970, 1, 1)
EPOCH_TS = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)


def random_table(rng: random.Random) -> pa.Table:
    rows = rng.choice(ROW_COUNTS)
    groups = rng.choice((1, 2, 5, 30, max(1, rows)))
    skew = rng.random() < 0.3  # most rows in group 0
    null_rate = {name: rng.choice(NULL_RATES) for name in SCHEMA.names if name not in ("o", "u")}
    steps = [rng.randint(1, 4) for _ in range(rows)]
    order = list(range(rows))
    rng.shuffle(order)

    def maybe(name: str, value):
        return None if rng.random() < null_rate[name] else value

    def key() -> int:
        return 0 if skew and rng.random() < 0.8 else rng.randrange(groups)

    def double() -> float:
        special = rng.randrange(30)
        if special < 5:
            return (math.nan, math.inf, -math.inf, -0.0, 0.0)[special]
        return rng.gauss(0, 1e3) if rng.random() < 0.8 else float(rng.randint(-3, 3))

    def string() -> str:
        return "".join(rng.choice("ab z\u00e9\u4e2d") for _ in range(rng.choice((0, 1, 2, 4))))

    columns = {name: [] for name in SCHEMA.names}
    position = 0
    for r in range(rows):
        g = key()
        columns["k"].append(maybe("k", g))
        columns["ks"].append(maybe("ks", ("", "x", "\u00e9t\u00e9", "y")[g % 4] + str(g // 4)))
        columns["kd"].append(maybe("kd", EPOCH + datetime.timedelta(days=19000 + g)))
        position += steps[r]
        columns["o"].append(position)
        columns["u"].append(order[r])
        small = rng.random() < 0.5  # small values repeat: ties for mode, DISTINCT, medians
        columns["i"].append(maybe("i", rng.randint(-5, 5) if small else rng.randint(-2**31, 2**31 - 1)))
        columns["l"].append(maybe("l", rng.randint(-3, 3) if small else rng.randint(-10**12, 10**12)))
        columns["d"].append(maybe("d", double()))
        columns["f"].append(maybe("f", struct.unpack("f", struct.pack("f", double()))[0]))
        columns["m"].append(maybe("m", Decimal(rng.randint(-10**6 if small else -10**9, 10**9)).scaleb(-2)))
        columns["s"].append(maybe("s", string()))
        columns["b"].append(maybe("b", rng.random() < 0.5))
        columns["dt"].append(maybe("dt", EPOCH + datetime.timedelta(days=rng.randint(-20000, 30000))))
        seconds = rng.randint(-3, 3) * 86400 if small else rng.randint(-2 * 10**9, 4 * 10**9)
        columns["ts"].append(maybe("ts", EPOCH_TS + datetime.timedelta(seconds=seconds,
                                                                       microseconds=rng.randrange(10**6))))
    return pa.table(columns, schema=SCHEMA)


def _literal(value, t: pa.DataType) -> str:
    if value is None:
        return f"CAST(NULL AS {_sql_type(t)})"
    if pa.types.is_boolean(t):
        return "TRUE" if value else "FALSE"
    if pa.types.is_floating(t):
        if math.isnan(value) or math.isinf(value):
            return f"CAST('{value}' AS {_sql_type(t)})"
        return f"CAST({value!r} AS {_sql_type(t)})"
    if pa.types.is_decimal(t) or pa.types.is_integer(t):
        return f"CAST({value} AS {_sql_type(t)})"
    if pa.types.is_date(t):
        return f"DATE'{value.isoformat()}'"
    if pa.types.is_timestamp(t):  # read back as UTC: runner.load casts to the schema
        return f"TIMESTAMP'{value.strftime('%Y-%m-%d %H:%M:%S.%f')}'"
    return "'" + str(value).replace("'", "''") + "'"


def _sql_type(t: pa.DataType) -> str:
    if pa.types.is_int32(t):
        return "INT"
    if pa.types.is_int64(t):
        return "BIGINT"
    if pa.types.is_decimal(t):
        return f"DECIMAL({t.precision}, {t.scale})"
    return {pa.float64(): "DOUBLE", pa.float32(): "FLOAT", pa.string(): "STRING", pa.bool_(): "BOOLEAN",
            pa.date32(): "DATE", SCHEMA.field("ts").type: "TIMESTAMP"}[t]


def values_sql(table: pa.Table) -> str:
    """``table`` as ``(VALUES (...), ...) AS t(c, ...)``, for ``SELECT ... FROM`` in Spark and DataFusion alike:
    every value a typed literal, so the columns keep their types (an empty table: one row filtered out)."""
    names = ", ".join(table.column_names)
    rows = table.to_pylist()
    if not rows:
        row = "(" + ", ".join(_literal(None, f.type) for f in table.schema) + ")"
        return f"(SELECT * FROM (VALUES {row}) AS t({names}) WHERE FALSE) AS t"
    body = ", ".join("(" + ", ".join(_literal(r[f.name], f.type) for f in table.schema) + ")" for r in rows)
    return f"(VALUES {body}) AS t({names})"
