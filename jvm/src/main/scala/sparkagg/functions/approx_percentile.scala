package sparkagg.functions

import org.apache.spark.sql.types._
import sparkagg.api._

/**
 * The t-digest functions ([[TDigest]]): approx_percentile_cont, approx_percentile_cont_with_weight and
 * approx_median. The value is read as a double; the result has the input's type, integers truncated
 * toward zero (decimals are read and returned as doubles, as DataFusion coerces them). NULLs are
 * skipped; NULL on empty input. Rows are added as DataFusion adds a batch: gathered, sorted and merged
 * into the digest every 8192 rows, so one partition gives DataFusion's result exactly; across
 * partitions the result is within about 1% of the true rank.
 * State (DataFusion's): max_size, sum, count, max, min, centroids (mean, weight, mean, weight, ...).
 * `_merge` and `_finalize` return a double: the state does not say which type made it.
 */
private[functions] object ApproxPercentile {
  val state: StructType = StructType(Seq(
    StructField("max_size", LongType), StructField("sum", DoubleType), StructField("count", LongType),
    StructField("max", DoubleType), StructField("min", DoubleType),
    StructField("centroids", ArrayType(DoubleType, containsNull = true))))

  /** The argument types and the result type, and how a double estimate becomes the result. */
  def resultOf(t: DataType): Option[(DataType, Double => Any)] = t match {
    case ByteType => Some(ByteType -> (q => math.max(Byte.MinValue, math.min(Byte.MaxValue, q.toInt)).toByte))
    case ShortType => Some(ShortType -> (q => math.max(Short.MinValue, math.min(Short.MaxValue, q.toInt)).toShort))
    case IntegerType => Some(IntegerType -> (q => q.toInt))
    case LongType => Some(LongType -> (q => q.toLong))
    case FloatType => Some(FloatType -> (q => q.toFloat))
    case DoubleType | NullType | _: DecimalType => Some(DoubleType -> (q => q))
    case _ => None
  }

  def percentile(p: Arg): Either[String, Double] = p.constant.collect {
    case n: java.lang.Number if Types.isNumeric(p.dataType) => n.doubleValue
    case d: Decimal => d.toDouble
  } match {
    case Some(f) if f >= 0 && f <= 1 => Right(f)
    case Some(f) => Left(s"expects a percentile in [0, 1]; got $f")
    case None => Left("expects a constant percentile p in [0, 1]")
  }

  def maxSize(m: Option[Arg]): Either[String, Int] = m match {
    case None => Right(TDigest.DefaultMaxSize)
    case Some(a) => a.constant match {
      case Some(n: java.lang.Number) if Types.isIntegral(a.dataType) && n.longValue > 0 && n.longValue <= Int.MaxValue =>
        Right(n.intValue)
      case _ => Left("expects max_size, the t-digest's number of centroids, as a constant integer > 0")
    }
  }

  /** A state's arguments: a double value, then the parameters (the state forgets the input type). */
  def argumentsOf(state: StructType, values: Int, parameters: Seq[Arg]): Option[Seq[Arg]] =
    if (StateShapes.sameShape(state, this.state)) Some(Seq.fill(values)(Arg(DoubleType, nullable = true)) ++ parameters)
    else None

  /** Splits (value, [weight,] p [, max_size] [, descending]) after `values` leading value arguments. */
  def bind(name: String, args: Seq[Arg], values: Int, weighted: Boolean): Either[String, Bound] = {
    val (leading, rest) = args.splitAt(values)
    val descending = rest.lastOption.filter(_.dataType == BooleanType)
    val parameters = if (descending.isDefined) rest.dropRight(1) else rest
    val usage = if (weighted) "(expr, weight, p [, max_size])" else "(expr, p [, max_size])"
    (leading.map(_.dataType), parameters) match {
      case (types, Seq(p, m @ _*)) if types.size == values && m.size <= 1 && types.forall(resultOf(_).isDefined) =>
        for {
          fraction <- percentile(p)
          size <- maxSize(m.headOption)
        } yield {
          val f = if (descending.flatMap(_.constant).contains(true)) 1 - fraction else fraction
          bound(types.head, f, size, weighted, coerceTo = Seq.fill(values)(DoubleType) ++ rest.map(_.dataType))
        }
      case _ => Left(s"expects $usage with numeric expr${if (weighted) " and weight" else ""}, a constant p in " +
        "[0, 1] and a constant integer max_size > 0")
    }
  }

  /** The bound function over values of type `t` (one accepted by [[resultOf]]) at quantile `fraction`. */
  def bound(t: DataType, fraction: Double, size: Int, weighted: Boolean, coerceTo: Seq[DataType]): Bound = {
    val (returnType, result) = resultOf(t).get
    Bound(returnType, state,
      () => if (weighted) new WeightedApproxPercentileAccumulator(fraction, size, result)
        else new ApproxPercentileAccumulator(fraction, size, result),
      coerceTo = coerceTo,
      newGroupsAccumulator = Some(() => new TDigestGroups(fraction, size, returnType, result, weighted)),
      packing = Some(TDigestPacking))
  }
}

/**
 * approx_percentile_cont(x, p [, max_size]), also written approx_percentile_cont(p [, max_size]) WITHIN
 * GROUP (ORDER BY x [DESC]) (DESC reads 1 - p): the approximate p-th percentile of x by a t-digest of
 * at most about max_size (default 100) centroids.
 */
object ApproxPercentileCont extends FunctionDef {
  val name = "approx_percentile_cont"
  val signature = "(numeric, p: constant in [0, 1] [, max_size: constant integer > 0]) -> same type; " +
    "or (p [, max_size]) WITHIN GROUP (ORDER BY numeric [DESC])"
  override val withinGroup: WithinGroup = WithinGroup.KeyAsValue(mandatory = false)
  val doc = FunctionDoc(
    usage = "_FUNC_(expr, p [, max_size]) - The approximate p-th percentile of expr, from a t-digest of at " +
      "most about max_size (default 100) centroids; in the type of expr (integers truncated). Also " +
      "_FUNC_(p [, max_size]) WITHIN GROUP (ORDER BY expr [DESC]).",
    arguments = Seq("expr" -> Types.Numeric, "p" -> "a constant in [0, 1]",
      "max_size" -> "a constant integer > 0, default 100"),
    examples = Seq(
      "SELECT _FUNC_(col, 0.5) FROM VALUES (1.0D), (2.0D), (3.0D), (4.0D), (NULL) AS tab(col)" -> "2.5",
      "SELECT _FUNC_(col, 0.5) FROM VALUES (1), (2), (3), (4) AS tab(col)" -> "2",
      "SELECT _FUNC_(0.75) WITHIN GROUP (ORDER BY col DESC) FROM VALUES (1.0D), (2.0D), (3.0D), (4.0D) AS tab(col)" ->
        "1.5"))

  def bind(args: Seq[Arg], ctx: BindContext): Either[String, Bound] =
    ApproxPercentile.bind(name, args, values = 1, weighted = false)
  override def argumentsOf(state: StructType, parameters: Seq[Arg]): Option[Seq[Arg]] =
    ApproxPercentile.argumentsOf(state, 1, parameters)
}

/**
 * approx_percentile_cont_with_weight(x, weight, p [, max_size]), also written
 * approx_percentile_cont_with_weight(weight, p [, max_size]) WITHIN GROUP (ORDER BY x [DESC]): as
 * approx_percentile_cont, each value a centroid of its weight. As in DataFusion the digest's count is
 * the number of rows, which ranks are taken against. Rows whose value or weight is NULL are skipped.
 */
object ApproxPercentileContWithWeight extends FunctionDef {
  val name = "approx_percentile_cont_with_weight"
  val signature = "(numeric, weight: numeric, p: constant in [0, 1] [, max_size: constant integer > 0]) -> same " +
    "type; or (weight, p [, max_size]) WITHIN GROUP (ORDER BY numeric [DESC])"
  override val withinGroup: WithinGroup = WithinGroup.KeyAsValue(mandatory = false)
  val doc = FunctionDoc(
    usage = "_FUNC_(expr, weight, p [, max_size]) - The approximate p-th percentile of expr, each value weighted " +
      "by weight. Also _FUNC_(weight, p [, max_size]) WITHIN GROUP (ORDER BY expr [DESC]).",
    arguments = Seq("expr" -> Types.Numeric, "weight" -> Types.Numeric, "p" -> "a constant in [0, 1]",
      "max_size" -> "a constant integer > 0, default 100"),
    examples = Seq(
      "SELECT _FUNC_(col, w, 0.5) FROM VALUES (1.0D, 1), (2.0D, 1), (3.0D, 10) AS tab(col, w)" -> "2.0",
      "SELECT _FUNC_(w, 0.9) WITHIN GROUP (ORDER BY col) FROM VALUES (1, 1), (2, 1), (3, 10) AS tab(col, w)" -> "3"))

  // WITHIN GROUP puts the key first: (x, weight, p [, max_size], descending), as the direct call.
  def bind(args: Seq[Arg], ctx: BindContext): Either[String, Bound] =
    ApproxPercentile.bind(name, args, values = 2, weighted = true)
  override def argumentsOf(state: StructType, parameters: Seq[Arg]): Option[Seq[Arg]] =
    ApproxPercentile.argumentsOf(state, 2, parameters)
}

/** approx_median(x): approx_percentile_cont(x, 0.5). */
object ApproxMedian extends FunctionDef {
  val name = "approx_median"
  val signature = s"(${Types.Numeric}) -> same type"
  val doc = FunctionDoc(
    usage = "_FUNC_(expr) - The approximate median of expr, by a t-digest of about 100 centroids; in the type of expr.",
    arguments = Seq("expr" -> Types.Numeric),
    examples = Seq(
      "SELECT _FUNC_(col) FROM VALUES (1.0D), (2.0D), (9.0D) AS tab(col)" -> "2.0",
      "SELECT _FUNC_(col) FROM VALUES (1), (2), (3), (4) AS tab(col)" -> "2"))

  def bind(args: Seq[Arg], ctx: BindContext): Either[String, Bound] = args.map(_.dataType) match {
    case Seq(t) if ApproxPercentile.resultOf(t).isDefined =>
      Right(ApproxPercentile.bound(t, 0.5, TDigest.DefaultMaxSize, weighted = false, coerceTo = Seq(DoubleType)))
    case _ => Left(s"expects one argument of type ${Types.Numeric}")
  }
  override def argumentsOf(state: StructType, parameters: Seq[Arg]): Option[Seq[Arg]] =
    ApproxPercentile.argumentsOf(state, 1, parameters)
}

/** The digest, and the values not yet in it: added in batches of 8192 as DataFusion does. */
final class ApproxPercentileAccumulator(fraction: Double, maxSize: Int, result: Double => Any) extends Accumulator {
  private var digest = TDigest.empty(maxSize)
  private var pending = new Array[Double](16)
  private var length = 0

  private var rowsInBatch = 0

  def update(args: Values): Unit = {
    if (!args.isNullAt(0)) {
      if (length == pending.length) pending = java.util.Arrays.copyOf(pending, length * 2)
      pending(length) = args.getDouble(0)
      length += 1
    }
    // A batch is 8192 rows, NULLs included: DataFusion drops the NULLs of a batch, then merges the rest.
    rowsInBatch += 1
    if (rowsInBatch == ApproxPercentileAccumulator.BatchSize) flush()
  }

  private def flush(): Unit = {
    if (length > 0) {
      java.util.Arrays.sort(pending, 0, length)
      digest = digest.mergeSorted(pending, length)
    }
    length = 0
    rowsInBatch = 0
  }

  /** Merges `digests` and then this one into one digest (DataFusion's order). */
  private def mergeFirst(digests: Seq[TDigest]): Unit = { flush(); digest = TDigest.merge(digests :+ digest) }

  /** Merges one-value digests (with_weight's rows) and then this one, as [[mergeFirst]] would. */
  private[functions] def mergeSingles(means: Array[Double], weights: Array[Double], length: Int): Unit = {
    flush()
    digest = TDigest.mergeSingles(maxSize, means, weights, length, digest)
  }

  def merge(state: Values): Unit = {
    val list = state.getList(5)
    val flat = Array.tabulate(list.numElements)(list.getDouble)
    mergeFirst(Seq(TDigest.fromState(state.getLong(0).toInt, state.getDouble(1), state.getLong(2),
      state.getDouble(3), state.getDouble(4), flat)))
  }

  def state(): Array[Any] = {
    flush()
    Array(digest.maxSize.toLong, digest.sum, digest.count, digest.max, digest.min, digest.flatCentroids)
  }

  def evaluate(): Any = { flush(); if (digest.count == 0) null else result(digest.quantile(fraction)) }
  def size: Long = 48 + digest.bytes + 8L * pending.length
}

object ApproxPercentileAccumulator {
  /** DataFusion's default batch size: how many values it sorts and merges into a digest at once. */
  val BatchSize = 8192
}

/** with_weight: each row a one-centroid digest, merged into the digest a batch at a time. */
final class WeightedApproxPercentileAccumulator(fraction: Double, maxSize: Int, result: Double => Any)
  extends Accumulator {
  private val inner = new ApproxPercentileAccumulator(fraction, maxSize, result)
  // The batch's rows as primitive (mean, weight) pairs: no digest object per row.
  private var means = new Array[Double](16)
  private var weights = new Array[Double](16)
  private var length = 0
  private var rowsInBatch = 0

  private def flush(): Unit = {
    if (length > 0) inner.mergeSingles(means, weights, length)
    length = 0
    rowsInBatch = 0
  }

  def update(args: Values): Unit = {
    if (!args.isNullAt(0) && !args.isNullAt(1)) {
      if (length == means.length) {
        means = java.util.Arrays.copyOf(means, 2 * length)
        weights = java.util.Arrays.copyOf(weights, 2 * length)
      }
      means(length) = args.getDouble(0)
      weights(length) = args.getDouble(1)
      length += 1
    }
    rowsInBatch += 1
    if (rowsInBatch == ApproxPercentileAccumulator.BatchSize) flush()
  }
  def merge(state: Values): Unit = { flush(); inner.merge(state) }
  def state(): Array[Any] = { flush(); inner.state() }
  def evaluate(): Any = { flush(); inner.evaluate() }
  def size: Long = inner.size + 16L * means.length
}

/**
 * The t-digest functions' GroupsAccumulator: every group's digest and not yet merged values in shared
 * primitive arrays, no object per group. It does the row accumulators' arithmetic in their order, so
 * results and states equal [[ApproxPercentileAccumulator]]'s (or, `weighted`, [[WeightedApproxPercentileAccumulator]]'s)
 * to the bit: a group's kept rows gather until 8192 of them have come (NULLs counted), then its values
 * are sorted and merged into its digest (with_weight: merged as one-value digests, in arrival order); a
 * merge, a state or a result first does the same with what has gathered.
 *
 * Layout: a group's centroids sit at [start, start + length) of two arrays all groups share; a new
 * digest takes its old place when it fits, else the end, and the arrays are compacted when half of them
 * is dead. Gathered values form a linked list per group through one pool, newest first (so that adding
 * one touches only its group's head), whose freed slots are reused.
 */
private[functions] final class TDigestGroups(fraction: Double, maxSize: Int, returnType: DataType, result: Double => Any,
    weighted: Boolean) extends GroupsAccumulator {
  private val returnsDouble = returnType == DoubleType
  private val builder = new DigestBuilder

  // Each group's digest.
  private val sizes = new IntVector(maxSize)
  private val sums = new DoubleVector
  private val counts = new LongVector
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
    val slot = if (free >= 0) { val s = free; free = poolNext(s); s } else {
      if (pooled == poolNext.length) {
        val grown = 2 * pooled
        poolValues = java.util.Arrays.copyOf(poolValues, grown)
        if (weighted) poolWeights = java.util.Arrays.copyOf(poolWeights, grown)
        poolNext = java.util.Arrays.copyOf(poolNext, grown)
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
        while (i < m) { builder.inputRun(1, gathered(i), gathered(i), gathered, gatheredWeights, i, 1); i += 1 }
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
      means = java.util.Arrays.copyOf(means, capacity)
      weights = java.util.Arrays.copyOf(weights, capacity)
      return
    }
    val capacity = math.max(means.length, 2 * (live + n))
    val (m, w) = (new Array[Double](capacity), new Array[Double](capacity))
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
        if (!value.isNullAt(i) && (weight == null || !weight.isNullAt(i)))
          gather(g, value.getDouble(i), if (weight == null) 0.0 else weight.getDouble(i))
        rows.array(g) += 1
        if (rows.array(g) == ApproxPercentileAccumulator.BatchSize) flush(g)
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
        builder.mergeTwo(size.getLong(i).toInt,
          count.getLong(i), if (java.lang.Double.isFinite(lo)) lo else Double.NegativeInfinity,
          if (java.lang.Double.isFinite(hi)) hi else Double.PositiveInfinity, length / 2, flat, from, flat, from + 1, 2,
          counts.array(g), mins.array(g), maxs.array(g), lengths.array(g), means, starts.array(g), weights,
          starts.array(g), 1)
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
    Seq(sizes, starts, lengths, heads, rows).foreach(_.emit(emit))
    Seq(sums, maxs, mins).foreach(_.emit(emit))
    counts.emit(emit)
    if (starts.length == 0) {
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
      val (values, validity) = (new Array[Double](n), new Array[Long](Validity.words(n)))
      var g = 0
      while (g < n) { if (counts.array(g) > 0) { values(g) = estimate(g); Validity.set(validity, g) }; g += 1 }
      new DoubleColumn(values, validity, n)
    } else new ObjectColumn(Array.tabulate[Any](n)(g => if (counts.array(g) > 0) result(estimate(g)) else null))
    drop(emit)
    out
  }

  /** The emitted groups' states; a group's gathered values are merged straight into its state, not
   *  stored first (at the end of a partial aggregation that is every group). */
  def state(emit: EmitTo): Array[Column] = {
    val n = emit.count(starts.length)
    val (maxSizes, stateSums, stateCounts, stateMaxs, stateMins) =
      (new Array[Long](n), new Array[Double](n), new Array[Long](n), new Array[Double](n), new Array[Double](n))
    val offsets = new Array[Int](n + 1)
    // A group's centroids are at most its old ones and its gathered values, so live centroids and pool
    // slots bound the lot: two doubles each.
    val flat = new Array[Double](2 * (live + pooled))
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
    Array[Column](new LongColumn(maxSizes, null, n), new DoubleColumn(stateSums, null, n),
      new LongColumn(stateCounts, null, n), new DoubleColumn(stateMaxs, null, n), new DoubleColumn(stateMins, null, n),
      new DoubleListColumn(flat, offsets, null, n))
  }

  /** Each kept row's one-value digest (a NULL or filtered row: an empty digest). */
  override def convertToState(values: Columns, filter: Option[Column]): Array[Column] = {
    val perRow = new AccumulatorGroups(() =>
      if (weighted) new WeightedApproxPercentileAccumulator(fraction, maxSize, result)
      else new ApproxPercentileAccumulator(fraction, maxSize, result))
    perRow.convertToState(values, filter)
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
private[functions] final class CentroidLists(column: Column) {
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

/**
 * The t-digest state packed for the grouped operator's exchange. A partial state mostly holds a few
 * values, each a centroid of weight 1, whose sum, min and max the centroids give again; at 1M groups
 * the six fields (about 120 bytes a row) became the shuffle's largest cost. A packed state is a flags
 * byte, then max_size, then count, sum, min and max unless a flag says they are left out, then the
 * centroid list's length and its elements: only the means when every weight is 1.
 *
 * Left out only when recomputing gives the same bits: count and the weights when every weight is
 * exactly 1.0 and count is the number of centroids; sum when adding the means as the digest's
 * compression pass adds unmerged centroids gives it; min and max when they are the first and last mean.
 */
private[functions] object TDigestPacking extends StatePacking {
  private val UnitWeights = 1
  private val SumDerived = 2
  private val MinDerived = 4
  private val MaxDerived = 8
  private val One = java.lang.Double.doubleToRawLongBits(1.0)

  private def bits(d: Double): Long = java.lang.Double.doubleToRawLongBits(d)

  /** The sum the compression pass gives centroids of weight 1 it does not merge: each closes as
   *  0.0 + 1.0 * mean, added in order. The means are every other element from `from`. */
  private def unitSum(list: Array[Double], from: Int, n: Int): Double = {
    var sum = 0.0
    var i = 0
    while (i < n) { sum += 0.0 + 1.0 * list(from + 2 * i); i += 1 }
    sum
  }

  def pack(states: Array[Column], numRows: Int): BinaryColumn = {
    val Array(size, sum, count, max, min, centroids) = states
    val lists = new CentroidLists(centroids)
    val out = new ByteSink(32 * numRows + 16)
    val offsets = new Array[Int](numRows + 1)
    var r = 0
    while (r < numRows) {
      var f = 0
      while (f < states.length) {
        if (states(f).isNullAt(r)) throw new IllegalStateException("a t-digest state has no NULL fields")
        f += 1
      }
      lists.read(r)
      val values = lists.values
      val from = lists.from
      val length = lists.length
      val n = length / 2
      var unit = length % 2 == 0 && count.getLong(r) == n
      var i = 0
      while (unit && i < n) { unit = bits(values(from + 2 * i + 1)) == One; i += 1 }
      val flags = (if (unit) UnitWeights else 0) |
        (if (unit && bits(sum.getDouble(r)) == bits(unitSum(values, from, n))) SumDerived else 0) |
        (if (n > 0 && bits(min.getDouble(r)) == bits(values(from))) MinDerived else 0) |
        (if (n > 0 && bits(max.getDouble(r)) == bits(values(from + 2 * (n - 1)))) MaxDerived else 0)
      out.byte(flags)
      out.varLong(size.getLong(r))
      if ((flags & UnitWeights) == 0) out.varLong(count.getLong(r))
      if ((flags & SumDerived) == 0) out.double(sum.getDouble(r))
      if ((flags & MinDerived) == 0) out.double(min.getDouble(r))
      if ((flags & MaxDerived) == 0) out.double(max.getDouble(r))
      out.varLong(length)
      i = 0
      if (unit) while (i < n) { out.double(values(from + 2 * i)); i += 1 }
      else while (i < length) { out.double(values(from + i)); i += 1 }
      offsets(r + 1) = out.length
      r += 1
    }
    new BinaryColumn(out.bytes, offsets, null, numRows)
  }

  def unpack(packed: BinaryColumn): Array[Column] = {
    val n = packed.numRows
    val (sizes, sums, counts, maxs, mins) =
      (new Array[Long](n), new Array[Double](n), new Array[Long](n), new Array[Double](n), new Array[Double](n))
    val offsets = new Array[Int](n + 1)
    val summed = new Array[Long](Validity.words(n)) // rows whose sum is recomputed when asked
    // A packed element takes 8 bytes and gives at most two doubles (a mean and its weight 1).
    val flat = new Array[Double](packed.offsets(n) / 4)
    val in = new ByteSource(packed.bytes)
    var r = 0
    while (r < n) {
      in.at = packed.start(r)
      val flags = in.byte()
      sizes(r) = in.varLong()
      if ((flags & UnitWeights) == 0) counts(r) = in.varLong()
      if ((flags & SumDerived) == 0) sums(r) = in.double()
      if ((flags & MinDerived) == 0) mins(r) = in.double()
      if ((flags & MaxDerived) == 0) maxs(r) = in.double()
      val length = in.varLong().toInt
      val at = offsets(r)
      var i = 0
      if ((flags & UnitWeights) != 0) while (i < length / 2) { flat(at + 2 * i) = in.double(); flat(at + 2 * i + 1) = 1.0; i += 1 }
      else while (i < length) { flat(at + i) = in.double(); i += 1 }
      val centroids = length / 2
      if ((flags & UnitWeights) != 0) counts(r) = centroids
      if ((flags & SumDerived) != 0) Validity.set(summed, r)
      if ((flags & MinDerived) != 0) mins(r) = flat(at)
      if ((flags & MaxDerived) != 0) maxs(r) = flat(at + 2 * (centroids - 1))
      offsets(r + 1) = at + length
      r += 1
    }
    Array(new LongColumn(sizes, null, n), new UnpackedSums(sums, summed, flat, offsets, n), new LongColumn(counts, null, n),
      new DoubleColumn(maxs, null, n), new DoubleColumn(mins, null, n), new DoubleListColumn(flat, offsets, null, n))
  }

  /** Unpacked sums: stored, or recomputed from the row's centroids when read. A merge never reads
   *  them (DataFusion's merge sums the centroids again), so it does not pay for them. */
  private final class UnpackedSums(stored: Array[Double], summed: Array[Long], flat: Array[Double],
      offsets: Array[Int], val numRows: Int) extends Column {
    def hasNulls: Boolean = false
    def isNullAt(row: Int): Boolean = false
    override def getDouble(row: Int): Double =
      if (Validity.isValid(summed, row)) unitSum(flat, offsets(row), (offsets(row + 1) - offsets(row)) / 2)
      else stored(row)
    def get(row: Int, dataType: DataType): AnyRef = java.lang.Double.valueOf(getDouble(row))
  }

  /** A growing little-endian byte array; integers as zigzag LEB128. */
  private final class ByteSink(capacity: Int) {
    var bytes = new Array[Byte](capacity)
    var length = 0
    private def room(n: Int): Unit = if (length + n > bytes.length) bytes = java.util.Arrays.copyOf(bytes, math.max(2 * bytes.length, length + n))
    def byte(b: Int): Unit = { room(1); bytes(length) = b.toByte; length += 1 }
    def varLong(v: Long): Unit = {
      room(10)
      var z = (v << 1) ^ (v >> 63)
      while ((z & ~0x7FL) != 0) { bytes(length) = ((z & 0x7F) | 0x80).toByte; length += 1; z >>>= 7 }
      bytes(length) = z.toByte
      length += 1
    }
    def double(d: Double): Unit = {
      room(8)
      var b = bits(d)
      var i = 0
      while (i < 8) { bytes(length + i) = b.toByte; b >>>= 8; i += 1 }
      length += 8
    }
  }

  private final class ByteSource(bytes: Array[Byte]) {
    var at = 0
    def byte(): Int = { at += 1; bytes(at - 1) & 0xFF }
    def varLong(): Long = {
      var z = 0L
      var shift = 0
      var b = 0x80
      while ((b & 0x80) != 0) { b = byte(); z |= (b & 0x7FL) << shift; shift += 7 }
      (z >>> 1) ^ -(z & 1)
    }
    def double(): Double = {
      var b = 0L
      var i = 7
      while (i >= 0) { b = (b << 8) | (bytes(at + i) & 0xFFL); i -= 1 }
      at += 8
      java.lang.Double.longBitsToDouble(b)
    }
  }
}
