"""The t-digest of approx_percentile_cont, approx_median and approx_percentile_cont_with_weight (the
JVM's functions/tdigest.scala; the functions themselves are ``approx_percentile``). On one accumulator
fed the same batches, the model's digest equals DataFusion 55's bit for bit.

State (DataFusion's six fields, every accumulator of the family alike): max_size (UInt64, here int64
as Spark's bigint), sum (double: the sum of centroid mean * weight, as the compressions accumulate it),
count (double: the values seen, or the weighted rows' total weight; DataFusion 50's was a UInt64 count
of values or rows), max and min (double; NaN while empty), centroids
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
"""
from __future__ import annotations

import math
import struct
from collections.abc import Sequence
from typing import Any

DEFAULT_MAX_SIZE = 100
# Bytes of DataFusion's TDigest struct (a Vec, max_size, sum, count, max, min) and of one Centroid.
_DIGEST_BYTES = 64
_CENTROID_BYTES = 16


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
    """DataFusion's clamp: ``v`` unchanged when a bound is NaN, else Rust's ``f64::clamp`` between the
    bounds in order."""
    if math.isnan(lo) or math.isnan(hi):
        return v
    if lo > hi:  # rounding can cross the neighbours' bounds when every value is equal
        lo, hi = hi, lo
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
        self.count = 0.0
        self.max = math.nan
        self.min = math.nan

    @classmethod
    def of_centroid(cls, max_size: int, mean: float, weight: float) -> TDigest:
        """A digest of one centroid whose count is its weight (the weighted function's rows)."""
        digest = cls(max_size)
        digest.centroids = [Centroid(mean, weight)]
        digest.sum = mean * weight
        digest.count = weight
        digest.max = digest.min = mean
        return digest

    # - building -

    def merge_sorted(self, values: Sequence[float]) -> TDigest:
        """A new digest of this one and ``values`` (sorted by total order), each of weight 1."""
        if not values:
            return self
        result = TDigest(self.max_size)
        result.count = self.count + float(len(values))
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
        and compressed again. max_size is the first digest's. A digest whose count is not above 0
        (NaN included) adds nothing; no centroid left at all gives a default (empty, max_size 100)
        digest."""
        max_size = digests[0].max_size if digests else DEFAULT_MAX_SIZE
        count = 0.0
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
        if not runs:
            return TDigest()

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
        digest.sum, digest.count = float(total), float(count)
        digest.min = float(lo) if math.isfinite(lo) else -math.inf
        digest.max = float(hi) if math.isfinite(hi) else math.inf
        digest.centroids = [Centroid(float(flat[i]), float(flat[i + 1])) for i in range(0, len(flat), 2)]
        return digest

    def size(self) -> int:
        return _DIGEST_BYTES + _CENTROID_BYTES * len(self.centroids)
