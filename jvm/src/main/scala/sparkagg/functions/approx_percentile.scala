package sparkagg.functions

import org.apache.spark.sql.types._
import sparkagg.api._
import sparkagg.common._
import sparkagg.compat._

/**
 * The t-digest functions ([[TDigest]]): approx_percentile_cont, approx_percentile_cont_with_weight and
 * approx_median. The value is read as a double; the result is a double, a float for float input (DataFusion
 * 55 returns integers' estimates unrounded, #21074; decimals are read as doubles, as it coerces them). NULLs are
 * skipped; NULL on empty input. Rows are added as DataFusion adds a batch: gathered, sorted and merged
 * into the digest every 8192 rows, so one partition gives DataFusion's result exactly; across
 * partitions the result is within about 1% of the true rank.
 * State (DataFusion's): max_size, sum, count, max, min, centroids (mean, weight, mean, weight, ...).
 * `_merge` and `_finalize` return a double: the state does not say which type made it.
 */
private[sparkagg] object ApproxPercentile {
  /** The result type, the DataFusion 55 column and the NaN behaviour the three functions share (their FunctionDocs). */
  val resultDoc = "float: float; else double"
  val dataFusionDoc = "deviation: across partitions"
  val nanDoc = "NaN enters the digest as a value and can make the result NaN (p = 0.5 over 1, NaN gives NaN)"

  val state: StructType = StructType(
    Seq(
      StructField("max_size", LongType),
      StructField("sum", DoubleType),
      StructField("count", DoubleType),
      StructField("max", DoubleType),
      StructField("min", DoubleType),
      StructField("centroids", ArrayType(DoubleType, containsNull = true))
    ))

  /** What a digest's state always is: max_size > 0, count not negative, centroids as (mean, weight)
   *  pairs without NULLs, in the order of their means, no weight below zero. */
  val stateCheck: StateCheck = StateCheck.all(
    (schema, s) => {
      val i = schema.fieldIndex("max_size")
      if (s.isNullAt(i) || s.getLong(i) > 0) None else Some(StateFault("max_size", s"${s.getLong(i)} is not positive"))
    },
    StateCheck.nonNegative("count"),
    StateCheck.noNullElements("centroids"),
    (schema, s) => {
      val i = schema.fieldIndex("centroids")
      val list = if (s.isNullAt(i)) null else s.getList(i)
      def fault(why: String) = Some(StateFault("centroids", why))
      if (list == null) None
      else if (list.numElements % 2 != 0) fault(s"${list.numElements} elements, not pairs of mean and weight")
      else (0 until list.numElements / 2).iterator.flatMap { c =>
        val (mean, weight) = (list.getDouble(2 * c), list.getDouble(2 * c + 1))
        if (weight < 0) fault(s"weight $weight of centroid $c is negative")
        else if (c > 0 && mean < list.getDouble(2 * c - 2))
          fault(s"mean $mean of centroid $c is below the mean ${list.getDouble(2 * c - 2)} before it")
        else None
      }.nextOption()
    }
  )

  /** The argument types and the result type, and how a double estimate becomes the result. */
  def resultOf(t: DataType): Option[(DataType, Double => Any)] = t match {
    case FloatType => Some(FloatType -> (q => q.toFloat))
    case t if Types.isNumeric(t) || t == NullType => Some(DoubleType -> (q => q))
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
        case Some(n: java.lang.Number)
            if Types.isIntegral(a.dataType) && n.longValue > 0 && n.longValue <= Int.MaxValue =>
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
    val newAccumulator = () =>
      if (weighted) new WeightedApproxPercentileAccumulator(fraction, size, result)
      else new ApproxPercentileAccumulator(fraction, size, result)
    Bound(
      returnType,
      state,
      newAccumulator,
      coerceTo = coerceTo,
      newGroupsAccumulator = Some(() =>
        new TDigestGroups(fraction, size, returnType, result, weighted, newAccumulator)),
      packing = Some(TDigestPacking),
      stateCheck = stateCheck
    )
  }
}

/**
 * approx_percentile_cont(x, p [, max_size]), also written approx_percentile_cont(p [, max_size]) WITHIN
 * GROUP (ORDER BY x [DESC]) (DESC reads 1 - p): the approximate p-th percentile of x by a t-digest of
 * at most about max_size (default 100) centroids.
 */
object ApproxPercentileCont extends FunctionDef {
  val name = "approx_percentile_cont"
  val signature =
    "(numeric, p: constant in [0, 1] [, max_size: constant integer > 0]) -> float for float, else double; " +
      "or (p [, max_size]) WITHIN GROUP (ORDER BY numeric [DESC])"
  override val withinGroup: WithinGroup = WithinGroup.KeyAsValue(mandatory = false)
  val doc = FunctionDoc(
    usage = "_FUNC_(expr, p [, max_size]) - The approximate p-th percentile of expr, from a t-digest of at " +
      "most about max_size (default 100) centroids; a float for float expr, else a double. Also " +
      "_FUNC_(p [, max_size]) WITHIN GROUP (ORDER BY expr [DESC]).",
    arguments = Seq("expr" -> Types.Numeric, "p" -> "a constant in [0, 1]",
      "max_size" -> "a constant integer > 0, default 100"),
    examples = Seq(
      "SELECT _FUNC_(col, 0.5) FROM VALUES (1.0D), (2.0D), (3.0D), (4.0D), (NULL) AS tab(col)" -> "2.5",
      "SELECT _FUNC_(col, 0.5) FROM VALUES (1), (2), (3), (4) AS tab(col)" -> "2.5",
      "SELECT _FUNC_(0.75) WITHIN GROUP (ORDER BY col DESC) FROM VALUES (1.0D), (2.0D), (3.0D), (4.0D) AS tab(col)" ->
        "1.5"
    ),
    note = "t-digest of about max_size (100) centroids",
    accepts = "numeric, constant p in [0,1], constant integer > 0",
    result = ApproxPercentile.resultDoc,
    emptyInput = "NULL",
    dataFusion = ApproxPercentile.dataFusionDoc,
    nan = ApproxPercentile.nanDoc,
    spark = "`percentile_approx` (`approx_percentile`): a Greenwald-Khanna sketch whose result is one of the input " +
      "values, in the input's type (an int column gives an int), with an accuracy argument where this has a " +
      "centroid count; this interpolates between centroids and gives a double for every numeric input"
  )

  def bind(args: Seq[Arg], ctx: BindContext): Either[String, Bound] =
    ApproxPercentile.bind(name, args, values = 1, weighted = false)
  override def argumentsOf(state: StructType, parameters: Seq[Arg]): Option[Seq[Arg]] =
    ApproxPercentile.argumentsOf(state, 1, parameters)
}

/**
 * approx_percentile_cont_with_weight(x, weight, p [, max_size]), also written
 * approx_percentile_cont_with_weight(weight, p [, max_size]) WITHIN GROUP (ORDER BY x [DESC]): as
 * approx_percentile_cont, each value a centroid of its weight. As in DataFusion 55 the digest's count is
 * the total weight, which ranks are taken against (DataFusion 50 counted rows). Rows whose value or weight
 * is NULL, or whose weight is not above zero (NaN included), add nothing, as in DataFusion 55.
 */
object ApproxPercentileContWithWeight extends FunctionDef {
  val name = "approx_percentile_cont_with_weight"
  val signature = "(numeric, weight: numeric, p: constant in [0, 1] [, max_size: constant integer > 0]) -> float " +
    "for float, else double; or (weight, p [, max_size]) WITHIN GROUP (ORDER BY numeric [DESC])"
  override val withinGroup: WithinGroup = WithinGroup.KeyAsValue(mandatory = false)
  val doc = FunctionDoc(
    usage = "_FUNC_(expr, weight, p [, max_size]) - The approximate p-th percentile of expr, each value weighted " +
      "by weight. Also _FUNC_(weight, p [, max_size]) WITHIN GROUP (ORDER BY expr [DESC]).",
    arguments = Seq("expr" -> Types.Numeric, "weight" -> Types.Numeric, "p" -> "a constant in [0, 1]",
      "max_size" -> "a constant integer > 0, default 100"),
    examples = Seq(
      "SELECT _FUNC_(col, w, 0.5) FROM VALUES (1.0D, 1), (2.0D, 1), (3.0D, 10) AS tab(col, w)" -> "2.9",
      "SELECT _FUNC_(w, 0.9) WITHIN GROUP (ORDER BY col) FROM VALUES (1, 1), (2, 1), (3, 10) AS tab(col, w)" -> "3.0"
    ),
    note = "rows with a NULL value or weight, or a weight not above 0, skipped; ranks against the total weight",
    accepts = "numeric, numeric weight, constant p, constant integer > 0",
    result = ApproxPercentile.resultDoc,
    emptyInput = "NULL",
    dataFusion = ApproxPercentile.dataFusionDoc,
    nan = ApproxPercentile.nanDoc,
    spark = "no weighted approximate percentile; `percentile(x, p, frequency)` is exact, takes whole-number " +
      "frequencies and keeps every distinct value"
  )

  // WITHIN GROUP puts the key first: (x, weight, p [, max_size], descending), as the direct call.
  def bind(args: Seq[Arg], ctx: BindContext): Either[String, Bound] =
    ApproxPercentile.bind(name, args, values = 2, weighted = true)
  override def argumentsOf(state: StructType, parameters: Seq[Arg]): Option[Seq[Arg]] =
    ApproxPercentile.argumentsOf(state, 2, parameters)
}

/** approx_median(x): approx_percentile_cont(x, 0.5). */
object ApproxMedian extends FunctionDef {
  val name = "approx_median"
  val signature = s"(${Types.Numeric}) -> float for float, else double"
  val doc = FunctionDoc(
    usage = "_FUNC_(expr) - The approximate median of expr, by a t-digest of about 100 centroids; a float for " +
      "float expr, else a double.",
    arguments = Seq("expr" -> Types.Numeric),
    examples = Seq(
      "SELECT _FUNC_(col) FROM VALUES (1.0D), (2.0D), (9.0D) AS tab(col)" -> "2.0",
      "SELECT _FUNC_(col) FROM VALUES (1), (2), (3), (4) AS tab(col)" -> "2.5"),
    note = "approx_percentile_cont(x, 0.5)",
    accepts = "numeric",
    result = ApproxPercentile.resultDoc,
    emptyInput = "NULL",
    dataFusion = ApproxPercentile.dataFusionDoc,
    nan = ApproxPercentile.nanDoc,
    spark = "`percentile_approx(x, 0.5)`: one of the input values, in the input's type (see " +
      "df_approx_percentile_cont); `median(x)` is exact"
  )

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
    if (rowsInBatch == TDigest.BatchSize) flush()
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
  private[sparkagg] def mergeSingles(means: Array[Double], weights: Array[Double], length: Int): Unit = {
    flush()
    digest = TDigest.mergeSingles(maxSize, means, weights, length, digest)
  }

  def merge(state: Values): Unit = {
    val list = state.getList(5)
    val flat = Array.tabulate(list.numElements)(list.getDouble)
    mergeFirst(Seq(TDigest.fromState(state.getLong(0).toInt, state.getDouble(1), state.getDouble(2),
          state.getDouble(3), state.getDouble(4), flat)))
  }

  def state(): Array[Any] = {
    flush()
    Array(digest.maxSize.toLong, digest.sum, digest.count, digest.max, digest.min, digest.flatCentroids)
  }

  def evaluate(): Any = { flush(); if (digest.count == 0.0) null else result(digest.quantile(fraction)) }
  def size: Long = 48 + digest.bytes + 8L * pending.length
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
    if (!args.isNullAt(0) && !args.isNullAt(1) && args.getDouble(1) > 0) {
      if (length == means.length) {
        means = java.util.Arrays.copyOf(means, 2 * length)
        weights = java.util.Arrays.copyOf(weights, 2 * length)
      }
      means(length) = args.getDouble(0)
      weights(length) = args.getDouble(1)
      length += 1
    }
    rowsInBatch += 1
    if (rowsInBatch == TDigest.BatchSize) flush()
  }
  def merge(state: Values): Unit = { flush(); inner.merge(state) }
  def state(): Array[Any] = { flush(); inner.state() }
  def evaluate(): Any = { flush(); inner.evaluate() }
  def size: Long = inner.size + 16L * means.length
}
