"""sparkagg: Apache DataFusion's aggregate functions for Apache Spark SQL.

>>> import sparkagg
>>> spark = sparkagg.session()                       # doctest: +SKIP
>>> spark.sql("SELECT k, df_avg(x) FROM t GROUP BY k")  # doctest: +SKIP
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

__version__ = "0.1.0"

EXTENSIONS = "sparkagg.SparkAggExtensions"
PREFIX_CONF = "spark.sparkagg.prefix"
DEFAULT_PREFIX = "df_"
ARROW_MAX_BYTES_CONF = "spark.sql.execution.arrow.maxBytesPerBatch"
# The suffixes of the functions every aggregate f also comes as (docs/state-as-data.md): f's state, states merged
# to f's value, states merged to a state, one state's value.
STATE_FORMS = ("_state", "_merge", "_merge_state", "_finalize")

__all__ = ["session", "register", "register_class", "catalogue", "jar_path", "functions", "reference", "udaf"]



def _spark_lines() -> dict[str, str]:
    rows = (Path(__file__).with_name("spark_lines.tsv").read_text().splitlines())
    table = [line.split("\t") for line in rows if line and not line.startswith("#")][1:]
    return {minor: ".".join(scala.split(".")[:2]) for minor, _pyspark, scala, _java in table}


# The Spark minors sparkagg ships a JAR for, and the Scala binary version each is built with.
SPARK_LINES = _spark_lines()


def spark_minor(version: str | None = None) -> str:
    """The Spark minor (``"4.3"``) of ``version``, by default the installed pyspark's. An unsupported
    Spark raises ValueError listing the supported ones."""
    if version is None:
        import pyspark
        version = pyspark.__version__
    minor = ".".join(version.split(".")[:2])
    if minor not in SPARK_LINES:
        raise ValueError(f"sparkagg: Spark {version} is not supported; sparkagg has JARs for Spark "
                         f"{', '.join(SPARK_LINES)}")
    return minor


def jar_name(spark: str | None = None, tests: bool = False) -> str:
    """The file name of the JAR for Spark minor ``spark`` (default: the installed pyspark's), e.g.
    ``sparkagg-spark3.5_2.12.jar``; ``tests=True`` names the JAR of test accumulators beside it."""
    minor = spark_minor(spark)
    return f"sparkagg-spark{minor}_{SPARK_LINES[minor]}{'-tests' if tests else ''}.jar"


def jar_path(spark: str | None = None) -> str:
    """Path of the sparkagg JAR for Spark minor ``spark`` (``"3.5"``; default: the installed pyspark's):
    the one inside the installed package (the wheel carries every minor's), else the sbt build output of
    a source checkout (``make jar``). ``$SPARKAGG_JAR`` overrides both for the installed pyspark's."""
    name = jar_name(spark)
    here = Path(__file__).resolve().parent
    candidates = [
        os.environ.get("SPARKAGG_JAR") if spark is None else None,
        here / "jars" / name,
        here.parent.parent / "target" / "jars" / name,
    ]
    for c in candidates:
        if c and Path(c).is_file():
            return str(c)
    raise FileNotFoundError(
        f"sparkagg: no {name} found. In a source checkout run `make jar` (Spark 4.3) or `make jars` "
        "(every Spark minor); otherwise install the sparkagg wheel, or set SPARKAGG_JAR.")


def session(master: str = "local[*]", prefix: str = DEFAULT_PREFIX, app_name: str = "sparkagg",
            extra_jars: list[str] | None = None, **conf):
    """A SparkSession with the sparkagg JAR and functions: ``df_avg``, ``df_count(*)``, ...

    ``prefix`` names the functions (``""`` replaces Spark's built-ins with DataFusion's for this
    session). Any Spark setting can be passed through ``conf``, with dotted names given as a dict:
    ``session(**{"spark.sql.shuffle.partitions": "4"})``. An already running session is returned
    as it is by Spark: stop it first, or use :func:`register` on it. Unless ``conf`` says otherwise,
    ``spark.sql.execution.arrow.maxBytesPerBatch`` is ``Int.MaxValue``: Python workers get their rows
    2.4 times as fast on Spark 4, in batches of ``maxRecordsPerBatch`` rows.
    """
    from pyspark.sql import SparkSession

    jars = [jar_path(), *(extra_jars or [])]
    builder = (SparkSession.builder.master(master).appName(app_name)
               .config("spark.jars", ",".join(jars))
               .config("spark.sql.extensions", EXTENSIONS)
               .config(PREFIX_CONF, prefix)
               .config("spark.ui.showConsoleProgress", "true"))
    # Python workers (sparkagg.udaf, PySpark's UDFs) run this interpreter, whose packages they need,
    # unless the user chose one: by default they would take `python3` from PATH. PySpark reads the
    # environment variable when the context starts; the setting records the choice.
    if master.startswith("local") and "PYSPARK_PYTHON" not in os.environ \
            and "spark.pyspark.python" not in conf:
        os.environ["PYSPARK_PYTHON"] = sys.executable
        builder = builder.config("spark.pyspark.python", sys.executable)
    # Spark 4 cuts the Arrow batches it feeds Python workers at spark.sql.execution.arrow.maxBytesPerBatch
    # (64 MB) by measuring the batch's vectors after every row, unless the limit is Int.MaxValue: that
    # measuring made feeding rows to sparkagg.udaf's partial phase (and to any pandas or Arrow UDF) take
    # 2.4 times as long. Without it batches stay bounded by maxRecordsPerBatch (10,000 rows), as on 3.5.
    conf = {ARROW_MAX_BYTES_CONF: str(2**31 - 1), **conf}
    for key, value in conf.items():
        builder = builder.config(key, value)
    return builder.getOrCreate()


def _jvm_of(spark):
    """The session's JVM, once the JAR on its classpath is known to be built for this Spark. The check is
    Java, so it links under any Scala: the JAR's Scala classes may not (a 2.12 class under Scala 2.13)."""
    jvm = getattr(spark, "_jvm", None)
    if jvm is None:
        raise TypeError(
            "sparkagg.register needs a classic (py4j) SparkSession. On Spark Connect, start the server "
            f"with the sparkagg JAR and spark.sql.extensions={EXTENSIONS}; the functions are then there.")
    try:
        jvm.sparkagg.SparkLineCheck.require()
    except TypeError as e:  # py4j: the class is not on the JVM's classpath
        raise RuntimeError(f"sparkagg: the JAR is not on this session's classpath ({jar_path()})") from e
    return jvm


def register(spark, prefix: str | None = None) -> None:
    """Register sparkagg's functions on a running classic session whose classpath has the JAR
    (``spark.jars`` / ``--jars``). ``df_count(*)`` needs the extension; here write ``df_count()``.
    The session's ``spark.sparkagg.prefix`` becomes ``prefix``, which its Column functions then use."""
    jvm = _jvm_of(spark)
    prefix = spark.conf.get(PREFIX_CONF, DEFAULT_PREFIX) if prefix is None else prefix
    jvm.sparkagg.SparkAgg.register(spark._jsparkSession, prefix)
    spark.conf.set(PREFIX_CONF, prefix)


def register_class(spark, name: str, class_name: str) -> None:
    """Register a user's aggregate (a Scala object or class implementing ``sparkagg.api.FunctionDef``,
    in a JAR on the session's classpath) as the SQL function ``name``."""
    _jvm_of(spark).sparkagg.SparkAgg.registerClass(spark._jsparkSession, name, class_name)


def catalogue(spark) -> list[dict]:
    """The built-in functions as the JAR describes them (``sparkagg.Catalogue``), family by family: a dict
    each with ``name``, ``aliases``, ``signature``, ``retract``, ``grouped``, ``within_group``, ``family``
    (the file of functions/ that defines it), ``family_title``, and its documentation: ``usage``,
    ``arguments`` ([name, description] pairs), ``examples`` ([query, documented result] pairs; ``_FUNC_``
    stands for the function's name), ``note``, ``accepts``, ``result``, ``empty_input``, ``datafusion``,
    ``nan`` (what a NaN does) and ``spark`` (the nearest Spark built-in and how it differs). Names are
    without the prefix. Needs a classic (py4j) session with the JAR."""
    import json
    return json.loads(_jvm_of(spark).sparkagg.Catalogue.json())


def __getattr__(name):  # lazy submodules: importing sparkagg does not start or import Spark
    if name in ("functions", "reference", "udaf"):
        import importlib
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(name)
