package sparkagg.common

import org.apache.spark.sql.types.DataType
import sparkagg.api._

/**
 * The functions that order their values by `WITHIN GROUP` keys (array_agg, string_agg, nth_value) for every
 * group, with [[OrderedValues]]' semantics to the bit: each kept value and its key row is a slot of one
 * [[GroupPool]] shared by all groups, in arrival order, no object per group. Emitting sorts each group's
 * slots by their keys, stably (ties keep arrival order), as OrderedValues does when read, so a group's
 * state is its values and keys in that order, and its result `result` of the sorted values (NULL when it
 * has none). A row's value is its argument 0, its keys the arguments from `keyOffset`; with
 * `skipNullValues` a NULL value is not kept (string_agg).
 */
private[sparkagg] final class OrderedValueGroups(valueType: DataType, keys: OrderKeys, keyOffset: Int,
    skipNullValues: Boolean, result: Array[Any] => Any)
  extends GroupPool with GroupsAccumulator {
  private var values = new Array[AnyRef](GroupPool.Initial)
  private var keyRows = new Array[Array[Any]](GroupPool.Initial)
  private var held = 0L // bytes of the kept values and keys

  private def bytesOf(value: Any, keyRow: Array[Any]): Long = {
    var n = OrderedValues.sizeOf(value) + 16L * keyRow.length
    var k = 0
    while (k < keyRow.length) { n += OrderedValues.sizeOf(keyRow(k)); k += 1 }
    n
  }

  protected def growSlots(capacity: Int): Unit = {
    values = java.util.Arrays.copyOf(values, capacity)
    keyRows = java.util.Arrays.copyOf(keyRows, capacity)
  }
  protected def moveSlot(from: Int, to: Int): Unit = { values(to) = values(from); keyRows(to) = keyRows(from) }
  protected def dropSlots(from: Int, until: Int): Unit = {
    java.util.Arrays.fill(values, from, until, null)
    java.util.Arrays.fill(keyRows.asInstanceOf[Array[AnyRef]], from, until, null)
  }
  protected def resetSlots(capacity: Int): Unit = {
    values = new Array[AnyRef](capacity)
    keyRows = new Array[Array[Any]](capacity)
  }

  private def keep(g: Int, value: Any, keyRow: Array[Any]): Unit = {
    val slot = slotFor(g) // may replace the arrays
    values(slot) = value.asInstanceOf[AnyRef]
    keyRows(slot) = keyRow
    held += bytesOf(value, keyRow)
  }

  def updateBatch(columns: Columns, groupIndices: Array[Int], filter: Option[Column], totalGroups: Int): Unit = {
    resizeGroups(totalGroups)
    val row = new ColumnsRow(columns)
    val f = filter.orNull
    var i = 0
    while (i < columns.numRows) {
      row.row = i
      val isNull = row.isNullAt(0)
      if (GroupsAccumulator.keep(f, i) && !(skipNullValues && isNull))
        keep(groupIndices(i), if (isNull) null else row.copy(0, valueType), keys.read(row, keyOffset))
      i += 1
    }
  }

  def mergeBatch(states: Columns, groupIndices: Array[Int], filter: Option[Column], totalGroups: Int): Unit = {
    resizeGroups(totalGroups)
    val row = new ColumnsRow(states)
    val f = filter.orNull
    var i = 0
    while (i < states.numRows) {
      if (GroupsAccumulator.keep(f, i)) {
        row.row = i
        val g = groupIndices(i)
        OrderedValues.foreachIn(row, 0, valueType, keys)((value, keyRow) => keep(g, value, keyRow))
      }
      i += 1
    }
  }

  /** Each emitted group's values and key rows, sorted by key (empty arrays for a group without any). */
  private def sorted(emit: EmitTo): (Array[Array[Any]], Array[Array[Any]]) = emitSlots(emit) { e =>
    val (outValues, outKeys) = (new Array[Array[Any]](e.groups), new Array[Array[Any]](e.groups))
    var g = 0
    while (g < e.groups) {
      val order = Array.tabulate[Integer](e.counts(g))(j => Integer.valueOf(e.slots(e.offsets(g) + j)))
      java.util.Arrays.sort(order, (a: Integer, b: Integer) => keys.comparator.compare(keyRows(a), keyRows(b)))
      outValues(g) = order.map(s => values(s.intValue): Any)
      outKeys(g) = order.map(s => keyRows(s.intValue): Any)
      order.foreach(s => held -= bytesOf(values(s.intValue), keyRows(s.intValue)))
      g += 1
    }
    (outValues, outKeys)
  }

  def evaluate(emit: EmitTo): Column =
    new ObjectColumn(sorted(emit)._1.map(v => if (v.isEmpty) null else result(v)))

  def state(emit: EmitTo): Array[Column] = {
    val (v, k) = sorted(emit)
    Array(new ObjectColumn(v.map(a => a: Any)), new ObjectColumn(k.map(a => a: Any)))
  }

  override def convertToState(columns: Columns, filter: Option[Column]): Array[Column] =
    GroupsAccumulator.statesOfRows(
      new OrderedValueGroups(valueType, keys, keyOffset, skipNullValues, result), columns, filter)
  override def supportsConvertToState: Boolean = true

  def size: Long = poolSize + 16L * values.length + held
}
