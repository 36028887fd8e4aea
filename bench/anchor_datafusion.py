"""DataFusion timed alone: in a process of its own, started after the bench's Spark has stopped, so that no
JVM shares the cores with it (beside a Spark JVM holding a cached table it measured 2-3x slower).

    .venv/bin/python bench/anchor_datafusion.py FILE "SELECT k, avg(x) FROM t GROUP BY k" ["SELECT ..."]
                                                [--partitions 2] [--repeat 5]

FILE (a Parquet file, or a folder of part files) is table t. Each query runs once to warm, then is timed best of
--repeat, its result batches collected into Python. One JSON line per query: DataFusion's version, the target
partitions, the file, the query, the seconds and the rows of the result. The bench scripts run it through
common.datafusion_alone.
"""
from __future__ import annotations

import argparse
import json
import time

import datafusion


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("file")
    parser.add_argument("queries", nargs="+")
    parser.add_argument("--partitions", type=int, default=2, help="target partitions (default 2, as local[2])")
    parser.add_argument("--repeat", type=int, default=5, help="timed runs per query, the best is kept (default 5)")
    args = parser.parse_args()
    ctx = datafusion.SessionContext(datafusion.SessionConfig().with_target_partitions(args.partitions))
    ctx.register_parquet("t", args.file)
    for query in args.queries:
        rows = sum(batch.num_rows for batch in ctx.sql(query).collect())
        best = float("inf")
        for _ in range(args.repeat):
            start = time.perf_counter()
            ctx.sql(query).collect()
            best = min(best, time.perf_counter() - start)
        print(json.dumps({"datafusion": datafusion.__version__, "target_partitions": args.partitions,
                          "file": args.file, "query": query, "seconds": round(best, 4), "rows": rows}), flush=True)


if __name__ == "__main__":
    main()
