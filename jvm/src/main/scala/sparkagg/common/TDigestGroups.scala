package sparkagg.common

import org.apache.spark.sql.types._
import sparkagg.api._

/**
 * The t-digest functions' GroupsAccumulator: every group's digest and not yet merged values in shared
 * primitive arrays, no object per group. It does the row accumulators' arithmetic in their order, so
 * results and states equal those of the row accumulators (functions/approx_percentile.scala; `weighted`:
 * with_weight's) to the bit, which `newAccumulator` makes: a group's kept rows gather until 8192 of them have come
 * (NULLs counted), then its values are sorted and merged into its digest (with_weight: merged as one-value digests, in
 * arrival order); a merge, a state or a result first does the same with what has gathered.
 *
 * Layout: a group's centroids sit at [start, start + length) of two arrays all groups share; a new
 * digest takes its old place when it fits, else the end, and the arrays are compacted when half of them
 * is dead. Gathered values form a linked list per group through one pool, newest first (so that adding
 * one touches only its group's head), whose freed slots are reused.
 */
private[sparkagg] final class TDigestGroups(fraction: Double, maxSize: Int, returnType: DataType, result: Double => Any,
    weighted: Boolean, newAccumulator: () => Accumulator)
  extends GroupsAccumulator {
  private val returnsDouble = returnType == DoubleType
  private val builder = new DigestBuilder

  // Each group's digest.
  private val sizes = new IntVector(maxSize)
  private val sums = new DoubleVector
  private val counts = new DoubleVector
  private val maxs = new DoubleVector(Double.NaN)
  private val mins = new DoubleVector(Double.NaN)
  private val starts = new IntVector
  private val lengths = new IntVector
  private var means = new Array[Double](TDigestGroups.Initial)
  private var weights = new Array[Double](TDigestGroups.Initial)
  private var used = 0
  private var live = 0

  // Each group's gathered values (with_weight: and weights), and how many kept rows since its last merge.
  private val heads = new IntVector(-1)
  private val rows = new IntVector
  private var poolValues = new Array[Double](TDigestGroups.Initial)
  private var poolWeights = if (weighted) new Array[Double](TDigestGroups.Initial) else null
  private var poolNext = new Array[Int](TDigestGroups.Initial)
  private var pooled = 0
  private var free = -1

  // A group's gathered values (and weights) while it is merged.
  private var gathered = new Array[Double](TDigestGroups.Initial)
  private var gatheredWeights = new Array[Double](TDigestGroups.Initial)

  private def growGathered(capacity: Int): Unit = {
    gathered = java.util.Arrays.copyOf(gathered, capacity)
    gatheredWeights = java.util.Arrays.copyOf(gatheredWeights, capacity)
  }

  private def resize(totalGroups: Int): Unit = {
    Seq(sizes, starts, lengths, heads, rows).foreach(_.resize(totalGroups))
    Seq(sums, maxs, mins).foreach(_.resize(totalGroups))
    counts.resize(totalGroups)
  }

  private def gather(g: Int, value: Double, weight: Double): Unit = {
    val slot = if (free >= 0) { val s = free; free = poolNext(s); s }
    else {
      if (pooled == poolNext.length) {
        val grown = 2 * pooled
        poolValues = LargeArrays.copyOf(poolValues, grown)
        if (weighted) poolWeights = LargeArrays.copyOf(poolWeights, grown)
        poolNext = LargeArrays.copyOf(poolNext, grown)
      }
      pooled += 1
      pooled - 1
    }
    poolValues(slot) = value
    if (weighted) poolWeights(slot) = weight
    poolNext(slot) = heads.array(g)
    heads.array(g) = slot
  }

  /** Merges group g's gathered values into its digest, as the row accumulator's flush. */
  private def flush(g: Int): Unit = if (mergeGathered(g)) store(g)

  /** The flush's merge, its digest left in the builder: false when group g gathered no value. */
  private def mergeGathered(g: Int): Boolean = rows.array(g) > 0 && {
    rows.array(g) = 0
    val head = heads.array(g)
    head >= 0 && {
      var m = 0
      var last = head
      var slot = head
      while (slot >= 0) {
        if (m == gathered.length) growGathered(2 * m)
        gathered(m) = poolValues(slot)
        if (weighted) gatheredWeights(m) = poolWeights(slot)
        m += 1
        last = slot
        slot = poolNext(slot)
      }
      poolNext(last) = free
      free = head
      heads.array(g) = -1
      val start = starts.array(g)
      val length = lengths.array(g)
      if (weighted) {
        // One-value digests merge in arrival order (it decides ties): the list holds them newest first.
        reverse(m)
        builder.startInputs()
        var i = 0
        while (i < m) {
          builder.inputRun(gatheredWeights(i), gathered(i), gathered(i), gathered, gatheredWeights, i, 1); i += 1
        }
        builder.inputRun(counts.array(g), mins.array(g), maxs.array(g), means, weights, start, length)
        builder.mergeInputs(maxSize)
      } else {
        TDigestGroups.sort(gathered, m)
        builder.mergeSorted(sizes.array(g), means, weights, start, length, counts.array(g), mins.array(g),
          maxs.array(g), gathered, m)
      }
      true
    }
  }

  private def reverse(m: Int): Unit = {
    var i = 0
    var j = m - 1
    while (i < j) {
      val v = gathered(i); gathered(i) = gathered(j); gathered(j) = v
      val w = gatheredWeights(i); gatheredWeights(i) = gatheredWeights(j); gatheredWeights(j) = w
      i += 1
      j -= 1
    }
  }

  /** The builder's digest becomes group g's. */
  private def store(g: Int): Unit = {
    val n = builder.centroids
    val old = lengths.array(g)
    if (n > old) {
      if (used + n > means.length) makeRoom(n)
      starts.array(g) = used
      used += n
    }
    System.arraycopy(builder.means, 0, means, starts.array(g), n)
    System.arraycopy(builder.weights, 0, weights, starts.array(g), n)
    live += n - old
    lengths.array(g) = n
    sizes.array(g) = builder.maxSize
    sums.array(g) = builder.sum
    counts.array(g) = builder.count
    maxs.array(g) = builder.max
    mins.array(g) = builder.min
  }

  /** Room for `n` more centroids at the end: the arrays doubled while at least half of them is live,
   *  else the live centroids moved to the front. Either leaves room for as many centroids again as are
   *  live, so the copies cost O(1) per centroid stored. */
  private def makeRoom(n: Int): Unit = {
    if (2 * live >= used) {
      val capacity = math.max(2 * means.length, used + n)
      means = LargeArrays.copyOf(means, capacity)
      weights = LargeArrays.copyOf(weights, capacity)
      return
    }
    val capacity = math.max(means.length, 2 * (live + n))
    val (m, w) = (LargeArrays.zeroDoubles(capacity), LargeArrays.zeroDoubles(capacity))
    var at = 0
    var g = 0
    while (g < starts.length) {
      val length = lengths.array(g)
      System.arraycopy(means, starts.array(g), m, at, length)
      System.arraycopy(weights, starts.array(g), w, at, length)
      starts.array(g) = at
      at += length
      g += 1
    }
    LargeArrays.release(means)
    LargeArrays.release(weights)
    means = m
    weights = w
    used = at
  }

  def updateBatch(values: Columns, groupIndices: Array[Int], filter: Option[Column], totalGroups: Int): Unit = {
    resize(totalGroups)
    val value = values.column(0)
    val weight = if (weighted) values.column(1) else null
    val f = filter.orNull
    var i = 0
    while (i < values.numRows) {
      if (GroupsAccumulator.keep(f, i)) {
        val g = groupIndices(i)
        // DataFusion 55 skips a weighted row whose weight is not positive (or NaN), as it skips NULLs.
        if (!value.isNullAt(i) && (weight == null || !weight.isNullAt(i) && weight.getDouble(i) > 0))
          gather(g, value.getDouble(i), if (weight == null) 0.0 else weight.getDouble(i))
        rows.array(g) += 1
        if (rows.array(g) == TDigest.BatchSize) flush(g)
      }
      i += 1
    }
  }

  def mergeBatch(states: Columns, groupIndices: Array[Int], filter: Option[Column], totalGroups: Int): Unit = {
    resize(totalGroups)
    val Seq(size, _, count, max, min, centroids) = (0 until 6).map(states.column)
    val lists = new CentroidLists(centroids)
    val f = filter.orNull
    var i = 0
    while (i < states.numRows) {
      if (GroupsAccumulator.keep(f, i)) {
        val g = groupIndices(i)
        flush(g)
        val hi = max.getDouble(i)
        val lo = min.getDouble(i)
        lists.read(i)
        val flat = lists.values
        val from = lists.from
        val length = lists.length
        // The state's digest first, then the group's (DataFusion's order); non-finite bounds read as infinite.
        builder.mergeTwo(
          size.getLong(i).toInt,
          count.getDouble(i),
          if (java.lang.Double.isFinite(lo)) lo else Double.NegativeInfinity,
          if (java.lang.Double.isFinite(hi)) hi else Double.PositiveInfinity,
          length / 2,
          flat,
          from,
          flat,
          from + 1,
          2,
          counts.array(g),
          mins.array(g),
          maxs.array(g),
          lengths.array(g),
          means,
          starts.array(g),
          weights,
          starts.array(g),
          1
        )
        store(g)
      }
      i += 1
    }
  }

  /** How many groups `emit` emits, each of them flushed. */
  private def flushed(emit: EmitTo): Int = {
    val n = emit.count(starts.length)
    var g = 0
    while (g < n) { flush(g); g += 1 }
    n
  }

  private def drop(emit: EmitTo): Unit = {
    val n = emit.count(starts.length)
    var g = 0
    while (g < n) { live -= lengths.array(g); g += 1 }
    Seq(sizes, starts, lengths, heads, rows).foreach(_.drop(emit))
    Seq(sums, maxs, mins).foreach(_.drop(emit))
    counts.drop(emit)
    if (starts.length == 0) {
      Seq(means, weights, poolValues, poolWeights, poolNext).foreach(LargeArrays.release)
      means = new Array[Double](TDigestGroups.Initial)
      weights = new Array[Double](TDigestGroups.Initial)
      used = 0
      poolValues = new Array[Double](TDigestGroups.Initial)
      if (weighted) poolWeights = new Array[Double](TDigestGroups.Initial)
      poolNext = new Array[Int](TDigestGroups.Initial)
      pooled = 0
      free = -1
    }
  }

  def evaluate(emit: EmitTo): Column = {
    val n = flushed(emit)
    def estimate(g: Int) = TDigest.quantile(means, weights, starts.array(g), lengths.array(g), counts.array(g),
      mins.array(g), maxs.array(g), fraction)
    val out = if (returnsDouble) {
      // The usual result type, unboxed; a group without values is NULL.
      val (values, validity) =
        (LargeArrays.lend(LargeArrays.doubles(n)), LargeArrays.lend(LargeArrays.zeroLongs(Validity.words(n))))
      var g = 0
      while (g < n) {
        if (counts.array(g) > 0) { values(g) = estimate(g); Validity.set(validity, g) }
        else values(g) = 0.0
        g += 1
      }
      new DoubleColumn(values, validity, n)
    } else new ObjectColumn(Array.tabulate[Any](n)(g => if (counts.array(g) > 0) result(estimate(g)) else null))
    drop(emit)
    out
  }

  /** The emitted groups' states; a group's gathered values are merged straight into its state, not
   *  stored first (at the end of a partial aggregation that is every group). Their arrays are every
   *  element written, recycled and lent to the emission's loan, as the group vectors' are. */
  def state(emit: EmitTo): Array[Column] = {
    val n = emit.count(starts.length)
    def doubles() = LargeArrays.lend(LargeArrays.doubles(n))
    val (maxSizes, stateSums, stateCounts, stateMaxs, stateMins) =
      (LargeArrays.lend(LargeArrays.longs(n)), doubles(), doubles(), doubles(), doubles())
    val offsets = LargeArrays.lentOffsets(n)
    // A group's centroids are at most its old ones and its gathered values, so live centroids and pool
    // slots bound the lot: two doubles each.
    val flat = LargeArrays.lend(LargeArrays.doubles(2 * (live + pooled)))
    var g = 0
    while (g < n) {
      val merged = mergeGathered(g)
      val m = if (merged) builder.means else means
      val w = if (merged) builder.weights else weights
      val from = if (merged) 0 else starts.array(g)
      val length = if (merged) builder.centroids else lengths.array(g)
      var i = 0
      var at = offsets(g)
      while (i < length) { flat(at) = m(from + i); flat(at + 1) = w(from + i); i += 1; at += 2 }
      offsets(g + 1) = at
      if (merged) {
        maxSizes(g) = builder.maxSize
        stateSums(g) = builder.sum
        stateCounts(g) = builder.count
        stateMaxs(g) = builder.max
        stateMins(g) = builder.min
      } else {
        maxSizes(g) = sizes.array(g)
        stateSums(g) = sums.array(g)
        stateCounts(g) = counts.array(g)
        stateMaxs(g) = maxs.array(g)
        stateMins(g) = mins.array(g)
      }
      g += 1
    }
    drop(emit)
    Array[Column](
      new LongColumn(maxSizes, null, n),
      new DoubleColumn(stateSums, null, n),
      new DoubleColumn(stateCounts, null, n),
      new DoubleColumn(stateMaxs, null, n),
      new DoubleColumn(stateMins, null, n),
      new DoubleListColumn(flat, offsets, null, n)
    )
  }

  /** Each kept row's one-value digest (a NULL or filtered row: an empty digest). */
  override def convertToState(values: Columns, filter: Option[Column]): Array[Column] = {
    new AccumulatorGroups(newAccumulator).convertToState(values, filter)
  }
  override def supportsConvertToState: Boolean = true

  def size: Long = Seq(sizes, starts, lengths, heads, rows).map(_.size).sum +
    Seq(sums, maxs, mins).map(_.size).sum + counts.size + 16L * means.length +
    (if (weighted) 20L else 12L) * poolNext.length + 16L * gathered.length
}

private object TDigestGroups {
  val Initial = 256

  /** Sorts `values(0 until n)` in the total order of Arrays.sort (-0.0 before 0.0, NaN last), with the
   *  result Arrays.sort gives; a few values, a group's usual lot, by insertion, sparing its set-up. */
  def sort(values: Array[Double], n: Int): Unit =
    if (n > 16) java.util.Arrays.sort(values, 0, n)
    else {
      var i = 1
      while (i < n) {
        val v = values(i)
        var j = i - 1
        while (j >= 0 && TDigest.before(v, values(j))) { values(j + 1) = values(j); j -= 1 }
        values(j + 1) = v
        i += 1
      }
    }
}

/**
 * A state column's centroid lists, one row at a time: `values` from `from`, `length` elements (mean,
 * weight pairs), read in place when the column lays its lists end to end, else copied out of the row's list.
 */
private[sparkagg] final class CentroidLists(column: Column) {
  private val endToEnd = column match {
    case c: DoubleListColumn if c.elementValidity == null => c
    case _ => null
  }
  private var copied = new Array[Double](16)
  var values: Array[Double] = copied
  var from = 0
  var length = 0

  def read(row: Int): Unit =
    if (endToEnd != null) { values = endToEnd.values; from = endToEnd.start(row); length = endToEnd.length(row) }
    else {
      val list = column.getList(row)
      length = list.numElements
      if (length > copied.length) copied = new Array[Double](math.max(length, 2 * copied.length))
      var j = 0
      while (j < length) {
        if (list.isNullAt(j)) throw new IllegalStateException("a t-digest state has no NULL centroids")
        copied(j) = list.getDouble(j)
        j += 1
      }
      values = copied
      from = 0
    }
}
