# sparkagg: every target sets up what it needs from nothing (venv, sbt, the JAR).
PYTHON3 ?= python3
VENV    := .venv
PY      := $(VENV)/bin/python
SBT     := ./build/sbt
# Each step of `make test` runs under build/timed, which records its seconds for the table the run ends with.
TIMED   := build/timed

# The Spark minors, each with the pyspark release its JAR is compiled and tested against. The newest is
# the default: its pyspark is in .venv, its sbt project is `root`; the others are spark35, spark40, ...
LINES        := python/sparkagg/spark_lines.tsv
MINORS       := $(shell awk -F'\t' '/^[0-9]/ {print $$1}' $(LINES))
DEFAULT      := $(lastword $(MINORS))
OTHERS       := $(filter-out $(DEFAULT),$(MINORS))
pyspark_of    = $(shell awk -F'\t' '$$1 == "$(1)" {print $$2}' $(LINES))
scala_of      = $(shell awk -F'\t' '$$1 == "$(1)" {split($$3, v, "."); print v[1] "." v[2]}' $(LINES))
artifact_of   = sparkagg-spark$(1)_$(call scala_of,$(1))
project_of    = $(if $(filter $(DEFAULT),$(1)),root,spark$(subst .,,$(1)))
JAR          := target/jars/$(call artifact_of,$(DEFAULT)).jar

.PHONY: all venv venvs sbt-ready jar jars lint test test-run test-jvm test-py check check-jvm check-py test-long \
        test-scala test-python test-versions demo bench extras docs wheel fuzz clean

all: jar

# pyspark comes as source only: pip builds a wheel of its jars (and caches it, for test_wheel's fresh venv)
# before installing it. Stored, not deflated, since the jars are compressed already: half the CPU of a
# minor's install (20 s -> 10 s).
PYSPARK_PIP := -q -C--build-option=--compression=stored
# Every install leaves the bytecode to the first import: pip would compile every module of pyspark, pandas and
# pyarrow in each of the five venvs, most never imported by a test.
PIP := pip install --no-compile

# Python environment: the default Spark's pyspark (whose jars the JVM build compiles against), the
# package, test tools.
venv: $(VENV)/.installed
$(VENV)/.installed: python/pyproject.toml $(LINES)
	$(TIMED) "venv .venv (Spark $(DEFAULT))" sh -ec '$(PYTHON3) -m venv $(VENV); \
	  $(PY) -m $(PIP) -q --upgrade pip; \
	  $(PY) -m $(PIP) $(PYSPARK_PIP) "pyspark[connect]==$(call pyspark_of,$(DEFAULT))"; \
	  $(PY) -m $(PIP) -q -e "python[test]"'
	touch $@

# One environment per other Spark minor, .venvs/spark-<minor>: its pyspark (the jars its JAR compiles
# against) and the test tools; test-versions installs the wheel into it. Each builds the package from its
# own copy of the sources: setuptools builds in the source tree, and `make test` sets up every venv at once.
venvs: $(foreach m,$(OTHERS),.venvs/spark-$(m)/.installed)
.venvs/spark-%/.installed: python/pyproject.toml $(LINES)
	$(TIMED) "venv .venvs/spark-$*" sh -ec '$(PYTHON3) -m venv .venvs/spark-$*; \
	  .venvs/spark-$*/bin/python -m $(PIP) -q --upgrade pip; \
	  rm -rf .venvs/spark-$*/package && mkdir .venvs/spark-$*/package; \
	  cp -r python/pyproject.toml python/README.md python/sparkagg .venvs/spark-$*/package/; \
	  .venvs/spark-$*/bin/python -m $(PIP) $(PYSPARK_PIP) "pyspark==$(call pyspark_of,$*)"; \
	  .venvs/spark-$*/bin/python -m $(PIP) -q "./.venvs/spark-$*/package[test]"'
	touch $@

# sbt itself, its plugins and every project's libraries (Scala compilers, ScalaTest), fetched while the
# venvs download: none of it needs Spark's jars, which come with the venvs.
PROJECTS  := $(foreach m,$(MINORS),$(call project_of,$(m)))
SBT_READY := target/.sbt-ready
sbt-ready: $(SBT_READY)
$(SBT_READY): build.sbt project/build.properties project/plugins.sbt
	$(TIMED) "sbt: launcher, plugins, libraries" $(SBT) $(foreach p,$(PROJECTS),$(p)/update)
	mkdir -p $(@D) && touch $@

# The JAR users ship for the default Spark (sparkagg classes only), the test JAR (user-defined accumulator
# examples), and the JAR published to the local Maven repository (under Java's user.home, which is the
# account's home folder, whatever $HOME says) for `--packages io.github.sparkagg:sparkagg-spark4.3_2.13:0.1.0`.
# `make jars` does the same for every minor. Both are files with their sources as prerequisites, so an
# up-to-date build costs no sbt start. sbt's `all` builds the projects side by side, one per core.
SOURCES      := build.sbt $(LINES) $(shell find jvm/src project -type f -not -path '*/target/*' -not -path 'project/project/*')
EVERY_MINOR  := target/jars/.every-minor
jar: $(JAR)
$(JAR): $(SOURCES) $(VENV)/.installed
	$(TIMED) "JAR of Spark $(DEFAULT)" $(SBT) package Test/package publishM2
	touch $@

jars: $(EVERY_MINOR)
$(EVERY_MINOR): $(SOURCES) $(VENV)/.installed $(foreach m,$(OTHERS),.venvs/spark-$(m)/.installed)
	$(TIMED) "JARs of every minor" $(SBT) "all $(foreach p,$(PROJECTS),$(p)/package $(p)/Test/package)" \
	  "all $(foreach p,$(PROJECTS),$(p)/publishM2)"
	touch $(JAR) $@

# .venv's extras beyond the tests: matplotlib draws bench/results/bench.png (tests check the plot script on
# small data), mkdocs-material builds the docs site.
extras: $(VENV)/.extras
$(VENV)/.extras: $(VENV)/.installed
	$(TIMED) "venv .venv: the bench and docs extras" $(PY) -m $(PIP) -q -e 'python[test,bench,docs]'
	touch $@

# The manual: docs/ as a site in site/ (mkdocs.yml), built strictly: a broken link or a page outside the nav
# fails the build. Its function reference, docs/reference/, is generated first from the JAR's catalogue, each
# example run in Spark (sparkagg/docs_reference.py), with the README's function table; both are committed, so
# that the README's table and links work where the repository is read, and tests hold them to the catalogue.
docs: jar extras
	$(PY) -m sparkagg.docs_reference docs/reference README.md
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict --quiet

# The house style: scalafmt over the Scala sources and build files (`./build/sbt scalafmtAll` applies it),
# ruff over the Python (`.venv/bin/ruff check --fix python tests bench` mends what it can).
SCALAFMT := scalafmtCheckAll scalafmtSbtCheck
RUFF     := $(VENV)/bin/ruff check python tests bench
lint: venv
	$(SBT) $(SCALAFMT)
	$(RUFF)

# ---- Tests. Each runner writes a JUnit XML report under target/test-times/<runner>/ (ScalaTest: build.sbt),
# which build/test-times reads for the seconds of each suite or file and the slowest tests.
REPORTS = target/test-times
# Every Spark application the tests start (pytest's session, spark-submit, the CLI, demos, Connect servers)
# compiles with C1 alone, as ScalaTest's JVMs do (build.sbt): they live seconds to minutes on small inputs,
# where C2's compilations cost more CPU than they return (a demo: 24 s of CPU -> 15 s). Not for `make bench`.
# They also map Spark's classes from the default venv's class-data-sharing archive (build/class-archive): a
# start and first query of 16 s become 8. A JVM of another pyspark install ignores the archive, silently.
CLASS_ARCHIVE := $(VENV)/spark.jsa
test test-run test-jvm test-py check check-jvm check-py test-long: export SPARK_SUBMIT_OPTS := -XX:TieredStopAtLevel=1 \
  -XX:SharedArchiveFile=$(abspath $(CLASS_ARCHIVE)) -Xlog:cds=off -Xlog:cds+dynamic=off
$(CLASS_ARCHIVE): $(VENV)/.installed build/class-archive
	$(TIMED) "class archive of .venv's Spark" $(PY) build/class-archive $@
PYTEST  = -m pytest -q -p no:cacheprovider --durations=10
SBT_TEST_SHORT := 'set Test/javaOptions += "-Dsparkagg.test.sweep=short"' \
                  'set Test/testOptions += Tests.Argument(TestFrameworks.ScalaTest, "-l", "sparkagg.Slow")'

# Every other Spark minor is tested beside the default. ScalaTest compiled against the oldest and the
# newest of them (every suite on another Scala; on the default's Scala the suites that meet Spark,
# build.sbt's meetsSpark), without the tests tagged DefaultLineOnly and with smaller volumes
# (testing/Sweep.scala); the minors between, whose adapters are a few lines each, compile their suites in
# `make jars` and run the Python ones. For every other minor, from its venv with the wheel installed
# (so the package picks that minor's JAR), the Python suites where Spark versions differ: the DataFusion
# oracles, the sql/ cases and spark-submit --jars, the state forms' Parquet rollup, windows, the JAR/Spark
# checks with the demo's tables (in the suites' session: a demo of its own would start Spark again). The long partition sweeps run once, on the default minor (SPARKAGG_TEST_SWEEP,
# sparkagg.test.sweep).
WHEEL         := dist/sparkagg-0.1.0-py3-none-any.whl
VERSION_TESTS := tests/test_oracle.py tests/test_oracle_extra.py tests/test_oracle_ordered.py tests/test_sql_files.py \
                 tests/test_state_as_data.py tests/test_window.py tests/test_spark_lines.py
# On the oldest minor, whose PySpark differs most, also the Python udafs (sparkagg.udaf), as runners and as Columns.
OLDEST_TESTS  := tests/test_python_udaf.py tests/test_udaf_columns.py
SCALATEST_OTHERS := $(foreach m,$(firstword $(OTHERS)) $(lastword $(OTHERS)),$(call project_of,$(m)))
define minor_python
	$(TIMED) "Spark $(1): the wheel installed" .venvs/spark-$(1)/bin/python -m pip install -q --no-deps \
	  --force-reinstall $(WHEEL)
	$(TIMED) "Spark $(1): pytest, the suites where minors differ" env SPARKAGG_TEST_SWEEP=short \
	  .venvs/spark-$(1)/bin/python $(PYTEST) --junitxml=$(REPORTS)/pytest-spark-$(1)/report.xml $(VERSION_TESTS) \
	  $(if $(filter $(1),$(firstword $(MINORS))),$(OLDEST_TESTS))

endef
test-versions: wheel venvs
	$(TIMED) "sbt: ScalaTest on Spark $(firstword $(OTHERS)) and $(lastword $(OTHERS))" \
	  $(SBT) $(foreach p,$(SCALATEST_OTHERS),$(p)/test)
	$(foreach m,$(OTHERS),$(call minor_python,$(m)))

# The log ends with the 10 slowest tests; `make test` prints the 25 slowest of the whole run.
test-python: jar extras $(CLASS_ARCHIVE)
	$(TIMED) "pytest on Spark $(DEFAULT)" $(PY) $(PYTEST) --junitxml=$(REPORTS)/pytest-spark-$(DEFAULT)/report.xml tests

test-scala: venv
	$(TIMED) "sbt: ScalaTest on Spark $(DEFAULT)" $(SBT) test

# `make test`: everything, from nothing. Set-up first, all at once (downloads and unpacking, one core's work
# at most each); then every JAR and the wheel; then two lanes side by side, one per core: the JVM's (one sbt
# start for scalafmt and the ScalaTest of every minor that runs it) and Python's (ruff, pytest on the default
# minor), each ending with some other minors' demo and Python suites. The run ends with build/test-times'
# table of its phases and slowest tests, printed whether it passed or not.
test:
	rm -rf $(REPORTS)
	$(MAKE) test-run; status=$$?; build/test-times; exit $$status

test-run:
	$(MAKE) -j venv venvs extras sbt-ready $(CLASS_ARCHIVE)
	$(MAKE) wheel
	$(MAKE) -j test-jvm test-py

# The other minors' demos and Python suites end the lanes, the oldest (its suites the longest, the Python
# udafs' among them) after sbt's, the others after pytest's: the lanes then end at about the same time (a lane
# alone leaves a core idle part of the time).
OTHERS_AFTER_SBT := $(firstword $(OTHERS))
test-jvm: jars wheel
	$(TIMED) "sbt: scalafmt, ScalaTest on Spark $(DEFAULT), $(firstword $(OTHERS)), $(lastword $(OTHERS))" \
	  $(SBT) $(SCALAFMT) $(call project_of,$(DEFAULT))/test $(foreach p,$(SCALATEST_OTHERS),$(p)/test)
	$(foreach m,$(OTHERS_AFTER_SBT),$(call minor_python,$(m)))

test-py: wheel extras $(CLASS_ARCHIVE)
	$(TIMED) "ruff" $(RUFF)
	$(MAKE) test-python
	$(foreach m,$(filter-out $(OTHERS_AFTER_SBT),$(OTHERS)),$(call minor_python,$(m)))

# `make check`: the inner loop on a built tree, a few minutes. The same two lanes on the default minor alone:
# scalafmt and every ScalaTest suite at the other minors' sweep (sparkagg.test.sweep=short) without the tests
# tagged Slow, ruff and pytest without the tests marked slow (those that start Spark applications of their
# own: clusters, a Connect server, spark-submit, make targets; and those that run for seconds) at one
# partition count. `make test` runs every one of them.
check:
	rm -rf $(REPORTS)
	$(MAKE) -j check-jvm check-py; status=$$?; build/test-times; exit $$status

check-jvm: jar
	$(TIMED) "sbt: scalafmt, ScalaTest on Spark $(DEFAULT) (short sweep)" $(SBT) $(SCALAFMT) $(SBT_TEST_SHORT) test

check-py: jar extras $(CLASS_ARCHIVE)
	$(TIMED) "ruff" $(RUFF)
	$(TIMED) "pytest on Spark $(DEFAULT), not slow (short sweep)" env SPARKAGG_TEST_SWEEP=short \
	  $(PY) $(PYTEST) -m "not slow" --junitxml=$(REPORTS)/pytest-check/report.xml tests

# `make test-long`: what `make test` runs at CI size, at full size, for a change to the operators or before a
# release (an hour or more): ScalaTest on the default minor and the oldest and newest others with every minor
# at the full partition sweeps (every pair where `make test` sweeps pairwise) and the long volumes
# (testing/Sweep.scala), the other minors' Python suites at the full sweep, the property tests with every
# example, and the fuzzer for FUZZ_COUNT (2,000) queries on the default minor and on the oldest.
SBT_TEST_LONG := 'set every Test/javaOptions += "-Dsparkagg.test.sweep=long"'
# The pytest files with property tests (tests/sweep.py's examples: half of them in `make test`).
PROPERTY_TESTS := $(shell grep -l 'sweep.examples' tests/*.py tests/reference/*.py)
test-long: wheel
	$(TIMED) "sbt: ScalaTest on Spark $(DEFAULT) and $(SCALATEST_OTHERS), full sweeps, long volumes" $(SBT) \
	  $(SBT_TEST_LONG) $(call project_of,$(DEFAULT))/test $(foreach p,$(SCALATEST_OTHERS),$(p)/test)
	set -e; for m in $(OTHERS); do \
	  .venvs/spark-$$m/bin/python -m pip install -q --no-deps --force-reinstall $(WHEEL); \
	  $(TIMED) "Spark $$m: pytest, full sweep" .venvs/spark-$$m/bin/python $(PYTEST) $(VERSION_TESTS) \
	    $$(test $$m = $(firstword $(MINORS)) && echo $(OLDEST_TESTS)); \
	done
	$(TIMED) "pytest on Spark $(DEFAULT): the property tests, every example" env SPARKAGG_TEST_SWEEP=long \
	  $(PY) $(PYTEST) $(PROPERTY_TESTS)
	$(MAKE) fuzz FUZZ_COUNT=$(or $(FUZZ_COUNT),2000)
	$(MAKE) fuzz FUZZ_SPARK=$(firstword $(MINORS)) FUZZ_COUNT=$(or $(FUZZ_COUNT),2000)

demo: jar
	$(VENV)/bin/sparkagg demo

# The differential fuzzer (tests/fuzz/): generated queries on Spark against DataFusion 55 for FUZZ_SECONDS
# (300) or FUZZ_COUNT queries, from FUZZ_SEED; FUZZ_SPARK=3.5 (any minor) runs it from that minor's venv
# with the wheel. Differences are printed as found, shrunk, and saved under sql/fuzz/.
FUZZ_SEED   ?= 1
FUZZ_SPARK  ?= $(DEFAULT)
FUZZ_ON_DEFAULT = $(filter $(DEFAULT),$(FUZZ_SPARK))
fuzz: $(if $(FUZZ_ON_DEFAULT),jar,wheel .venvs/spark-$(FUZZ_SPARK)/.installed)
	$(if $(FUZZ_ON_DEFAULT),,.venvs/spark-$(FUZZ_SPARK)/bin/python -m pip install -q --no-deps --force-reinstall $(WHEEL))
	$(if $(FUZZ_ON_DEFAULT),$(PY),.venvs/spark-$(FUZZ_SPARK)/bin/python) tests/fuzz --seed $(FUZZ_SEED) \
	  $(if $(FUZZ_COUNT),--count $(FUZZ_COUNT),--seconds $(or $(FUZZ_SECONDS),300))

# Each script prints its figures and records its ratios in $(BENCH_OUT)/<script>.json; plot.py draws
# them all into $(BENCH_OUT)/bench.png (bench/results/bench.png is docs/benchmarks.md's plot). BENCH_ROWS=N makes
# the same steps a short trial: N rows, one run per query, no 20M-group spill run (minutes otherwise),
# bench_window at two frame widths, and bench_grouped on the cached table of 1k groups instead of all twelve
# shapes, at the default settings alone (its floor and DataFusion runs still read a Parquet file).
BENCH_OUT ?= bench/results
BENCH_TRIAL = $(if $(BENCH_ROWS),--rows $(BENCH_ROWS) --repeat 1)
COMMA := ,
bench: jars extras
	$(PY) bench/bench_avg_sum.py --out $(BENCH_OUT) $(BENCH_TRIAL)
	$(PY) bench/bench_numeric.py --out $(BENCH_OUT) $(BENCH_TRIAL)
	$(PY) bench/bench_collections.py --out $(BENCH_OUT) $(BENCH_TRIAL)
	$(PY) bench/bench_window.py --out $(BENCH_OUT) $(BENCH_TRIAL) $(if $(BENCH_ROWS),--widths 10$(COMMA)100)
	$(PY) bench/bench_grouped.py --out $(BENCH_OUT) $(BENCH_TRIAL) \
	  $(if $(BENCH_ROWS),--no-spill --shapes cached-1k --settings default)
	$(PY) bench/bench_python_udaf.py --out $(BENCH_OUT) $(BENCH_TRIAL)
	$(PY) bench/plot.py --results $(BENCH_OUT)

# A wheel that carries every minor's JAR, built again only when a JAR or the package changed. `./python`, a
# path: pip reads a bare `python` as a package name.
wheel: $(WHEEL)
$(WHEEL): $(EVERY_MINOR) $(shell find python -type f -not -path '*/build/*' -not -path '*.egg-info*' -not -name '*.pyc' -not -path '*/jars/*')
	rm -rf python/sparkagg/jars python/build && mkdir -p python/sparkagg/jars
	cp $(foreach m,$(MINORS),target/jars/$(call artifact_of,$(m)).jar) python/sparkagg/jars/
	$(PY) -m pip wheel -q --no-deps -w dist ./python
	rm -rf python/sparkagg/jars python/build

clean:
	rm -rf target project/target jvm/spark*/target $(VENV) .venvs dist site
