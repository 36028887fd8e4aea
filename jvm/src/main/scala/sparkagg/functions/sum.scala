package sparkagg.functions

import org.apache.spark.sql.types._
import sparkagg.api._
import sparkagg.common._

/**
 * sum: integers sum as bigint, floats as double, decimal(p, s) as decimal(min(38, p + 10), s).
 * NULL on empty or all-NULL input. Retractable (NULL again once every value has left the frame).
 * State: sum, count. DataFusion keeps count only in its sliding variant; sparkagg always keeps it, so
 * an empty state and an overflowed one stay apart.
 * Sums are exact (128-bit for bigint) and judged only when read, so an overflow that later cancels out
 * is none and the result does not depend on partitioning. Overflow of the result (deviation from
 * DataFusion, which wraps): Spark's ANSI error, or NULL with ANSI off. Double sums count NaN and
 * infinities apart, so a sliding frame recovers once an infinity has left it.
 */
object Sum extends FunctionDef {
  val name = "sum"
  val signature = "(integer) -> bigint, (float|double) -> double, (decimal(p,s)) -> decimal(min(38,p+10),s)"
  val doc = FunctionDoc(
    usage = "_FUNC_(expr) - Returns the sum of the non-NULL values of expr, NULL if there are none.",
    arguments = Seq("expr" -> Types.Numeric),
    examples = Seq(
      "SELECT _FUNC_(col) FROM VALUES (5), (10), (15) AS tab(col)" -> "30",
      "SELECT _FUNC_(col) FROM VALUES (NULL), (NULL) AS tab(col)" -> "NULL",
      "SELECT _FUNC_(col) FROM VALUES (1.5D), (2.25D) AS tab(col)" -> "3.75"
    ),
    note = "exact",
    accepts = "numeric",
    result = "integer: bigint; float, double: double; decimal(p,s): decimal(min(38,p+10),s)",
    emptyInput = "NULL",
    dataFusion = "deviation: overflow, state, sliding doubles",
    nan = "any NaN gives NaN; +Infinity and -Infinity together give NaN",
    spark = "`sum`: the same types and values; with ANSI mode off a bigint overflow wraps around in Spark " +
      "and gives NULL here (both raise ARITHMETIC_OVERFLOW under ANSI)"
  )

  def stateOf(sumType: DataType): StructType = StructType(
    Seq(
      StructField("sum", sumType), StructField("count", LongType, nullable = false)))
  private val countCheck = StateCheck.nonNegative("count")

  def bind(args: Seq[Arg], ctx: BindContext): Either[String, Bound] = args.map(_.dataType) match {
    case Seq(t) if Types.isIntegral(t) || Types.isUntypedNull(t) =>
      Right(
        Bound(
          LongType,
          stateOf(LongType),
          () => new LongSumAccumulator(ctx.failOnOverflow, ctx.wrapOnOverflow),
          coerceTo = Seq(LongType),
          newGroupsAccumulator = Some(() => new LongSumGroups(ctx.failOnOverflow, ctx.wrapOnOverflow)),
          stateCheck = countCheck
        ))
    case Seq(t) if Types.isFloating(t) =>
      Right(
        Bound(
          DoubleType,
          stateOf(DoubleType),
          () => new DoubleSumAccumulator,
          coerceTo = Seq(DoubleType),
          newGroupsAccumulator = Some(() => new DoubleSumGroups),
          stateCheck = countCheck
        ))
    case Seq(t: DecimalType) =>
      val out = Types.widenDecimal(t, 10, 0)
      Right(
        Bound(
          out,
          stateOf(out),
          () => new DecimalSumAccumulator(t, out, ctx.failOnOverflow),
          newGroupsAccumulator = Some(() => new DecimalSumGroups(t, out, ctx.failOnOverflow)),
          packing = DecimalSumPacking.of(out, countFirst = false),
          stateCheck = countCheck
        ))
    case _ => Left(s"expects one argument of type ${Types.Numeric}")
  }
}

final class LongSumAccumulator(failOnOverflow: Boolean, wrap: Boolean) extends Accumulator {
  private val sum = new LongSum
  private var count = 0L
  private var overflowed = false

  def update(args: Values): Unit = if (!args.isNullAt(0)) { sum.add(args.getLong(0)); count += 1 }
  override def retract(args: Values): Unit = if (!args.isNullAt(0)) { sum.subtract(args.getLong(0)); count -= 1 }
  override def supportsRetract: Boolean = true
  def merge(state: Values): Unit = {
    val n = state.getLong(1)
    if (n > 0) {
      if (state.isNullAt(0)) overflowed = true else sum.add(state.getLong(0))
      count += n
    }
  }

  /** The sum as a bigint, or null when there is none or it does not fit (an error in ANSI mode; its low
   *  64 bits with `wrap`, which a state carries on and merges keep right, as they add modulo 2^64). */
  private def result: Any =
    if (overflowed || count == 0) null
    else if (sum.fitsLong || wrap) sum.toLong
    else {
      if (failOnOverflow) Overflow.raise("bigint sum")
      null
    }

  def state(): Array[Any] = Array(result, count)
  def evaluate(): Any = result
  def size: Long = 48
}

final class DoubleSumAccumulator extends Accumulator {
  private val sum = new DoubleSum
  private var count = 0L

  def update(args: Values): Unit = if (!args.isNullAt(0)) { sum.add(args.getDouble(0)); count += 1 }
  override def retract(args: Values): Unit = if (!args.isNullAt(0)) { sum.subtract(args.getDouble(0)); count -= 1 }
  override def supportsRetract: Boolean = true
  def merge(state: Values): Unit = {
    val n = state.getLong(1)
    if (n > 0) { sum.add(state.getDouble(0)); count += n }
  }
  def state(): Array[Any] = Array(evaluate(), count)
  def evaluate(): Any = if (count == 0) null else sum.value
  def size: Long = 64
}

final class DecimalSumAccumulator(in: DecimalType, out: DecimalType, failOnOverflow: Boolean) extends Accumulator {
  private val sum = new DecimalSumCount(in, out, failOnOverflow, "sum")

  def update(args: Values): Unit = sum.update(args)
  override def retract(args: Values): Unit = sum.retract(args)
  override def supportsRetract: Boolean = true
  def merge(state: Values): Unit = sum.merge(state, sumField = 0, countField = 1)
  def state(): Array[Any] = Array(sum.checkedSum, sum.count)
  def evaluate(): Any = sum.checkedSum
  def size: Long = sum.size
}

/**
 * Exact bigint sum for every group ([[LongSumAccumulator]]'s semantics): 128-bit sums, counts, and a bit
 * for groups that merged an overflowed state. A sum that does not fit bigint when read raises Spark's
 * overflow error in ANSI mode, else is NULL (or its low 64 bits with `wrap`). State: sum (NULL when none or
 * overflowed), count.
 */
final class LongSumGroups(failOnOverflow: Boolean, wrap: Boolean) extends GroupsAccumulator {
  private val sums = new GroupLongSums
  private val counts = new LongVector
  private val overflowed = new BitVector // counts say which groups saw a value: no NullState

  private def resize(totalGroups: Int): Unit = {
    sums.resize(totalGroups); counts.resize(totalGroups); overflowed.resize(totalGroups)
  }

  def updateBatch(values: Columns, groupIndices: Array[Int], filter: Option[Column], totalGroups: Int): Unit = {
    resize(totalGroups)
    val (lo, hi, c) = (sums.low, sums.high, counts.array)
    val column = values.column(0)
    val taken = GroupColumns.taken(values.numRows, filter, column)
    val array = GroupColumns.longArray(column)
    var i = 0
    while (i < values.numRows) {
      if (taken == null || taken(i)) {
        val g = groupIndices(i)
        GroupLongSums.add(lo, hi, g, if (array != null) array(i) else column.getLong(i))
        c(g) += 1
      }
      i += 1
    }
  }

  def mergeBatch(states: Columns, groupIndices: Array[Int], filter: Option[Column], totalGroups: Int): Unit = {
    resize(totalGroups)
    val (lo, hi, c) = (sums.low, sums.high, counts.array)
    val (sum, count) = (states.column(0), states.column(1))
    val f = filter.orNull
    var i = 0
    while (i < states.numRows) {
      if (GroupsAccumulator.keep(f, i)) {
        val n = count.getLong(i)
        if (n > 0) {
          val g = groupIndices(i)
          if (sum.isNullAt(i)) overflowed.set(g) else GroupLongSums.add(lo, hi, g, sum.getLong(i))
          c(g) += n
        }
      }
      i += 1
    }
  }

  /** The emitted groups' sums (NULL: none, or overflowed) and counts. */
  private def emitted(emit: EmitTo): (LongColumn, Array[Long]) = {
    val (lo, hi) = sums.emit(emit)
    val c = counts.emit(emit)
    val over = overflowed.emit(emit)
    val validity = new Array[Long](Validity.words(c.length))
    var g = 0
    while (g < c.length) {
      if (c(g) != 0 && (over(g >> 6) & (1L << g)) == 0) {
        if (wrap || GroupLongSums.fitsLong(lo, hi, g)) Validity.set(validity, g)
        else if (failOnOverflow) Overflow.raise("bigint sum")
      }
      g += 1
    }
    (new LongColumn(lo, validity, c.length), c)
  }

  def evaluate(emit: EmitTo): Column = emitted(emit)._1
  def state(emit: EmitTo): Array[Column] = {
    val (sum, c) = emitted(emit)
    Array(sum, new LongColumn(c, null, c.length))
  }

  override def convertToState(values: Columns, filter: Option[Column]): Array[Column] = {
    val n = values.numRows
    val v = values.column(0)
    val c = GroupColumns.rowCounts(n, filter, v)
    val s = Fill.longs(n)(i => if (c(i) != 0) v.getLong(i) else 0L)
    Array(new LongColumn(s, GroupColumns.nonZero(c), n), new LongColumn(c, null, n))
  }
  override def supportsConvertToState: Boolean = true

  def size: Long = sums.size + counts.size + overflowed.size
}

/** Double sum for every group ([[DoubleSumAccumulator]]'s semantics). State: sum (NULL when none), count. */
final class DoubleSumGroups extends DoubleSumCountGroups(countFirst = false) {
  def evaluate(emit: EmitTo): Column = {
    val (s, c) = emitted(emit)
    new DoubleColumn(s, GroupColumns.nonZero(c), c.length)
  }
}

/** Decimal sum for every group ([[DecimalSumAccumulator]]'s semantics). */
private[sparkagg] final class DecimalSumGroups(in: DecimalType, out: DecimalType, failOnOverflow: Boolean)
  extends DecimalSumCountGroups(in, out, failOnOverflow, "sum", countFirst = false) {
  def evaluate(emit: EmitTo): Column = emitted(emit)._2
  protected def fresh(): DecimalSumCountGroups = new DecimalSumGroups(in, out, failOnOverflow)
}
