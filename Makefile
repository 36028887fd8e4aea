# sparkagg: every target sets up what it needs from nothing (venv, sbt, the JAR).
PYTHON3 ?= python3
VENV    := .venv
PY      := $(VENV)/bin/python
SBT     := ./build/sbt
JAR     := target/sparkagg.jar
TESTJAR := target/sparkagg-tests.jar

.PHONY: all venv jar lint test test-scala test-python demo bench bench-deps wheel clean

all: jar

# Python environment: pyspark 4.3.0 (whose jars the JVM build compiles against), the package, test tools.
venv: $(VENV)/.installed
$(VENV)/.installed: python/pyproject.toml
	$(PYTHON3) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e 'python[test]'
	touch $@

# The JAR users ship (sparkagg classes only), the test JAR (user-defined accumulator examples), and the
# JAR published to the local Maven repository for `--packages io.github.sparkagg:sparkagg_2.13:0.1.0`.
jar: venv
	$(SBT) package Test/package publishM2

test-scala: venv
	$(SBT) test

# The bench extra (matplotlib) draws bench/results/bench.png; tests check the plot script on small data.
bench-deps: $(VENV)/.bench
$(VENV)/.bench: $(VENV)/.installed
	$(PY) -m pip install -q -e 'python[test,bench]'
	touch $@

test-python: jar bench-deps
	$(PY) -m pytest tests -q

# The house style: scalafmt over the Scala sources and build files (`./build/sbt scalafmtAll` applies it),
# ruff over the Python (`.venv/bin/ruff check --fix python tests bench` mends what it can).
lint: venv
	$(SBT) scalafmtCheckAll scalafmtSbtCheck
	$(VENV)/bin/ruff check python tests bench

test: jar lint test-scala test-python

demo: jar
	$(VENV)/bin/sparkagg demo

# Each script prints its figures and records its ratios in $(BENCH_OUT)/<script>.json; plot.py draws
# them all into $(BENCH_OUT)/bench.png (bench/results/bench.png is the README's plot). BENCH_ROWS=N makes
# the same steps a short trial: N rows, one run per query, no 20M-group spill run (minutes otherwise).
BENCH_OUT ?= bench/results
BENCH_TRIAL = $(if $(BENCH_ROWS),--rows $(BENCH_ROWS) --repeat 1)
bench: jar bench-deps
	$(PY) bench/bench_avg_sum.py --out $(BENCH_OUT) $(BENCH_TRIAL)
	$(PY) bench/bench_numeric.py --out $(BENCH_OUT) $(BENCH_TRIAL)
	$(PY) bench/bench_collections.py --out $(BENCH_OUT) $(BENCH_TRIAL)
	$(PY) bench/bench_window.py --out $(BENCH_OUT) $(BENCH_TRIAL)
	$(PY) bench/bench_grouped.py --out $(BENCH_OUT) $(BENCH_TRIAL) $(if $(BENCH_ROWS),--no-spill)
	$(PY) bench/plot.py --results $(BENCH_OUT)

# A wheel that carries the JAR. `./python`, a path: pip reads a bare `python` as a package name.
wheel: jar
	mkdir -p python/sparkagg/jars && cp $(JAR) python/sparkagg/jars/
	$(PY) -m pip wheel --no-deps -w dist ./python
	rm -rf python/sparkagg/jars

clean:
	rm -rf target project/target $(VENV) dist
