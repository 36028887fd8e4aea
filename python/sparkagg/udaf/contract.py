"""The contract a vectorised Python aggregate fulfils: DataFusion's ``GroupsAccumulator``, over pyarrow.

A ``GroupsAccumulator`` keeps the state of one aggregate function for *all* groups of a hash
aggregation at once, indexed by the dense group index the hash table assigns (0, 1, 2, ... in order
of first appearance). Its life in a query:

* ``update_batch(values, group_indices, opt_filter, total_num_groups)``: row ``i`` of ``values``
  (one array per argument) belongs to group ``group_indices[i]``; rows whose ``opt_filter`` entry is
  not true (false or NULL) are skipped; ``total_num_groups`` may grow from call to call, and groups
  that received no row still exist (they evaluate as the function's empty value);
* ``state(emit_to)`` / ``evaluate(emit_to)``: the intermediate state (one array per state field) or
  the final values of the emitted groups, in group-index order, and those groups are dropped;
* ``merge_batch(states, group_indices, opt_filter, total_num_groups)``: folds in exported states;
* ``convert_to_state(values, opt_filter)``: the state of every row as a group of its own, which a
  Partial aggregation sends on when grouping does not reduce its input;
* ``size()``: estimated bytes held.

``EmitTo.All`` emits every group and resets the accumulator; ``EmitTo.First(n)`` emits groups
``0..n-1`` and keeps the rest, whose indices *shift down by n*: the group that was ``n`` is ``0`` in
every later call.

``sparkagg.udaf`` runs a user's class of this contract in Spark; the reference model
(``sparkagg.reference``) writes its native accumulators to it.
"""
from __future__ import annotations

import abc
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

StateFields = list[tuple[str, pa.DataType]]


# --- EmitTo ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class _All:
    """Emit every group; the accumulator is left as new."""

    def count(self, total: int) -> int:
        return total

    def take(self, values: list[Any]) -> list[Any]:
        """The emitted part of a per-group list, removed from it."""
        out = values[:]
        values.clear()
        return out

    def __repr__(self) -> str:
        return "EmitTo.All"


@dataclass(frozen=True)
class _First:
    """Emit groups 0..n-1; later group indices are shifted down by n."""

    n: int

    def __post_init__(self) -> None:
        if self.n < 0:
            raise ValueError(f"EmitTo.First needs n >= 0, got {self.n}")

    def count(self, total: int) -> int:
        if self.n > total:
            raise ValueError(f"EmitTo.First({self.n}) of only {total} groups")
        return self.n

    def take(self, values: list[Any]) -> list[Any]:
        if self.n > len(values):
            raise ValueError(f"EmitTo.First({self.n}) of only {len(values)} groups")
        out = values[: self.n]
        del values[: self.n]
        return out

    def __repr__(self) -> str:
        return f"EmitTo.First({self.n})"


class EmitTo:
    """Which groups ``state`` / ``evaluate`` / ``NullState.build`` emit: ``EmitTo.All`` or
    ``EmitTo.First(n)``."""

    All = _All()
    First = _First


# --- the contract -------------------------------------------------------------------------------

class GroupsAccumulator(abc.ABC):
    """State of one aggregate function for every group: DataFusion's ``GroupsAccumulator`` trait.

    ``return_type`` and ``state_fields`` (name, type) describe what ``evaluate`` and ``state`` return."""

    return_type: pa.DataType
    state_fields: StateFields

    @abc.abstractmethod
    def update_batch(self, values: Sequence[pa.Array], group_indices: Sequence[int],
                     opt_filter: pa.Array | None, total_num_groups: int) -> None:
        """Fold row i of ``values`` into group ``group_indices[i]`` when ``opt_filter[i]`` is true."""

    @abc.abstractmethod
    def merge_batch(self, values: Sequence[pa.Array], group_indices: Sequence[int],
                    opt_filter: pa.Array | None, total_num_groups: int) -> None:
        """Fold exported states (one array per state field) into the groups given."""

    @abc.abstractmethod
    def evaluate(self, emit_to: Any = EmitTo.All) -> pa.Array:
        """Final values of the emitted groups, in group order; they are dropped (see ``EmitTo``)."""

    @abc.abstractmethod
    def state(self, emit_to: Any = EmitTo.All) -> list[pa.Array]:
        """Intermediate state of the emitted groups, one array per state field; they are dropped."""

    @abc.abstractmethod
    def size(self) -> int:
        """Estimated bytes held."""

    def convert_to_state(self, values: Sequence[pa.Array], opt_filter: pa.Array | None) -> list[pa.Array]:
        """The state of each input row as a group of its own (a filtered-out row: an empty group)."""
        raise NotImplementedError(f"{type(self).__name__} does not support convert_to_state")

    def supports_convert_to_state(self) -> bool:
        """DataFusion's default: no."""
        return False
