"""``AggregateFunction``: one function of the model, its type rules and the accumulators it makes
(DataFusion's ``AggregateUDFImpl``; the JVM's ``sparkagg.api.FunctionDef``). Each family module
defines its own; ``registry`` lists them all."""
from __future__ import annotations

from typing import Any

import pyarrow as pa

from .accumulator import Accumulator
from .argtypes import DataTypes, StateFields
from .groups import GroupsAccumulator, GroupsAccumulatorAdapter


class AggregateFunction:
    """One aggregate function: its type rules and its accumulators (DataFusion's ``AggregateUDFImpl``).

    Calling it makes the accumulator of one group; ``sliding`` makes the one bounded window frames
    use (DataFusion's ``create_sliding_accumulator``), which is the same unless the function needs
    extra state to retract; ``groups`` makes the ``GroupsAccumulator`` of all groups: the native
    ``groups_accumulator`` class when the function has one, else its accumulator through the adapter.
    ``aliases`` are further names the registry gives it (avg's mean). Every accumulator takes ``ansi``
    so that all are made alike; only those that can overflow (sum, avg) use it."""

    def __init__(
        self,
        name: str,
        accumulator: type[Accumulator],
        sliding: type[Accumulator] | None = None,
        *,
        aliases: tuple[str, ...] = (),
        groups_accumulator: type[GroupsAccumulator] | None = None,
        **options: Any,
    ) -> None:
        self.name = name
        self.aliases = aliases
        self._accumulator = accumulator
        self._sliding = sliding or accumulator
        self._options = options
        self._bound: dict[str, Any] = {}  # the options ``bind`` added (shown by repr)
        self.groups_accumulator = groups_accumulator

    def __call__(self, arg_types: DataTypes, ansi: bool = True) -> Accumulator:
        return self._accumulator(list(arg_types), ansi, **self._options)

    def sliding(self, arg_types: DataTypes, ansi: bool = True) -> Accumulator:
        return self._sliding(list(arg_types), ansi, **self._options)

    def groups(self, arg_types: DataTypes, ansi: bool = True) -> GroupsAccumulator:
        """The accumulator of all groups of a hash aggregation (DataFusion's
        ``create_groups_accumulator``): the native one when there is one, else the adapter."""
        if self.groups_accumulator is None:
            return self.adapter(arg_types, ansi)
        return self.groups_accumulator(list(arg_types), ansi, **self._options)

    def adapter(self, arg_types: DataTypes, ansi: bool = True) -> GroupsAccumulatorAdapter:
        """This function's ``Accumulator`` run per group by ``GroupsAccumulatorAdapter``."""
        types = list(arg_types)
        return GroupsAccumulatorAdapter(
            lambda: self(types, ansi), self.return_type(types), self.state_fields(types))

    def return_type(self, arg_types: DataTypes) -> pa.DataType:
        return self._accumulator.return_type(list(arg_types), **self._options)

    def state_fields(self, arg_types: DataTypes) -> StateFields:
        return self._accumulator.state_fields(list(arg_types), **self._options)

    def bind(self, **options: Any) -> AggregateFunction:
        """This function with literal arguments bound (string_agg's ``delimiter``): every accumulator
        it makes, Partial and Final alike, gets them, as DataFusion hands each accumulator the
        literal. ``get`` and the drivers take the bound function wherever they take a name."""
        bound = AggregateFunction(self.name, self._accumulator, self._sliding, aliases=self.aliases,
                                  groups_accumulator=self.groups_accumulator, **{**self._options, **options})
        bound._bound = {**self._bound, **options}
        return bound

    def __repr__(self) -> str:
        bound = "".join(f", {k}={v!r}" for k, v in self._bound.items())
        return f"AggregateFunction({self.name!r}{bound})"
