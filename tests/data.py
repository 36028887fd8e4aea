"""Generated test tables: NULLs, NaN, +-inf, -0.0, decimals, extremes, a NULL group key."""
from __future__ import annotations

import datetime
import random
from decimal import Decimal

import pyarrow as pa

import sweep
from sparkagg.check import from_arrow

# The partition counts the oracle suites sweep (sweep.py).
PARTITIONS = sweep.PARTITIONS

SCHEMA = pa.schema([
    ("k", pa.int64()),            # group key, NULL for some rows
    ("i", pa.int32()),
    ("l", pa.int64()),
    ("lx", pa.int64()),           # int64 extremes: for min/max only
    ("f", pa.float64()),          # finite doubles
    ("d", pa.float64()),          # doubles with NaN, +-inf, -0.0
    ("m", pa.decimal128(10, 2)),
    ("w", pa.decimal128(38, 10)),
    ("s", pa.string()),
    ("dt", pa.date32()),
    ("b", pa.bool_()),
])


def table(rows: int = 3000, groups: int = 37, seed: int = 7) -> pa.Table:
    rnd = random.Random(seed)

    def maybe(value, null_every: int):
        return None if rnd.randrange(null_every) == 0 else value

    data = {name: [] for name in SCHEMA.names}
    for _ in range(rows):
        data["k"].append(maybe(rnd.randrange(groups), 50))
        data["i"].append(maybe(rnd.randint(-2**31, 2**31 - 1), 9))
        data["l"].append(maybe(rnd.randint(-10**12, 10**12), 11))
        data["lx"].append(maybe(rnd.choice([-2**63, 2**63 - 1, 0, rnd.randint(-2**63, 2**63 - 1)]), 7))
        data["f"].append(maybe(rnd.uniform(-1e6, 1e6), 8))
        special = rnd.randrange(40)
        data["d"].append(maybe([float("nan"), float("inf"), float("-inf"), -0.0][special]
                               if special < 4 else rnd.gauss(0, 1e3), 10))
        data["m"].append(maybe(Decimal(rnd.randint(-10**9, 10**9)).scaleb(-2), 6))
        data["w"].append(maybe(Decimal(rnd.randint(-10**27, 10**27)).scaleb(-10), 6))
        data["s"].append(maybe("".join(rnd.choice("abcxyzé") for _ in range(rnd.randrange(6))), 12))
        data["dt"].append(maybe(datetime.date(1970, 1, 1) + datetime.timedelta(days=rnd.randint(-20000, 30000)), 13))
        data["b"].append(maybe(rnd.random() < 0.5, 5))
    return pa.table(data, schema=SCHEMA)


def frame(spark, t: pa.Table):
    """`t` as a DataFrame, its rows in order."""
    return from_arrow(spark, t)


def to_spark(spark, t: pa.Table, partitions: int):
    return frame(spark, t).repartition(partitions)
