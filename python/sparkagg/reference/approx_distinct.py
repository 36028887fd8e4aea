"""Reference accumulator of approx_distinct: a HyperLogLog sketch with p = 14.

* ``approx_distinct(x)``: an estimate of the number of distinct non-NULL values of ``x``. Accepted: the
  integers (int8..int64, uint8..uint64), date, time, timestamp, string (Utf8, LargeUtf8, Utf8View),
  binary (Binary, LargeBinary, FixedSizeBinary), decimals and booleans (DataFusion 55; 50 refused
  these two); floats and every other type are rejected with a TypeError naming the function. Result
  int64 (DataFusion's UInt64, as Spark's bigint);
  0 for empty or all-NULL input, never NULL. NULLs are skipped.
* State: [hll_registers], one Binary of 16384 bytes, register ``j`` in byte ``j``. Merge takes the
  register-wise maximum, which is associative, commutative and idempotent: the estimate depends only
  on the set of values seen, never on partitioning, batch boundaries or merge order. No retract.

The sketch. Every value is reduced to a 64-bit hash ``h``; its low 14 bits pick a register, and the
register keeps the largest "rank" seen there: 1 + the number of trailing zeros of the remaining 50 bits
(``h >> 14``), 51 when they are all zero. The estimate is Ertl's improved raw estimator ("New
cardinality estimation algorithms for HyperLogLog sketches", 2017), which DataFusion uses too: from the
histogram ``c[k]`` of register values (k = 0..51),

    z = m * tau(1 - c[51] / m);  for k = 50 down to 1: z = (z + c[k]) / 2;  z += m * sigma(c[0] / m)
    estimate = round(m * m / (2 ln 2 * z))

with ``sigma`` and ``tau`` the series of the paper (sigma(1) is infinite, so an empty sketch gives 0;
a sketch with every register saturated has z = 0 and gives the largest bigint, 2**63 - 1, where
DataFusion's saturating cast of infinity gives u64::MAX, which no bigint holds).
It needs no bias table and no switch to linear counting: for a few distinct values it is essentially
exact, and its relative standard error is about 1.04 / sqrt(16384), 0.8%, everywhere.

The hash is this model's own, not DataFusion's (its ahash with fixed seeds): BLAKE2b with an 8-byte
digest, read little-endian, over the value's canonical bytes. Integers and the temporal types are hashed
as the 8-byte little-endian two's complement of their integer (temporal types: their Arrow storage,
days, or units since midnight or the epoch, so the time zone and unit of the type do not matter once the
storage is fixed; booleans as 0 and 1), decimals as the 16-byte little-endian two's complement of their
unscaled integer, strings as UTF-8 and binary as its bytes. So the model agrees with DataFusion within
the sketch's error, not exactly (tests/test_oracle.py holds sparkagg within 2% of DataFusion's estimate).

DataFusion 50 raised NotImplemented for date, time, timestamp, decimal and boolean arguments; DataFusion
55 takes them all, as sparkagg and the model do.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from decimal import Decimal
from hashlib import blake2b
from typing import Any

import pyarrow as pa

from .accumulator import SLOT_BYTES, Accumulator, columns_to_pylists
from .argtypes import INT64_MAX, DataTypes, StateFields, _one_argument
from .function import AggregateFunction

P = 14
NUM_REGISTERS = 1 << P  # m = 16384
Q = 64 - P  # hash bits left for the rank: ranks run from 1 to Q + 1 = 51
_INDEX_MASK = NUM_REGISTERS - 1


# --- type rules ---------------------------------------------------------------------------------

def _temporal_storage(t: pa.DataType) -> pa.DataType | None:
    """The integer type a date, time or timestamp is stored as; None for any other type."""
    if pa.types.is_date32(t) or pa.types.is_time32(t):
        return pa.int32()
    if pa.types.is_date64(t) or pa.types.is_time64(t) or pa.types.is_timestamp(t):
        return pa.int64()
    return None


def _is_textual(t: pa.DataType) -> bool:
    return (pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t)
            or pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_binary_view(t)
            or pa.types.is_fixed_size_binary(t))


def _accepts(t: pa.DataType) -> bool:
    """Integers, date, time, timestamp, string, binary, decimals and booleans; not floats."""
    return (pa.types.is_integer(t) or _temporal_storage(t) is not None or _is_textual(t)
            or pa.types.is_decimal(t) or pa.types.is_boolean(t))


# --- hashing ------------------------------------------------------------------------------------

def _canonical_bytes(value: Any) -> bytes:
    """The bytes a (non-NULL) value is hashed over: an integer as 8-byte little-endian two's
    complement (unsigned 64-bit values above 2**63 - 1 as their unsigned bytes, the same 8 bytes),
    a string as UTF-8, binary as it is."""
    if isinstance(value, Decimal):
        sign, digits, _ = value.as_tuple()  # exact at 38 digits, where Decimal arithmetic would round
        unscaled = (-1 if sign else 1) * int("".join(map(str, digits)))
        return (unscaled & (1 << 128) - 1).to_bytes(16, "little")
    if isinstance(value, int):  # bool included: 0 or 1
        return (value & 0xFFFFFFFFFFFFFFFF).to_bytes(8, "little")
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    raise TypeError(f"approx_distinct cannot hash {type(value).__name__} value {value!r}")


def hash64(value: Any) -> int:
    """The model's 64-bit hash of a non-NULL value: BLAKE2b-64 of its canonical bytes, little-endian."""
    return int.from_bytes(blake2b(_canonical_bytes(value), digest_size=8).digest(), "little")


def _index_and_rank(h: int) -> tuple[int, int]:
    """The register of hash ``h`` (its low P bits) and its rank: 1 + the trailing zeros of the other
    Q bits, Q + 1 when they are all zero."""
    rest = (h >> P) | (1 << Q)  # the sentinel bit caps the rank at Q + 1
    return h & _INDEX_MASK, ((rest & -rest).bit_length())


def _hashable_values(column: pa.Array) -> list[Any]:
    """The non-NULL values of ``column`` as ints (integers, temporal storage), str or bytes."""
    storage = _temporal_storage(column.type)
    if storage is not None:
        column = column.view(storage)
    return [v for v in column.to_pylist() if v is not None]


# --- Ertl's estimator ---------------------------------------------------------------------------

def _sigma(x: float) -> float:
    """sigma(x) = x + sum_{k>=1} x^(2^k) 2^(k-1), for x in [0, 1]; infinite at 1."""
    if x == 1.0:
        return math.inf
    y, z = 1.0, x
    while True:
        x *= x
        previous = z
        z += x * y
        y += y
        if z == previous:
            return z


def _tau(x: float) -> float:
    """tau(x) = (1 - x - sum_{k>=1} (1 - x^(2^-k))^2 2^-k) / 3, for x in [0, 1]; 0 at 0 and 1."""
    if x == 0.0 or x == 1.0:
        return 0.0
    y, z = 1.0, 1.0 - x
    while True:
        x = math.sqrt(x)
        previous = z
        y *= 0.5
        z -= (1.0 - x) ** 2 * y
        if z == previous:
            return z / 3.0


def estimate(registers: bytes) -> int:
    """Ertl's improved raw estimate of the number of distinct values the ``registers`` have seen."""
    m = float(NUM_REGISTERS)
    histogram = [0] * (Q + 2)
    for r in registers:
        histogram[r] += 1
    z = m * _tau((m - histogram[Q + 1]) / m)
    for k in range(Q, 0, -1):
        z = (z + histogram[k]) * 0.5
    z += m * _sigma(histogram[0] / m)
    if math.isinf(z):  # every register empty: nothing seen
        return 0
    if z == 0.0:  # every register saturated (some 2**64 values): the estimate is unbounded
        return INT64_MAX
    return min(INT64_MAX, round(m * m / (2.0 * math.log(2.0) * z)))


def merge_registers(a: bytes, b: bytes) -> bytes:
    """The register-wise maximum of two sketches: the sketch of the union of their inputs."""
    return bytes(map(max, a, b))


# --- the accumulator ----------------------------------------------------------------------------

class ApproxDistinctAccumulator(Accumulator):
    """approx_distinct(x): HyperLogLog estimate (p = 14) of the distinct non-NULL values; 0 when none.

    Result int64. State: [hll_registers], Binary of 16384 bytes (one register per byte)."""

    def __init__(self, arg_types: DataTypes, ansi: bool = True) -> None:
        _one_argument("approx_distinct", arg_types, _accepts)
        self._registers = bytearray(NUM_REGISTERS)

    @staticmethod
    def return_type(arg_types: DataTypes) -> pa.DataType:
        _one_argument("approx_distinct", arg_types, _accepts)
        return pa.int64()

    @staticmethod
    def state_fields(arg_types: DataTypes) -> StateFields:
        _one_argument("approx_distinct", arg_types, _accepts)
        return [("hll_registers", pa.binary())]

    def update_batch(self, values: Sequence[pa.Array]) -> None:
        columns_to_pylists(values, 1)  # arity and alignment check
        registers = self._registers
        # A sketch is idempotent: a value seen twice changes nothing, so each distinct value of the
        # batch is hashed once. (hash64 and _index_and_rank inlined: this loop is the model's hot path.)
        for value in set(_hashable_values(values[0])):
            h = int.from_bytes(blake2b(_canonical_bytes(value), digest_size=8).digest(), "little")
            rest = (h >> P) | (1 << Q)
            index, rank = h & _INDEX_MASK, (rest & -rest).bit_length()
            if rank > registers[index]:
                registers[index] = rank

    def merge_batch(self, states: Sequence[pa.Array]) -> None:
        """Register-wise max with every exported sketch; a NULL state is an empty one."""
        (sketches,) = columns_to_pylists(states, 1)
        for sketch in sketches:
            if sketch is None:
                continue
            if len(sketch) != NUM_REGISTERS:
                raise ValueError(f"approx_distinct: a hll_registers state has {len(sketch)} bytes, "
                                 f"expected {NUM_REGISTERS}")
            if max(sketch) > Q + 1:
                raise ValueError(f"approx_distinct: a hll_registers state holds a register above {Q + 1}")
            self._registers = bytearray(merge_registers(self._registers, sketch))

    def state(self) -> list[Any]:
        return [bytes(self._registers)]

    def evaluate(self) -> int:
        return estimate(bytes(self._registers))

    def size(self) -> int:
        return SLOT_BYTES + NUM_REGISTERS


APPROX_DISTINCT = AggregateFunction("approx_distinct", ApproxDistinctAccumulator)
