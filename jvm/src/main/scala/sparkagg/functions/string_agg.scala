package sparkagg.functions

import java.io.ByteArrayOutputStream

import org.apache.spark.sql.types._
import org.apache.spark.unsafe.Platform
import org.apache.spark.unsafe.types.UTF8String
import sparkagg.api._
import sparkagg.common.{BinaryColumn, BytesColumn, GroupColumns, GroupPool, LargeArrays, OneValuePool, OrderKeys, OrderedValueGroups, OrderedValues, Validity}

/**
 * string_agg(x, delimiter) [WITHIN GROUP (ORDER BY key [DESC], ...)]: the non-NULL strings of x joined
 * by a constant delimiter, in the order of the keys if given; NULL when there are none. Without an
 * ordering the order follows the input, which partitioning may change. State: string_agg, the joined
 * string so far (NULL while empty); ordered, the strings sorted and string_agg_orderings, their keys.
 */
object StringAgg extends FunctionDef {
  val name = "string_agg"
  val signature = "(string, delimiter: constant string) [WITHIN GROUP (ORDER BY any orderable, ...)] -> string"
  override val withinGroup: WithinGroup = WithinGroup.OrderedBy
  val doc = FunctionDoc(
    usage = "_FUNC_(expr, delimiter) [WITHIN GROUP (ORDER BY key [DESC], ...)] - The non-NULL values of expr " +
      "joined by delimiter, in the order of the keys if given; NULL if there are none.",
    arguments = Seq("expr" -> "string", "delimiter" -> "a constant string", "key" -> Types.Orderable),
    examples = Seq(
      "SELECT _FUNC_(col, '-') FROM VALUES ('a'), (NULL), ('a') AS tab(col)" -> "a-a",
      "SELECT _FUNC_(col, ', ') FROM VALUES (CAST(NULL AS STRING)) AS tab(col)" -> "NULL",
      "SELECT _FUNC_(col, ',') WITHIN GROUP (ORDER BY t) FROM VALUES ('a', 3), (NULL, 1), ('c', 2) AS tab(col, t)" ->
        "c,a"
    ),
    note = "NULLs skipped",
    accepts = "string, constant string",
    result = "string",
    emptyInput = "NULL",
    dataFusion = "yes",
    nan = "does not apply: strings only",
    spark = "`string_agg` / `listagg` (Spark 4.0+; `concat_ws(d, collect_list(s))` before): the same for the " +
      "same row order, WITHIN GROUP alike"
  )

  private val state = StructType(Seq(StructField(name, StringType)))

  def bind(args: Seq[Arg], ctx: BindContext): Either[String, Bound] = OrderKeys.of(args).flatMap { keys =>
    args.filter(_.sortKey.isEmpty) match {
      case Seq(x, d) if x.dataType.isInstanceOf[StringType] || Types.isUntypedNull(x.dataType) =>
        d.constant match {
          case Some(delimiter: UTF8String) if d.dataType.isInstanceOf[StringType] =>
            val coerce = Seq(StringType, StringType) ++ keys.types
            if (keys.isEmpty)
              Right(
                Bound(
                  StringType,
                  state,
                  () => new StringAggAccumulator(delimiter.getBytes),
                  coerceTo = coerce,
                  newGroupsAccumulator = Some(() => new StringAggGroups(delimiter.getBytes))
                ))
            else
              Right(
                Bound(
                  StringType,
                  OrderedValues.stateSchema(name, StringType, keys),
                  () => new OrderedStringAggAccumulator(delimiter, keys),
                  coerceTo = coerce,
                  newGroupsAccumulator = Some(() =>
                    new OrderedValueGroups(StringType, keys, keyOffset = 2, skipNullValues = true,
                      result = OrderedStringAggAccumulator.join(delimiter, _))),
                  stateCheck = OrderedValues.stateCheck(
                    name)
                ))
          case _ => Left("expects a constant string as its delimiter (the second argument)")
        }
      case _ => Left("expects two arguments: a string and a constant string delimiter")
    }
  }

  override def argumentsOf(state: StructType, parameters: Seq[Arg]): Option[Seq[Arg]] =
    OrderedValues.argumentsOf(name, state, parameters)
}

final class StringAggAccumulator(delimiter: Array[Byte]) extends Accumulator {
  private val joined = new ByteArrayOutputStream()
  private var empty = true

  private def append(s: UTF8String): Unit = {
    if (!empty) joined.write(delimiter)
    joined.write(s.getBytes)
    empty = false
  }

  def update(args: Values): Unit = if (!args.isNullAt(0)) append(args.getUTF8String(0))
  def merge(state: Values): Unit = if (!state.isNullAt(0)) append(state.getUTF8String(0))
  def state(): Array[Any] = Array(evaluate())
  def evaluate(): Any = if (empty) null else UTF8String.fromBytes(joined.toByteArray)
  def size: Long = 64 + joined.size
}

/** string_agg with WITHIN GROUP: the strings kept with their keys, joined in key order when read. */
final class OrderedStringAggAccumulator(delimiter: UTF8String, keys: OrderKeys) extends Accumulator {
  private val values = new OrderedValues(StringType, keys)
  def update(args: Values): Unit = if (!args.isNullAt(0)) values.add(args, 0, 2)
  def merge(state: Values): Unit = values.merge(state, 0)
  def state(): Array[Any] = values.state()
  def evaluate(): Any = if (values.isEmpty) null else OrderedStringAggAccumulator.join(delimiter, values.sortedValues)
  def size: Long = values.size
}

object OrderedStringAggAccumulator {
  /** The strings, in the order given, joined by the delimiter. */
  def join(delimiter: UTF8String, strings: Array[Any]): UTF8String =
    UTF8String.concatWs(delimiter, strings.map(_.asInstanceOf[UTF8String]): _*)
}

/**
 * string_agg without WITHIN GROUP for every group ([[StringAggAccumulator]]'s semantics, to the byte):
 * each non-NULL string is a slot of the pool, its bytes laid end to end in one arena shared by all groups,
 * no object per group or per string. A merged state (the joined string of a partition) is one more piece,
 * as in the row accumulator. Emitting joins each group's pieces, in arrival order, with the delimiter.
 */
private[sparkagg] final class StringAggGroups(delimiter: Array[Byte]) extends OneValuePool with GroupsAccumulator {
  private var bytes = new Array[Byte](16 * GroupPool.Initial)
  private var used = 0
  private var starts = new Array[Int](GroupPool.Initial)
  private var lengths = new Array[Int](GroupPool.Initial)

  // The arena and the slots' arrays are recycled (LargeArrays), as array_agg's pool is.
  protected def growSlots(capacity: Int): Unit = {
    starts = LargeArrays.grown(starts, capacity)
    lengths = LargeArrays.grown(lengths, capacity)
  }
  protected def moveSlot(from: Int, to: Int): Unit = { starts(to) = starts(from); lengths(to) = lengths(from) }
  /** The kept slots [0, from) moved down; their bytes are copied to the front of a new arena. */
  protected def dropSlots(from: Int, until: Int): Unit = {
    var total = 0L
    var slot = 0
    while (slot < from) { total += lengths(slot); slot += 1 }
    val kept = LargeArrays.bytes(math.max(16 * GroupPool.Initial, total.toInt))
    var at = 0
    slot = 0
    while (slot < from) {
      val n = lengths(slot)
      System.arraycopy(bytes, starts(slot), kept, at, n)
      starts(slot) = at
      at += n
      slot += 1
    }
    LargeArrays.release(bytes)
    bytes = kept
    used = at
  }
  protected def resetSlots(capacity: Int): Unit = {
    Seq(bytes, starts, lengths).foreach(LargeArrays.release)
    bytes = new Array[Byte](16 * GroupPool.Initial)
    used = 0
    starts = new Array[Int](capacity)
    lengths = new Array[Int](capacity)
  }

  protected def updateRow(g: Int, column: Column, i: Int): Unit = if (!column.isNullAt(i)) {
    val n = column match {
      case b: BytesColumn => // the bytes in place (the operator's batches, a scan's vector)
        val n = b.length(i)
        room(n)
        System.arraycopy(b.bytes, b.start(i), bytes, used, n)
        n
      case _ =>
        val s = column.getUTF8String(i)
        room(s.numBytes)
        s.writeToMemory(bytes, Platform.BYTE_ARRAY_OFFSET + used)
        s.numBytes
    }
    val slot = slotFor(g)
    starts(slot) = used
    lengths(slot) = n
    used += n
  }

  private def room(n: Int): Unit =
    if (used + n > bytes.length) bytes = LargeArrays.copyOf(bytes, math.max(2 * bytes.length, used + n))

  def mergeBatch(states: Columns, groupIndices: Array[Int], filter: Option[Column], totalGroups: Int): Unit =
    updateBatch(states, groupIndices, filter, totalGroups)

  // The joined strings end to end in one array: at a million groups, an array and a UTF8String per group
  // would double the memory of an early emission, just when memory ran short. Its arrays are recycled and
  // lent to the emission's loan, as BinaryColumn.gathered's.
  def evaluate(emit: EmitTo): Column = emitSlots(emit) { e =>
    val offsets = LargeArrays.lentOffsets(e.groups)
    val validity = LargeArrays.lend(LargeArrays.zeroLongs(Validity.words(e.groups)))
    var g = 0
    while (g < e.groups) {
      var total = 0L
      if (e.counts(g) > 0) {
        Validity.set(validity, g)
        total = delimiter.length.toLong * (e.counts(g) - 1)
        var k = e.offsets(g)
        while (k < e.offsets(g + 1)) { total += lengths(e.slots(k)); k += 1 }
      }
      if (offsets(g) + total > Int.MaxValue) throw new IllegalStateException("string_agg: 2 GB of strings to emit")
      offsets(g + 1) = offsets(g) + total.toInt
      g += 1
    }
    val out = LargeArrays.lend(LargeArrays.bytes(offsets(e.groups)))
    g = 0
    while (g < e.groups) {
      var at = offsets(g)
      var k = e.offsets(g)
      while (k < e.offsets(g + 1)) {
        if (k > e.offsets(g)) { System.arraycopy(delimiter, 0, out, at, delimiter.length); at += delimiter.length }
        val slot = e.slots(k)
        System.arraycopy(bytes, starts(slot), out, at, lengths(slot))
        at += lengths(slot)
        k += 1
      }
      g += 1
    }
    new BinaryColumn(out, offsets, validity, e.groups)
  }
  def state(emit: EmitTo): Array[Column] = Array(evaluate(emit))

  /** Each row's state is its own string (NULL when NULL or filtered out). */
  override def convertToState(values: Columns, filter: Option[Column]): Array[Column] =
    GroupColumns.ownValues(values, filter, StringType)
  override def supportsConvertToState: Boolean = true

  def size: Long = poolSize + bytes.length + 8L * starts.length
}
