"""The ``Accumulator`` contract of DataFusion, restated over pyarrow arrays.

An accumulator holds the state of one aggregate function for one group. Its life in a query:

* ``update_batch(values)`` folds input rows in (one array per argument, equal lengths);
* ``state()`` exports the intermediate state, one Python value per state field, so that a Partial
  aggregation can hand it on; ``merge_batch(states)`` folds such exported states back in (one array
  per state field, one row per exported state);
* ``evaluate()`` produces the final value;
* ``retract_batch(values)`` undoes an earlier ``update_batch`` of the same rows, when
  ``supports_retract_batch()`` says so: bounded window frames use it to slide;
* ``size()`` estimates the bytes the accumulator holds, for memory accounting.

DataFusion lets ``state`` and ``evaluate`` consume the accumulator; this model never does, so a test
may call them as often as it likes. Python values follow pyarrow's ``as_py`` conventions: ``int``,
``float``, ``decimal.Decimal``, ``str``, ``bytes``, ``bool``, ``datetime.date``,
``datetime.datetime`` and ``None`` for NULL.
"""
from __future__ import annotations

import abc
from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa

# Bytes of one fixed-width slot (a count, a 64-bit sum, a pointer) in the size() estimates.
SLOT_BYTES = 8


class Accumulator(abc.ABC):
    """State of one aggregate function for one group: DataFusion's ``Accumulator`` trait."""

    @abc.abstractmethod
    def update_batch(self, values: Sequence[pa.Array]) -> None:
        """Fold in the rows of ``values`` (one array per argument)."""

    @abc.abstractmethod
    def merge_batch(self, states: Sequence[pa.Array]) -> None:
        """Fold in exported states: one array per state field, one row per exported ``state()``."""

    @abc.abstractmethod
    def state(self) -> list[Any]:
        """The intermediate state, one Python value per field of the function's ``state_fields``."""

    @abc.abstractmethod
    def evaluate(self) -> Any:
        """The final aggregate value (``None`` for SQL NULL)."""

    @abc.abstractmethod
    def size(self) -> int:
        """Estimated bytes held, counting the accumulator itself, as DataFusion's ``size``."""

    def retract_batch(self, values: Sequence[pa.Array]) -> None:
        """Undo an earlier ``update_batch`` of these rows; only when ``supports_retract_batch``."""
        raise NotImplementedError(f"{type(self).__name__} does not support retract_batch")

    def supports_retract_batch(self) -> bool:
        """Whether ``retract_batch`` is implemented (DataFusion's default: it is not)."""
        return False

    def needs_rebuild(self) -> bool:
        """After ``retract_batch``: whether the frame must be computed afresh (the JVM's needsRebuild),
        because retracting lost what the state needs. Not in DataFusion's API."""
        return False


def columns_to_pylists(arrays: Sequence[pa.Array], expected: int) -> list[list[Any]]:
    """Python values of ``arrays``, after checking there are ``expected`` of them, all of one length.

    Arrow hands an accumulator one array per argument and relies on them being aligned; a
    misaligned call is a caller bug, so it fails loudly instead of silently zipping short.
    """
    if len(arrays) != expected:
        raise ValueError(f"expected {expected} arrays, got {len(arrays)}")
    lengths = {len(a) for a in arrays}
    if len(lengths) > 1:
        raise ValueError(f"arrays of different lengths: {sorted(lengths)}")
    return [a.to_pylist() for a in arrays]


def non_null(values: Sequence[pa.Array]) -> Iterator[Any]:
    """The non-NULL values of a single-argument batch: aggregates skip NULL inputs."""
    (column,) = columns_to_pylists(values, 1)
    return (v for v in column if v is not None)


def _payload_bytes(value: Any) -> int:
    """Variable-length bytes a value holds beyond its fixed slot (strings as UTF-8)."""
    if isinstance(value, str):
        return len(value.encode("utf-8"))
    if isinstance(value, bytes):
        return len(value)
    return 0
