"""A weighted mean written in Python, five ways, over 5M rows at 1k and 1M groups: as a sparkagg.udaf
GroupsAccumulator (numpy over each batch) run by aggregate(), as a Column in groupBy().agg() and by name in
SQL, as a sparkagg.udaf Accumulator (datafusion-python's contract, one per group), as PySpark's pandas_udf
and arrow_udf GROUPED_AGG (every row shuffled, one call per group), and the same Accumulator class run by
datafusion-python; against sparkagg's JVM functions (df_sum(x * w) / df_sum(w)). Prints times and ratios,
all measured in this one run (best of --repeat; a query over 30 s runs once), at the session settings
--setting names (bench/common.py's SETTINGS: default is what sparkagg.session() gives).

    .venv/bin/python bench/bench_python_udaf.py [--rows N] [--repeat R] [--out DIR] [--setting default|tuned]
        [--forms jvm,groups,column,sql,...]

The ratios go to bench/results/bench_python_udaf.json (bench/plot.py).
"""
from __future__ import annotations

import time

import datafusion
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

import common
from sparkagg.udaf import GroupsAccumulator, aggregate, register, udaf

F64 = pa.float64()


class WeightedMean(datafusion.Accumulator):
    """One group, written for datafusion-python: sum(x * w) and sum(w) (the table has no NULLs, so the
    arrays are read without a mask)."""

    def __init__(self):
        self.xw = self.w = 0.0

    def update(self, x, w):
        x, w = x.to_numpy(zero_copy_only=False), w.to_numpy(zero_copy_only=False)
        self.xw += float(np.dot(x, w))
        self.w += float(w.sum())

    def merge(self, states):
        self.xw += float(states[0].to_numpy(zero_copy_only=False).sum())
        self.w += float(states[1].to_numpy(zero_copy_only=False).sum())

    def state(self):
        return [pa.scalar(self.xw), pa.scalar(self.w)]

    def evaluate(self):
        return pa.scalar(self.xw / self.w if self.w else None, F64)


class WeightedMeanGroups(GroupsAccumulator):
    """Every group of a partition: two float arrays indexed by group, grown by doubling (a batch adds
    new groups at the end, so growing by the batch would copy the arrays once per batch) and summed
    into with ``np.add.at`` (O(batch), where ``bincount(minlength=groups)`` is O(groups) per batch)."""

    return_type, state_fields = F64, [("xw", F64), ("w", F64)]

    def __init__(self):
        self.groups, self.xw, self.w = 0, np.zeros(0), np.zeros(0)

    def _add(self, groups, total, xw, w):
        if total > len(self.w):
            room = max(total, 2 * len(self.w))
            self.xw = np.concatenate([self.xw, np.zeros(room - len(self.xw))])
            self.w = np.concatenate([self.w, np.zeros(room - len(self.w))])
        self.groups = total
        np.add.at(self.xw, groups, xw)
        np.add.at(self.w, groups, w)

    def update_batch(self, values, group_indices, opt_filter, total_num_groups):
        x, w = (v.to_numpy(zero_copy_only=False) for v in values)
        self._add(group_indices, total_num_groups, x * w, w)

    def merge_batch(self, values, group_indices, opt_filter, total_num_groups):
        xw, w = (v.to_numpy(zero_copy_only=False) for v in values)
        self._add(group_indices, total_num_groups, xw, w)

    def state(self, emit_to):
        n = emit_to.count(self.groups)
        out = [pa.array(self.xw[:n]), pa.array(self.w[:n])]
        self.groups, self.xw, self.w = self.groups - n, self.xw[n:], self.w[n:]
        return out

    def evaluate(self, emit_to):
        xw, w = (a.to_numpy(zero_copy_only=False) for a in self.state(emit_to))
        return pa.array(np.divide(xw, w, out=np.zeros_like(w), where=w != 0), mask=w == 0)

    def size(self):
        return self.xw.nbytes + self.w.nbytes


SLOW = 30.0  # seconds: a query this slow runs once, its time far from any ratio's doubt


def timed(label: str, run, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - start)
        if best > SLOW:
            break
    print(f"  {label:48s} {best:7.2f} s", flush=True)
    return best


def noop(df) -> None:
    df.write.format("noop").mode("overwrite").save()


def datafusion_run(rows: int, key: str):
    ids = np.arange(rows, dtype=np.int64)
    rng = np.random.default_rng(1)
    table = pa.table({key: ids % (1000 if key == "k" else 1_000_000), "x": rng.random(rows) * 100,
                      "w": rng.random(rows) * 5})
    ctx = datafusion.SessionContext(datafusion.SessionConfig().with_target_partitions(2))
    ctx.register_record_batches("base", [table.to_batches(max_chunksize=65536)])
    ctx.register_udaf(datafusion.udaf(WeightedMean, [F64, F64], F64, [F64, F64], "immutable", name="wmean"))
    return lambda: ctx.sql(f"SELECT {key}, wmean(x, w) FROM base GROUP BY {key}").collect()


FORMS = ("jvm", "groups", "column", "sql", "one", "pandas", "arrow", "datafusion")


def main(rows: int, repeat: int, out, setting: str, forms: list[str]) -> None:
    from pyspark.sql import functions as F
    spark = common.session(setting)
    base = spark.sql(f"SELECT id % 1000 AS k, id % 1000000 AS kbig, rand(1) * 100 AS x, rand(2) * 5 AS w "
                     f"FROM range({rows})").cache()
    base.count()
    base.createOrReplaceTempView("base")

    @F.pandas_udf("double")
    def pandas_wmean(x: pd.Series, w: pd.Series) -> float:
        return float((x * w).sum() / w.sum())

    arrow_udf = getattr(F, "arrow_udf", None)  # Spark 4.1 on
    if arrow_udf is not None:
        @arrow_udf("double")
        def arrow_wmean(x: pa.Array, w: pa.Array) -> float:
            return pc.sum(pc.multiply(x, w)).as_py() / pc.sum(w).as_py()

    groups_udaf = udaf(WeightedMeanGroups, [F64, F64], F64, [F64, F64], name="wmean_groups")
    one_udaf = udaf(WeightedMean, [F64, F64], F64, [F64, F64], name="wmean")
    register(spark, "wmean_groups", groups_udaf)
    print(f"bench_python_udaf: {rows:,} rows, local[2], {setting} settings, best of {repeat} (noop write)")
    recorder = common.Recorder("bench_python_udaf", "weighted mean in Python", rows, repeat)
    chart = f"Python aggregates, weighted mean, {rows:,} rows: sparkagg.udaf / other"
    groups = [label for _, label in common.GROUPINGS]
    timed("warm-up (Python workers)", lambda: noop(aggregate(base, "k", m=groups_udaf("x", "w"))), 1)
    for key, label in common.GROUPINGS:
        print(f"{label}:")
        runs = {
            "jvm": ("df_sum(x * w) / df_sum(w) (JVM)", lambda: noop(spark.sql(
                f"SELECT {key}, df_sum(x * w) / df_sum(w) FROM base GROUP BY {key}"))),
            "groups": ("sparkagg.udaf GroupsAccumulator", lambda: noop(aggregate(base, key, m=groups_udaf("x", "w")))),
            "column": ("  the same as a Column: groupBy().agg()", lambda: noop(
                base.groupBy(key).agg(groups_udaf("x", "w")))),
            "sql": ("  the same in SQL: wmean_groups(x, w)", lambda: noop(spark.sql(
                f"SELECT {key}, wmean_groups(x, w) FROM base GROUP BY {key}"))),
            "one": ("sparkagg.udaf Accumulator", lambda: noop(aggregate(base, key, m=one_udaf("x", "w")))),
            "pandas": ("pandas_udf GROUPED_AGG", lambda: noop(base.groupBy(key).agg(pandas_wmean("x", "w")))),
        }
        if arrow_udf is not None:
            runs["arrow"] = ("arrow_udf GROUPED_AGG", lambda: noop(base.groupBy(key).agg(arrow_wmean("x", "w"))))
        if "datafusion" in forms:  # the table and context made here, outside the timing
            runs["datafusion"] = ("datafusion-python udaf (same Accumulator)", datafusion_run(rows, key))
        t = {form: timed(label, run, repeat) for form, (label, run) in runs.items() if form in forms}
        for a, b, bar_a, bar_b in [("groups", "jvm", "GroupsAccumulator", "JVM df_sum / df_sum"),
                                   ("column", "groups", "Column", "aggregate()"),
                                   ("sql", "groups", "SQL", "aggregate()"),
                                   ("column", "jvm", "GroupsAccumulator Column", "JVM df_sum / df_sum"),
                                   ("groups", "arrow", "GroupsAccumulator", "arrow_udf"),
                                   ("groups", "pandas", "GroupsAccumulator", "pandas_udf"),
                                   ("one", "pandas", "Accumulator", "pandas_udf"),
                                   ("one", "arrow", "Accumulator", "arrow_udf"),
                                   ("one", "datafusion", "Accumulator", "datafusion-python")]:
            if a in t and b in t:
                print(common.ratio_line(f"{bar_a} / {bar_b}, {label}", t[a], t[b]))
                recorder.add(chart, groups, bar_a, bar_b, label, t[a], t[b])
    recorder.write(spark, out)
    spark.stop()


if __name__ == "__main__":
    parser = common.arguments(__doc__)
    parser.add_argument("--setting", choices=sorted(common.SETTINGS), default="default",
                        help="the session settings (default: what sparkagg.session() gives)")
    parser.add_argument("--forms", default=",".join(FORMS),
                        help=f"the routes to time, comma-separated (default all: {','.join(FORMS)})")
    args = parser.parse_args()
    main(args.rows, args.repeat, args.out, args.setting, args.forms.split(","))
