"""One JAR per Spark minor: the package picks the running pyspark's, names any other's, and a JAR built for
another Spark is refused at session start and at registration with one message naming both versions and
the JAR to use. `make test-versions` runs this file under every supported pyspark."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pyspark
import pytest

import sparkagg
from sparkagg import cli

RUNNING = sparkagg.spark_minor()
# The JAR of another line: 3.5's (Scala 2.12) on the newest Spark, else the newest's (the reported
# failures: a 4.3 JAR on Spark 4.2.1, a Scala 2.13 JAR on Spark 3.5.9).
OTHER = list(sparkagg.SPARK_LINES)[0] if RUNNING == list(sparkagg.SPARK_LINES)[-1] else list(sparkagg.SPARK_LINES)[-1]


def test_the_jar_of_the_running_pyspark_is_picked():
    assert RUNNING == ".".join(pyspark.__version__.split(".")[:2])
    assert Path(sparkagg.jar_path()).name == f"sparkagg-spark{RUNNING}_{sparkagg.SPARK_LINES[RUNNING]}.jar"


def test_every_minor_has_its_jar_and_the_cli_names_it(capsys):
    for minor, scala in sparkagg.SPARK_LINES.items():
        assert Path(sparkagg.jar_path(spark=minor)).name == f"sparkagg-spark{minor}_{scala}.jar"
        assert cli.main(["jar", "--spark", minor]) == 0
        assert capsys.readouterr().out.strip() == sparkagg.jar_path(spark=minor)
    assert sparkagg.jar_name("3.5.2") == "sparkagg-spark3.5_2.12.jar"


@pytest.mark.parametrize("version", ["3.4.1", "4.4.0"])
def test_an_unsupported_spark_gets_the_supported_list(version, capsys):
    with pytest.raises(ValueError, match=r"Spark .* is not supported; sparkagg has JARs for Spark 3\.5, 4\.0"):
        sparkagg.jar_path(spark=version)
    assert cli.main(["jar", "--spark", version]) == 2
    assert "3.5, 4.0, 4.1, 4.2, 4.3" in capsys.readouterr().err


# Starts Spark with the other line's JAR: once with the extension, once registering at run time.
WRONG_JAR_APP = r"""
import sys
from pyspark import SparkContext
from pyspark.sql import SparkSession
import sparkagg
jar = sys.argv[1]
def attempt(what, start):
    try:
        start()
        print(what, "ACCEPTED")
    except Exception as e:
        print(what, "REFUSED", " ".join(str(e).split()))
    finally:  # the context too: a refused extension leaves it running, and the next attempt would reuse it
        if SparkContext._active_spark_context is not None:
            SparkContext._active_spark_context.stop()
def base():
    return SparkSession.builder.master("local[1]").config("spark.jars", jar).config("spark.ui.enabled", "false")
def with_extension():
    base().config("spark.sql.extensions", sparkagg.EXTENSIONS).getOrCreate().sql("SELECT 1").collect()
attempt("extension", with_extension)
attempt("register", lambda: sparkagg.register(base().getOrCreate()))
"""


@pytest.mark.spark
@pytest.mark.slow
def test_a_jar_for_another_spark_is_refused_naming_both_versions_and_the_jar_to_use():
    run = subprocess.run([sys.executable, "-c", WRONG_JAR_APP, sparkagg.jar_path(spark=OTHER)],
                         capture_output=True, text=True, timeout=300)
    lines = [line for line in run.stdout.splitlines() if line.startswith(("extension ", "register "))]
    assert [line.split(" ")[:2] for line in lines] == [["extension", "REFUSED"], ["register", "REFUSED"]], \
        run.stdout + run.stderr[-3000:]
    fitting = sparkagg.jar_name().removesuffix(".jar")
    for line in lines:
        assert f"is built for Spark {OTHER}, but this is Spark {pyspark.__version__}" in line, line
        assert f"Use {fitting}.jar instead" in line and f"sparkagg jar --spark {RUNNING}" in line, line


@pytest.mark.slow  # every function's demo table
def test_the_demo_matches_the_reference_model_on_this_spark(spark, capsys):
    # `sparkagg demo`'s tables on the shared session: every other minor's `make test` runs this from its venv with
    # the wheel installed (the CLI's own run is make demo's and the wheel's fresh venv's, on the default minor)
    from sparkagg import demo
    assert demo.showcase(spark) == 0
    assert f"Spark {spark.version}" in capsys.readouterr().out
