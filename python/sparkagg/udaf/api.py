"""What a user writes: an ``Accumulator`` (datafusion-python's contract) or a ``GroupsAccumulator`` (the
reference model's), made into an aggregate by ``udaf``; and the adapters that let the runners treat
both alike."""
from __future__ import annotations

import abc
import inspect
import itertools
import sys
import traceback
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from .contract import EmitTo, GroupsAccumulator

VOLATILITIES = ("immutable", "stable", "volatile")


class Accumulator(abc.ABC):
    """The state of one aggregate for one group: datafusion-python's ``datafusion.Accumulator``.

    ``update`` folds in rows (one array per argument), ``state`` exports the intermediate state (one
    scalar per ``state_type`` field), ``merge`` folds exported states back in (one array per state
    field, one row per exported state), ``evaluate`` gives the result. ``retract`` is optional: it
    undoes an earlier ``update`` of the same rows, which lets a sliding window move in O(1) per row. A
    subclass of ``datafusion.Accumulator`` is accepted as it is; it need not subclass this class."""

    @abc.abstractmethod
    def update(self, *values: pa.Array) -> None:
        """Fold in rows: one array per argument."""

    @abc.abstractmethod
    def merge(self, states: list[pa.Array]) -> None:
        """Fold in exported states: one array per state field."""

    @abc.abstractmethod
    def state(self) -> list[pa.Scalar]:
        """The intermediate state, one scalar (or Python value) per state field."""

    @abc.abstractmethod
    def evaluate(self) -> pa.Scalar:
        """The result (a scalar or a Python value; None is NULL)."""


REQUIRED = ("update", "merge", "state", "evaluate")


def retracts(accumulator: Any) -> bool:
    """Whether an accumulator undoes rows: it defines ``retract`` (the base class here does not)."""
    return callable(getattr(accumulator, "retract", None))


def _python(value: Any) -> Any:
    return value.as_py() if isinstance(value, pa.Scalar) else value


try:  # the classic Column class: pyspark.sql.column.Column dispatches to it from 4.0 on
    from pyspark.sql.classic.column import Column as _SparkColumn
except ImportError:
    from pyspark.sql.column import Column as _SparkColumn

_uids = itertools.count()


class UdafError(RuntimeError):
    """A udaf broke its declaration (a state or result of another type) or raised in user code."""


class AggregateUDF:
    """An aggregate function written in Python; call it on columns to use it in ``aggregate`` or
    ``window``. Made by :func:`udaf`."""

    def __init__(self, name: str, factory: Callable[[], Any], input_types: list[pa.DataType],
                 return_type: pa.DataType, state_type: list[pa.DataType], volatility: str) -> None:
        if volatility not in VOLATILITIES:
            raise ValueError(f"udaf {name}: volatility must be one of {VOLATILITIES}, got {volatility!r}")
        self.name = name
        self.factory = factory
        self.input_types = list(input_types)
        self.return_type = return_type
        self.state_type = list(state_type)
        self.volatility = volatility
        sample = factory()
        if isinstance(sample, GroupsAccumulator):
            self.grouped = True
        elif all(callable(getattr(sample, m, None)) for m in REQUIRED):
            self.grouped = False
        else:
            raise TypeError(f"udaf {name}: {type(sample).__name__} is neither an Accumulator (with "
                            f"{', '.join(REQUIRED)}) nor a GroupsAccumulator")
        self.retracts = not self.grouped and retracts(sample)
        self.uid = next(_uids)
        _ship_by_value(type(sample))

    @property
    def asNondeterministic(self) -> Any:  # noqa: N802 (PySpark's name)
        """``spark.udf.register`` looks for this to tell a UDF from a plain function, and would register a
        udaf as a scalar function: the lookup fails, naming the call that registers it as an aggregate."""
        raise TypeError(f"udaf {self.name} is an aggregate: register it with "
                        f"sparkagg.udaf.register(spark, name, udaf); spark.udf.register makes scalar functions")

    def __call__(self, *columns: Any) -> UdafCall:
        if len(columns) != len(self.input_types):
            raise TypeError(f"udaf {self.name} takes {len(self.input_types)} argument(s) "
                            f"({', '.join(map(str, self.input_types))}), got {len(columns)}")
        from . import column
        remote = column.active_connect_session()
        return UdafCall(self, list(columns)) if remote is None else column.connect_call(remote, self, list(columns))

    def __repr__(self) -> str:
        args = ", ".join(map(str, self.input_types))
        return f"AggregateUDF({self.name}({args}) -> {self.return_type})"

    # --- what the runners call -------------------------------------------------------------------

    def groups(self) -> GroupsAccumulator:
        """All groups' state: the user's GroupsAccumulator, or one Accumulator per group."""
        return self.factory() if self.grouped else PerGroup(self)

    def one(self) -> Any:
        """One group's state with the Accumulator methods (windows slide on these)."""
        return self.factory() if not self.grouped else OneGroup(self)

    def results(self, values: Sequence[Any]) -> pa.Array:
        return self.checked_array(values, self.return_type, "result")

    def states(self, states: Sequence[Sequence[Any]]) -> list[pa.Array]:
        for s in states:
            if len(s) != len(self.state_type):
                raise UdafError(f"udaf {self.name}: state() gave {len(s)} value(s), state_type has "
                                f"{len(self.state_type)} ({', '.join(map(str, self.state_type))})")
        return [self.checked_array([s[f] for s in states], t, f"state field {f}")
                for f, t in enumerate(self.state_type)]

    def checked_states(self, arrays: Sequence[Any]) -> list[pa.Array]:
        """A GroupsAccumulator's ``state``: one array per ``state_type`` field, each of its type."""
        if len(arrays) != len(self.state_type):
            raise UdafError(f"udaf {self.name}: state() gave {len(arrays)} arrays, state_type has "
                            f"{len(self.state_type)}")
        return [self.checked(a, t, f"state field {i}") for i, (a, t) in enumerate(zip(arrays, self.state_type))]

    def checked_array(self, values: Sequence[Any], type_: pa.DataType, what: str) -> pa.Array:
        for v in values:
            if isinstance(v, pa.Scalar) and v.type != type_ and not pa.types.is_null(v.type):
                raise UdafError(f"udaf {self.name}: {what} is {v.type}, declared {type_}")
        try:
            return pa.array([_python(v) for v in values], type_)
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, OverflowError) as e:
            raise UdafError(f"udaf {self.name}: {what} does not fit {type_}: {e}") from e

    def checked(self, array: Any, type_: pa.DataType, what: str) -> pa.Array:
        if isinstance(array, pa.ChunkedArray):
            array = array.combine_chunks()
        if not isinstance(array, pa.Array) or array.type != type_:
            got = array.type if isinstance(array, pa.Array) else type(array).__name__
            raise UdafError(f"udaf {self.name}: {what} is {got}, declared {type_}")
        return array

    def calling(self, method: str, fn: Callable[..., Any], *args: Any) -> Any:
        """``fn(*args)``, with a failure in user code named by udaf and method, and its traceback."""
        try:
            return fn(*args)
        except UdafError:
            raise
        except Exception as e:
            # The user's traceback goes in the message: Spark reports only the last exception's frames.
            user = "".join(traceback.format_exception(type(e), e, e.__traceback__.tb_next))
            raise UdafError(f"udaf {self.name}: {method} raised {type(e).__name__}: {e}\n{user}") from e


class Call:
    """What a udaf call carries on any session, for ``aggregate`` and ``window``: the udaf, its argument
    columns and its output name."""

    def __init__(self, udaf: AggregateUDF, columns: list[Any], name: str | None = None) -> None:
        self.udaf = udaf
        self.columns = columns
        self.name = name


class UdafCall(Call, _SparkColumn):
    """``f(columns...)``: one call of a udaf, with its output name (``.alias``). On a classic session it is a
    Spark Column: ``df.groupBy("k").agg(f("x").alias("m"), F.count("*"))``, in expressions (``f("x") * 2``),
    beside any other aggregate, and over a ROWS window (``f("x").over(w.rowsBetween(-2, 0))``);
    ``aggregate`` and ``window`` take it on any session. On a Spark Connect session ``f(...)`` gives a
    Connect Column instead (``column.connect_call``). ``Call`` comes first: its ``__init__`` makes the call,
    where the Column's would want a JVM Column."""

    @property
    def _jc(self) -> Any:
        """The JVM Column: the call of the session's SQL function for the udaf (``column.registered_name``)."""
        from pyspark.sql import SparkSession
        from pyspark.sql import functions as F

        from . import column, plan
        spark = SparkSession.getActiveSession()
        if spark is None or getattr(spark, "_jvm", None) is None:
            raise TypeError(f"udaf {self.udaf.name}: this call was made with no session active; on Spark "
                            f"Connect, call the udaf once the session is made: it then gives a Connect Column")
        name = column.registered_name(spark, self.udaf)
        jc = F.call_function(name, *[plan.column(c) for c in self.columns])._jc
        return getattr(jc, "as")(self.name) if self.name else jc

    @property
    def _expr(self) -> Any:
        """The Spark Connect expression (what a Connect client's ``agg`` reads), on the active Connect session."""
        from . import column
        spark = column.active_connect_session()
        if spark is None:
            raise TypeError(f"udaf {self.udaf.name}: no active Spark Connect session to call it on")
        call = column.connect_call(spark, self.udaf, self.columns)
        return (call.alias(self.name) if self.name else call)._expr

    def to_plan(self, client: Any) -> Any:
        """The call as a Connect client's plan carries it (what ``agg`` asks of its columns)."""
        return self._expr.to_plan(client)

    def alias(self, name: str) -> UdafCall:
        return UdafCall(self.udaf, self.columns, name)

    def __repr__(self) -> str:
        args = ", ".join(str(c) for c in self.columns)
        return f"{self.udaf.name}({args})" + (f" AS {self.name}" if self.name else "")


def udaf(*args: Any, **kwargs: Any) -> Any:
    """An aggregate function from a Python accumulator: datafusion-python's ``udaf`` signature.

    ``udaf(accum, input_types, return_type, state_type, volatility="immutable", name=None)``, or as a
    decorator ``@udaf(input_types, return_type, state_type, ...)`` over the class. ``accum`` is a class
    or a factory taking no argument; it makes an :class:`Accumulator` (one group) or a
    :class:`GroupsAccumulator` (every group of a partition, vectorised). ``name`` defaults to the
    class name in lower case.

    >>> import pyarrow as pa
    >>> class Total(Accumulator):
    ...     def __init__(self): self.total = 0
    ...     def update(self, values): self.total += sum(v for v in values.to_pylist() if v is not None)
    ...     def merge(self, states): self.total += sum(states[0].to_pylist())
    ...     def state(self): return [pa.scalar(self.total, pa.int64())]
    ...     def evaluate(self): return pa.scalar(self.total, pa.int64())
    >>> total = udaf(Total, pa.int64(), pa.int64(), [pa.int64()])
    >>> total
    AggregateUDF(total(int64) -> int64)
    """
    if args and callable(args[0]):  # a class or a factory, not the decorator's input_types
        return _make(*args, **kwargs)

    def decorate(accum: Callable[[], Any]) -> AggregateUDF:
        return _make(accum, *args, **kwargs)
    return decorate


def _make(accum: Callable[[], Any], input_types: pa.DataType | list[pa.DataType], return_type: pa.DataType,
          state_type: list[pa.DataType], volatility: str = "immutable", name: str | None = None) -> AggregateUDF:
    if isinstance(input_types, pa.DataType):
        input_types = [input_types]
    if isinstance(state_type, pa.DataType):
        state_type = [state_type]
    if name is None:
        name = (accum.__name__ if inspect.isclass(accum) else type(accum()).__name__).lower()
    return AggregateUDF(name, accum, list(input_types), return_type, list(state_type), str(volatility).lower())


def _ship_by_value(cls: type) -> None:
    """Have cloudpickle carry the module that defines ``cls`` when Python workers could not import it
    (a script, a notebook, a test file): installed packages travel by name, as PySpark's UDFs do."""
    module = sys.modules.get(cls.__module__)
    path = getattr(module, "__file__", None) or ""
    if module is None or cls.__module__ == "__main__" or "site-packages" in path \
            or cls.__module__.split(".")[0] in ("sparkagg", "datafusion"):
        return
    from pyspark import cloudpickle
    cloudpickle.register_pickle_by_value(module)


# --- adapters -------------------------------------------------------------------------------------

def runs(group_indices: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The rows ordered by group (stably), and each group's first and past-the-end position in that
    order: one ``take`` per batch, then a zero-copy slice per group."""
    order = np.argsort(group_indices, kind="stable")
    ordered = group_indices[order]
    cuts = np.flatnonzero(ordered[1:] != ordered[:-1]) + 1
    starts = np.concatenate(([0], cuts)) if len(ordered) else np.zeros(0, np.int64)
    ends = np.concatenate((cuts, [len(ordered)])) if len(ordered) else np.zeros(0, np.int64)
    return order, starts, ends


class PerGroup(GroupsAccumulator):
    """A user's Accumulator run for every group of a partition: one instance per group, each handed its
    group's rows of a batch in one call (DataFusion's GroupsAccumulatorAdapter)."""

    def __init__(self, udaf: AggregateUDF) -> None:
        self.udaf = udaf
        self.return_type = udaf.return_type
        self.state_fields = [(f"state{i}", t) for i, t in enumerate(udaf.state_type)]
        self.accumulators: list[Any] = []

    def _grow(self, total_num_groups: int) -> None:
        new = self.udaf.factory
        self.accumulators.extend(new() for _ in range(total_num_groups - len(self.accumulators)))

    def _each(self, method: str, arrays: Sequence[pa.Array], group_indices: Any, total_num_groups: int,
              call: Callable[[Any, list[pa.Array]], None]) -> None:
        self._grow(total_num_groups)
        group_indices = np.asarray(group_indices, np.int64)
        order, starts, ends = runs(group_indices)
        taken = [a.take(pa.array(order)) for a in arrays]
        groups = group_indices[order[starts]] if len(starts) else starts
        accumulators = self.accumulators
        for g, start, end in zip(groups.tolist(), starts.tolist(), ends.tolist()):
            self.udaf.calling(method, call, accumulators[g], [a.slice(start, end - start) for a in taken])

    def update_batch(self, values, group_indices, opt_filter, total_num_groups) -> None:
        self._each("update", values, group_indices, total_num_groups, lambda acc, rows: acc.update(*rows))

    def merge_batch(self, values, group_indices, opt_filter, total_num_groups) -> None:
        self._each("merge", values, group_indices, total_num_groups, lambda acc, rows: acc.merge(rows))

    def _take(self, emit_to: Any) -> list[Any]:
        return emit_to.take(self.accumulators)

    def evaluate(self, emit_to: Any = EmitTo.All) -> pa.Array:
        call = self.udaf.calling
        return self.udaf.results([call("evaluate", a.evaluate) for a in self._take(emit_to)])

    def state(self, emit_to: Any = EmitTo.All) -> list[pa.Array]:
        call = self.udaf.calling
        return self.udaf.states([call("state", a.state) for a in self._take(emit_to)])

    def size(self) -> int:
        return 8 * len(self.accumulators)


class OneGroup:
    """A GroupsAccumulator seen as one group's Accumulator, so that windows slide over it on states."""

    def __init__(self, udaf: AggregateUDF) -> None:
        self.udaf = udaf
        self.groups = udaf.factory()
        self.groups.update_batch([pa.array([], t) for t in udaf.input_types], np.zeros(0, np.int64), None, 1)

    def update(self, *values: pa.Array) -> None:
        self.groups.update_batch(list(values), np.zeros(len(values[0]), np.int64), None, 1)

    def merge(self, states: list[pa.Array]) -> None:
        self.groups.merge_batch(states, np.zeros(len(states[0]), np.int64), None, 1)

    def _states(self) -> list[pa.Array]:
        """The group's state, put back after reading (``state`` emits and drops it)."""
        states = self.udaf.checked_states(self.groups.state(EmitTo.All))
        self.merge(states)
        return states

    def state(self) -> list[Any]:
        return [a[0] for a in self._states()]

    def evaluate(self) -> Any:
        states = self._states()
        result = self.udaf.checked(self.groups.evaluate(EmitTo.All), self.udaf.return_type, "result")
        self.merge(states)
        return result[0]
