"""Reference accumulators whose state is a collection of values: array_agg, string_agg and median.

Non-DISTINCT forms only (no DISTINCT in these accumulators); array_agg and string_agg also with an
ORDER BY within the aggregate. Semantics are DataFusion 50's
(shared/spec/functions.md, seed 004), checked against the ``datafusion`` package:

* ``array_agg(x)``: any type; the list of every input value, NULLs kept (list<T>, elements nullable);
  NULL for no rows at all (not []), so all-NULL input gives [NULL, ...]. The order of the elements is
  arrival order within one accumulator and undefined across partitions. State: [array_agg], a
  List<T> that is NULL when empty; merge concatenates. No retract.
* ``array_agg(x ORDER BY ...) [IGNORE NULLS]``: the literals ``ordering=[(descending, nulls_first),
  ...]`` and ``ignore_nulls`` are bound to the function, and the order keys are trailing argument
  columns (x, key...), as ordered.py describes. The list is in the ordering's order (ties in arrival
  order); IGNORE NULLS leaves NULL values out (all-NULL input then gives NULL). State: [array_agg:
  List<T>, NULL when empty; array_agg_orderings: List<Struct<order_key_0, ...>>, each value's keys],
  both sorted, DataFusion's layout; merge is a stable merge of the sorted lists (own list first,
  then the states in row order). ``ignore_nulls`` applies unordered too.
* ``string_agg(x, delimiter)``: the non-NULL strings joined by ``delimiter``; NULL when there is none
  (empty or all-NULL input). Result LargeUtf8 (Spark: string). x is a string (Utf8, LargeUtf8,
  Utf8View) or an integer, which DataFusion coerces to its decimal text. State: [string_agg], the
  LargeUtf8 joined so far (NULL when nothing was seen); merge joins the non-NULL states with the
  delimiter. That is the state of DataFusion >= 51 (``SimpleStringAggAccumulator`` /
  ``StringAggGroupsAccumulator``), which the spec follows; DataFusion 50 instead carries array_agg's
  state (a List<T> named ``array_agg``, NULLs kept, skipped when evaluated). Results are the same.
  No retract.
* ``string_agg(x, delimiter ORDER BY ...)``: the same, joined in the ordering's order. Its columns are
  (x[, delimiter], key...). State: array_agg's ordered state, as DataFusion's (50 and 51) is for an
  ordered string_agg: [array_agg: List<Utf8> (LargeUtf8 for a LargeUtf8 x; an integer's text as
  Utf8), array_agg_orderings]; the model leaves the NULL pieces out of it (DataFusion keeps them and
  skips them when joining; results are the same). ``ignore_nulls`` is accepted and changes nothing.
* ``median(x)``: integers, floats, decimals; result of the input type; NULLs skipped; NULL when no
  value is left. An odd count takes the middle value; an even one averages the two middle values in
  the input type: integers and decimals (on their unscaled integers) truncate toward zero
  (median{1, 2} = 1, median{-1, -2} = -1, median{0.01, 0.02} = 0.01 at scale 2), floats compute
  (lo + hi) / 2 in their own width (float32 rounds to float32; two huge doubles overflow to inf, as in
  DataFusion). Floats are ordered as min/max order them: every NaN above everything, -0.0 below 0.0.
  State: [median], a List<T> of the non-NULL values ([] when empty). Retract removes one equal value
  (DataFusion has median retract from 52 on).

The delimiter of string_agg is a literal, as in DataFusion, which refuses a column there ("The second
argument of the string_agg function must be a string literal"). Every accumulator of a query, the
Final ones that only merge included, needs it, so it is a factory parameter bound to the function:
``get("string_agg").bind(delimiter=",")``; the bound function goes wherever a name goes (``get``
and the drivers take either). A NULL delimiter (``None``) joins with "" as DataFusion does. The call
may keep SQL's two arguments, (x, delimiter column): the second column is then checked to hold the
bound delimiter on every row. An accumulator of the unbound ``string_agg`` cannot be made.

Deviations from DataFusion 50, where it computes something no engine should copy:

* median of two integers (or decimal(38, s) values) whose sum overflows the type: DataFusion adds
  with wrap-around (median{127, 126} of int8 is -1, of int64 {2**63-1, 2**63-2} is -1); the exact
  average always fits the type, so the model gives it (126).
* a NaN with the sign bit set: DataFusion's median orders floats by IEEE totalOrder, which puts it
  below -inf; the model, as its min/max and the spec, puts every NaN above every number.
"""
from __future__ import annotations

import math
import struct
from collections.abc import Sequence
from typing import Any, Callable

import pyarrow as pa

from .accumulator import SLOT_BYTES, Accumulator, columns_to_pylists, non_null
from .functions import (
    AggregateFunction,
    DataTypes,
    StateFields,
    _float_order_key,
    _is_float,
    _is_numeric,
    _one_argument,
    _payload_bytes,
    _scaled,
    _unscaled,
    register,
)
from .ordered import Ordering, entry_bytes, merge_runs, sort_batch, split_rows


def _is_string(t: pa.DataType) -> bool:
    return pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t)


def _to_float32(x: float) -> float:
    """``x`` rounded to the nearest float32 (an overflow gives the infinity of its sign)."""
    try:
        return struct.unpack("<f", struct.pack("<f", x))[0]
    except OverflowError:
        return math.copysign(math.inf, x)


# --- array_agg ---------------------------------------------------------------------------------

class ArrayAggAccumulator(Accumulator):
    """array_agg(x [ORDER BY ...]) [IGNORE NULLS]: every input value (NULLs included unless
    ``ignore_nulls``), in the bound ``ordering``'s order or else arrival order; NULL for no rows.

    Result list<T> (elements nullable). State: [array_agg], the same list, NULL when empty; when
    ordered also [array_agg_orderings], the List<Struct> of each value's keys, both sorted."""

    def __init__(self, arg_types: DataTypes, ansi: bool = True, *, ordering: Any = (),
                 ignore_nulls: bool = False) -> None:
        self._ordering = Ordering("array_agg", ordering, arg_types, own=(1,))
        if not isinstance(ignore_nulls, bool):
            raise TypeError(f"array_agg: ignore_nulls must be a boolean, got {ignore_nulls!r}")
        self._arity = len(arg_types)
        self._ignore_nulls = ignore_nulls
        self._values: list[Any] = []
        self._entries: list[tuple[tuple, Any]] = []  # ordered: (keys, value), sorted
        self._pending: list[tuple[tuple, Any]] = []  # ordered: rows not yet merged in, arrival order

    @staticmethod
    def return_type(arg_types: DataTypes, *, ordering: Any = (), **literals: Any) -> pa.DataType:
        Ordering("array_agg", ordering, arg_types, own=(1,))
        return pa.list_(arg_types[0])

    @staticmethod
    def state_fields(arg_types: DataTypes, *, ordering: Any = (), **literals: Any) -> StateFields:
        order = Ordering("array_agg", ordering, arg_types, own=(1,))
        fields = [("array_agg", pa.list_(arg_types[0]))]
        if len(order):
            fields.append(("array_agg_orderings", pa.list_(order.struct_type())))
        return fields

    def update_batch(self, values: Sequence[pa.Array]) -> None:
        xs, keys = split_rows("array_agg", values, self._arity, self._ordering)
        rows = [(k, x) for k, x in zip(keys, xs) if not (self._ignore_nulls and x is None)]
        if len(self._ordering):
            self._pending.extend(rows)
        else:
            self._values.extend(x for _, x in rows)

    def _sorted(self) -> list[tuple[tuple, Any]]:
        """The ordered entries, the pending rows merged in (a stable sort of them, then a merge:
        ties keep arrival order)."""
        if self._pending:
            self._entries = merge_runs(self._entries, [sort_batch(self._pending, self._ordering)], self._ordering)
            self._pending = []
        return self._entries

    def merge_batch(self, states: Sequence[pa.Array]) -> None:
        """Unordered: concatenates the exported lists; a NULL list is an empty partial and adds
        nothing. Ordered: merges the sorted lists (a stable merge sort of the runs)."""
        if not len(self._ordering):
            (lists,) = columns_to_pylists(states, 1)
            for exported in lists:
                if exported is not None:
                    self._values.extend(exported)
            return
        lists, orderings = columns_to_pylists(states, 2)
        runs = []
        for exported, keys in zip(lists, orderings):
            exported, keys = exported or [], keys or []
            if len(exported) != len(keys):
                raise ValueError("array_agg: a state's values and orderings differ in length")
            runs.append([(self._ordering.unstruct(k), v) for k, v in zip(keys, exported)])
        self._entries = merge_runs(self._sorted(), runs, self._ordering)

    def state(self) -> list[Any]:
        if not len(self._ordering):
            return [self.evaluate()]
        return [self.evaluate(), [self._ordering.struct(k) for k, _ in self._sorted()]]

    def evaluate(self) -> list[Any] | None:
        values = [v for _, v in self._sorted()] if len(self._ordering) else self._values
        return list(values) if values else None

    def size(self) -> int:
        return (SLOT_BYTES + sum(SLOT_BYTES + _payload_bytes(v) for v in self._values)
                + sum(entry_bytes(k, v) for k, v in self._entries + self._pending))


# --- string_agg --------------------------------------------------------------------------------

_UNBOUND = object()


def _string_agg_types(arg_types: DataTypes, ordering: Any = ()) -> Ordering:
    """(x[, delimiter], keys...): x a string or an integer, the delimiter a string or NULL literal."""
    order = Ordering("string_agg", ordering, arg_types, own=(1, 2))
    if not (_is_string(arg_types[0]) or pa.types.is_integer(arg_types[0])):
        raise TypeError(f"string_agg does not support argument type {arg_types[0]}")
    if order.own == 2 and not (_is_string(arg_types[1]) or pa.types.is_null(arg_types[1])):
        raise TypeError(f"string_agg's delimiter must be a string literal, got type {arg_types[1]}")
    return order


def _piece_type(t: pa.DataType) -> pa.DataType:
    """The element type of ordered string_agg's list: the string type, an integer's text as Utf8."""
    return t if pa.types.is_string(t) or pa.types.is_large_string(t) else pa.string()


class StringAggAccumulator(Accumulator):
    """string_agg(x, delimiter [ORDER BY ...]): the non-NULL values joined by the bound
    ``delimiter``, in the bound ``ordering``'s order or else arrival order; NULL when there are none.
    State: [string_agg], the LargeUtf8 joined so far, NULL when nothing was seen; ordered, array_agg's
    state instead: [array_agg, array_agg_orderings], the non-NULL pieces and their keys, sorted."""

    def __init__(self, arg_types: DataTypes, ansi: bool = True, *, delimiter: Any = _UNBOUND,
                 ordering: Any = (), ignore_nulls: bool = False) -> None:
        self._ordering = _string_agg_types(arg_types, ordering)
        if delimiter is _UNBOUND:
            raise TypeError("string_agg's delimiter is a literal bound to the function: use "
                            "get('string_agg').bind(delimiter=',')")
        if delimiter is not None and not isinstance(delimiter, str):
            raise TypeError(f"string_agg's delimiter must be a string or None, got {delimiter!r}")
        if not isinstance(ignore_nulls, bool):  # accepted, as DataFusion does: NULLs are skipped anyway
            raise TypeError(f"string_agg: ignore_nulls must be a boolean, got {ignore_nulls!r}")
        self._delimiter = delimiter or ""  # a NULL delimiter joins with ""
        self._arity = len(arg_types)
        self._value: str | None = None
        self._pieces: ArrayAggAccumulator | None = None  # ordered: the pieces, as array_agg keeps them
        if len(self._ordering):
            x = _piece_type(arg_types[0])
            self._pieces = ArrayAggAccumulator([x, *self._ordering.key_types], ansi,
                                               ordering=self._ordering.spec, ignore_nulls=True)

    @staticmethod
    def return_type(arg_types: DataTypes, *, ordering: Any = (), **literals: Any) -> pa.DataType:
        _string_agg_types(arg_types, ordering)
        return pa.large_string()

    @staticmethod
    def state_fields(arg_types: DataTypes, *, ordering: Any = (), **literals: Any) -> StateFields:
        order = _string_agg_types(arg_types, ordering)
        if not len(order):
            return [("string_agg", pa.large_string())]
        return ArrayAggAccumulator.state_fields([_piece_type(arg_types[0]), *order.key_types],
                                                ordering=order.spec)

    def _append(self, pieces: Sequence[Any]) -> None:
        for piece in pieces:
            if piece is None:
                continue
            text = str(piece)  # an integer as its decimal text, as DataFusion coerces it
            self._value = text if self._value is None else self._value + self._delimiter + text

    def update_batch(self, values: Sequence[pa.Array]) -> None:
        columns = columns_to_pylists(values, self._arity)
        if self._ordering.own == 2:
            for d in columns[1]:
                if (d or "") != self._delimiter:
                    raise ValueError(f"string_agg's delimiter column holds {d!r}, the bound literal is "
                                     f"{self._delimiter!r}: the delimiter must be a constant")
        if self._pieces is None:
            self._append(columns[0])
            return
        texts = [None if v is None else str(v) for v in columns[0]]
        self._pieces.update_batch([pa.array(texts, pa.string()), *values[self._ordering.own:]])

    def merge_batch(self, states: Sequence[pa.Array]) -> None:
        if self._pieces is not None:
            self._pieces.merge_batch(states)
            return
        (strings,) = columns_to_pylists(states, 1)
        self._append(strings)

    def state(self) -> list[Any]:
        return [self._value] if self._pieces is None else self._pieces.state()

    def evaluate(self) -> str | None:
        if self._pieces is None:
            return self._value
        pieces = [p for p in self._pieces.evaluate() or [] if p is not None]
        return self._delimiter.join(pieces) if pieces else None

    def size(self) -> int:
        held = _payload_bytes(self._value) if self._pieces is None else self._pieces.size()
        return 2 * SLOT_BYTES + _payload_bytes(self._delimiter) + held


# --- median ------------------------------------------------------------------------------------

def _midpoint(t: pa.DataType) -> Callable[[Any, Any], Any]:
    """The average of the two middle values, computed in the type ``t``."""
    if pa.types.is_decimal(t):
        scale = t.scale

        def decimal_mid(lo: Any, hi: Any) -> Any:
            total = _unscaled(lo, scale) + _unscaled(hi, scale)
            half = abs(total) // 2  # truncation toward zero, sign applied after
            return _scaled(-half if total < 0 else half, scale)

        return decimal_mid
    if pa.types.is_float32(t):
        return lambda lo, hi: _to_float32(_to_float32(lo + hi) / 2)
    if _is_float(t):
        return lambda lo, hi: (lo + hi) / 2

    def integer_mid(lo: int, hi: int) -> int:
        total = lo + hi
        half = abs(total) // 2  # truncation toward zero, as Rust's integer division
        return -half if total < 0 else half

    return integer_mid


class MedianAccumulator(Accumulator):
    """median(x): the middle non-NULL value (the in-type average of the two middle ones for an even
    count), NULL when there is none. Result: the input type. State: [median], List<T> of the values."""

    def __init__(self, arg_types: DataTypes, ansi: bool = True) -> None:
        t = _one_argument("median", arg_types, _is_numeric)
        self._key: Callable[[Any], Any] = _float_order_key if _is_float(t) else (lambda v: v)
        self._mid = _midpoint(t)
        self._values: list[Any] = []

    @staticmethod
    def return_type(arg_types: DataTypes) -> pa.DataType:
        return _one_argument("median", arg_types, _is_numeric)

    @staticmethod
    def state_fields(arg_types: DataTypes) -> StateFields:
        return [("median", pa.list_(MedianAccumulator.return_type(arg_types)))]

    def update_batch(self, values: Sequence[pa.Array]) -> None:
        self._values.extend(non_null(values))

    def retract_batch(self, values: Sequence[pa.Array]) -> None:
        for v in non_null(values):
            key = self._key(v)
            for i, held in enumerate(self._values):
                if self._key(held) == key:
                    del self._values[i]
                    break
            else:
                raise ValueError(f"retract of {v!r}, which median does not hold")

    def supports_retract_batch(self) -> bool:
        return True

    def merge_batch(self, states: Sequence[pa.Array]) -> None:
        (lists,) = columns_to_pylists(states, 1)
        for exported in lists:
            if exported is not None:
                self._values.extend(v for v in exported if v is not None)

    def state(self) -> list[Any]:
        return [list(self._values)]

    def evaluate(self) -> Any:
        n = len(self._values)
        if n == 0:
            return None
        ordered = sorted(self._values, key=self._key)
        if n % 2:
            return ordered[n // 2]
        return self._mid(ordered[n // 2 - 1], ordered[n // 2])

    def size(self) -> int:
        return SLOT_BYTES + sum(SLOT_BYTES + _payload_bytes(v) for v in self._values)


register({
    "array_agg": AggregateFunction("array_agg", ArrayAggAccumulator),
    "string_agg": AggregateFunction("string_agg", StringAggAccumulator),
    "median": AggregateFunction("median", MedianAccumulator),
})
