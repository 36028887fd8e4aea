"""How large the tests make their sweeps. `make test` runs them in full on the default Spark minor;
SPARKAGG_TEST_SWEEP=short (`make check`, and each other minor's suites in `make test`) runs one partition
count and a quarter of each property test's examples, so the full sweeps run once per `make test`."""
from __future__ import annotations

import os

import pytest

SHORT = os.environ.get("SPARKAGG_TEST_SWEEP") == "short"

# The partition counts the oracle suites sweep.
PARTITIONS = [3] if SHORT else [1, 3, 17]


def examples(full: int) -> int:
    """A property test's max_examples: `full` in `make test`, a quarter (at least 5) at the short sweep."""
    return max(5, full // 4) if SHORT else full


def slow(*values):
    """A parametrised case marked slow (it runs for seconds): `make test` runs it, `make check` leaves it out."""
    return pytest.param(*values, marks=pytest.mark.slow)
