"""The ``sparkagg`` command: run SQL with sparkagg's functions, list them, or run the demo.

    sparkagg sql "SELECT df_avg(x) FROM VALUES (1), (2) AS t(x)"
    sparkagg sql -f queries.sql --master local[2] --format csv
    sparkagg functions
    sparkagg demo
    sparkagg check "SELECT k, df_avg(x) FROM t GROUP BY k"     (or: sparkagg check -f queries.sql)

Exit codes: 0 success, 1 the query failed (Spark's error is printed), 2 bad usage.
``check`` exits 0 when Spark and the reference model agree, 1 on a difference (the differing rows
are printed) or a failing query, 2 on bad usage (including a query outside check's scope).
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


def cmd_check(args) -> int:
    from . import check as checking

    if bool(args.query) == bool(args.file):
        print("sparkagg check: give a query or -f FILE (not both)", file=sys.stderr)
        return 2
    try:
        text = args.query or open(args.file, encoding="utf-8").read()
    except OSError as e:
        print(f"sparkagg check: {e}", file=sys.stderr)
        return 2
    models = {}
    for pair in args.model_of or []:
        name, _, other = pair.partition("=")
        if not other:
            print(f"sparkagg check: --model-of needs FUNCTION=OTHER, got {pair!r}", file=sys.stderr)
            return 2
        models[name.strip().lower()] = other.strip().lower()
    unknown = [f for pair in models.items() for f in pair if f not in checking.functions.REGISTRY]
    if unknown:
        print(f"sparkagg check: no reference model of {', '.join(unknown)}", file=sys.stderr)
        return 2
    statements = _statements(text)
    if not statements:
        print("sparkagg check: no statement to check", file=sys.stderr)
        return 2
    if args.query:  # one query: out of scope is bad usage, before any Spark starts
        try:
            checking.parse(statements[0], args.prefix)
        except checking.UnsupportedQuery as e:
            print(f"sparkagg check: not checkable: {e}", file=sys.stderr)
            return 2
    spark = _session(args)
    from pyspark.errors import AnalysisException

    failed = checked = skipped = 0
    for stmt in statements:
        code = [l for l in stmt.splitlines() if not l.strip().startswith("--")]
        cases = [l.strip()[len("-- case:"):].strip() for l in stmt.splitlines() if l.strip().startswith("-- case:")]
        label = (f"[{cases[-1]}] " if cases else "") + " ".join(" ".join(code).split())
        try:
            diffs = checking.check(spark, stmt, rel_tol=args.rel_tol, models=models)
        except checking.UnsupportedQuery as e:
            if args.query:
                print(f"sparkagg check: not checkable: {e}", file=sys.stderr)
                return 2
            skipped += 1
            print(f"SKIP {label}\n  reason: {e}")
            continue
        except AnalysisException as e:
            print(f"sparkagg check: {str(e).splitlines()[0]}", file=sys.stderr)
            if args.query:
                return 2
            failed += 1
            continue
        except Exception as e:  # Spark failed on a query the model could compute
            print(f"FAIL {label}\n  Spark failed: {str(e).strip().splitlines()[0]}")
            failed += 1
            continue
        checked += 1
        if diffs:
            failed += 1
            print(f"DIFF {label}")
            for d in diffs:
                print(f"  {d}")
        else:
            print(f"OK   {label}")
    if args.file:
        print(f"{checked} checked, {failed} with differences or errors, {skipped} skipped")
    return 1 if failed else 0


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
    p = sub.add_parser("check", parents=[common],
                       help="run aggregate queries on Spark and with the reference model, and compare")
    p.add_argument("query", nargs="?", help="one SELECT ... [GROUP BY ...] query")
    p.add_argument("-f", "--file", help="a file of queries separated by ';' (window queries are skipped)")
    p.add_argument("--rel-tol", type=float, default=1e-9, help="relative tolerance for doubles (1e-9)")
    p.add_argument("--model-of", action="append", metavar="F=G",
                   help="compute F with G's model (to see a difference reported); repeatable")
    p.set_defaults(run=cmd_check)
    args = parser.parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
