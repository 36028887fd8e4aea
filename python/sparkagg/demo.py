"""``sparkagg demo``: sample sales data on local Spark, a showcase of grouped, DISTINCT and windowed
queries with sparkagg's functions, each result printed beside the pure-Python reference model's, and an
aggregate written in Python (sparkagg.udaf) beside the same figure from the JVM functions."""
from __future__ import annotations

import math
import sys
import time
from decimal import Decimal

import pyarrow as pa
import pyarrow.compute as pc

import sparkagg

from .check import to_arrow
from .reference import drivers
from .udaf import Accumulator, aggregate, udaf

ROWS = 20_000

SALES = f"""
SELECT id,
       element_at(array('north', 'south', 'east', 'west', 'online'), CAST(id % 5 AS INT) + 1) AS region,
       CONCAT('p', CAST(id * 7 % 50 AS STRING)) AS product,
       CAST(id * 13 % 9 AS INT) + 1 AS qty,
       CASE WHEN id % 97 = 0 THEN NULL
            WHEN id = 4321 THEN double('NaN')
            ELSE ROUND((id * 7919 % 100000) / 100.0, 2) END AS amount,
       CAST((id * 31 % 5000) / 100.0 AS DECIMAL(10, 2)) AS price,
       DATE_ADD(DATE'2026-01-01', CAST(id % 300 AS INT)) AS day
FROM range({ROWS})
"""


def _same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
    if isinstance(a, Decimal) and isinstance(b, Decimal):
        return a == b
    return a == b


def _show(title: str, header: list[str], lines: list[list], total: int, mismatches: int,
          against: str = "the reference model") -> None:
    print(f"\n== {title}")
    widths = [max(len(str(h)), *(len(str(c)) for c in col)) for h, col in zip(header, zip(*lines))] \
        if lines else [len(h) for h in header]
    print("  ".join(str(h).ljust(w) for h, w in zip(header, widths)))
    for line in lines:
        print("  ".join(str(c).ljust(w) for c, w in zip(line, widths)))
    verdict = "all match" if mismatches == 0 else f"{mismatches} DIFFER"
    print(f"-- {total} values compared with {against}: {verdict}")


def _grouped(spark, data: pa.Table, prefix: str, title: str, key: str,
             calls: list[tuple[str, str, list[str]]], distinct: bool = False) -> int:
    """calls: (output column, function, argument columns)."""
    select = ", ".join(
        f"{prefix}{fn}({'DISTINCT ' if distinct else ''}{', '.join(args) or '*'}) AS {out}"
        for out, fn, args in calls)
    sql = f"SELECT {key}, {select} FROM sales GROUP BY {key} ORDER BY {key}"
    print(f"\n{sql}")
    got = {r[key]: r for r in spark.sql(sql).collect()}
    lines, mismatches, total = [], 0, 0
    for out, fn, args in calls:
        table = data.select([key, *args])
        if distinct:
            table = table.group_by([key, *args]).aggregate([])
        expected = drivers.aggregate(fn, [table[a].type for a in args], [table[a].combine_chunks() for a in args],
                                     keys=table[key].combine_chunks(), partitions=3, num_rows=table.num_rows)
        for k in sorted(got):
            ok = _same(got[k][out], expected[k])
            mismatches += not ok
            total += 1
            lines.append([k, out, got[k][out], expected[k], "ok" if ok else "DIFFERENT"])
    _show(title, [key, "column", "spark", "reference", ""], lines, total, mismatches)
    return mismatches


def _windowed(spark, data: pa.Table, prefix: str, preceding: int) -> int:
    frame = f"OVER (PARTITION BY region ORDER BY id ROWS BETWEEN {preceding} PRECEDING AND CURRENT ROW)"
    sql = (f"SELECT region, id, {prefix}avg(amount) {frame} AS moving_avg, {prefix}max(amount) {frame} AS moving_max, "
           f"{prefix}sum(qty) {frame} AS moving_qty FROM sales ORDER BY region, id")
    print(f"\n{sql}")
    got = spark.sql(sql).collect()
    expected = {}
    for region in pc.unique(data["region"]).to_pylist():
        part = data.filter(pc.equal(data["region"], region)).sort_by("id")
        cols = {out: drivers.sliding(fn, [part[arg].type], [part[arg].combine_chunks()], preceding, 0)
                for out, fn, arg in (("moving_avg", "avg", "amount"), ("moving_max", "max", "amount"),
                                     ("moving_qty", "sum", "qty"))}
        for i, row_id in enumerate(part["id"].to_pylist()):
            expected[row_id] = {out: values[i] for out, values in cols.items()}
    lines, mismatches = [], 0
    for r in got:
        for out in ("moving_avg", "moving_max", "moving_qty"):
            ok = _same(r[out], expected[r["id"]][out])
            mismatches += not ok
            if len(lines) < 9 or not ok:
                lines.append([r["region"], r["id"], out, r[out], expected[r["id"]][out], "ok" if ok else "DIFFERENT"])
    _show(f"Sliding window, ROWS {preceding} PRECEDING (first rows shown)",
          ["region", "id", "column", "spark", "reference", ""], lines, 3 * len(got), mismatches)
    return mismatches


class WeightedMean(Accumulator):
    """A user's aggregate in Python: sum(x * w) / sum(w) over the rows where both are present."""

    def __init__(self):
        self.xw, self.w = 0.0, 0.0

    def update(self, x: pa.Array, w: pa.Array) -> None:
        both = pc.and_(pc.is_valid(x), pc.is_valid(w))
        x, w = pc.filter(x, both), pc.filter(w, both)
        self.xw += pc.sum(pc.multiply(x, w)).as_py() or 0.0
        self.w += pc.sum(w).as_py() or 0.0

    def merge(self, states: list[pa.Array]) -> None:
        self.xw += pc.sum(states[0]).as_py() or 0.0
        self.w += pc.sum(states[1]).as_py() or 0.0

    def state(self) -> list:
        return [self.xw, self.w]

    def evaluate(self):
        return self.xw / self.w if self.w else None


def _python_udaf(spark, prefix: str) -> int:
    wmean = udaf(WeightedMean, [pa.float64(), pa.float64()], pa.float64(), [pa.float64(), pa.float64()])
    print("\naggregate(sales, 'region', weighted=wmean('amount', 'qty')): a Python Accumulator, in two phases")
    got = {r["region"]: r["weighted"] for r in aggregate(spark.table("sales"), "region",
                                                          weighted=wmean("amount", "qty")).collect()}
    sql = (f"SELECT region, {prefix}sum(amount * qty) / {prefix}sum(CASE WHEN amount IS NOT NULL THEN qty END) "
           f"AS weighted FROM sales GROUP BY region")
    jvm = {r["region"]: r["weighted"] for r in spark.sql(sql).collect()}
    lines = [[k, got.get(k), jvm[k], "ok" if _same(got.get(k), jvm[k]) else "DIFFERENT"] for k in sorted(jvm)]
    mismatches = sum(line[-1] != "ok" for line in lines) + len(got.keys() - jvm.keys())
    _show("A Python udaf (weighted mean of amount by qty)", ["region", "python udaf", "jvm functions", ""], lines,
          len(lines), mismatches, against=f"{prefix}sum(amount * qty) / {prefix}sum(qty)")
    return mismatches


def run(master: str = "local[*]", prefix: str = sparkagg.DEFAULT_PREFIX) -> int:
    """The demo on a Spark of its own (``sparkagg demo``): 0 when every result matches the reference model."""
    started = time.time()
    spark = sparkagg.session(master=master, prefix=prefix, app_name="sparkagg-demo",
                             **{"spark.sql.shuffle.partitions": "4", "spark.log.level": "WARN"})
    mismatches = showcase(spark, prefix)
    print(f"\nsparkagg demo finished in {time.time() - started:.1f}s: "
          f"{'every result matches the reference model' if mismatches == 0 else f'{mismatches} differences'}")
    spark.stop()
    return 0 if mismatches == 0 else 1


def showcase(spark, prefix: str = sparkagg.DEFAULT_PREFIX) -> int:
    """The demo's tables on ``spark`` (whose functions carry ``prefix``), each beside the reference model's
    values; returns how many differ."""
    spark.sql(SALES).createOrReplaceTempView("sales")
    data = to_arrow(spark.table("sales"))
    print(f"sparkagg demo: {ROWS} sample sales rows on {spark.sparkContext.master}; Spark {spark.version}; "
          f"functions prefixed '{prefix}'")
    mismatches = _grouped(spark, data, prefix, "Grouped aggregates by region", "region", [
        ("orders", "count", []), ("units", "sum", ["qty"]), ("avg_amount", "avg", ["amount"]),
        ("avg_price", "avg", ["price"]), ("total_price", "sum", ["price"]), ("first_day", "min", ["day"]),
        ("max_amount", "max", ["amount"]), ("min_product", "min", ["product"])])
    mismatches += _grouped(spark, data, prefix, "DISTINCT through Spark's DISTINCT keyword", "region", [
        ("products", "count", ["product"]), ("distinct_qty_sum", "sum", ["qty"])], distinct=True)
    mismatches += _windowed(spark, data, prefix, preceding=6)
    return mismatches + _python_udaf(spark, prefix)


if __name__ == "__main__":
    sys.exit(run())
