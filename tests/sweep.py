"""How large the tests make their sweeps. `make test` runs every partition count on the default Spark minor
and half of each property test's examples; SPARKAGG_TEST_SWEEP=short (`make check`, and each other minor's
suites in `make test`) one partition count and a quarter of the examples; SPARKAGG_TEST_SWEEP=long
(`make test-long`) every example."""
from __future__ import annotations

import os

import pytest

SWEEP = os.environ.get("SPARKAGG_TEST_SWEEP")
SHORT = SWEEP == "short"
LONG = SWEEP == "long"

# The partition counts the oracle suites sweep.
PARTITIONS = [3] if SHORT else [1, 3, 17]


def examples(full: int) -> int:
    """A property test's max_examples: `full` at the long sweep, half (at least 10) in `make test`, a quarter
    (at least 5) at the short sweep."""
    return full if LONG else max(5, full // 4) if SHORT else max(10, full // 2)


def slow(*values):
    """A parametrised case marked slow (it runs for seconds): `make test` runs it, `make check` leaves it out."""
    return pytest.param(*values, marks=pytest.mark.slow)
