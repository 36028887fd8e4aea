"""make fuzz: `python tests/fuzz [--seed S] [--count N | --seconds T] [--master M]`. Prints each difference
(seed, shrunk query and table size, settings) as found and a report by feature at the end; saves each as a
regression case under sql/fuzz/. Exits 1 when any query differed."""
from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests/: data.py, oracle.py, this package

import sparkagg  # noqa: E402
from conftest import TEST_JAR  # noqa: E402
from fuzz import runner  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(prog="make fuzz", description=__doc__)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--count", type=int, help="queries to compare")
    parser.add_argument("--seconds", type=float, help="time to run (default: 300 when no count is given)")
    parser.add_argument("--master", default="local[2]")
    args = parser.parse_args()
    seconds = args.seconds if args.seconds or args.count else 300
    logging.getLogger("SQLQueryContextLogger").setLevel(logging.CRITICAL)  # pyspark logs each refused query
    spark = sparkagg.session(master=args.master, app_name="sparkagg-fuzz", extra_jars=[str(TEST_JAR)],
                             **{"spark.ui.enabled": "false", "spark.log.level": "OFF",
                                "spark.ui.showConsoleProgress": "false", "spark.sql.session.timeZone": "UTC"})
    try:
        report = runner.fuzz(spark, args.seed, args.count, seconds,
                             ordered=sparkagg.spark_minor() != "3.5", progress=lambda m: print(m, flush=True))
    finally:
        spark.stop()
    print(report.summary())
    return 1 if report.failures else 0


if __name__ == "__main__":
    sys.exit(main())
