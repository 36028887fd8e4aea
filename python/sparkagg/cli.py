"""The ``sparkagg`` command: run SQL with sparkagg's functions, list them, or run the demo.

    sparkagg sql "SELECT df_avg(x) FROM VALUES (1), (2) AS t(x)"
    sparkagg sql -f queries.sql --master local[2] --format csv
    sparkagg sql --remote sc://host:15002 "SELECT ..."         (a Spark Connect server with the extension)
    sparkagg functions
    sparkagg demo
    sparkagg check "SELECT k, df_avg(x) FROM t GROUP BY k"     (or: sparkagg check -f queries.sql)
    sparkagg jar --spark 3.5                                   (the JAR for another Spark: --jars "$(sparkagg jar)")

Exit codes of sql: 0 success; 1 a statement failed (Spark's error message is printed on
stderr, after the results of the statements before it) or Spark could not start; 2 bad usage (arguments,
an unreadable file); 130 interrupted (Ctrl-C cancels the running job).

``sql`` shows the progress of long jobs on stderr (active stages: tasks done / total, elapsed time) when
stderr is a terminal; ``--progress`` shows it anywhere (a line per change, for logs), ``--no-progress``
never. With ``--remote`` the progress comes from the Spark Connect server's reports.

``check`` exits 0 when Spark and the reference model agree, 1 on a difference (the differing rows
are printed) or a failing query, 2 on bad usage (including a query outside check's scope).
"""
from __future__ import annotations

import argparse
import csv
import io
import json
import logging
import sys

import sparkagg

from .progress import JobProgress


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
        line.strip().startswith("--") or not line.strip() for line in p.splitlines())]


def _render(df, fmt: str) -> str:
    """The result of a statement as text (this runs its job); nothing for a statement without columns."""
    if not df.columns:
        return ""
    if fmt == "table":
        return df._show_string(n=2**31 - 2, truncate=False) + "\n"
    rows = df.collect()
    out = io.StringIO()
    if fmt == "csv":
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(df.columns)
        writer.writerows([[("" if v is None else v) for v in r] for r in rows])
    else:
        for r in rows:
            out.write(json.dumps(r.asDict(recursive=True), default=str) + "\n")
    return out.getvalue()


def _session(args):
    if getattr(args, "remote", None):  # Spark Connect: the server has the JAR and the extension
        from pyspark.sql import SparkSession

        return SparkSession.builder.remote(args.remote).getOrCreate()
    # The CLI shows its own progress (sparkagg.progress), not Spark's console bar.
    return sparkagg.session(master=args.master, prefix=args.prefix,
                            **{"spark.ui.showConsoleProgress": "false", "spark.log.level": "WARN"})


def _quiet_error_log() -> None:
    """PySpark logs a failing SQL statement's error with its Java stack trace; the CLI prints the message."""
    try:
        from pyspark.logger import PySparkLogger
        PySparkLogger.getLogger("SQLQueryContextLogger").setLevel(logging.CRITICAL)
    except Exception:
        pass


def _message(e: BaseException) -> str:
    """Spark's message for an error: its first line (the error class and text), not a traceback."""
    lines = [line for line in str(e).strip().splitlines() if line.strip()]
    return lines[0] if lines else type(e).__name__


def cmd_sql(args) -> int:
    if bool(args.query) == bool(args.file):
        print("sparkagg sql: give a query or -f FILE (not both)", file=sys.stderr)
        return 2
    try:
        text = args.query or open(args.file, encoding="utf-8").read()
    except OSError as e:
        print(f"sparkagg sql: {e}", file=sys.stderr)
        return 2
    statements = _statements(text)
    if not statements:
        print("sparkagg sql: no statement to run", file=sys.stderr)
        return 2
    try:
        spark = _session(args)
    except Exception as e:
        print(f"sparkagg sql: could not start Spark: {_message(e)}", file=sys.stderr)
        return 1
    _quiet_error_log()
    show = sys.stderr.isatty() if args.progress is None else args.progress
    for stmt in statements:
        try:
            if show:
                with JobProgress(spark, sys.stderr, tty=sys.stderr.isatty()):
                    output = _render(spark.sql(stmt), args.format)
            else:
                output = _render(spark.sql(stmt), args.format)
        except Exception as e:  # a Spark error: print its message, not a Python traceback
            print(f"sparkagg sql: {_message(e)}", file=sys.stderr)
            return 1
        sys.stdout.write(output)
        sys.stdout.flush()
    return 0


FORMS = ("_merge_state", "_state", "_merge", "_finalize")


def list_functions(spark, prefix: str, out=sys.stdout) -> int:
    """Every function under ``prefix`` with its signature; on a classic session also its aliases, whether
    a sliding window retracts it, and whether the vectorised grouped path runs it, as the JAR says
    (sparkagg.Catalogue). Returns how many functions were listed."""
    if getattr(spark, "_jvm", None) is not None:
        rows = sparkagg.catalogue(spark)
        for r in rows:
            also = ", ".join(prefix + a for a in r["aliases"])
            out.write(f"{prefix}{r['name']}{r['signature']}\n")
            out.write(f"    {'aliases: ' + also + '; ' if also else ''}retract: {r['retract']}; "
                      f"grouped path: {r['grouped']}; WITHIN GROUP: {r['within_group']}\n")
    else:  # Spark Connect: no py4j; the registry's own documentation
        names = {r[0].split(".")[-1] for r in spark.sql(f"SHOW USER FUNCTIONS LIKE '{prefix}*'").collect()}
        rows = sorted(n for n in names if not any(n.endswith(f) and n[: -len(f)] in names for f in FORMS))
        for name in rows:
            usage = [r[0] for r in spark.sql(f"DESCRIBE FUNCTION {name}").collect()]
            signature = next((u.split("Signature: ", 1)[1] for u in usage if "Signature: " in u), name)
            out.write(signature.rstrip(".") + "\n")
    out.write("Each function f also comes as f_state, f_merge, f_merge_state and f_finalize (state as data).\n")
    return len(rows)


def cmd_functions(args) -> int:
    try:
        spark = _session(args)
    except Exception as e:
        print(f"sparkagg functions: could not start Spark: {_message(e)}", file=sys.stderr)
        return 1
    return 0 if list_functions(spark, args.prefix) else 1


def cmd_demo(args) -> int:
    from . import demo
    return demo.run(master=args.master, prefix=args.prefix)


def cmd_jar(args) -> int:
    try:
        print(sparkagg.jar_path(args.spark))
    except (ValueError, FileNotFoundError) as e:
        print(f"sparkagg jar: {e}", file=sys.stderr)
        return 2
    return 0


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
    unknown = [f for pair in models.items() for f in pair if f not in checking.registry.REGISTRY]
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
        code = [line for line in stmt.splitlines() if not line.strip().startswith("--")]
        cases = [line.strip()[len("-- case:"):].strip() for line in stmt.splitlines()
                 if line.strip().startswith("-- case:")]
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
    remote = argparse.ArgumentParser(add_help=False)
    remote.add_argument("--remote", metavar="URL",
                        help="a Spark Connect server (sc://host:port) started with the sparkagg JAR and extension, "
                             "instead of --master")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("sql", parents=[common, remote], help="run SQL statements and print their results")
    p.add_argument("query", nargs="?", help="SQL text (statements separated by ';')")
    p.add_argument("-f", "--file", help="a file of SQL statements")
    p.add_argument("--format", choices=["table", "csv", "json"], default="table")
    shown = p.add_mutually_exclusive_group()
    shown.add_argument("--progress", dest="progress", action="store_true", default=None,
                       help="show job progress on stderr even when it is not a terminal")
    shown.add_argument("--no-progress", dest="progress", action="store_false",
                       help="never show job progress (default: shown when stderr is a terminal)")
    p.set_defaults(run=cmd_sql)
    p = sub.add_parser("functions", parents=[common, remote], help="list every function with its signature")
    p.set_defaults(run=cmd_functions)
    p = sub.add_parser("demo", parents=[common], help="showcase on local Spark, beside the reference model")
    p.set_defaults(run=cmd_demo)
    p = sub.add_parser("check", parents=[common],
                       help="run aggregate queries on Spark and with the reference model, and compare")
    p.add_argument("query", nargs="?", help="one SELECT of df_ calls: grouped, global or over windows")
    p.add_argument("-f", "--file",
                   help="a file of queries separated by ';' (those outside check's scope are skipped, with the reason)")
    p.add_argument("--rel-tol", type=float, default=1e-9, help="relative tolerance for doubles (1e-9)")
    p.add_argument("--model-of", action="append", metavar="F=G",
                   help="compute F with G's model (to see a difference reported); repeatable")
    p.set_defaults(run=cmd_check)
    p = sub.add_parser("jar", help="print the path of the sparkagg JAR (for --jars / spark.jars)")
    p.add_argument("--spark", metavar="MINOR",
                   help=f"the Spark minor it is for, one of {', '.join(sparkagg.SPARK_LINES)} "
                        "(default: the installed pyspark's)")
    p.set_defaults(run=cmd_jar)
    args = parser.parse_args(argv)
    try:
        return args.run(args)
    except KeyboardInterrupt:
        print(f"sparkagg {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
