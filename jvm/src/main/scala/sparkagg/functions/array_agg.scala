package sparkagg.functions

import scala.collection.mutable.ArrayBuffer

import org.apache.spark.sql.types._
import org.apache.spark.unsafe.Platform
import org.apache.spark.unsafe.types.UTF8String
import sparkagg.api._
import sparkagg.common._

/**
 * array_agg(x) [WITHIN GROUP (ORDER BY key [DESC], ...)]: the values of x, NULLs kept, as array<T> with
 * nullable elements (as DataFusion declares list states); NULL on empty input, not []. DISTINCT comes from Spark's
 * DISTINCT keyword; DataFusion's IGNORE NULLS is `FILTER (WHERE x IS NOT NULL)` (Spark's parser keeps IGNORE
 * NULLS for its own first/last). Without an ordering the order of the elements follows the input,
 * which partitioning may change. State: array_agg, the list so far; ordered, the list sorted and
 * array_agg_orderings, the keys of its elements.
 */
object ArrayAgg extends FunctionDef {
  val name = "array_agg"
  val signature = "(any) [WITHIN GROUP (ORDER BY any orderable, ...)] -> array<same type>"
  override val withinGroup: WithinGroup = WithinGroup.OrderedBy
  val doc = FunctionDoc(
    usage = "_FUNC_(expr) [WITHIN GROUP (ORDER BY key [DESC], ...)] - The values of expr, NULLs included, " +
      "as an array, in the order of the keys if given; NULL if there are no rows.",
    arguments = Seq("expr" -> "any type", "key" -> Types.Orderable),
    examples = Seq(
      "SELECT _FUNC_(col) FROM VALUES (1), (NULL), (1) AS tab(col)" -> "[1, null, 1]",
      "SELECT _FUNC_(col) FROM VALUES (1) AS tab(col) WHERE col > 1" -> "NULL",
      "SELECT _FUNC_(col) WITHIN GROUP (ORDER BY t DESC) FROM VALUES ('a', 1), ('b', 3), (NULL, 2) AS tab(col, t)" ->
        "[b, null, a]",
      "SELECT _FUNC_(col) FILTER (WHERE col IS NOT NULL) FROM VALUES (1), (NULL), (2) AS tab(col)" -> "[1, 2]"
    ),
    note = "NULLs kept; `DISTINCT` via Spark; DataFusion's IGNORE NULLS: `FILTER (WHERE x IS NOT NULL)`; without " +
      "keys, input order",
    accepts = "any; keys orderable",
    result = "array of x's type, elements nullable",
    emptyInput = "NULL (not [])",
    dataFusion = "yes",
    nan = "kept, a value like any other",
    spark = "`collect_list` (`array_agg` from Spark 4.0): skips NULLs, which this keeps unless `ignore_nulls`, and " +
      "gives [] over no rows where this gives NULL"
  )

  def bind(args: Seq[Arg], ctx: BindContext): Either[String, Bound] = OrderKeys.of(args).flatMap { keys =>
    args.filter(_.sortKey.isEmpty).map(_.dataType) match {
      case Seq(t) =>
        val list = ArrayType(t, containsNull = true)
        if (keys.isEmpty) Right(Bound(list, StructType(Seq(StructField(name, list))), () => new ArrayAggAccumulator(t),
            newGroupsAccumulator = Some(() => new ArrayAggGroups(t))))
        else Right(
          Bound(
            list,
            OrderedValues.stateSchema(name, t, keys),
            () => new OrderedArrayAggAccumulator(t, keys),
            newGroupsAccumulator =
              Some(() => new OrderedValueGroups(t, keys, keyOffset = 1, skipNullValues = false, result = v => v)),
            stateCheck = OrderedValues.stateCheck(
              name)
          ))
      case _ => Left("expects exactly one argument")
    }
  }

  override def argumentsOf(state: StructType, parameters: Seq[Arg]): Option[Seq[Arg]] =
    OrderedValues.argumentsOf(name, state, parameters)
}

/** array_agg with WITHIN GROUP: the values sorted by their keys, which start at `keyOffset` in a row. */
final class OrderedArrayAggAccumulator(elementType: DataType, keys: OrderKeys, keyOffset: Int = 1) extends Accumulator {
  private val values = new OrderedValues(elementType, keys)
  def update(args: Values): Unit = values.add(args, 0, keyOffset)
  def merge(state: Values): Unit = values.merge(state, 0)
  def state(): Array[Any] = values.state()
  def evaluate(): Any = if (values.isEmpty) null else values.sortedValues
  def size: Long = values.size
}

final class ArrayAggAccumulator(elementType: DataType) extends Accumulator {
  private val values = new ArrayBuffer[Any]
  private var bytes = 0L

  private def keep(v: Any): Unit = {
    values += v
    bytes += 16 + (v match {
      case s: UTF8String => s.numBytes
      case b: Array[Byte] => b.length
      case _ => 8
    })
  }

  def update(args: Values): Unit = keep(if (args.isNullAt(0)) null else args.copy(0, elementType))

  def merge(state: Values): Unit = if (!state.isNullAt(0)) {
    val list = state.getList(0)
    var j = 0
    while (j < list.numElements) {
      keep(if (list.isNullAt(j)) null else list.copy(j, elementType))
      j += 1
    }
  }

  def state(): Array[Any] = Array(values.toArray[Any])
  def evaluate(): Any = if (values.isEmpty) null else values.toArray[Any]
  def size: Long = 48 + 8L * values.length + bytes
}

/**
 * array_agg's GroupsAccumulator (without WITHIN GROUP): every kept element goes to one [[GroupPool]]
 * shared by all groups, tagged with its group, in arrival order; emitting orders the pool by group with a
 * stable counting sort, so each group's list keeps its arrival order, as [[ArrayAggAccumulator]]'s does.
 * No object per group; bigint and double elements are kept unboxed, and a group's list of them without
 * NULLs comes out as a primitive array.
 */
private[sparkagg] final class ArrayAggGroups(elementType: DataType) extends ListStatePool with GroupsAccumulator {
  private var present = new Array[Long](Validity.words(GroupPool.Initial))
  private val elements = ElementPool(elementType)

  protected def growSlots(capacity: Int): Unit = {
    present = LargeArrays.copyOf(present, Validity.words(capacity))
    elements.grow(capacity)
  }

  protected def moveSlot(from: Int, to: Int): Unit = {
    if (Validity.isValid(present, from)) Validity.set(present, to)
    else present(to >> 6) &= ~(1L << to)
    elements.move(from, to)
  }

  protected def dropSlots(from: Int, until: Int): Unit = {
    java.util.Arrays.fill(present, Validity.words(from), present.length, 0L)
    if (from % 64 != 0) present(from >> 6) &= ~(-1L << from)
    elements.clear(from, until)
  }

  protected def resetSlots(capacity: Int): Unit = {
    LargeArrays.release(present)
    present = new Array[Long](Validity.words(capacity))
    elements.reset(capacity)
  }

  protected def updateRow(g: Int, column: Column, i: Int): Unit = {
    val slot = slotFor(g)
    if (!column.isNullAt(i)) { Validity.set(present, slot); elements.put(slot, column, i) }
  }

  protected def mergeDouble(g: Int, value: Double, isNull: Boolean): Unit = {
    val slot = slotFor(g)
    if (!isNull) { Validity.set(present, slot); elements.putDouble(slot, value) }
  }

  protected def mergeElement(g: Int, list: ListValues, j: Int): Unit = {
    val slot = slotFor(g)
    if (!list.isNullAt(j)) { Validity.set(present, slot); elements.putElement(slot, list, j) }
  }

  /** The emitted groups' lists (an empty group's NULL, or empty when `emptyIsNull` is false). */
  private def lists(emit: EmitTo, emptyIsNull: Boolean): Column =
    emitSlots(emit)(e => elements.lists(e.slots, e.offsets, present, if (emptyIsNull) e.counts else null))

  def evaluate(emit: EmitTo): Column = lists(emit, emptyIsNull = true)
  def state(emit: EmitTo): Array[Column] = Array(lists(emit, emptyIsNull = false))

  /** Each row's own list: its value (NULL included), or empty when filtered out. */
  override def convertToState(values: Columns, filter: Option[Column]): Array[Column] = {
    val column = values.column(0)
    val f = filter.orNull
    Array(
      new ObjectColumn(
        Array.tabulate[Any](values.numRows)(i =>
          if (GroupsAccumulator.keep(f, i)) Array[Any](column.copy(i, elementType)) else Array.empty[Any])))
  }
  override def supportsConvertToState: Boolean = true

  def size: Long = poolSize + 8L * present.length + elements.size
}

/**
 * The elements of [[ArrayAggGroups]]' pool, slot by slot, in the layout their type allows: bigint and
 * double in primitive arrays, strings and binaries in one arena, anything else as copied values. A slot's NULL is the accumulator's to
 * track; here a NULL slot is simply never written.
 */
private sealed abstract class ElementPool {
  def grow(capacity: Int): Unit
  def reset(capacity: Int): Unit
  def put(slot: Int, column: Column, row: Int): Unit
  def putElement(slot: Int, list: ListValues, j: Int): Unit
  /** A double element (the pool of a list of doubles). */
  def putDouble(slot: Int, value: Double): Unit =
    throw new UnsupportedOperationException(s"${getClass.getSimpleName} holds no doubles")
  def move(from: Int, to: Int): Unit
  /** Forgets the slots [from, until). */
  def clear(from: Int, until: Int): Unit
  /** A column of lists, list g of the slots `order` at [offsets(g), offsets(g + 1)); NULL where `counts`
   *  (when given) is 0. */
  def lists(order: Array[Int], offsets: Array[Int], present: Array[Long], counts: Array[Int]): Column
  def size: Long

  protected final def allPresent(order: Array[Int], from: Int, until: Int, present: Array[Long]): Boolean = {
    var i = from
    while (i < until && Validity.isValid(present, order(i))) i += 1
    i == until
  }
}

/** An [[ElementPool]] whose lists are made one group at a time. */
private sealed abstract class ListByListPool extends ElementPool {
  def lists(order: Array[Int], offsets: Array[Int], present: Array[Long], counts: Array[Int]): Column = {
    val n = offsets.length - 1
    val out = new Array[Any](n)
    var g = 0
    while (g < n) {
      if (counts == null || counts(g) > 0) out(g) = list(order, offsets(g), offsets(g + 1), present)
      g += 1
    }
    new ObjectColumn(out)
  }
  /** One list: the slots `order` at [from, until). */
  protected def list(order: Array[Int], from: Int, until: Int, present: Array[Long]): Any

  protected final def boxed(order: Array[Int], from: Int, until: Int, present: Array[Long], value: Int => Any)
      : Array[Any] = {
    val out = new Array[Any](until - from)
    var i = from
    while (i < until) { if (Validity.isValid(present, order(i))) out(i - from) = value(order(i)); i += 1 }
    out
  }
}

private object ElementPool {
  def apply(elementType: DataType): ElementPool = elementType match {
    case LongType => new PrimitivePool(doubles = false)
    case DoubleType => new PrimitivePool(doubles = true)
    case _: StringType => new BytesPool(strings = true)
    case BinaryType => new BytesPool(strings = false)
    case other => new ValuePool(other)
  }
}

/** bigint or double (`doubles`) elements in one long array, doubles by their bits: no boxing. */
private final class PrimitivePool(doubles: Boolean) extends ListByListPool {
  private var values = new Array[Long](GroupPool.Initial)
  def grow(capacity: Int): Unit = values = LargeArrays.grown(values, capacity) // a slot is set before it is read
  def reset(capacity: Int): Unit = { LargeArrays.release(values); values = new Array[Long](capacity) }
  def put(slot: Int, column: Column, row: Int): Unit =
    values(slot) = if (doubles) java.lang.Double.doubleToRawLongBits(column.getDouble(row)) else column.getLong(row)
  def putElement(slot: Int, list: ListValues, j: Int): Unit =
    values(slot) = if (doubles) java.lang.Double.doubleToRawLongBits(list.getDouble(j)) else list.getLong(j)
  override def putDouble(slot: Int, value: Double): Unit = values(slot) = java.lang.Double.doubleToRawLongBits(value)
  def move(from: Int, to: Int): Unit = values(to) = values(from)
  def clear(from: Int, until: Int): Unit = ()
  private def double(slot: Int): Double = java.lang.Double.longBitsToDouble(values(slot))

  /** Doubles come out end to end in one [[DoubleListColumn]]; bigints as a list per group. */
  override def lists(order: Array[Int], offsets: Array[Int], present: Array[Long], counts: Array[Int]): Column =
    if (!doubles) super.lists(order, offsets, present, counts)
    else {
      val n = offsets.length - 1
      val flat = LargeArrays.lend(LargeArrays.doubles(order.length)) // recycled: a NULL's place is written too
      val elementValidity =
        if (allPresent(order, 0, order.length, present)) null else new Array[Long](Validity.words(flat.length))
      var i = 0
      while (i < flat.length) {
        if (Validity.isValid(present, order(i))) {
          flat(i) = double(order(i))
          if (elementValidity != null) Validity.set(elementValidity, i)
        } else flat(i) = 0.0
        i += 1
      }
      val validity = if (counts == null) null else new Array[Long](Validity.words(n))
      var g = 0
      while (validity != null && g < n) { if (counts(g) > 0) Validity.set(validity, g); g += 1 }
      new DoubleListColumn(flat, offsets, validity, n, elementValidity)
    }

  protected def list(order: Array[Int], from: Int, until: Int, present: Array[Long]): Any =
    if (!allPresent(order, from, until, present)) boxed(order, from, until, present, values(_))
    else {
      val out = new Array[Long](until - from)
      var i = from
      while (i < until) { out(i - from) = values(order(i)); i += 1 }
      out
    }
  def size: Long = 8L * values.length
}

/** Strings or binaries (`strings` false) in one arena, slot by slot as (start, length): no object per
 *  element. The emitted lists come out end to end in one [[BytesListColumn]]; the slots left after an
 *  emission are copied to a new arena, so that emitted bytes do not stay. */
private final class BytesPool(strings: Boolean) extends ElementPool {
  private var start = new Array[Int](GroupPool.Initial)
  private var length = new Array[Int](GroupPool.Initial) // 0 in a slot without a value
  private var arena = new Array[Byte](8 * GroupPool.Initial)
  private var used = 0

  def grow(capacity: Int): Unit = {
    start = LargeArrays.copyOf(start, capacity)
    length = LargeArrays.copyOf(length, capacity)
  }
  def reset(capacity: Int): Unit = {
    Seq(start, length).foreach(LargeArrays.release)
    start = new Array[Int](capacity)
    length = new Array[Int](capacity)
    arena = new Array[Byte](8 * GroupPool.Initial)
    used = 0
  }

  private def keep(slot: Int, base: AnyRef, offset: Long, n: Int): Unit = {
    if (used + n > arena.length) arena = java.util.Arrays.copyOf(arena, math.max(2 * arena.length, used + n))
    BytesColumn.copyInto(base, offset, n, arena, used)
    start(slot) = used
    length(slot) = n
    used += n
  }
  private def keepString(slot: Int, s: UTF8String): Unit = keep(slot, s.getBaseObject, s.getBaseOffset, s.numBytes)
  private def keepBinary(slot: Int, b: Array[Byte]): Unit = keep(slot, b, Platform.BYTE_ARRAY_OFFSET, b.length)

  def put(slot: Int, column: Column, row: Int): Unit = column match {
    case b: BytesColumn => keep(slot, b.bytes, Platform.BYTE_ARRAY_OFFSET + b.start(row), b.length(row))
    case _ => if (strings) keepString(slot, column.getUTF8String(row)) else keepBinary(slot, column.getBinary(row))
  }
  def putElement(slot: Int, list: ListValues, j: Int): Unit =
    if (strings) keepString(slot, list.getUTF8String(j))
    else keepBinary(slot, list.copy(j, BinaryType).asInstanceOf[Array[Byte]])

  def move(from: Int, to: Int): Unit = {
    start(to) = start(from)
    length(to) = length(from)
  }

  /** The slots below `from` are the ones kept: their bytes go to a new arena. */
  def clear(from: Int, until: Int): Unit = {
    java.util.Arrays.fill(length, from, until, 0)
    var live = 0
    var slot = 0
    while (slot < from) { live += length(slot); slot += 1 }
    val fresh = new Array[Byte](math.max(8 * GroupPool.Initial, 2 * live))
    var at = 0
    slot = 0
    while (slot < from) {
      System.arraycopy(arena, start(slot), fresh, at, length(slot))
      start(slot) = at
      at += length(slot)
      slot += 1
    }
    arena = fresh
    used = at
  }

  def lists(order: Array[Int], offsets: Array[Int], present: Array[Long], counts: Array[Int]): Column = {
    val n = offsets.length - 1
    val elements = order.length
    val starts = new Array[Int](elements + 1)
    var e = 0
    while (e < elements) { starts(e + 1) = starts(e) + length(order(e)); e += 1 }
    val bytes = new Array[Byte](starts(elements))
    val elementValidity =
      if (allPresent(order, 0, elements, present)) null else new Array[Long](Validity.words(elements))
    e = 0
    while (e < elements) {
      val slot = order(e)
      System.arraycopy(arena, start(slot), bytes, starts(e), length(slot))
      if (elementValidity != null && Validity.isValid(present, slot)) Validity.set(elementValidity, e)
      e += 1
    }
    val validity = if (counts == null) null else new Array[Long](Validity.words(n))
    var g = 0
    while (validity != null && g < n) { if (counts(g) > 0) Validity.set(validity, g); g += 1 }
    new BytesListColumn(bytes, starts, offsets, validity, n, elementValidity)
  }

  def size: Long = 8L * start.length + arena.length
}

/** Values of any other type, copied out of their batch; `bytes` estimates what they hold. */
private final class ValuePool(elementType: DataType) extends ListByListPool {
  private var values = new Array[AnyRef](GroupPool.Initial)
  private var bytes = 0L
  private def held(v: AnyRef): Long = v match {
    case s: UTF8String => 16 + s.numBytes
    case b: Array[Byte] => 16 + b.length
    case _ => 16
  }
  def grow(capacity: Int): Unit = values = java.util.Arrays.copyOf(values, capacity)
  def reset(capacity: Int): Unit = { values = new Array[AnyRef](capacity); bytes = 0L }
  private def keep(slot: Int, v: AnyRef): Unit = { values(slot) = v; bytes += held(v) }
  def put(slot: Int, column: Column, row: Int): Unit = keep(slot, column.copy(row, elementType))
  def putElement(slot: Int, list: ListValues, j: Int): Unit = keep(slot, list.copy(j, elementType))
  def move(from: Int, to: Int): Unit = if (from != to) {
    // `to` holds an emitted element, or nothing: its value is dropped.
    if (values(to) != null) bytes -= held(values(to))
    values(to) = values(from)
    values(from) = null
  }
  def clear(from: Int, until: Int): Unit = {
    var slot = from
    while (slot < until) { if (values(slot) != null) bytes -= held(values(slot)); values(slot) = null; slot += 1 }
  }
  protected def list(order: Array[Int], from: Int, until: Int, present: Array[Long]): Any =
    boxed(order, from, until, present, values(_))
  def size: Long = 8L * values.length + bytes
}
