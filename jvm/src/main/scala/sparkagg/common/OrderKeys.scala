package sparkagg.common

import java.util.Comparator

import scala.collection.mutable.ArrayBuffer

import org.apache.spark.sql.sparkagg.SparkInternals
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.types.ByteArray
import sparkagg.api._

/**
 * The `WITHIN GROUP (ORDER BY ...)` keys of a call, shared by the functions that order their values by
 * them (array_agg, string_agg, first_value, last_value, nth_value): which arguments they are, how they
 * sort, and how a state carries them. DataFusion keeps the keys beside the values in its state (its
 * "orderings" fields) so that merging partial states honours the order; so does sparkagg, and the
 * state's field names carry each key's direction, so that `_merge` can sort without the query.
 */
private[sparkagg] final case class OrderKeys(types: Seq[DataType], directions: Seq[SortKey]) {
  def isEmpty: Boolean = types.isEmpty
  def size: Int = types.size

  /** The state field names of the keys, e.g. "k0_desc_nulls_last". */
  def fieldNames: Seq[String] = directions.zipWithIndex.map { case (d, i) => s"k${i}_${d.name}" }
  def fields: Seq[StructField] = fieldNames.zip(types).map { case (n, t) => StructField(n, t) }
  def struct: StructType = StructType(fields)

  /** The keys of one row: `size` values from `offset`, copied. */
  def read(v: Values, offset: Int): Array[Any] =
    Array.tabulate[Any](types.size)(i => if (v.isNullAt(offset + i)) null else v.copy(offset + i, types(i)))

  /** A row's keys (from `offset` in `v`) against a kept key row, as [[comparator]] orders them, reading
   *  the row in place: the hot path of first_value / last_value copies keys only when they win. */
  private val physical = types.map(OrderKeys.physical).toArray

  def compareRow(v: Values, offset: Int, kept: Array[Any]): Int = {
    var i = 0
    var c = 0
    while (c == 0 && i < types.size) {
      val rowNull = v.isNullAt(offset + i)
      val keptNull = kept(i) == null
      val nullsFirst = directions(i).nullsFirst
      c =
        if (rowNull && keptNull) 0
        else if (rowNull) (if (nullsFirst) -1 else 1)
        else if (keptNull) (if (nullsFirst) 1 else -1)
        else {
          val ascending = OrderKeys.compareInPlace(physical(i), types(i), v, offset + i, kept(i))
          if (directions(i).descending) -ascending else ascending
        }
      i += 1
    }
    c
  }

  /** Orders key rows as Spark's sort does: per key, its direction and where NULLs go. */
  val comparator: Comparator[Array[Any]] = {
    val compares = types.map(OrderKeys.compareValues).toArray
    val dirs = directions.toArray
    (a, b) => {
      var i = 0
      var c = 0
      while (c == 0 && i < compares.length) {
        val (x, y) = (a(i), b(i))
        c =
          if (x == null && y == null) 0
          else if (x == null) (if (dirs(i).nullsFirst) -1 else 1)
          else if (y == null) (if (dirs(i).nullsFirst) 1 else -1)
          else if (dirs(i).descending) compares(i).compare(y, x)
          else compares(i).compare(x, y)
        i += 1
      }
      c
    }
  }
}

private[sparkagg] object OrderKeys {
  /** The trailing arguments that are ordering keys, if every key has a type that sorts. */
  def of(args: Seq[Arg]): Either[String, OrderKeys] = {
    val keys = args.filter(_.sortKey.isDefined)
    keys.find(k => !Types.isOrderable(k.dataType)) match {
      case Some(k) => Left(s"cannot order by a value of type ${k.dataType.simpleString} (accepted: ${Types.Orderable})")
      case None => Right(OrderKeys(keys.map(_.dataType), keys.flatMap(_.sortKey)))
    }
  }

  /** The keys a state's struct fields describe (their names carry the directions), or None. */
  def fromState(fields: Seq[StructField]): Option[Seq[Arg]] = {
    val keys = fields.map(f => SortKey.fromName(f.name).map(d => Arg(f.dataType, nullable = true, sortKey = Some(d))))
    if (keys.forall(_.isDefined)) Some(keys.flatten) else None
  }

  /** How a key type is read in place, chosen once: a switch on an int per row, not a match on the type. */
  private def physical(t: DataType): Int = t match {
    case BooleanType => 0
    case ByteType => 1
    case ShortType => 2
    case IntegerType | DateType => 3
    case LongType | TimestampType | TimestampNTZType => 4
    case FloatType => 5
    case DoubleType => 6
    case _: DecimalType => 7
    case BinaryType => 8
    case _: StringType => 9
    case _ => 10
  }

  /** A row's value of type `t` (read as `physical` says) at `at` against a kept internal value, primitives
   *  unboxed; the sign of the comparison only. */
  private def compareInPlace(physical: Int, t: DataType, v: Values, at: Int, kept: Any): Int =
    Integer.signum(
      (physical: @scala.annotation.switch) match {
        case 0 => java.lang.Boolean.compare(v.getBoolean(at), kept.asInstanceOf[Boolean])
        case 1 => java.lang.Byte.compare(v.getByte(at), kept.asInstanceOf[Byte])
        case 2 => java.lang.Short.compare(v.getShort(at), kept.asInstanceOf[Short])
        case 3 => java.lang.Integer.compare(v.getInt(at), kept.asInstanceOf[Int])
        case 4 => java.lang.Long.compare(v.getLong(at), kept.asInstanceOf[Long])
        case 5 => java.lang.Float.compare(v.getFloat(at), kept.asInstanceOf[Float])
        case 6 => java.lang.Double.compare(v.getDouble(at), kept.asInstanceOf[Double])
        case 7 =>
          val d = t.asInstanceOf[DecimalType]
          v.getDecimal(at, d.precision, d.scale).compare(kept.asInstanceOf[Decimal])
        case 8 => ByteArray.compareBinary(v.getBinary(at), kept.asInstanceOf[Array[Byte]])
        case 9 =>
          SparkInternals.compareUtf8(v.getUTF8String(at), kept.asInstanceOf[org.apache.spark.unsafe.types.UTF8String])
        case _ => compareValues(t).compare(v.get(at, t), kept)
      })

  /** Catalyst's internal values of one orderable type, compared as Spark sorts them (NaN greatest). */
  private def compareValues(t: DataType): Comparator[Any] = t match {
    case BinaryType => (a, b) => ByteArray.compareBinary(a.asInstanceOf[Array[Byte]], b.asInstanceOf[Array[Byte]])
    case _ => (a, b) => a.asInstanceOf[Comparable[Any]].compareTo(b)
  }
}

/**
 * Values in arrival order with their ordering keys: the state of ordered array_agg, string_agg and
 * nth_value. The state is the values sorted, and the keys beside them as a list of structs; merging
 * appends another state's, and reading sorts stably (equal keys keep arrival order, as in DataFusion).
 */
private[sparkagg] final class OrderedValues(valueType: DataType, keys: OrderKeys) {
  private val values = new ArrayBuffer[Any]
  private val keyRows = new ArrayBuffer[Array[Any]]
  private var bytes = 0L

  def isEmpty: Boolean = values.isEmpty
  def length: Int = values.length

  private def keep(value: Any, keyRow: Array[Any]): Unit = {
    values += value
    keyRow.foreach(k => bytes += OrderedValues.sizeOf(k))
    bytes += OrderedValues.sizeOf(value) + 16L * keyRow.length
    keyRows += keyRow
  }

  /** A row's value (at `valueIndex`, NULL kept) and its keys (the trailing arguments from `keyOffset`). */
  def add(args: Values, valueIndex: Int, keyOffset: Int): Unit =
    keep(if (args.isNullAt(valueIndex)) null else args.copy(valueIndex, valueType), keys.read(args, keyOffset))

  /** A state's values (field `valuesField`) and keys (the next field). */
  def merge(state: Values, valuesField: Int): Unit = OrderedValues.foreachIn(state, valuesField, valueType, keys)(keep)

  /** The positions of the values in key order, ties in arrival order. */
  private def order: Array[Int] = {
    val positions = Array.tabulate[Integer](values.length)(Integer.valueOf)
    java.util.Arrays.sort(positions, (a: Integer, b: Integer) => keys.comparator.compare(keyRows(a), keyRows(b)))
    positions.map(_.intValue)
  }

  def sortedValues: Array[Any] = order.map(values(_))

  /** The state fields: the values and their keys, sorted. */
  def state(): Array[Any] = {
    val o = order
    Array(o.map(values(_)), o.map(i => keyRows(i): Any))
  }

  def size: Long = 96 + 16L * values.length + bytes
}

private[sparkagg] object OrderedValues {
  /** Each value of a state (field `valuesField`) with its keys (the next field; none without keys), copied. */
  def foreachIn(state: Values, valuesField: Int, valueType: DataType, keys: OrderKeys)(
      f: (Any, Array[Any]) => Unit): Unit = if (!state.isNullAt(valuesField)) {
    val list = state.getList(valuesField)
    val keyList = if (keys.isEmpty) null else state.getList(valuesField + 1)
    var j = 0
    while (j < list.numElements) {
      f(if (list.isNullAt(j)) null else list.copy(j, valueType),
        if (keys.isEmpty) Array.empty[Any] else keys.read(keyList.getStruct(j, keys.size), 0))
      j += 1
    }
  }

  def sizeOf(v: Any): Long = v match {
    case s: org.apache.spark.unsafe.types.UTF8String => 24 + s.numBytes
    case b: Array[Byte] => 16 + b.length
    case null => 0
    case _ => 16
  }

  /** The state of a function ordering its values: the values, and their keys as a list of structs. */
  def stateSchema(name: String, valueType: DataType, keys: OrderKeys): StructType = StructType(
    Seq(
      StructField(name, ArrayType(valueType, containsNull = true)),
      StructField(s"${name}_orderings", ArrayType(keys.struct, containsNull = true))))

  /** An ordered state holds one key per value. */
  def stateCheck(name: String): StateCheck = StateCheck.sameLength(name, s"${name}_orderings")

  /** The arguments of an ordered state: its value type, then `parameters`, then the keys it carries. */
  def argumentsOf(name: String, state: StructType, parameters: Seq[Arg]): Option[Seq[Arg]] =
    state.fields.toSeq match {
      case Seq(StructField(`name`, ArrayType(valueType, _), _, _),
            StructField(orderings, ArrayType(keys: StructType, _), _, _)) if orderings == s"${name}_orderings" =>
        OrderKeys.fromState(keys.fields.toSeq).map(k => (Arg(valueType, nullable = true) +: parameters) ++ k)
      case _ => None
    }
}

/**
 * A sliding frame's rows in the order of their keys, ties in arrival order: nth_value takes the k-th in
 * O(log w) as rows come and go, where its plain accumulator sorts the frame. Rows leave a frame in the order they
 * entered, so the one leaving is the oldest still held: its arrival number finds it.
 */
private[sparkagg] final class SlidingOrderedRows(valueType: DataType, keys: OrderKeys) {
  private final class Held(val keys: Array[Any], val arrival: Long, val value: Any)
  private val rows = new OrderStatistics[Held]()(
    Ordering.comparatorToOrdering[Held] { (a, b) =>
      val c = keys.comparator.compare(a.keys, b.keys)
      if (c != 0) c else java.lang.Long.compare(a.arrival, b.arrival)
    })
  private var arrived = 0L
  private var left = 0L

  def size: Long = rows.size

  private def keep(value: Any, keyRow: Array[Any]): Unit = { rows.add(new Held(keyRow, arrived, value)); arrived += 1 }

  /** A row's value (at `valueIndex`, NULL kept) and its keys (from `keyOffset`). */
  def add(v: Values, valueIndex: Int, keyOffset: Int): Unit =
    keep(if (v.isNullAt(valueIndex)) null else v.copy(valueIndex, valueType), keys.read(v, keyOffset))

  /** A state's rows, as [[OrderedValues.merge]] reads them, arriving after those held. */
  def merge(state: Values, valuesField: Int): Unit = OrderedValues.foreachIn(state, valuesField, valueType, keys)(keep)

  /** Takes out the oldest row, whose keys `v` holds from `keyOffset`. */
  def removeOldest(v: Values, keyOffset: Int): Unit = {
    val probe = new Held(keys.read(v, keyOffset), left, null)
    rows.remove(probe)
    left += 1
  }

  /** The value and keys of the k-th row in key order, from 0. */
  def valueAt(k: Long): Any = rows.kth(k).value
  def keysAt(k: Long): Array[Any] = rows.kth(k).keys

  /** Every row's value in key order, and (with keys) their key rows: OrderedValues' state fields. */
  def state(): Array[Any] = {
    val (values, keyRows) = (new ArrayBuffer[Any], new ArrayBuffer[Any])
    rows.foreach { r => values += r.value; keyRows += r.keys }
    if (keys.isEmpty) Array(values.toArray) else Array(values.toArray, keyRows.toArray)
  }

  /** An estimate: a tree entry and a row holder per row (the values' own bytes not followed). */
  def sizeInBytes: Long = 64 + 128L * rows.entries
}
