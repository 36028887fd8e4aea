"""Reference accumulators of the t-digest family: approx_percentile_cont, approx_median and
approx_percentile_cont_with_weight.

Semantics are DataFusion 50's (shared/spec/functions.md), checked against the ``datafusion`` package:
on one accumulator fed the same batches, the model's result equals DataFusion's bit for bit.

* ``approx_percentile_cont(x, p[, max_size])`` (SQL also: ``approx_percentile_cont(p[, max_size])
  WITHIN GROUP (ORDER BY x [DESC])``, DESC meaning the (1 - p)-th percentile): an estimate of the p-th
  percentile of the non-NULL values of x from a t-digest of at most about ``max_size`` centroids
  (default 100). x: any integer or float type, or a decimal, which DataFusion coerces to double.
  Result: the input type (a decimal's is double); integers truncate toward zero from the double
  estimate and saturate at the type's bounds, NaN becomes 0 (Rust's ``as``); float32 rounds. NULL when
  no non-NULL value was seen (empty or all-NULL input).
* ``approx_median(x)``: ``approx_percentile_cont(x, 0.5)`` with the default max_size.
* ``approx_percentile_cont_with_weight(x, weight, p[, max_size])`` (also WITHIN GROUP (ORDER BY x
  [DESC])): every row with non-NULL x and weight becomes a one-centroid digest (mean x, weight
  ``weight``, count 1) and those are merged into the accumulator's digest. DataFusion checks no
  weight: zero and negative weights go into the centroids as they are and the estimate is whatever
  the arithmetic gives. The digest's ``count`` counts rows, not weight, and the estimate looks for rank
  ``p * count`` among cumulative centroid weights, so the result is a weighted percentile only when
  the weights average about 1; with larger weights it sits low (weights of 10 put the median near the
  5th percentile). That is DataFusion's behaviour, modelled as it is.

Literals are bound to the function, as percentile_cont's are:
``get("approx_percentile_cont").bind(p=0.5, max_size=100, descending=False)``,
``get("approx_percentile_cont_with_weight").bind(p=0.9)``; approx_median takes none. The call's
columns are (x,) or SQL's (x, p[, max_size]) for approx_percentile_cont, (x, weight) or (x, weight,
p[, max_size]) for the weighted one: the literal columns are constant and are not read. p must be in
[0, 1], max_size a positive integer.

State (DataFusion's six fields, every accumulator of the family alike): max_size (UInt64, here int64
as Spark's bigint), sum (double: the sum of centroid mean * weight, as the compressions accumulate it),
count (UInt64 -> int64: values or weighted rows seen), max and min (double; NaN while empty), centroids
(List<double>: mean and weight of each centroid, flattened: [m0, w0, m1, w1, ...], sorted by mean).

The algorithm (DataFusion's ``tdigest.rs``, a port of Folly's t-digest, restated here, not copied):

* update: the batch's non-NULL values are sorted (floats by IEEE total order, integers as integers,
  then converted to double) and merged with the digest's centroids in one pass, in mean order, into a
  new digest: a run of neighbours is folded into one centroid while the cumulative weight stays within
  ``k_to_q(k, max_size) * count`` for the k-th centroid, k_to_q(k, d) being 2 (k/d)^2 below k/d = 0.5
  and 1 - 2 (1 - k/d)^2 above. The digest therefore depends on how the input is cut into batches: one
  batch of 50 000 values and the same values in batches of 8192 give different digests and, in general,
  different estimates (both within the sketch's error). DataFusion's memory scan cuts every source
  batch into consecutive slices of at most ``batch_size`` rows (8192 by default; slices are not
  joined across source batches) and each slice is one ``update_batch`` (grouped: each group's rows of
  the slice); the tests feed the model the same slices, and then it agrees exactly.
* merge: the digests' centroids are merged by mean (a stable merge sort of the sorted runs, incoming
  states first, then the accumulator's own digest) and compressed in one pass with the same limits
  (DataFusion's ``merge_digests``; its first limit is used twice, which the model keeps). min and max
  of the states are taken (an infinite or NaN min or max read from a state becomes -inf / +inf). All
  states empty gives an empty digest with max_size 100 (DataFusion's default digest), whatever max_size
  was bound.
* estimate: rank = q * count; walking the centroids from the nearer end finds the one holding the rank,
  whose mean is interpolated towards its neighbours' (half the distance to them per unit of weight
  offset) and clamped to the neighbours' means (to [min, max] at either end); q <= 0 is min, q >= 1 is
  max.

NaN and infinities: values sort by total order, so a NaN (sign bit clear) lands in the top centroid
and a NaN with the sign bit set in the bottom one, whose means become NaN; high (or low) percentiles
then come out NaN, and the digest's min/max follow Rust's f64::min/max (a NaN operand ignored), so
they depend on the batches. An infinity makes its centroid's mean infinite, or NaN (inf - inf). A
centroid whose weights sum to 0 (weights 0, or +1 and -1) gets mean sum / 0: +-inf, or for a zero sum
the machine's default NaN, which on x86 has the sign bit set and so sorts first; the model divides as
the hardware does (where Python would raise) and so agrees with DataFusion there too. All of this is
DataFusion 50's behaviour.

Deviations from DataFusion 50 (each shown by a test):

* approx_percentile_cont_with_weight skips rows whose x or weight is NULL, as the spec says (and later
  DataFusion versions do). DataFusion 50 reads their value buffers instead: a NULL is taken as the 0 the
  buffer usually holds, so a NULL x with weight 5 adds weight 5 at 0.
* approx_percentile_cont_with_weight's result type is x's type. DataFusion coerces x and weight to
  one common type first, so int64 values with double weights give a double result (not truncated),
  and mixed integer widths or signedness can even give float32 (int64 with uint64 weights), with x
  rounded to float32 before the digest sees it.

No retract, as in DataFusion.
"""
from __future__ import annotations

import math
import struct
from collections.abc import Sequence
from decimal import Decimal
from typing import Any, Callable

import pyarrow as pa

from .accumulator import SLOT_BYTES, Accumulator, columns_to_pylists
from .functions import AggregateFunction, DataTypes, StateFields, _is_float, register

DEFAULT_MAX_SIZE = 100
# Bytes of DataFusion's TDigest struct (a Vec, max_size, sum, count, max, min) and of one Centroid.
_DIGEST_BYTES = 64
_CENTROID_BYTES = 16

_UNBOUND = object()


# --- doubles as Rust handles them ------------------------------------------------------------------

def total_order_key(x: float) -> int:
    """A key that sorts doubles as Rust's ``f64::total_cmp``: -NaN < -inf < ... < -0.0 < 0.0 < ...
    < inf < NaN (by sign bit and payload). Arrow's sort kernels order floats this way."""
    bits = struct.unpack("<q", struct.pack("<d", x))[0]
    return bits ^ 0x7FFFFFFFFFFFFFFF if bits < 0 else bits


def _fmin(a: float, b: float) -> float:
    """Rust's ``f64::min``: the smaller, ignoring a NaN operand."""
    if math.isnan(a):
        return b
    if math.isnan(b):
        return a
    return b if b < a else a


def _fmax(a: float, b: float) -> float:
    """Rust's ``f64::max``: the larger, ignoring a NaN operand."""
    if math.isnan(a):
        return b
    if math.isnan(b):
        return a
    return b if b > a else a


def _clamp(v: float, lo: float, hi: float) -> float:
    """DataFusion's clamp: ``v`` unchanged when a bound is NaN, else Rust's ``f64::clamp``."""
    if math.isnan(lo) or math.isnan(hi):
        return v
    if v < lo:
        return lo
    if v > hi:
        return hi
    return v


# The NaN this machine's arithmetic produces for an invalid operation (inf - inf, 0 / 0): on x86 its
# sign bit is set, which puts it below -inf in total order, where DataFusion's sorts then find it.
_DEFAULT_NAN = math.inf - math.inf


def _div(a: float, b: float) -> float:
    """IEEE division as the hardware does it, where Python raises: x / 0.0 is +-inf, 0 / 0 the
    machine's default NaN, NaN / 0 that NaN."""
    try:
        return a / b
    except ZeroDivisionError:
        if math.isnan(a):
            return a
        if a == 0.0:
            return _DEFAULT_NAN
        return math.copysign(math.inf, a) * math.copysign(1.0, b)


def _k_to_q(k: int, d: int) -> float:
    """The quantile at which the k-th of d centroids may end (the t-digest's scale function)."""
    k_div_d = k / d
    if k_div_d >= 0.5:
        base = 1.0 - k_div_d
        return 1.0 - 2.0 * base * base
    return 2.0 * k_div_d * k_div_d


# --- the digest -------------------------------------------------------------------------------------

class Centroid:
    """A cluster of values: its mean and its total weight."""

    __slots__ = ("mean", "weight")

    def __init__(self, mean: float, weight: float) -> None:
        self.mean = mean
        self.weight = weight

    def add(self, total: float, weight: float) -> float:
        """Fold in ``weight`` more units whose sum is ``total``; returns the centroid's new sum."""
        new_sum = total + self.weight * self.mean
        self.weight = self.weight + weight
        self.mean = _div(new_sum, self.weight)
        return new_sum

    def copy(self) -> Centroid:
        return Centroid(self.mean, self.weight)

    def __repr__(self) -> str:
        return f"Centroid({self.mean!r}, {self.weight!r})"


class TDigest:
    """DataFusion's t-digest: centroids sorted by mean, at most about ``max_size`` of them, plus the
    count, sum, min and max of what went in. Operations return new digests, as DataFusion's do."""

    def __init__(self, max_size: int = DEFAULT_MAX_SIZE) -> None:
        self.centroids: list[Centroid] = []
        self.max_size = max_size
        self.sum = 0.0
        self.count = 0
        self.max = math.nan
        self.min = math.nan

    @classmethod
    def of_centroid(cls, max_size: int, mean: float, weight: float) -> TDigest:
        """A digest of one centroid, counted as one value (the weighted function's rows)."""
        digest = cls(max_size)
        digest.centroids = [Centroid(mean, weight)]
        digest.sum = mean * weight
        digest.count = 1
        digest.max = digest.min = mean
        return digest

    # - building -

    def merge_sorted(self, values: Sequence[float]) -> TDigest:
        """A new digest of this one and ``values`` (sorted by total order), each of weight 1."""
        if not values:
            return self
        result = TDigest(self.max_size)
        result.count = self.count + len(values)
        if self.count > 0:
            result.min = _fmin(self.min, values[0])
            result.max = _fmax(self.max, values[-1])
        else:
            result.min, result.max = values[0], values[-1]

        k_limit = 1
        q_limit_times_count = _k_to_q(k_limit, self.max_size) * result.count
        k_limit += 1

        centroids, ci, vi = self.centroids, 0, 0

        def take() -> Centroid:
            """The next centroid in mean order: an existing one when its mean is below the next
            value, else the value as a centroid of weight 1."""
            nonlocal ci, vi
            if ci < len(centroids) and (vi == len(values) or centroids[ci].mean < values[vi]):
                ci += 1
                return centroids[ci - 1].copy()
            vi += 1
            return Centroid(values[vi - 1], 1.0)

        compressed: list[Centroid] = []
        curr = take()
        weight_so_far = curr.weight
        sums_to_merge = weights_to_merge = 0.0
        while ci < len(centroids) or vi < len(values):
            nxt = take()
            next_sum = nxt.mean * nxt.weight
            weight_so_far += nxt.weight
            if weight_so_far <= q_limit_times_count:
                sums_to_merge += next_sum
                weights_to_merge += nxt.weight
            else:
                result.sum += curr.add(sums_to_merge, weights_to_merge)
                sums_to_merge = weights_to_merge = 0.0
                compressed.append(curr)
                q_limit_times_count = _k_to_q(k_limit, self.max_size) * result.count
                k_limit += 1
                curr = nxt
        result.sum += curr.add(sums_to_merge, weights_to_merge)
        compressed.append(curr)
        compressed.sort(key=lambda c: total_order_key(c.mean))  # stable, as Rust's sort
        result.centroids = compressed
        return result

    @staticmethod
    def merge_digests(digests: Sequence[TDigest]) -> TDigest:
        """One digest of ``digests`` (DataFusion's ``merge_digests``): their centroids merged by mean
        and compressed again. max_size is the first digest's; no centroid at all gives a default
        (empty, max_size 100) digest."""
        if sum(len(d.centroids) for d in digests) == 0:
            return TDigest()
        max_size = digests[0].max_size
        count = 0
        lo, hi = math.inf, -math.inf
        runs: list[Centroid] = []
        for digest in digests:
            if digest.count > 0:
                lo = _fmin(lo, digest.min)
                hi = _fmax(hi, digest.max)
                count += digest.count
                runs.extend(c.copy() for c in digest.centroids)
        # Each digest's centroids are sorted; DataFusion merges the runs pairwise, bottom-up, the
        # left run first on ties, which is the stable sort of their concatenation.
        runs.sort(key=lambda c: total_order_key(c.mean))

        result = TDigest(max_size)
        compressed: list[Centroid] = []
        k_limit = 1
        q_limit_times_count = _k_to_q(k_limit, max_size) * count
        curr = runs[0]
        weight_so_far = curr.weight
        sums_to_merge = weights_to_merge = 0.0
        for centroid in runs[1:]:
            weight_so_far += centroid.weight
            if weight_so_far <= q_limit_times_count:
                sums_to_merge += centroid.mean * centroid.weight
                weights_to_merge += centroid.weight
            else:
                result.sum += curr.add(sums_to_merge, weights_to_merge)
                sums_to_merge = weights_to_merge = 0.0
                compressed.append(curr)
                q_limit_times_count = _k_to_q(k_limit, max_size) * count  # k = 1 again, then 2, ...
                k_limit += 1
                curr = centroid
        result.sum += curr.add(sums_to_merge, weights_to_merge)
        compressed.append(curr)
        compressed.sort(key=lambda c: total_order_key(c.mean))
        result.count, result.min, result.max = count, lo, hi
        result.centroids = compressed
        return result

    # - reading -

    def estimate_quantile(self, q: float) -> float:
        """The estimated value at quantile ``q`` (0.0 for an empty digest, which callers avoid)."""
        centroids = self.centroids
        if not centroids:
            return 0.0
        rank = q * self.count
        if q > 0.5:
            if q >= 1.0:
                return self.max
            pos, t = 0, float(self.count)
            for k in range(len(centroids) - 1, -1, -1):
                t -= centroids[k].weight
                if rank >= t:
                    pos = k
                    break
        else:
            if q <= 0.0:
                return self.min
            pos, t = len(centroids) - 1, 0.0
            for k, centroid in enumerate(centroids):
                if rank < t + centroid.weight:
                    pos = k
                    break
                t += centroid.weight

        delta, lo, hi = 0.0, self.min, self.max
        if len(centroids) > 1:
            if pos == 0:
                delta = centroids[1].mean - centroids[0].mean
                hi = centroids[1].mean
            elif pos == len(centroids) - 1:
                delta = centroids[pos].mean - centroids[pos - 1].mean
                lo = centroids[pos - 1].mean
            else:
                delta = (centroids[pos + 1].mean - centroids[pos - 1].mean) / 2.0
                lo = centroids[pos - 1].mean
                hi = centroids[pos + 1].mean
        value = centroids[pos].mean + (_div(rank - t, centroids[pos].weight) - 0.5) * delta
        # A min of +inf or a max of -inf (merge_digests' start values, left by NaN-only digests)
        # must not clamp everything to it.
        if math.isinf(lo) and lo > 0 or math.isnan(lo) and math.copysign(1.0, lo) > 0:
            lo = -math.inf
        if math.isinf(hi) and hi < 0 or math.isnan(hi) and math.copysign(1.0, hi) < 0:
            hi = math.inf
        return _clamp(value, lo, hi)

    # - state -

    def to_state(self) -> list[Any]:
        """[max_size, sum, count, max, min, [mean0, weight0, mean1, weight1, ...]]"""
        flat = [v for c in self.centroids for v in (c.mean, c.weight)]
        return [self.max_size, self.sum, self.count, self.max, self.min, flat]

    @classmethod
    def from_state(cls, row: Sequence[Any]) -> TDigest:
        """The digest ``to_state`` exported (DataFusion's ``from_scalar_state``: a non-finite min or
        max becomes -inf / +inf)."""
        if len(row) != 6 or any(v is None for v in row):
            raise ValueError(f"not a t-digest state (6 non-NULL fields): {row!r}")
        max_size, total, count, hi, lo, flat = row
        if len(flat) % 2 or any(v is None for v in flat):
            raise ValueError(f"t-digest centroids must be mean/weight pairs of doubles, got {flat!r}")
        digest = cls(int(max_size))
        digest.sum, digest.count = float(total), int(count)
        digest.min = float(lo) if math.isfinite(lo) else -math.inf
        digest.max = float(hi) if math.isfinite(hi) else math.inf
        digest.centroids = [Centroid(float(flat[i]), float(flat[i + 1])) for i in range(0, len(flat), 2)]
        return digest

    def size(self) -> int:
        return _DIGEST_BYTES + _CENTROID_BYTES * len(self.centroids)


# --- type rules ---------------------------------------------------------------------------------

def _is_value_type(t: pa.DataType) -> bool:
    """What the family takes: integers, float32/64 and decimals (which DataFusion makes doubles)."""
    return pa.types.is_integer(t) or _is_float(t) or pa.types.is_decimal(t)


def _result_type(t: pa.DataType) -> pa.DataType:
    return pa.float64() if pa.types.is_decimal(t) else t


def _check_literal_column(name: str, what: str, t: pa.DataType, accepts: Callable[[pa.DataType], bool]) -> None:
    if not accepts(t):
        raise TypeError(f"{name}'s {what} must be a numeric literal, got a column of type {t}")


def _check_types(name: str, arg_types: DataTypes, weighted: bool) -> pa.DataType:
    """x's type after checking the call's columns: (x[, weight][, p[, max_size]])."""
    own = 2 if weighted else 1
    most = own if name == "approx_median" else own + 2
    if not own <= len(arg_types) <= most:
        shape = {"approx_median": "(x)", "approx_percentile_cont": "(x[, p[, max_size]])",
                 "approx_percentile_cont_with_weight": "(x, weight[, p[, max_size]])"}[name]
        raise TypeError(f"{name} takes {shape}, got {len(arg_types)} arguments")
    x = arg_types[0]
    if not _is_value_type(x):
        raise TypeError(f"{name} does not support argument type {x} (integers, floats, decimals)")
    if weighted and not _is_value_type(arg_types[1]):
        raise TypeError(f"{name} does not support weight type {arg_types[1]} (integers, floats, decimals)")
    if len(arg_types) > own:
        _check_literal_column(name, "percentile", arg_types[own], _is_value_type)
    if len(arg_types) > own + 1:
        _check_literal_column(name, "max_size", arg_types[own + 1], pa.types.is_integer)
    return x


def _to_double(t: pa.DataType) -> Callable[[Any], float]:
    """How a value of ``t`` becomes the double the digest holds: integers and floats as Rust's ``as
    f64``; decimals as Arrow's cast, the unscaled integer as a double divided by 10^scale."""
    if pa.types.is_decimal(t):
        divisor = 10.0 ** t.scale

        def decimal_to_double(d: Decimal) -> float:
            return float(int(d.scaleb(t.scale))) / divisor

        return decimal_to_double
    return float


def _from_double(t: pa.DataType) -> Callable[[float], Any]:
    """The estimate as a value of the result type: Rust's saturating ``as`` for integers (toward
    zero, NaN to 0), float32 rounded, doubles unchanged."""
    if pa.types.is_integer(t):
        bits = t.bit_width
        lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if pa.types.is_signed_integer(t) else (0, (1 << bits) - 1)

        def to_int(q: float) -> int:
            if math.isnan(q):
                return 0
            if math.isinf(q):
                return hi if q > 0 else lo
            return max(lo, min(hi, int(q)))

        return to_int
    if pa.types.is_float32(t):
        def to_float32(q: float) -> float:
            try:
                return struct.unpack("<f", struct.pack("<f", q))[0]
            except OverflowError:
                return math.copysign(math.inf, q)

        return to_float32
    return lambda q: q


def _percentile(name: str, p: Any, descending: bool) -> float:
    if p is _UNBOUND:
        raise TypeError(f"{name}'s percentile is a literal bound to the function: use "
                        f"get({name!r}).bind(p=0.5)")
    if isinstance(p, bool) or not isinstance(p, (int, float, Decimal)) or not 0 <= p <= 1:
        raise ValueError(f"{name}: the percentile must be a number in [0, 1], got {p!r}")
    return 1.0 - float(p) if descending else float(p)


def _max_size(name: str, max_size: Any) -> int:
    if isinstance(max_size, bool) or not isinstance(max_size, int) or max_size < 1:
        raise ValueError(f"{name}: max_size must be a positive integer, got {max_size!r}")
    return max_size


def _state_fields() -> StateFields:
    return [("max_size", pa.int64()), ("sum", pa.float64()), ("count", pa.int64()), ("max", pa.float64()),
            ("min", pa.float64()), ("centroids", pa.list_(pa.float64()))]


# --- accumulators ---------------------------------------------------------------------------------

class ApproxPercentileContAccumulator(Accumulator):
    """approx_percentile_cont(x, p[, max_size]): the t-digest estimate of the p-th percentile of x.

    Result: x's type (decimals: double). State: the six t-digest fields."""

    NAME = "approx_percentile_cont"
    WEIGHTED = False

    def __init__(self, arg_types: DataTypes, ansi: bool = True, *, p: Any = _UNBOUND,
                 max_size: Any = DEFAULT_MAX_SIZE, descending: bool = False) -> None:
        x = _check_types(self.NAME, arg_types, self.WEIGHTED)
        self._arity = len(arg_types)
        self._quantile = _percentile(self.NAME, p, descending)
        self._digest = TDigest(_max_size(self.NAME, max_size))
        self._to_double = _to_double(x)
        self._weight_to_double = _to_double(arg_types[1]) if self.WEIGHTED else float
        self._from_double = _from_double(_result_type(x))
        # Arrow sorts integers as integers and floats by total order, before the conversion.
        self._sort_key: Callable[[Any], Any] = total_order_key if _is_float(x) else (lambda v: v)

    @classmethod
    def return_type(cls, arg_types: DataTypes, **literals: Any) -> pa.DataType:
        return _result_type(_check_types(cls.NAME, arg_types, cls.WEIGHTED))

    @classmethod
    def state_fields(cls, arg_types: DataTypes, **literals: Any) -> StateFields:
        _check_types(cls.NAME, arg_types, cls.WEIGHTED)
        return _state_fields()

    @property
    def digest(self) -> TDigest:
        return self._digest

    def update_batch(self, values: Sequence[pa.Array]) -> None:
        xs = columns_to_pylists(values, self._arity)[0]
        present = sorted((v for v in xs if v is not None), key=self._sort_key)
        self._digest = self._digest.merge_sorted([self._to_double(v) for v in present])

    def merge_batch(self, states: Sequence[pa.Array]) -> None:
        columns = columns_to_pylists(states, 6)
        incoming = [TDigest.from_state(row) for row in zip(*columns)]
        if incoming:
            self._digest = TDigest.merge_digests([*incoming, self._digest])

    def state(self) -> list[Any]:
        return self._digest.to_state()

    def evaluate(self) -> Any:
        if self._digest.count == 0:
            return None
        return self._from_double(self._digest.estimate_quantile(self._quantile))

    def size(self) -> int:
        return 4 * SLOT_BYTES + self._digest.size()


class ApproxMedianAccumulator(ApproxPercentileContAccumulator):
    """approx_median(x): approx_percentile_cont(x, 0.5) with max_size 100; no literals."""

    NAME = "approx_median"

    def __init__(self, arg_types: DataTypes, ansi: bool = True) -> None:
        super().__init__(arg_types, ansi, p=0.5)


class ApproxPercentileContWithWeightAccumulator(ApproxPercentileContAccumulator):
    """approx_percentile_cont_with_weight(x, weight, p[, max_size]): rows with a NULL x or weight are
    skipped; every other row is merged in as a one-centroid digest (mean x, weight ``weight``)."""

    NAME = "approx_percentile_cont_with_weight"
    WEIGHTED = True

    def update_batch(self, values: Sequence[pa.Array]) -> None:
        columns = columns_to_pylists(values, self._arity)
        max_size = self._digest.max_size
        rows = [TDigest.of_centroid(max_size, self._to_double(x), self._weight_to_double(w))
                for x, w in zip(columns[0], columns[1]) if x is not None and w is not None]
        self._digest = TDigest.merge_digests([*rows, self._digest])


register({
    "approx_percentile_cont": AggregateFunction("approx_percentile_cont", ApproxPercentileContAccumulator),
    "approx_median": AggregateFunction("approx_median", ApproxMedianAccumulator),
    "approx_percentile_cont_with_weight": AggregateFunction(
        "approx_percentile_cont_with_weight", ApproxPercentileContWithWeightAccumulator),
})
