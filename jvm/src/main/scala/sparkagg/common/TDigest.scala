package sparkagg.common

/**
 * DataFusion's t-digest (functions-aggregate-common's tdigest.rs, a port of Folly's): centroids (mean,
 * weight) kept sorted by mean, at most about `maxSize` of them, compressed with the k-to-q scale
 * function 2k^2/d^2 (mirrored above the median), and quantiles interpolated between neighbouring
 * centroid means, clamped to [min, max]. Written from the algorithm so that the same inputs in the same
 * batches give DataFusion's results bit for bit: the same passes, the same floating-point operations in
 * the same order, Rust's NaN rules for min/max. Immutable: every merge returns a new digest.
 */
private[sparkagg] final class TDigest(
    val maxSize: Int,
    val means: Array[Double],
    val weights: Array[Double],
    val sum: Double,
    val count: Double,
    val max: Double,
    val min: Double) {

  def centroids: Int = means.length

  /** This digest with `sorted(0 until length)` (ascending, total order) added, as one batch. */
  def mergeSorted(sorted: Array[Double], length: Int): TDigest =
    if (length == 0) this
    else {
      val b = new DigestBuilder
      b.mergeSorted(maxSize, means, weights, 0, centroids, count, min, max, sorted, length)
      b.result()
    }

  /** The estimate of the q-quantile; 0.0 with no centroids (callers check [[count]] first). */
  def quantile(q: Double): Double = TDigest.quantile(means, weights, 0, centroids, count, min, max, q)

  /** The centroids as DataFusion's state lists them: mean, weight, mean, weight, ... */
  def flatCentroids: Array[Any] = {
    val out = new Array[Any](2 * means.length)
    var i = 0
    while (i < means.length) { out(2 * i) = means(i); out(2 * i + 1) = weights(i); i += 1 }
    out
  }

  def bytes: Long = 64 + 16L * means.length
}

private[sparkagg] object TDigest {
  /** DataFusion's default batch size: how many values it sorts and merges into a digest at once. */
  val BatchSize = 8192

  val DefaultMaxSize = 100

  def empty(maxSize: Int): TDigest =
    new TDigest(maxSize, Array.emptyDoubleArray, Array.emptyDoubleArray, 0.0, 0.0, Double.NaN, Double.NaN)

  /** A digest read back from a state: non-finite min / max widen to -inf / +inf, as DataFusion does. */
  def fromState(maxSize: Int, sum: Double, count: Double, max: Double, min: Double, flat: Array[Double]): TDigest =
    new TDigest(
      maxSize,
      Array.tabulate(flat.length / 2)(i => flat(2 * i)),
      Array.tabulate(flat.length / 2)(i => flat(2 * i + 1)),
      sum,
      count,
      if (java.lang.Double.isFinite(max)) max else Double.PositiveInfinity,
      if (java.lang.Double.isFinite(min)) min else Double.NegativeInfinity
    )

  /** Rust's f64::min / f64::max: a NaN operand gives the other one (Java's Math.min gives NaN). */
  def rustMin(a: Double, b: Double): Double = if (a.isNaN) b else if (b.isNaN) a else math.min(a, b)
  def rustMax(a: Double, b: Double): Double = if (a.isNaN) b else if (b.isNaN) a else math.max(a, b)
  /** Whether `a` sorts before `b` in Java's total order of doubles (-0.0 before 0.0, NaN last): the plain
   *  comparison decides all but equal and NaN operands, which Double.compare settles. */
  @inline def before(a: Double, b: Double): Boolean = a < b || (!(a > b) && java.lang.Double.compare(a, b) < 0)

  private def signPositive(x: Double): Boolean = java.lang.Double.doubleToRawLongBits(x) >= 0

  /**
   * The estimate of the q-quantile of the digest whose centroids are `means` / `weights` at
   * [from, from + n): the rank's centroid found from the nearer end, interpolated towards its
   * neighbours, clamped to [min, max]. 0.0 with no centroids.
   */
  def quantile(means: Array[Double], weights: Array[Double], from: Int, n: Int, count: Double, min: Double,
      max: Double, q: Double): Double = {
    if (n == 0) return 0.0
    val rank = q * count
    var pos = 0
    var t = 0.0
    if (q > 0.5) {
      if (q >= 1.0) return max
      t = count
      var k = n - 1
      var found = false
      while (!found && k >= 0) {
        t -= weights(from + k)
        if (rank >= t) { pos = k; found = true }
        k -= 1
      }
    } else {
      if (q <= 0.0) return min
      pos = n - 1
      var k = 0
      var found = false
      while (!found && k < n) {
        if (rank < t + weights(from + k)) { pos = k; found = true }
        else { t += weights(from + k); k += 1 }
      }
    }
    def mean(i: Int) = means(from + i)
    var delta = 0.0
    var lo = min
    var hi = max
    if (n > 1) {
      if (pos == 0) { delta = mean(1) - mean(0); hi = mean(1) }
      else if (pos == n - 1) { delta = mean(pos) - mean(pos - 1); lo = mean(pos - 1) }
      else { delta = (mean(pos + 1) - mean(pos - 1)) / 2.0; lo = mean(pos - 1); hi = mean(pos + 1) }
    }
    val value = mean(pos) + ((rank - t) / weights(from + pos) - 0.5) * delta
    // A digest merged from states alone keeps min = +inf / max = -inf when they saw only NaN.
    if (!java.lang.Double.isFinite(lo) && signPositive(lo)) lo = Double.NegativeInfinity
    if (!java.lang.Double.isFinite(hi) && !signPositive(hi)) hi = Double.PositiveInfinity
    // Rounding can leave the neighbours' bounds crossed (all values equal): DataFusion 55 swaps them.
    if (lo > hi) { val swap = lo; lo = hi; hi = swap }
    if (lo.isNaN || hi.isNaN) value
    else if (value < lo) lo
    else if (value > hi) hi
    else value
  }

  /**
   * Merges digests into one: their centroids merge-sorted pairwise in rounds (stable), then compressed
   * in one pass. The digests' order matters for ties, as in DataFusion.
   */
  def merge(digests: Seq[TDigest]): TDigest = {
    val b = new DigestBuilder
    b.startInputs()
    for (d <- digests) b.inputRun(d.count, d.min, d.max, d.means, d.weights, 0, d.centroids)
    b.mergeInputs(digests.head.maxSize)
    b.result()
  }

  /**
   * [[merge]] of `length` one-value digests (mean `means(i)`, weight and count `weights(i)`, min = max =
   * the mean: with_weight's rows) followed by `last`, without making a digest per value. As in DataFusion
   * 55 a row's count is its weight, so ranks are taken against the total weight.
   */
  def mergeSingles(maxSize: Int, means: Array[Double], weights: Array[Double], length: Int, last: TDigest): TDigest = {
    val b = new DigestBuilder
    b.startInputs()
    var i = 0
    while (i < length) { b.inputRun(weights(i), means(i), means(i), means, weights, i, 1); i += 1 }
    b.inputRun(last.count, last.min, last.max, last.means, last.weights, 0, last.centroids)
    b.mergeInputs(if (length > 0) maxSize else last.maxSize)
    b.result()
  }
}

/**
 * The t-digest's arithmetic on primitive arrays, reusable so that building a digest allocates nothing
 * once its arrays have grown: [[mergeSorted]] (a digest plus a sorted batch of values) and the merge of
 * digests ([[startInputs]], [[inputRun]] per digest, [[mergeInputs]]) leave the new digest in
 * [[maxSize]], [[means]] / [[weights]] (0 until [[centroids]]), [[sum]], [[count]], [[max]], [[min]],
 * valid until the next build. [[TDigest]] wraps one result; a grouped accumulator copies it into its
 * own arrays.
 */
private[sparkagg] final class DigestBuilder {
  var maxSize: Int = TDigest.DefaultMaxSize
  var means = new Array[Double](128)
  var weights = new Array[Double](128)
  var centroids = 0
  var sum = 0.0
  var count = 0.0
  var max = Double.NaN
  var min = Double.NaN

  def result(): TDigest = new TDigest(maxSize, java.util.Arrays.copyOf(means, centroids),
    java.util.Arrays.copyOf(weights, centroids), sum, count, max, min)

  /**
   * The digest (`maxSize`, centroids at [from, from + n) of `dMeans` / `dWeights`, `dCount`, `dMin`,
   * `dMax`) with `sorted(0 until length)` (ascending, total order, length > 0) added as one batch:
   * centroids and values taken in mean order, a centroid first when its mean is strictly less.
   */
  def mergeSorted(maxSize: Int, dMeans: Array[Double], dWeights: Array[Double], from: Int, n: Int, dCount: Double,
      dMin: Double, dMax: Double, sorted: Array[Double], length: Int): Unit = {
    val total = dCount + length
    val lo = if (dCount > 0) TDigest.rustMin(dMin, sorted(0)) else sorted(0)
    val hi = if (dCount > 0) TDigest.rustMax(dMax, sorted(length - 1)) else sorted(length - 1)
    begin(maxSize, total, kLimitStart = 2)
    val end = from + n
    var c = from
    var v = 0
    def takeCentroid = c < end && (v >= length || dMeans(c) < sorted(v))
    if (takeCentroid) { start(dMeans(c), dWeights(c)); c += 1 }
    else { start(sorted(v), 1.0); v += 1 }
    while (c < end || v < length) {
      if (takeCentroid) { next(dMeans(c), dWeights(c)); c += 1 }
      else { next(sorted(v), 1.0); v += 1 }
    }
    finish(total, hi, lo)
  }

  // The merge's input: every digest's centroids as one sorted run, in digest order.
  private var inMeans = new Array[Double](128)
  private var inWeights = new Array[Double](128)
  private var inLength = 0
  private var starts = new Array[Int](8)
  private var runs = 0
  private var inCount = 0.0
  private var inLo = 0.0
  private var inHi = 0.0

  def startInputs(): Unit = {
    inLength = 0
    runs = 0
    inCount = 0.0
    inLo = Double.PositiveInfinity
    inHi = Double.NegativeInfinity
  }

  /** Adds the next digest to merge, its centroids at [from, from + n) of `dMeans` / `dWeights`
   *  (interleaved mean, weight pairs from `from` when `dWeights` is null, as a state lists them). A
   *  digest whose count is not above 0 (NaN included) adds nothing, as in DataFusion. */
  def inputRun(dCount: Double, dMin: Double, dMax: Double, dMeans: Array[Double], dWeights: Array[Double], from: Int,
      n: Int): Unit = {
    if (runs == starts.length) starts = java.util.Arrays.copyOf(starts, 2 * runs)
    starts(runs) = inLength
    runs += 1
    if (dCount > 0) {
      inLo = TDigest.rustMin(inLo, dMin)
      inHi = TDigest.rustMax(inHi, dMax)
      inCount += dCount
      if (inLength + n > inMeans.length) {
        val grown = math.max(2 * inMeans.length, inLength + n)
        inMeans = java.util.Arrays.copyOf(inMeans, grown)
        inWeights = java.util.Arrays.copyOf(inWeights, grown)
      }
      if (dWeights != null) {
        System.arraycopy(dMeans, from, inMeans, inLength, n)
        System.arraycopy(dWeights, from, inWeights, inLength, n)
      } else {
        var i = 0
        while (i < n) {
          inMeans(inLength + i) = dMeans(from + 2 * i); inWeights(inLength + i) = dMeans(from + 2 * i + 1); i += 1
        }
      }
      inLength += n
    }
  }

  /** Merges the inputs' runs stably in pairwise rounds, then compresses them in one pass; with no
   *  centroids at all the result is an empty digest of the default size, as in DataFusion. */
  def mergeInputs(maxSize: Int): Unit = {
    if (inLength == 0) {
      this.maxSize = TDigest.DefaultMaxSize
      centroids = 0
      sum = 0.0
      count = 0.0
      max = Double.NaN
      min = Double.NaN
      return
    }
    var perBlock = 1
    while (perBlock < runs) {
      var i = 0
      while (i < runs) {
        if (i + perBlock < runs) {
          val last = if (i + 2 * perBlock < runs) starts(i + 2 * perBlock) else inLength
          mergeRuns(starts(i), starts(i + perBlock), last)
        }
        i += 2 * perBlock
      }
      perBlock *= 2
    }
    begin(maxSize, inCount, kLimitStart = 1)
    start(inMeans(0), inWeights(0))
    var i = 1
    while (i < inLength) { next(inMeans(i), inWeights(i)); i += 1 }
    finish(inCount, inHi, inLo)
  }

  /**
   * The merge of exactly two digests, first `a` then `b` (as [[startInputs]], two [[inputRun]]s and
   * [[mergeInputs]] give it), streamed: their centroids go to the compression pass as the stable merge
   * takes them, without being copied first. Digest `x`'s centroid `i` is mean `xMeans(xFrom + i * stride)`,
   * weight `xWeights(xWeightsFrom + i * stride)`: stride 1 for separate arrays, 2 for a state's interleaved list.
   */
  def mergeTwo(maxSize: Int,
      aCount: Double, aMin: Double, aMax: Double, aN: Int, aMeans: Array[Double], aFrom: Int, aWeights: Array[Double],
      aWeightsFrom: Int, aStride: Int,
      bCount: Double, bMin: Double, bMax: Double, bN: Int, bMeans: Array[Double], bFrom: Int, bWeights: Array[Double],
      bWeightsFrom: Int, bStride: Int): Unit = {
    // A digest whose count is 0 adds nothing, as in DataFusion.
    val na = if (aCount > 0) aN else 0
    val nb = if (bCount > 0) bN else 0
    startInputs()
    if (na + nb == 0) { mergeInputs(maxSize); return }
    var total = 0.0
    var lo = Double.PositiveInfinity
    var hi = Double.NegativeInfinity
    if (aCount > 0) { total += aCount; lo = TDigest.rustMin(lo, aMin); hi = TDigest.rustMax(hi, aMax) }
    if (bCount > 0) { total += bCount; lo = TDigest.rustMin(lo, bMin); hi = TDigest.rustMax(hi, bMax) }
    begin(maxSize, total, kLimitStart = 1)
    var i = 0
    var j = 0
    while (i < na || j < nb) {
      val takeB = j < nb && (i >= na ||
        TDigest.before(bMeans(bFrom + j * bStride), aMeans(aFrom + i * aStride)))
      if (takeB) {
        val m = bMeans(bFrom + j * bStride)
        val w = bWeights(bWeightsFrom + j * bStride)
        if (i + j == 0) start(m, w) else next(m, w)
        j += 1
      } else {
        val m = aMeans(aFrom + i * aStride)
        val w = aWeights(aWeightsFrom + i * aStride)
        if (i + j == 0) start(m, w) else next(m, w)
        i += 1
      }
    }
    finish(total, hi, lo)
  }

  private var tmpMeans = new Array[Double](128)
  private var tmpWeights = new Array[Double](128)

  /** Stable merge of the sorted input runs [first, middle) and [middle, last). */
  private def mergeRuns(first: Int, middle: Int, last: Int): Unit = {
    if (last - first > tmpMeans.length) {
      tmpMeans = new Array[Double](math.max(2 * tmpMeans.length, last - first))
      tmpWeights = new Array[Double](tmpMeans.length)
    }
    var i = first
    var j = middle
    var k = 0
    while (i < middle && j < last) {
      if (TDigest.before(inMeans(j), inMeans(i))) { tmpMeans(k) = inMeans(j); tmpWeights(k) = inWeights(j); j += 1 }
      else { tmpMeans(k) = inMeans(i); tmpWeights(k) = inWeights(i); i += 1 }
      k += 1
    }
    while (i < middle) { tmpMeans(k) = inMeans(i); tmpWeights(k) = inWeights(i); i += 1; k += 1 }
    while (j < last) { tmpMeans(k) = inMeans(j); tmpWeights(k) = inWeights(j); j += 1; k += 1 }
    System.arraycopy(tmpMeans, 0, inMeans, first, k)
    System.arraycopy(tmpWeights, 0, inWeights, first, k)
  }

  // The compression pass both merges share: inputs arrive in mean order; each joins the current
  // centroid while the weight so far stays within the next k-limit's share of `total`, else the
  // current centroid is closed. `kLimitStart` is where the k-limit counter stands after the first limit
  // (DataFusion's two merges differ there).
  private var total = 0.0
  private var kLimit = 0L
  private var qLimitTimesCount = 0.0
  private var currMean = 0.0
  private var currWeight = 0.0
  private var weightSoFar = 0.0
  private var sumsToMerge = 0.0
  private var weightsToMerge = 0.0

  private def begin(maxSize: Int, total: Double, kLimitStart: Int): Unit = {
    this.maxSize = maxSize
    this.total = total
    centroids = 0
    sum = 0.0
    kLimit = kLimitStart
    qLimitTimesCount = DigestBuilder.kToQ(1, maxSize) * total
    sumsToMerge = 0.0
    weightsToMerge = 0.0
  }

  private def start(mean: Double, weight: Double): Unit = { currMean = mean; currWeight = weight; weightSoFar = weight }

  private def next(mean: Double, weight: Double): Unit = {
    val nextSum = mean * weight
    weightSoFar += weight
    if (weightSoFar <= qLimitTimesCount) {
      sumsToMerge += nextSum
      weightsToMerge += weight
    } else {
      close()
      qLimitTimesCount = DigestBuilder.kToQ(kLimit, maxSize) * total
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
    if (centroids == means.length) {
      means = java.util.Arrays.copyOf(means, 2 * centroids)
      weights = java.util.Arrays.copyOf(weights, 2 * centroids)
    }
    means(centroids) = currMean
    weights(centroids) = currWeight
    centroids += 1
    sumsToMerge = 0.0
    weightsToMerge = 0.0
  }

  private def finish(count: Double, max: Double, min: Double): Unit = {
    close()
    // Sorted by mean, stably (insertion sort: the pass nearly always emits them in order already).
    val m = means
    val w = weights
    val n = centroids
    var i = 1
    while (i < n) {
      val mi = m(i)
      val wi = w(i)
      var j = i - 1
      while (j >= 0 && TDigest.before(mi, m(j))) { m(j + 1) = m(j); w(j + 1) = w(j); j -= 1 }
      m(j + 1) = mi
      w(j + 1) = wi
      i += 1
    }
    this.count = count
    this.max = max
    this.min = min
  }
}

private object DigestBuilder {
  def kToQ(k: Long, d: Int): Double = {
    val kd = k.toDouble / d.toDouble
    if (kd >= 0.5) { val base = 1.0 - kd; 1.0 - 2.0 * base * base }
    else 2.0 * kd * kd
  }
}
