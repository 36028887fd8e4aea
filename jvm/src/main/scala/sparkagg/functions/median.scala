package sparkagg.functions

import java.math.{BigDecimal => JBigDecimal, RoundingMode}

import scala.collection.mutable.ArrayBuffer

import org.apache.spark.sql.types._
import sparkagg.api._
import sparkagg.common._

/**
 * median(x): the middle non-NULL value; with an even count the two middle values averaged. Floats and
 * decimals keep their type (decimals truncate toward zero: median{0.01, 0.02} = 0.01 at scale 2);
 * integers are read as doubles and give a double (median{1, 2} = 1.5), as DataFusion coerces them from
 * 51 on. Floats sort with NaN greatest. NULL on empty input. DISTINCT comes from Spark's DISTINCT
 * keyword. State: median, the list of values (primitive arrays for numbers, so a group of millions of
 * values stays compact). Over a sliding frame the values are kept in order instead
 * ([[SlidingOrderAccumulator]]): O(log w) a row where the list would be sorted again.
 */
object Median extends FunctionDef {
  val name = "median"
  val signature = s"(${Types.Numeric}) -> double for integers, the same type otherwise"
  val doc = FunctionDoc(
    usage = "_FUNC_(expr) - The median of the non-NULL values of expr: a double for integers, else expr's type.",
    arguments = Seq("expr" -> Types.Numeric),
    examples = Seq(
      "SELECT _FUNC_(col) FROM VALUES (1), (2), (9) AS tab(col)" -> "2.0",
      "SELECT _FUNC_(col) FROM VALUES (1), (2) AS tab(col)" -> "1.5",
      "SELECT _FUNC_(col) FROM VALUES (1.0D), (2.0D), (NULL) AS tab(col)" -> "1.5"
    ),
    note = "even count: mean of the middle two (decimals truncated)",
    accepts = "numeric",
    result = "integers: double; float, double, decimal: same",
    emptyInput = "NULL",
    dataFusion = "deviation: decimal mean exact",
    nan = "NaN sorts above every number; a median that falls on or beside a NaN is NaN",
    spark = "`median` (Spark 3.4+) and `percentile(x, 0.5)`: the same values, but always a double, where " +
      "this keeps a decimal column's type (1.00, 2.00 give 1.50 as decimal(3,2))"
  )

  def bind(args: Seq[Arg], ctx: BindContext): Either[String, Bound] = args.map(_.dataType) match {
    case Seq(t) if Types.isNumeric(t) =>
      val read = if (Types.isIntegral(t)) DoubleType else t
      val state = StructType(Seq(StructField(name, ArrayType(read, containsNull = true))))
      Right(
        Bound(
          read,
          state,
          () =>
            read match {
              case d: DecimalType => new DecimalMedianAccumulator(d)
              case _ => new MedianAccumulator(ValueKind.of(read).asInstanceOf[ValueKind.DoubleLike])
            },
          coerceTo = Seq(read),
          newGroupsAccumulator = read match {
            case d: DecimalType => Some(() => new DecimalMedianGroups(d))
            case _ =>
              val kind = ValueKind.of(read).asInstanceOf[ValueKind.DoubleLike]
              Some(() => new SortedValueGroups(kind, (a, from, until) => MedianAccumulator.middle(a, from, until)))
          },
          newSlidingAccumulator = Some(() =>
            read match {
              case d: DecimalType => new SlidingDecimalMedianAccumulator(d)
              case _ => new SlidingMedianAccumulator(ValueKind.of(read).asInstanceOf[ValueKind.DoubleLike])
            }),
          stateCheck = StateCheck.noNullElements(
            name)
        ))
    case _ => Left(s"expects one argument of type ${Types.Numeric}")
  }
}

/** A growable primitive array: no object per value. */
private[sparkagg] final class GrowableLongs {
  var values = new Array[Long](16)
  var length = 0
  def add(v: Long): Unit = {
    if (length == values.length) values = java.util.Arrays.copyOf(values, length * 2)
    values(length) = v
    length += 1
  }
  /** The values sorted where they are (a median needs no copy of millions of values); the first `length`. */
  def sortInPlace(): Array[Long] = { java.util.Arrays.sort(values, 0, length); values }
}

/**
 * median over floats, kept as longs that sort as the values do: their bits with the magnitude flipped for
 * negatives, which orders them as Double.compare does (NaN greatest, -0.0 before 0.0) and maps back
 * exactly.
 */
final class MedianAccumulator(kind: ValueKind.DoubleLike) extends Accumulator {
  private val values = new GrowableLongs

  import MedianAccumulator.encode

  def update(args: Values): Unit = if (!args.isNullAt(0)) values.add(encode(kind.readDouble(args, 0)))

  def merge(state: Values): Unit = if (!state.isNullAt(0)) {
    val list = state.getList(0)
    var j = 0
    while (j < list.numElements) {
      if (!list.isNullAt(j)) values.add(encode(MedianAccumulator.element(kind, list, j)))
      j += 1
    }
  }

  // Sorted, so a state's bytes do not depend on whether it was evaluated (which sorts in place); double
  // lists leave unboxed: a group of millions of values is one array, not millions of objects.
  def state(): Array[Any] = Array(MedianAccumulator.stateList(kind, values.sortInPlace(), 0, values.length))

  def evaluate(): Any =
    if (values.length == 0) null else kind.box(MedianAccumulator.middle(values.sortInPlace(), 0, values.length))

  def size: Long = 48 + 8L * values.values.length
}

object MedianAccumulator {
  /** Bits that sort as the doubles do, and back (the map is its own inverse). */
  private def sortable(bits: Long): Long = bits ^ ((bits >> 63) & Long.MaxValue)
  def encode(d: Double): Long = sortable(java.lang.Double.doubleToLongBits(d))
  def decode(x: Long): Double = java.lang.Double.longBitsToDouble(sortable(x))

  /** The median of the encoded values sorted at [from, until) of `a`, not empty: the middle one, or the
   *  mean of the middle two. */
  def middle(a: Array[Long], from: Int, until: Int): Double = {
    val n = until - from
    val m = from + n / 2
    if (n % 2 == 1) decode(a(m)) else (decode(a(m - 1)) + decode(a(m))) / 2
  }

  /** Element j (not NULL) of a state list of `kind`'s values, as a double. */
  def element(kind: ValueKind.DoubleLike, list: ListValues, j: Int): Double =
    if (kind.dataType == DoubleType) list.getDouble(j)
    else list.copy(j, FloatType).asInstanceOf[java.lang.Float].doubleValue

  /** The state list of the encoded values sorted at [from, until) of `a`: doubles unboxed (a group of
   *  millions of values is one array, not millions of objects), floats boxed. */
  def stateList(kind: ValueKind.DoubleLike, a: Array[Long], from: Int, until: Int): Any =
    if (kind.dataType == DoubleType) Fill.doubles(until - from)(j => decode(a(from + j)))
    else Array.tabulate[Any](until - from)(j => kind.box(decode(a(from + j))))
}

/**
 * The GroupsAccumulator of median (and percentile_cont) over floats and doubles, integers read as doubles:
 * every non-NULL value in one [[GroupPool]] shared by all groups, in [[MedianAccumulator]]'s sortable
 * encoding, no object per group. Emitting gathers each group's values and sorts them, so a group's result
 * is `statistic` of its sorted values (a double; a float's rounded to float as `kind.box` does) and its
 * state the sorted list, as the row accumulators give them, to the bit. State lists of doubles leave end
 * to end in one [[DoubleListColumn]]; of floats as the row accumulator's boxed lists.
 */
private[sparkagg] final class SortedValueGroups(kind: ValueKind.DoubleLike, statistic: SortedValueGroups.Statistic)
  extends ListStatePool with GroupsAccumulator {
  import MedianAccumulator.{decode, encode}

  // The pool and the emitted arrays are recycled (LargeArrays), as array_agg's are.
  private var pool = new Array[Long](GroupPool.Initial)
  protected def growSlots(capacity: Int): Unit = pool = LargeArrays.grown(pool, capacity)
  protected def moveSlot(from: Int, to: Int): Unit = pool(to) = pool(from)
  protected def dropSlots(from: Int, until: Int): Unit = ()
  protected def resetSlots(capacity: Int): Unit = { LargeArrays.release(pool); pool = new Array[Long](capacity) }

  private def add(g: Int, x: Double): Unit = {
    val slot = slotFor(g) // may replace `pool`
    pool(slot) = encode(x)
  }

  protected def updateRow(g: Int, column: Column, i: Int): Unit =
    if (!column.isNullAt(i)) add(g, kind.readDouble(column, i))

  protected def mergeDouble(g: Int, value: Double, isNull: Boolean): Unit = if (!isNull) add(g, value)
  protected def mergeElement(g: Int, list: ListValues, j: Int): Unit =
    if (!list.isNullAt(j)) add(g, MedianAccumulator.element(kind, list, j))

  /** The emitted groups' values, each group's sorted at [offsets(g), offsets(g + 1)). Values that already
   *  lie in group order at the start of the pool (a single group's, say) are sorted where they are, without
   *  a copy: the pool drops them next. A copy is the caller's to release. */
  private def sorted(e: GroupPool.Emitted): Array[Long] = {
    val n = e.slots.length
    var same = 0
    while (same < n && e.slots(same) == same) same += 1
    val a =
      if (same == n) pool
      else {
        val copy = LargeArrays.longs(n)
        System.arraycopy(pool, 0, copy, 0, same)
        var i = same
        while (i < n) { copy(i) = pool(e.slots(i)); i += 1 }
        copy
      }
    var g = 0
    while (g < e.groups) { java.util.Arrays.sort(a, e.offsets(g), e.offsets(g + 1)); g += 1 }
    a
  }

  def evaluate(emit: EmitTo): Column = emitSlots(emit) { e =>
    val a = sorted(e)
    val n = e.groups
    val results = LargeArrays.lend(LargeArrays.doubles(n))
    val validity = new Array[Long](Validity.words(n))
    var g = 0
    while (g < n) {
      if (e.counts(g) > 0) { results(g) = statistic(a, e.offsets(g), e.offsets(g + 1)); Validity.set(validity, g) }
      else results(g) = 0.0
      g += 1
    }
    if (a ne pool) LargeArrays.release(a)
    new DoubleColumn(results, validity, n)
  }

  def state(emit: EmitTo): Array[Column] = Array(
    emitSlots(emit) { e =>
      val a = sorted(e)
      val out =
        if (kind.dataType == DoubleType) {
          val values = LargeArrays.lend(LargeArrays.doubles(e.slots.length))
          var i = 0
          while (i < values.length) { values(i) = decode(a(i)); i += 1 }
          new DoubleListColumn(values, e.offsets, null, e.groups)
        } else
          new ObjectColumn(
            Array.tabulate[Any](e.groups)(g => MedianAccumulator.stateList(kind, a, e.offsets(g), e.offsets(g + 1))))
      if (a ne pool) LargeArrays.release(a)
      out
    })

  override def convertToState(values: Columns, filter: Option[Column]): Array[Column] =
    GroupsAccumulator.statesOfRows(new SortedValueGroups(kind, statistic), values, filter)
  override def supportsConvertToState: Boolean = true

  def size: Long = poolSize + 8L * pool.length
}

private[sparkagg] object SortedValueGroups {
  /** A group's result from its values sorted at [from, until) of `sorted`, in [[MedianAccumulator]]'s
   *  encoding: a trait rather than a Function3, which would box both indices and the result per group. */
  trait Statistic { def apply(sorted: Array[Long], from: Int, until: Int): Double }
}

final class DecimalMedianAccumulator(t: DecimalType) extends Accumulator {
  private val values = new ArrayBuffer[Decimal]

  def update(args: Values): Unit = if (!args.isNullAt(0)) values += args.getDecimal(0, t.precision, t.scale).clone()
  def merge(state: Values): Unit = if (!state.isNullAt(0)) {
    val list = state.getList(0)
    var j = 0
    while (j < list.numElements) { if (!list.isNullAt(j)) values += list.copy(j, t).asInstanceOf[Decimal]; j += 1 }
  }
  def state(): Array[Any] = Array(values.toArray[Any])
  def evaluate(): Any =
    if (values.isEmpty) null
    else {
      DecimalMedianAccumulator.middle(t, values.sorted)
    }
  def size: Long = 48 + 64L * values.length
}

/**
 * median of decimals for every group ([[DecimalMedianAccumulator]]'s semantics, states included): the
 * non-NULL values kept in array_agg's pool ([[ArrayAggGroups]], arrival order, no object per group); each
 * group's sorted copy gives its median when emitted.
 */
private[sparkagg] final class DecimalMedianGroups(t: DecimalType) extends GroupsAccumulator {
  private val lists = new ArrayAggGroups(t)

  /** The filter that also leaves out rows whose value is NULL, which median skips and array_agg keeps. */
  private def nonNull(values: Columns, filter: Option[Column]): Option[Column] = {
    val (c, f) = (values.column(0), filter.orNull)
    val n = values.numRows
    Some(new BooleanColumn(Fill.booleans(n)(i => GroupsAccumulator.keep(f, i) && !c.isNullAt(i)), null, n))
  }

  def updateBatch(values: Columns, groupIndices: Array[Int], filter: Option[Column], totalGroups: Int): Unit =
    lists.updateBatch(values, groupIndices, nonNull(values, filter), totalGroups)
  // A state's list holds no NULL (StateCheck.noNullElements).
  def mergeBatch(states: Columns, groupIndices: Array[Int], filter: Option[Column], totalGroups: Int): Unit =
    lists.mergeBatch(states, groupIndices, filter, totalGroups)

  def evaluate(emit: EmitTo): Column = {
    val all = lists.evaluate(emit)
    new ObjectColumn(
      Array.tabulate[Any](all.numRows) { g =>
        if (all.isNullAt(g)) null
        else {
          DecimalMedianAccumulator.middle(
            t, all.get(g, ArrayType(t)).asInstanceOf[Array[Any]].map(_.asInstanceOf[Decimal]).sorted)
        }
      })
  }

  def state(emit: EmitTo): Array[Column] = lists.state(emit)
  override def convertToState(values: Columns, filter: Option[Column]): Array[Column] =
    lists.convertToState(values, nonNull(values, filter))
  override def supportsConvertToState: Boolean = true
  def size: Long = lists.size
}

object DecimalMedianAccumulator {
  /** The median of sorted decimals of type `t`, not empty: the middle one, or the two middle ones' midpoint. */
  def middle(t: DecimalType, a: scala.collection.IndexedSeq[Decimal]): Decimal = {
    val n = a.length
    if (n % 2 == 1) a(n / 2) else midpoint(t, a(n / 2 - 1), a(n / 2))
  }

  /** The mean of two decimals of type `t`, truncated toward zero at its scale. */
  def midpoint(t: DecimalType, a: Decimal, b: Decimal): Decimal = Decimal(
    a.toJavaBigDecimal.add(b.toJavaBigDecimal).divide(JBigDecimal.valueOf(2), t.scale, RoundingMode.DOWN),
    t.precision,
    t.scale)
}

/**
 * An order statistic of a sliding frame (median, percentile_cont): the frame's non-NULL values in an
 * [[OrderStatistics]], so a row entering or leaving costs O(log w), where the list accumulators sort
 * the frame again for each value. `K` is how a value is held: the sortable bits of a double, or the
 * decimal. State and merge as the list accumulators' (a list of the values, ascending).
 */
abstract class SlidingOrderAccumulator[K <: AnyRef](elementType: DataType)(implicit ordering: Ordering[K])
  extends Accumulator {
  protected val values = new OrderStatistics[K]
  protected def held(value: AnyRef): K
  protected def internal(k: K): Any

  def update(args: Values): Unit = if (!args.isNullAt(0)) values.add(held(args.copy(0, elementType)))
  override def retract(args: Values): Unit = if (!args.isNullAt(0)) values.remove(held(args.get(0, elementType)))
  override def supportsRetract: Boolean = true

  def merge(state: Values): Unit = if (!state.isNullAt(0)) {
    val list = state.getList(0)
    var j = 0
    while (j < list.numElements) { if (!list.isNullAt(j)) values.add(held(list.copy(j, elementType))); j += 1 }
  }
  def state(): Array[Any] = {
    val out = new ArrayBuffer[Any](values.size.toInt)
    values.foreach(v => out += internal(v))
    Array(out.toArray)
  }
  def size: Long = 64 + 96L * values.entries
}

/** median over a sliding frame of floats or doubles (results as [[MedianAccumulator]]'s, to the bit). */
final class SlidingMedianAccumulator(kind: ValueKind.DoubleLike)
  extends SlidingOrderAccumulator[java.lang.Long](kind.dataType) {
  import MedianAccumulator.{decode, encode}
  protected def held(value: AnyRef): java.lang.Long = encode(value.asInstanceOf[java.lang.Number].doubleValue)
  protected def internal(k: java.lang.Long): Any = kind.box(decode(k))
  def evaluate(): Any = {
    val n = values.size
    if (n == 0) null
    else if (n % 2 == 1) kind.box(decode(values.kth(n / 2)))
    else kind.box((decode(values.kth(n / 2 - 1)) + decode(values.kth(n / 2))) / 2)
  }
}

/** median over a sliding frame of decimals (results as [[DecimalMedianAccumulator]]'s). */
final class SlidingDecimalMedianAccumulator(t: DecimalType) extends SlidingOrderAccumulator[Decimal](t) {
  protected def held(value: AnyRef): Decimal = value.asInstanceOf[Decimal]
  protected def internal(k: Decimal): Any = k
  def evaluate(): Any = {
    val n = values.size
    if (n == 0) null
    else if (n % 2 == 1) values.kth(n / 2)
    else DecimalMedianAccumulator.midpoint(t, values.kth(n / 2 - 1), values.kth(n / 2))
  }
}
