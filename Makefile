# sparkagg: every target sets up what it needs from nothing (venv, sbt, the JAR).
PYTHON3 ?= python3
VENV    := .venv
PY      := $(VENV)/bin/python
SBT     := ./build/sbt

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

.PHONY: all venv venvs jar jars lint test test-scala test-python test-versions demo bench bench-deps wheel fuzz clean

all: jar

# Python environment: the default Spark's pyspark (whose jars the JVM build compiles against), the
# package, test tools.
venv: $(VENV)/.installed
$(VENV)/.installed: python/pyproject.toml $(LINES)
	$(PYTHON3) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q 'pyspark[connect]==$(call pyspark_of,$(DEFAULT))' -e 'python[test]'
	touch $@

# One environment per other Spark minor, .venvs/spark-<minor>: its pyspark (the jars its JAR compiles
# against) and the test tools; test-versions installs the wheel into it. Each builds the package from its
# own copy of the sources: setuptools builds in the source tree, and `make test` sets up every venv at once.
venvs: $(foreach m,$(OTHERS),.venvs/spark-$(m)/.installed)
.venvs/spark-%/.installed: python/pyproject.toml $(LINES)
	$(PYTHON3) -m venv .venvs/spark-$*
	.venvs/spark-$*/bin/python -m pip install -q --upgrade pip
	rm -rf .venvs/spark-$*/package && mkdir .venvs/spark-$*/package
	cp -r python/pyproject.toml python/README.md python/sparkagg .venvs/spark-$*/package/
	.venvs/spark-$*/bin/python -m pip install -q 'pyspark==$(call pyspark_of,$*)' './.venvs/spark-$*/package[test]'
	touch $@

# The JAR users ship for the default Spark (sparkagg classes only), the test JAR (user-defined accumulator
# examples), and the JAR published to the local Maven repository for
# `--packages io.github.sparkagg:sparkagg-spark4.3_2.13:0.1.0`. `make jars` does the same for every minor.
# Both are files with their sources as prerequisites, so an up-to-date build costs no sbt start.
SOURCES      := build.sbt $(LINES) $(shell find jvm/src project -type f -not -path '*/target/*' -not -path 'project/project/*')
EVERY_MINOR  := target/jars/.every-minor
jar: $(JAR)
$(JAR): $(SOURCES) $(VENV)/.installed
	$(SBT) package Test/package publishM2
	touch $@

jars: $(EVERY_MINOR)
$(EVERY_MINOR): $(SOURCES) $(VENV)/.installed $(foreach m,$(OTHERS),.venvs/spark-$(m)/.installed)
	$(SBT) $(foreach m,$(MINORS),$(call project_of,$(m))/package $(call project_of,$(m))/Test/package \
	  $(call project_of,$(m))/publishM2)
	touch $@

# The default JIT: C1 alone (-XX:TieredStopAtLevel=1) made five suites slower, 8:19 against 4:34.
test-scala: venv
	$(SBT) test

# The bench extra (matplotlib) draws bench/results/bench.png; tests check the plot script on small data.
bench-deps: $(VENV)/.bench
$(VENV)/.bench: $(VENV)/.installed
	$(PY) -m pip install -q -e 'python[test,bench]'
	touch $@

# The log ends with the 25 slowest tests, to see where the suite's time goes. Serial: on a two-core
# machine two pytest-xdist workers took as long (1,085 s against 1,005-1,400 s), the slowest tests (those
# that start JVMs) slower still.
test-python: jar bench-deps
	$(PY) -m pytest tests -q --durations=25

# The house style: scalafmt over the Scala sources and build files (`./build/sbt scalafmtAll` applies it),
# ruff over the Python (`.venv/bin/ruff check --fix python tests bench` mends what it can).
lint: venv
	$(SBT) scalafmtCheckAll scalafmtSbtCheck
	$(VENV)/bin/ruff check python tests bench

# The environments first, all at once: each is mostly downloads and unpacking, one core's work at most.
test:
	$(MAKE) -j venv venvs bench-deps
	$(MAKE) jars lint test-scala test-versions test-python

# Every other Spark minor, after the full suites on the default one. ScalaTest compiled against the oldest
# and the newest of them (every suite on another Scala; on the default's Scala the suites that meet Spark,
# build.sbt's meetsSpark), without the tests tagged DefaultLineOnly and with smaller volumes
# (testing/Sweep.scala); the minors between, whose adapters are a few lines each, compile their suites in
# `make jars` and run the Python ones. Then for every other minor, from its venv with the wheel installed
# (so the package picks that minor's JAR), the demo and the Python suites where Spark versions differ: the
# DataFusion oracles, the sql/ cases and spark-submit --jars, the state forms' Parquet rollup, windows, the
# JAR/Spark checks.
# The long partition sweeps run once, on the default minor (SPARKAGG_TEST_SWEEP, sparkagg.test.sweep).
WHEEL         := dist/sparkagg-0.1.0-py3-none-any.whl
VERSION_TESTS := tests/test_oracle.py tests/test_oracle_extra.py tests/test_oracle_ordered.py tests/test_sql_files.py \
                 tests/test_state_as_data.py tests/test_window.py tests/test_spark_lines.py
# On the oldest minor, whose PySpark differs most, also the Python udafs (sparkagg.udaf).
OLDEST_TESTS  := tests/test_python_udaf.py
SCALATEST_OTHERS := $(firstword $(OTHERS)) $(lastword $(OTHERS))
test-versions: wheel venvs
	$(SBT) $(foreach m,$(SCALATEST_OTHERS),$(call project_of,$(m))/test)
	set -e; for m in $(OTHERS); do \
	  echo "== Spark $$m: the wheel, the demo, the Python suites"; \
	  .venvs/spark-$$m/bin/python -m pip install -q --no-deps --force-reinstall $(WHEEL); \
	  (cd /tmp && $(CURDIR)/.venvs/spark-$$m/bin/sparkagg demo --master 'local[2]'); \
	  SPARKAGG_TEST_SWEEP=short .venvs/spark-$$m/bin/python -m pytest -q -p no:cacheprovider $(VERSION_TESTS) \
	    $$(test $$m = $(firstword $(MINORS)) && echo $(OLDEST_TESTS)); \
	done

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
# them all into $(BENCH_OUT)/bench.png (bench/results/bench.png is the README's plot). BENCH_ROWS=N makes
# the same steps a short trial: N rows, one run per query, no 20M-group spill run (minutes otherwise),
# bench_window at two frame widths, and bench_grouped on a cached table and a Parquet file instead of all
# twelve shapes.
BENCH_OUT ?= bench/results
BENCH_TRIAL = $(if $(BENCH_ROWS),--rows $(BENCH_ROWS) --repeat 1)
COMMA := ,
bench: jars bench-deps
	$(PY) bench/bench_avg_sum.py --out $(BENCH_OUT) $(BENCH_TRIAL)
	$(PY) bench/bench_numeric.py --out $(BENCH_OUT) $(BENCH_TRIAL)
	$(PY) bench/bench_collections.py --out $(BENCH_OUT) $(BENCH_TRIAL)
	$(PY) bench/bench_window.py --out $(BENCH_OUT) $(BENCH_TRIAL) $(if $(BENCH_ROWS),--widths 10$(COMMA)100)
	$(PY) bench/bench_grouped.py --out $(BENCH_OUT) $(BENCH_TRIAL) \
	  $(if $(BENCH_ROWS),--no-spill --shapes cached-1k$(COMMA)parquet-1M)
	$(PY) bench/bench_python_udaf.py --out $(BENCH_OUT) $(BENCH_TRIAL)
	$(PY) bench/plot.py --results $(BENCH_OUT)

# A wheel that carries every minor's JAR. `./python`, a path: pip reads a bare `python` as a package name.
wheel: jars
	rm -rf python/sparkagg/jars python/build && mkdir -p python/sparkagg/jars
	cp $(foreach m,$(MINORS),target/jars/$(call artifact_of,$(m)).jar) python/sparkagg/jars/
	$(PY) -m pip wheel --no-deps -w dist ./python
	rm -rf python/sparkagg/jars python/build

clean:
	rm -rf target project/target jvm/spark*/target $(VENV) .venvs dist
