"""string_agg (the JVM's functions/string_agg.scala), with or without an ORDER BY within the aggregate
(keys as ``ordering`` describes; the ordered state is ``array_agg``'s). Semantics are DataFusion 55's,
checked against the ``datafusion`` package:

* ``string_agg(x, delimiter)``: the non-NULL strings joined by ``delimiter``; NULL when there is none
  (empty or all-NULL input). Result LargeUtf8 (Spark: string). x is a string (Utf8, LargeUtf8,
  Utf8View) or an integer, which DataFusion coerces to its decimal text. State: [string_agg], the
  LargeUtf8 joined so far (NULL when nothing was seen); merge joins the non-NULL states with the
  delimiter. That is the state of DataFusion >= 51 (``SimpleStringAggAccumulator`` /
  ``StringAggGroupsAccumulator``), which sparkagg's JVM string_agg keeps too (DataFusion 50 carried
  array_agg's List<T> instead). No retract.
* ``string_agg(x, delimiter ORDER BY ...)``: the same, joined in the ordering's order. Its columns are
  (x[, delimiter], key...). State: array_agg's ordered state, as DataFusion's (50 and 51) is for an
  ordered string_agg: [array_agg: List<Utf8> (LargeUtf8 for a LargeUtf8 x; an integer's text as
  Utf8), array_agg_orderings]; the model leaves the NULL pieces out of it (DataFusion keeps them and
  skips them when joining; results are the same). ``ignore_nulls`` is accepted and changes nothing.

The delimiter of string_agg is a literal, as in DataFusion, which refuses a column there ("The second
argument of the string_agg function must be a string literal"). Every accumulator of a query, the
Final ones that only merge included, needs it, so it is a factory parameter bound to the function:
``get("string_agg").bind(delimiter=",")``; the bound function goes wherever a name goes (``get``
and the drivers take either). A NULL delimiter (``None``) joins with "" as DataFusion does. The call
may keep SQL's two arguments, (x, delimiter column): the second column is then checked to hold the
bound delimiter on every row. An accumulator of the unbound ``string_agg`` cannot be made.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from .accumulator import SLOT_BYTES, Accumulator, _payload_bytes, columns_to_pylists
from .argtypes import DataTypes, StateFields
from .array_agg import ArrayAggAccumulator
from .function import AggregateFunction
from .ordering import Ordering

_UNBOUND = object()


def _is_string(t: pa.DataType) -> bool:
    return pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t)


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


STRING_AGG = AggregateFunction("string_agg", StringAggAccumulator)
