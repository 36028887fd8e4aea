package sparkagg.functions

import java.util.{ArrayDeque, Comparator}

import org.apache.spark.sql.types._
import org.apache.spark.unsafe.Platform
import org.apache.spark.unsafe.types.{ByteArray, UTF8String}
import sparkagg.api._
import sparkagg.common._

/**
 * min and max over any orderable type (numbers, decimal, string, binary, boolean, date, timestamp),
 * returning the input type; NULL on empty or all-NULL input. Floats use a total order in which NaN is
 * greater than every number: max is NaN as soon as one NaN is present, min ignores NaN unless every
 * value is NaN. State: min (or max) of the input type. Sliding frames retract through a monotonic queue.
 */
sealed abstract class MinMax(val name: String, isMax: Boolean, example: (String, String)) extends FunctionDef {
  val signature = s"(${Types.Orderable}) -> same type"
  val doc = FunctionDoc(
    usage = s"_FUNC_(expr) - Returns the ${if (isMax) "largest" else "smallest"} non-NULL value of expr " +
      "(NaN sorts above every other number).",
    arguments = Seq("expr" -> Types.Orderable),
    examples = Seq(example),
    note = "NaN greatest",
    accepts = "numbers, decimal, string, binary, boolean, date, timestamp, timestamp_ntz",
    result = "same",
    emptyInput = "NULL",
    dataFusion = "deviation: grouped NaN and infinities",
    nan = if (isMax) "NaN is greater than every number: any NaN gives NaN"
    else "NaN is greater than every number: NaN only when every value is NaN",
    spark = s"`$name`: the same results, NaN and -0.0 included"
  )

  def bind(args: Seq[Arg], ctx: BindContext): Either[String, Bound] = args.map(_.dataType) match {
    case Seq(t) if Types.isOrderable(t) =>
      val state = StructType(Seq(StructField(name, t)))
      val kind = ValueKind.of(t)
      Right(
        Bound(
          t,
          state,
          () =>
            kind match {
              case k: ValueKind.LongLike => new LongMinMaxAccumulator(k, isMax)
              case k: ValueKind.DoubleLike => new DoubleMinMaxAccumulator(k, isMax)
              case k => new ObjectMinMaxAccumulator(k, isMax)
            },
          newSlidingAccumulator = Some(() => new SlidingMinMaxAccumulator(kind, isMax)),
          newGroupsAccumulator = kind match {
            case k: ValueKind.LongLike => Some(() => new FoldGroups(new LongMinMaxFold(k, isMax)))
            case k: ValueKind.DoubleLike => Some(() => new FoldGroups(new DoubleMinMaxFold(k, isMax)))
            case k: ValueKind.ObjectLike if k.dataType.isInstanceOf[DecimalType] =>
              Some(() => new DecimalMinMaxGroups(k.dataType.asInstanceOf[DecimalType], isMax))
            case k: ValueKind.ObjectLike => Some(() => new BytesMinMaxGroups(k.dataType, isMax))
          }
        ))
    case _ => Left(s"expects one argument of type ${Types.Orderable}")
  }
}

object Min extends MinMax("min", isMax = false,
    "SELECT _FUNC_(col) FROM VALUES (10), (-1), (NULL), (20) AS tab(col)" -> "-1")
object Max extends MinMax("max", isMax = true,
    "SELECT _FUNC_(col) FROM VALUES (10.0D), (double('NaN')), (20.0D) AS tab(col)" -> "NaN")

final class LongMinMaxAccumulator(kind: ValueKind.LongLike, isMax: Boolean) extends Accumulator {
  private var best = 0L
  private var seen = false

  private def offer(x: Long): Unit =
    if (!seen || (if (isMax) x > best else x < best)) { best = x; seen = true }

  def update(args: Values): Unit = if (!args.isNullAt(0)) offer(kind.readLong(args, 0))
  def merge(state: Values): Unit = update(state)
  def state(): Array[Any] = Array(evaluate())
  def evaluate(): Any = if (seen) kind.box(best) else null
  def size: Long = 32
}

final class DoubleMinMaxAccumulator(kind: ValueKind.DoubleLike, isMax: Boolean) extends Accumulator {
  private var best = 0.0
  private var seen = false

  private def offer(x: Double): Unit = {
    val c = java.lang.Double.compare(x, best)
    if (!seen || (if (isMax) c > 0 else c < 0)) { best = x; seen = true }
  }

  def update(args: Values): Unit = if (!args.isNullAt(0)) offer(kind.readDouble(args, 0))
  def merge(state: Values): Unit = update(state)
  def state(): Array[Any] = Array(evaluate())
  def evaluate(): Any = if (seen) kind.box(best) else null
  def size: Long = 32
}

final class ObjectMinMaxAccumulator(kind: ValueKind, isMax: Boolean) extends Accumulator {
  private var best: AnyRef = null
  private val ordering = kind.ordering

  def update(args: Values): Unit = if (!args.isNullAt(0)) {
    val x = kind.read(args, 0)
    if (best == null) best = x
    else {
      val c = ordering.compare(x, best)
      if (if (isMax) c > 0 else c < 0) best = x
    }
  }
  def merge(state: Values): Unit = update(state)
  def state(): Array[Any] = Array(best)
  def evaluate(): Any = best
  def size: Long = 32 + ValueKind.sizeOf(best)
}

/**
 * min / max of decimals for every group, compared by their unscaled values as the operator gathers them
 * ([[DecimalColumn]]: no Decimal made per row): each group's best in a long, and in a second long (the
 * high half of 128 bits) above 18 digits. A group starts at the far end of the range, so the loop only
 * compares. Equal decimals of one type are one value, so which of them is kept does not show. State: the
 * value.
 */
private[sparkagg] final class DecimalMinMaxGroups(t: DecimalType, isMax: Boolean) extends GroupsAccumulator {
  private val wide = DecimalColumn.wide(t)
  private val nulls = new NullState
  // The far end: -2^127 for max (high Long.MinValue, low 0), 2^127 - 1 for min; below 19 digits the high
  // half is the low half's sign, so the low half alone starts at Long.MinValue or Long.MaxValue.
  private val lows = new LongVector(if (wide) (if (isMax) 0L else -1L) else if (isMax) Long.MinValue else Long.MaxValue)
  private val highs = if (wide) new LongVector(if (isMax) Long.MinValue else Long.MaxValue) else null

  private def fold(column: Column, numRows: Int, groupIndices: Array[Int], filter: Option[Column],
      totalGroups: Int): Unit = {
    val c = DecimalColumn.of(column, t)
    lows.resize(totalGroups)
    val low = lows.array
    if (wide) {
      highs.resize(totalGroups)
      val high = highs.array
      nulls.accumulateRows(
        groupIndices,
        c,
        numRows,
        filter,
        totalGroups,
        (g, i) => {
          val h = c.high(i)
          val l = c.low(i)
          val order =
            if (h != high(g)) java.lang.Long.compare(h, high(g)) else java.lang.Long.compareUnsigned(l, low(g))
          if (if (isMax) order > 0 else order < 0) { high(g) = h; low(g) = l }
        }
      )
    } else {
      val values = c.low
      if (isMax) nulls.accumulateRows(
        groupIndices, c, numRows, filter, totalGroups, (g, i) => low(g) = math.max(low(g), values(i)))
      else nulls.accumulateRows(
        groupIndices, c, numRows, filter, totalGroups, (g, i) => low(g) = math.min(low(g), values(i)))
    }
  }

  def updateBatch(values: Columns, groupIndices: Array[Int], filter: Option[Column], totalGroups: Int): Unit =
    fold(values.column(0), values.numRows, groupIndices, filter, totalGroups)
  def mergeBatch(states: Columns, groupIndices: Array[Int], filter: Option[Column], totalGroups: Int): Unit =
    fold(states.column(0), states.numRows, groupIndices, filter, totalGroups)

  def evaluate(emit: EmitTo): Column = {
    val validity = nulls.build(emit)
    val low = lows.emit(emit)
    new DecimalColumn(t, low, if (wide) highs.emit(emit) else null, validity, low.length)
  }
  def state(emit: EmitTo): Array[Column] = Array(evaluate(emit))

  override def convertToState(values: Columns, filter: Option[Column]): Array[Column] =
    GroupColumns.ownValues(values, filter, t)
  override def supportsConvertToState: Boolean = true

  def size: Long = lows.size + (if (wide) highs.size else 0L) + nulls.size
}

/**
 * min / max of strings and binaries for every group, by their bytes (unsigned, first byte first: how
 * Spark orders both), with [[ObjectMinMaxAccumulator]]'s semantics (the first of equal values kept). Each
 * group's best lies in one arena shared by all groups ([[GroupBytes]]), no object per group. State: the
 * value.
 */
private[sparkagg] final class BytesMinMaxGroups(dataType: DataType, isMax: Boolean) extends GroupsAccumulator {
  private val strings = dataType.isInstanceOf[StringType]
  private val bests = new GroupBytes

  private def fold(column: Column, numRows: Int, groupIndices: Array[Int], filter: Option[Column], totalGroups: Int)
      : Unit = {
    bests.resize(totalGroups)
    val f = filter.orNull
    var i = 0
    column match {
      case b: BytesColumn => // the bytes in place (the operator's batches, a scan's vector)
        while (i < numRows) {
          if (GroupsAccumulator.keep(f, i) && !b.isNullAt(i))
            offer(groupIndices(i), b.bytes, Platform.BYTE_ARRAY_OFFSET + b.start(i), b.length(i))
          i += 1
        }
      case _ if strings =>
        while (i < numRows) {
          if (GroupsAccumulator.keep(f, i) && !column.isNullAt(i)) {
            val s = column.getUTF8String(i)
            offer(groupIndices(i), s.getBaseObject, s.getBaseOffset, s.numBytes)
          }
          i += 1
        }
      case _ =>
        while (i < numRows) {
          if (GroupsAccumulator.keep(f, i) && !column.isNullAt(i)) {
            val b = column.getBinary(i)
            offer(groupIndices(i), b, Platform.BYTE_ARRAY_OFFSET, b.length)
          }
          i += 1
        }
    }
  }

  private def offer(g: Int, base: AnyRef, offset: Long, n: Int): Unit =
    if (!bests.has(g) || { val c = bests.compare(g, base, offset, n); if (isMax) c > 0 else c < 0 })
      bests.put(g, base, offset, n)

  def updateBatch(values: Columns, groupIndices: Array[Int], filter: Option[Column], totalGroups: Int): Unit =
    fold(values.column(0), values.numRows, groupIndices, filter, totalGroups)
  def mergeBatch(states: Columns, groupIndices: Array[Int], filter: Option[Column], totalGroups: Int): Unit =
    fold(states.column(0), states.numRows, groupIndices, filter, totalGroups)

  def evaluate(emit: EmitTo): Column = bests.emit(emit)
  def state(emit: EmitTo): Array[Column] = Array(evaluate(emit))

  override def convertToState(values: Columns, filter: Option[Column]): Array[Column] =
    GroupColumns.ownValues(values, filter, dataType)
  override def supportsConvertToState: Boolean = true

  def size: Long = bests.size
}

/**
 * min / max over a sliding frame: a monotonic queue of (position, value). Values leave in the order
 * they arrived (the sliding-window contract), so retract only advances the lower position bound.
 */
final class SlidingMinMaxAccumulator(kind: ValueKind, isMax: Boolean) extends Accumulator {
  private final class Entry(val pos: Long, val value: AnyRef)
  private val queue = new ArrayDeque[Entry]()
  private val ordering = kind.ordering
  private var added = 0L
  private var removed = 0L

  /** True when `a` should be dropped because `b` arrived later and is at least as good. */
  private def dominated(a: AnyRef, b: AnyRef): Boolean = {
    val c = ordering.compare(a, b)
    if (isMax) c <= 0 else c >= 0
  }

  def update(args: Values): Unit = {
    val pos = added
    added += 1
    if (!args.isNullAt(0)) {
      val x = kind.read(args, 0)
      while (!queue.isEmpty && dominated(queue.peekLast.value, x)) queue.pollLast()
      queue.addLast(new Entry(pos, x))
    }
  }

  override def retract(args: Values): Unit = {
    removed += 1
    while (!queue.isEmpty && queue.peekFirst.pos < removed) queue.pollFirst()
  }
  override def supportsRetract: Boolean = true

  def merge(state: Values): Unit =
    throw new UnsupportedOperationException("the sliding min/max accumulator only runs in windows")
  def state(): Array[Any] = Array(evaluate())
  def evaluate(): Any = if (queue.isEmpty) null else toResult(queue.peekFirst.value)
  private def toResult(x: AnyRef): Any = kind match {
    case k: ValueKind.LongLike => k.box(x.asInstanceOf[Long])
    case k: ValueKind.DoubleLike => k.box(x.asInstanceOf[Double])
    case _ => x
  }
  def size: Long = 48 + queue.size * 48L
}

/**
 * min / max for every group of a type that fits a Long with its order (integers, boolean, date,
 * timestamps): the fold starts at the type's far end, so the loop only compares.
 */
private[sparkagg] final class LongMinMaxFold(kind: ValueKind.LongLike, isMax: Boolean)
  extends LongFold(kind, if (isMax) Long.MinValue else Long.MaxValue) {
  def combine(acc: Long, v: Long): Long = if (isMax) math.max(acc, v) else math.min(acc, v)
}

/**
 * min / max for every group of float or double, in the total order of `java.lang.Double.compare` (NaN
 * greatest, -0.0 below 0.0): min starts at NaN, max at -infinity, so a group of only NaN or only
 * -infinity keeps the right answer (DataFusion's grouped path does not). A value replaces the fold
 * only when strictly beyond it, as in [[DoubleMinMaxAccumulator]].
 */
private[sparkagg] final class DoubleMinMaxFold(kind: ValueKind.DoubleLike, isMax: Boolean)
  extends DoubleFold(kind, if (isMax) Double.NegativeInfinity else Double.NaN) {
  def combine(acc: Double, v: Double): Double = {
    val c = java.lang.Double.compare(v, acc)
    if (if (isMax) c > 0 else c < 0) v else acc
  }
}
