"""The ``sparkagg`` command: run SQL with sparkagg's functions, list them, or run the demo.

    sparkagg sql "SELECT df_avg(x) FROM VALUES (1), (2) AS t(x)"
    sparkagg sql -f queries.sql --master local[2] --format csv
    sparkagg functions
    sparkagg demo

Exit codes: 0 success, 1 the query failed (Spark's error is printed), 2 bad usage.
"""
from __future__ import annotations

import argparse
import csv
import json
import sys

import sparkagg


def _statements(text: str) -> list[str]:
    """Split a script on semicolons that end a line (enough for plain SQL files)."""
    parts, current = [], []
    for line in text.splitlines():
        current.append(line)
        if line.rstrip().endswith(";"):
            parts.append("\n".join(current).rstrip().rstrip(";"))
            current = []
    parts.append("\n".join(current))
    return [p.strip() for p in parts if p.strip() and not all(
        l.strip().startswith("--") or not l.strip() for l in p.splitlines())]


def _print(df, fmt: str, out=sys.stdout) -> None:
    if fmt == "table":
        df.show(n=2**31 - 2, truncate=False)
        return
    rows = df.collect()
    if fmt == "csv":
        writer = csv.writer(out)
        writer.writerow(df.columns)
        writer.writerows([[("" if v is None else v) for v in r] for r in rows])
    else:
        for r in rows:
            out.write(json.dumps(r.asDict(recursive=True), default=str) + "\n")


def _session(args):
    return sparkagg.session(master=args.master, prefix=args.prefix,
                            **{"spark.ui.showConsoleProgress": "true", "spark.log.level": "WARN"})


def cmd_sql(args) -> int:
    if bool(args.query) == bool(args.file):
        print("sparkagg sql: give a query or -f FILE (not both)", file=sys.stderr)
        return 2
    text = args.query or open(args.file, encoding="utf-8").read()
    spark = _session(args)
    try:
        for stmt in _statements(text):
            df = spark.sql(stmt)
            if df.columns:
                _print(df, args.format)
    except Exception as e:  # a Spark error: print its message, not a Python traceback
        print(f"sparkagg sql: {str(e).splitlines()[0]}", file=sys.stderr)
        return 1
    return 0


def cmd_functions(args) -> int:
    spark = _session(args)
    for row in spark.sql(f"SHOW FUNCTIONS LIKE '{args.prefix}*'").collect():
        name = row[0].split(".")[-1]
        usage = [r[0] for r in spark.sql(f"DESCRIBE FUNCTION {name}").collect()]
        signature = next((u.split("Signature: ", 1)[1] for u in usage if "Signature: " in u), name)
        print(signature.rstrip("."))
    return 0


def cmd_demo(args) -> int:
    from . import demo
    return demo.run(master=args.master, prefix=args.prefix)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="sparkagg", description=__doc__.split("\n")[0])
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--master", default="local[*]", help="Spark master URL (default local[*])")
    common.add_argument("--prefix", default=sparkagg.DEFAULT_PREFIX, help="function name prefix (default df_)")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("sql", parents=[common], help="run SQL statements and print their results")
    p.add_argument("query", nargs="?", help="SQL text (statements separated by ';')")
    p.add_argument("-f", "--file", help="a file of SQL statements")
    p.add_argument("--format", choices=["table", "csv", "json"], default="table")
    p.set_defaults(run=cmd_sql)
    p = sub.add_parser("functions", parents=[common], help="list every function with its signature")
    p.set_defaults(run=cmd_functions)
    p = sub.add_parser("demo", parents=[common], help="showcase on local Spark, beside the reference model")
    p.set_defaults(run=cmd_demo)
    args = parser.parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
