package sparkagg.functions

/**
 * DataFusion's t-digest (functions-aggregate-common's tdigest.rs, a port of Folly's): centroids (mean,
 * weight) kept sorted by mean, at most about `maxSize` of them, compressed with the k-to-q scale
 * function 2k^2/d^2 (mirrored above the median), and quantiles interpolated between neighbouring
 * centroid means, clamped to [min, max]. Written from the algorithm so that the same inputs in the same
 * batches give DataFusion's results bit for bit: the same passes, the same floating-point operations in
 * the same order, Rust's NaN rules for min/max. Immutable: every merge returns a new digest.
 */
private[functions] final class TDigest(
    val maxSize: Int,
    val means: Array[Double],
    val weights: Array[Double],
    val sum: Double,
    val count: Long,
    val max: Double,
    val min: Double) {

  def centroids: Int = means.length

  /** This digest with `sorted(0 until length)` (ascending, total order) added, as one batch. */
  def mergeSorted(sorted: Array[Double], length: Int): TDigest =
    if (length == 0) this
    else {
      val total = count + length
      val (lo, hi) = if (count > 0) (TDigest.rustMin(min, sorted(0)), TDigest.rustMax(max, sorted(length - 1)))
        else (sorted(0), sorted(length - 1))
      val out = new TDigest.Compressor(maxSize, total, kLimitStart = 2)
      var (c, v) = (0, 0)
      // The next input in mean order: a centroid when its mean is strictly less, else a raw value.
      def takeCentroid = c < means.length && (v >= length || means(c) < sorted(v))
      if (takeCentroid) { out.start(means(c), weights(c)); c += 1 } else { out.start(sorted(v), 1.0); v += 1 }
      while (c < means.length || v < length) {
        if (takeCentroid) { out.next(means(c), weights(c)); c += 1 } else { out.next(sorted(v), 1.0); v += 1 }
      }
      out.finish(total, hi, lo)
    }

  /** The estimate of the q-quantile; 0.0 with no centroids (callers check [[count]] first). */
  def quantile(q: Double): Double = {
    val n = means.length
    if (n == 0) return 0.0
    val rank = q * count
    var pos = 0
    var t = 0.0
    if (q > 0.5) {
      if (q >= 1.0) return max
      t = count.toDouble
      var k = n - 1
      var found = false
      while (!found && k >= 0) {
        t -= weights(k)
        if (rank >= t) { pos = k; found = true }
        k -= 1
      }
    } else {
      if (q <= 0.0) return min
      pos = n - 1
      var k = 0
      var found = false
      while (!found && k < n) {
        if (rank < t + weights(k)) { pos = k; found = true } else { t += weights(k); k += 1 }
      }
    }
    var delta = 0.0
    var lo = min
    var hi = max
    if (n > 1) {
      if (pos == 0) { delta = means(1) - means(0); hi = means(1) }
      else if (pos == n - 1) { delta = means(pos) - means(pos - 1); lo = means(pos - 1) }
      else { delta = (means(pos + 1) - means(pos - 1)) / 2.0; lo = means(pos - 1); hi = means(pos + 1) }
    }
    val value = means(pos) + ((rank - t) / weights(pos) - 0.5) * delta
    // A digest merged from states alone keeps min = +inf / max = -inf when they saw only NaN.
    if (!java.lang.Double.isFinite(lo) && TDigest.signPositive(lo)) lo = Double.NegativeInfinity
    if (!java.lang.Double.isFinite(hi) && !TDigest.signPositive(hi)) hi = Double.PositiveInfinity
    if (lo.isNaN || hi.isNaN) value
    else if (value < lo) lo
    else if (value > hi) hi
    else value
  }

  /** The centroids as DataFusion's state lists them: mean, weight, mean, weight, ... */
  def flatCentroids: Array[Any] = {
    val out = new Array[Any](2 * means.length)
    var i = 0
    while (i < means.length) { out(2 * i) = means(i); out(2 * i + 1) = weights(i); i += 1 }
    out
  }

  def bytes: Long = 64 + 16L * means.length
}

private[functions] object TDigest {
  val DefaultMaxSize = 100

  def empty(maxSize: Int): TDigest =
    new TDigest(maxSize, Array.emptyDoubleArray, Array.emptyDoubleArray, 0.0, 0, Double.NaN, Double.NaN)

  /** A digest read back from a state: non-finite min / max widen to -inf / +inf, as DataFusion does. */
  def fromState(maxSize: Int, sum: Double, count: Long, max: Double, min: Double, flat: Array[Double]): TDigest =
    new TDigest(maxSize, Array.tabulate(flat.length / 2)(i => flat(2 * i)), Array.tabulate(flat.length / 2)(i => flat(2 * i + 1)),
      sum, count, if (java.lang.Double.isFinite(max)) max else Double.PositiveInfinity,
      if (java.lang.Double.isFinite(min)) min else Double.NegativeInfinity)

  /** Rust's f64::min / f64::max: a NaN operand gives the other one (Java's Math.min gives NaN). */
  def rustMin(a: Double, b: Double): Double = if (a.isNaN) b else if (b.isNaN) a else math.min(a, b)
  def rustMax(a: Double, b: Double): Double = if (a.isNaN) b else if (b.isNaN) a else math.max(a, b)
  private def signPositive(x: Double): Boolean = java.lang.Double.doubleToRawLongBits(x) >= 0

  private def kToQ(k: Long, d: Int): Double = {
    val kd = k.toDouble / d.toDouble
    if (kd >= 0.5) { val base = 1.0 - kd; 1.0 - 2.0 * base * base } else 2.0 * kd * kd
  }

  /**
   * Merges digests into one: their centroids merge-sorted pairwise in rounds (stable), then compressed
   * in one pass. The digests' order matters for ties, as in DataFusion.
   */
  def merge(digests: Seq[TDigest]): TDigest = {
    val total = digests.map(_.centroids).sum
    if (total == 0) return empty(DefaultMaxSize)
    val means = new Array[Double](total)
    val weights = new Array[Double](total)
    val starts = new Array[Int](digests.size)
    var count = 0L
    var lo = Double.PositiveInfinity
    var hi = Double.NegativeInfinity
    var at = 0
    for ((d, i) <- digests.zipWithIndex) {
      starts(i) = at
      if (d.count > 0) {
        lo = rustMin(lo, d.min)
        hi = rustMax(hi, d.max)
        count += d.count
        System.arraycopy(d.means, 0, means, at, d.centroids)
        System.arraycopy(d.weights, 0, weights, at, d.centroids)
        at += d.centroids
      }
    }
    compress(digests.head.maxSize, means, weights, starts, count, lo, hi)
  }

  /**
   * [[merge]] of `length` one-value digests (mean `means(i)`, weight `weights(i)`, count 1, min = max =
   * the mean: with_weight's rows) followed by `last`, without making a digest per value.
   */
  def mergeSingles(maxSize: Int, means: Array[Double], weights: Array[Double], length: Int, last: TDigest): TDigest = {
    val total = length + last.centroids
    if (total == 0) return empty(DefaultMaxSize)
    val m = java.util.Arrays.copyOf(means, total)
    val w = java.util.Arrays.copyOf(weights, total)
    System.arraycopy(last.means, 0, m, length, last.centroids)
    System.arraycopy(last.weights, 0, w, length, last.centroids)
    var lo = Double.PositiveInfinity
    var hi = Double.NegativeInfinity
    var i = 0
    while (i < length) { lo = rustMin(lo, means(i)); hi = rustMax(hi, means(i)); i += 1 }
    var count = length.toLong
    if (last.count > 0) { lo = rustMin(lo, last.min); hi = rustMax(hi, last.max); count += last.count }
    compress(if (length > 0) maxSize else last.maxSize, m, w, Array.tabulate(length + 1)(identity), count, lo, hi)
  }

  /** The centroids of merged digests (each digest's run sorted, runs from `starts`): merge-sorted in
   *  pairwise rounds, then one compression pass. */
  private def compress(maxSize: Int, means: Array[Double], weights: Array[Double], starts: Array[Int],
      count: Long, lo: Double, hi: Double): TDigest = {
    val total = means.length
    var perBlock = 1
    while (perBlock < starts.length) {
      var i = 0
      while (i < starts.length) {
        if (i + perBlock < starts.length) {
          val last = if (i + 2 * perBlock < starts.length) starts(i + 2 * perBlock) else total
          mergeRuns(means, weights, starts(i), starts(i + perBlock), last)
        }
        i += 2 * perBlock
      }
      perBlock *= 2
    }
    val out = new Compressor(maxSize, count, kLimitStart = 1)
    out.start(means(0), weights(0))
    var i = 1
    while (i < total) { out.next(means(i), weights(i)); i += 1 }
    out.finish(count, hi, lo)
  }

  /** Stable merge of the sorted runs [first, middle) and [middle, last). */
  private def mergeRuns(means: Array[Double], weights: Array[Double], first: Int, middle: Int, last: Int): Unit = {
    val m = new Array[Double](last - first)
    val w = new Array[Double](last - first)
    var (i, j, k) = (first, middle, 0)
    while (i < middle && j < last) {
      if (java.lang.Double.compare(means(j), means(i)) < 0) { m(k) = means(j); w(k) = weights(j); j += 1 }
      else { m(k) = means(i); w(k) = weights(i); i += 1 }
      k += 1
    }
    while (i < middle) { m(k) = means(i); w(k) = weights(i); i += 1; k += 1 }
    while (j < last) { m(k) = means(j); w(k) = weights(j); j += 1; k += 1 }
    System.arraycopy(m, 0, means, first, k)
    System.arraycopy(w, 0, weights, first, k)
  }

  /**
   * The compression pass both merges share: inputs arrive in mean order; each joins the current
   * centroid while the weight so far stays within the next k-limit's share of `total`, else the
   * current centroid is closed. `kLimitStart` is where the k-limit counter stands after the first limit
   * (DataFusion's two merges differ there).
   */
  private final class Compressor(maxSize: Int, total: Long, kLimitStart: Int) {
    // Primitive arrays grown by doubling: the centroids are not boxed.
    private var means = new Array[Double](maxSize + 1)
    private var weights = new Array[Double](maxSize + 1)
    private var n = 0
    private var kLimit = kLimitStart.toLong
    private var qLimitTimesCount = kToQ(1, maxSize) * total.toDouble
    private var currMean = 0.0
    private var currWeight = 0.0
    private var weightSoFar = 0.0
    private var sumsToMerge = 0.0
    private var weightsToMerge = 0.0
    private var sum = 0.0

    def start(mean: Double, weight: Double): Unit = { currMean = mean; currWeight = weight; weightSoFar = weight }

    def next(mean: Double, weight: Double): Unit = {
      val nextSum = mean * weight
      weightSoFar += weight
      if (weightSoFar <= qLimitTimesCount) {
        sumsToMerge += nextSum
        weightsToMerge += weight
      } else {
        close()
        qLimitTimesCount = kToQ(kLimit, maxSize) * total.toDouble
        kLimit += 1
        currMean = mean
        currWeight = weight
      }
    }

    /** Folds the pending inputs into the current centroid and emits it (DataFusion's Centroid::add). */
    private def close(): Unit = {
      val newSum = sumsToMerge + currWeight * currMean
      currWeight = currWeight + weightsToMerge
      currMean = newSum / currWeight
      sum += newSum
      if (n == means.length) {
        means = java.util.Arrays.copyOf(means, 2 * n)
        weights = java.util.Arrays.copyOf(weights, 2 * n)
      }
      means(n) = currMean
      weights(n) = currWeight
      n += 1
      sumsToMerge = 0.0
      weightsToMerge = 0.0
    }

    def finish(count: Long, max: Double, min: Double): TDigest = {
      close()
      val m = java.util.Arrays.copyOf(means, n)
      val w = java.util.Arrays.copyOf(weights, n)
      // Sorted by mean, stably (insertion sort: the pass nearly always emits them in order already).
      var i = 1
      while (i < n) {
        val (mi, wi) = (m(i), w(i))
        var j = i - 1
        while (j >= 0 && java.lang.Double.compare(m(j), mi) > 0) { m(j + 1) = m(j); w(j + 1) = w(j); j -= 1 }
        m(j + 1) = mi
        w(j + 1) = wi
        i += 1
      }
      new TDigest(maxSize, m, w, sum, count, max, min)
    }
  }
}
