package sparkagg.common

import java.math.BigInteger

import org.apache.spark.sql.types._
import org.apache.spark.unsafe.Platform
import org.apache.spark.unsafe.types.UTF8String
import sparkagg.api._

/** Validity bitmaps: bit `i` of word `i >> 6` set when row `i` is non-NULL; `null` means no NULLs. */
object Validity {
  def isValid(bits: Array[Long], row: Int): Boolean = bits == null || (bits(row >> 6) & (1L << row)) != 0
  def allValid(bits: Array[Long], numRows: Int): Boolean = bits == null || {
    var i = 0
    val full = numRows >> 6
    while (i < full && bits(i) == -1L) i += 1
    i == full && (numRows % 64 == 0 || (bits(full) | (-1L << numRows)) == -1L)
  }
  def words(numRows: Int): Int = (numRows + 63) >> 6
  def set(bits: Array[Long], row: Int): Unit = bits(row >> 6) |= 1L << row
  /** Sets the bits of every row from `row` on, keeping those below it. */
  def setFrom(bits: Array[Long], row: Int): Unit = {
    var w = row >> 6
    if (w < bits.length && (row & 63) != 0) { bits(w) |= -1L << row; w += 1 }
    java.util.Arrays.fill(bits, w, bits.length, -1L)
  }
}

/**
 * Primitive arrays filled by index, for the per-group and per-row arrays of the grouped path. Scala's
 * `Array.tabulate` and `map` store through a generic array update and call a boxing `Function1` unless C2
 * inlines the closure, which it stops doing once the shared call site inside them has seen other closures
 * (as in a bench run, where every query of a shape runs before any is timed), and then every element is
 * boxed. `Function1` is specialized for these result types, so nothing is boxed here.
 */
object Fill {
  def longs(n: Int)(f: Int => Long): Array[Long] = {
    val out = new Array[Long](n)
    var i = 0
    while (i < n) { out(i) = f(i); i += 1 }
    out
  }
  def doubles(n: Int)(f: Int => Double): Array[Double] = {
    val out = new Array[Double](n)
    var i = 0
    while (i < n) { out(i) = f(i); i += 1 }
    out
  }
  def booleans(n: Int)(f: Int => Boolean): Array[Boolean] = {
    val out = new Array[Boolean](n)
    var i = 0
    while (i < n) { out(i) = f(i); i += 1 }
    out
  }
}

/**
 * Any integer-like column in a Long per row (boolean as 0 / 1, tinyint to bigint, date, timestamps):
 * the getters of the narrower types narrow. `validity` as in [[Validity]].
 */
final class LongColumn(val values: Array[Long], val validity: Array[Long], val numRows: Int) extends Column {
  lazy val hasNulls: Boolean = !Validity.allValid(validity, numRows)
  def isNullAt(row: Int): Boolean = !Validity.isValid(validity, row)
  override def getBoolean(row: Int): Boolean = values(row) != 0
  override def getByte(row: Int): Byte = values(row).toByte
  override def getShort(row: Int): Short = values(row).toShort
  override def getInt(row: Int): Int = values(row).toInt
  override def getLong(row: Int): Long = values(row)
  def get(row: Int, dataType: DataType): AnyRef =
    if (isNullAt(row)) null
    else dataType match {
      case BooleanType => java.lang.Boolean.valueOf(values(row) != 0)
      case ByteType => java.lang.Byte.valueOf(values(row).toByte)
      case ShortType => java.lang.Short.valueOf(values(row).toShort)
      case IntegerType | DateType => java.lang.Integer.valueOf(values(row).toInt)
      case _ => java.lang.Long.valueOf(values(row))
    }
  override def toString: String =
    s"LongColumn(${(0 until numRows).map(r => if (isNullAt(r)) "NULL" else values(r)).mkString(", ")})"
}

/** float or double, in a Double per row. */
final class DoubleColumn(val values: Array[Double], val validity: Array[Long], val numRows: Int) extends Column {
  lazy val hasNulls: Boolean = !Validity.allValid(validity, numRows)
  def isNullAt(row: Int): Boolean = !Validity.isValid(validity, row)
  override def getFloat(row: Int): Float = values(row).toFloat
  override def getDouble(row: Int): Double = values(row)
  def get(row: Int, dataType: DataType): AnyRef =
    if (isNullAt(row)) null
    else if (dataType == FloatType) java.lang.Float.valueOf(values(row).toFloat)
    else java.lang.Double.valueOf(values(row))
  override def toString: String =
    s"DoubleColumn(${(0 until numRows).map(r => if (isNullAt(r)) "NULL" else values(r)).mkString(", ")})"
}

/**
 * Decimals of `dataType` by their unscaled values in two's complement: `low` alone when the precision is at
 * most 18, else `low` and `high`, the two halves of 128 bits (38 digits are under 2^127). What the
 * operator gathers decimal fields into and what decimal sums emit: a Decimal is made only when one is
 * asked for, so a million sums are not a million objects waiting to be written.
 */
final class DecimalColumn(val dataType: DecimalType, val low: Array[Long], highs: Array[Long],
    val validity: Array[Long], val numRows: Int)
  extends Column {
  lazy val hasNulls: Boolean = !Validity.allValid(validity, numRows)
  def isNullAt(row: Int): Boolean = !Validity.isValid(validity, row)
  /** The high 64 bits of row's unscaled value (the sign of `low` at a precision of at most 18). */
  def high(row: Int): Long = if (highs == null) low(row) >> 63 else highs(row)
  override def getDecimal(row: Int, precision: Int, scale: Int): Decimal =
    if (high(row) == low(row) >> 63) Decimal(low(row), dataType.precision, dataType.scale)
    else Decimal(new java.math.BigDecimal(unscaled(row), dataType.scale), dataType.precision, dataType.scale)
  def unscaled(row: Int): BigInteger =
    BigInteger.valueOf(high(row)).shiftLeft(64).add(DecimalColumn.unsigned(low(row)))
  def get(row: Int, dataType: DataType): AnyRef = if (isNullAt(row)) null else getDecimal(row, 0, 0)
}

object DecimalColumn {
  private val Low64 = BigInteger.ONE.shiftLeft(64).subtract(BigInteger.ONE)
  /** A limb of a wider two's complement number, read as unsigned. */
  def unsigned(limb: Long): BigInteger = BigInteger.valueOf(limb).and(Low64)

  /** `column`'s decimals of type `t` as a DecimalColumn: itself if it is one, else read value by value. */
  def of(column: Column, t: DecimalType): DecimalColumn = column match {
    case d: DecimalColumn => d
    case _ =>
      val n = column.numRows
      val (low, high) = (new Array[Long](n), if (wide(t)) new Array[Long](n) else null)
      val validity = new Array[Long](Validity.words(n))
      var i = 0
      while (i < n) {
        if (!column.isNullAt(i)) {
          Validity.set(validity, i)
          put(column.getDecimal(i, t.precision, t.scale), t, low, high, i)
        }
        i += 1
      }
      new DecimalColumn(t, low, high, validity, n)
  }

  def wide(t: DecimalType): Boolean = t.precision > Decimal.MAX_LONG_DIGITS

  /** Stores d, a value of type t, at i of `low` (and `high` for a wide t). */
  def put(d: Decimal, t: DecimalType, low: Array[Long], high: Array[Long], i: Int): Unit =
    if (!wide(t)) low(i) = d.toUnscaledLong
    else {
      val unscaled = d.toJavaBigDecimal.setScale(t.scale).unscaledValue
      low(i) = unscaled.longValue
      high(i) = unscaled.shiftRight(64).longValue
    }
}

/** A boolean column, e.g. the FILTER clause's mask. */
final class BooleanColumn(val values: Array[Boolean], val validity: Array[Long], val numRows: Int) extends Column {
  lazy val hasNulls: Boolean = !Validity.allValid(validity, numRows)
  def isNullAt(row: Int): Boolean = !Validity.isValid(validity, row)
  override def getBoolean(row: Int): Boolean = values(row)
  def get(row: Int, dataType: DataType): AnyRef = if (isNullAt(row)) null else java.lang.Boolean.valueOf(values(row))
}

/**
 * Lists of doubles laid end to end: list `row` is `values` at [offsets(row), offsets(row + 1)), its
 * element `j` NULL when bit offsets(row) + j of `elementValidity` is clear (null: no NULL elements).
 * What a native accumulator emits for lists of doubles (a t-digest's centroids, array_agg of double),
 * and what an operator gathers state lists of doubles into: no object per list.
 */
final class DoubleListColumn(val values: Array[Double], val offsets: Array[Int], val validity: Array[Long],
    val numRows: Int, val elementValidity: Array[Long] = null)
  extends Column {
  lazy val hasNulls: Boolean = !Validity.allValid(validity, numRows)
  def isNullAt(row: Int): Boolean = !Validity.isValid(validity, row)
  def start(row: Int): Int = offsets(row)
  def length(row: Int): Int = offsets(row + 1) - offsets(row)
  def isElementNull(at: Int): Boolean = !Validity.isValid(elementValidity, at)

  override def getList(row: Int): ListValues = new ListValues {
    private val start = offsets(row)
    def numElements: Int = offsets(row + 1) - start
    def isNullAt(j: Int): Boolean = isElementNull(start + j)
    def getLong(j: Int): Long = unsupported("array<bigint>")
    def getDouble(j: Int): Double = values(start + j)
    def copy(j: Int, elementType: DataType): AnyRef = if (isNullAt(j)) null else java.lang.Double.valueOf(getDouble(j))
    def getStruct(j: Int, numFields: Int): Values = unsupported("array<struct>")
  }

  /** A list as an Array[Double], or an Array[Any] when it holds a NULL. */
  def get(row: Int, dataType: DataType): AnyRef =
    if (isNullAt(row)) null
    else if ((offsets(row) until offsets(row + 1)).exists(isElementNull))
      (offsets(row) until offsets(row + 1)).map(at => if (isElementNull(at)) null else values(at)).toArray[Any]
    else java.util.Arrays.copyOfRange(values, offsets(row), offsets(row + 1))
}

/**
 * Lists of strings or binaries laid end to end, no object per list or element: list `row` is elements
 * [rowStarts(row), rowStarts(row + 1)), element `e` bytes [starts(e), starts(e + 1)) of `bytes`, NULL when
 * bit `e` of `elementValidity` is clear (null: no NULL elements). What array_agg and mode emit for lists of
 * strings, and what an operator gathers state lists of strings into.
 */
final class BytesListColumn(val bytes: Array[Byte], val starts: Array[Int], val rowStarts: Array[Int],
    val validity: Array[Long], val numRows: Int, val elementValidity: Array[Long] = null)
  extends Column {
  lazy val hasNulls: Boolean = !Validity.allValid(validity, numRows)
  def isNullAt(row: Int): Boolean = !Validity.isValid(validity, row)
  def isElementNull(e: Int): Boolean = !Validity.isValid(elementValidity, e)
  def elementLength(e: Int): Int = starts(e + 1) - starts(e)

  private def element(e: Int, dataType: DataType): AnyRef =
    if (isElementNull(e)) null
    else {
      val copied = java.util.Arrays.copyOfRange(bytes, starts(e), starts(e + 1))
      if (dataType.isInstanceOf[StringType]) UTF8String.fromBytes(copied) else copied
    }

  override def getList(row: Int): ListValues = new ListValues {
    private val first = rowStarts(row)
    def numElements: Int = rowStarts(row + 1) - first
    def isNullAt(j: Int): Boolean = isElementNull(first + j)
    def getLong(j: Int): Long = unsupported("array<bigint>")
    def getDouble(j: Int): Double = unsupported("array<double>")
    override def getUTF8String(j: Int): UTF8String =
      UTF8String.fromBytes(bytes, starts(first + j), elementLength(first + j))
    def copy(j: Int, elementType: DataType): AnyRef = element(first + j, elementType)
    def getStruct(j: Int, numFields: Int): Values = unsupported("array<struct>")
  }

  /** A list as an Array[Any] of copies. */
  def get(row: Int, dataType: DataType): AnyRef =
    if (isNullAt(row)) null
    else {
      val elementType = dataType.asInstanceOf[ArrayType].elementType
      Array.tabulate[Any](rowStarts(row + 1) - rowStarts(row))(j => element(rowStarts(row) + j, elementType))
    }
}

/**
 * Strings (as UTF-8) or binaries whose bytes lie in one array: row `r` is `length(r)` bytes of `bytes` from
 * `start(r)`. An accumulator that finds its input is one reads each value's bytes where they are, with no
 * UTF8String per row: on Spark 4 each costs four volatile writes (docs/grouped-operator.md, "What profiles
 * showed").
 */
abstract class BytesColumn extends Column {
  def bytes: Array[Byte]
  def start(row: Int): Int
  def length(row: Int): Int
  override def getBinary(row: Int): Array[Byte] =
    java.util.Arrays.copyOfRange(bytes, start(row), start(row) + length(row))
  /** A view of the row's bytes, valid while this column lives. */
  override def getUTF8String(row: Int): UTF8String = UTF8String.fromBytes(bytes, start(row), length(row))
  def get(row: Int, dataType: DataType): AnyRef =
    if (isNullAt(row)) null else if (dataType.isInstanceOf[StringType]) getUTF8String(row) else getBinary(row)
  override def copy(row: Int, dataType: DataType): AnyRef =
    if (isNullAt(row)) null
    else if (dataType.isInstanceOf[StringType]) UTF8String.fromBytes(getBinary(row))
    else getBinary(row)
}

object BytesColumn {
  /** Whether a word read from bytes holds its first byte in its low bits. */
  val LittleEndian: Boolean = java.nio.ByteOrder.nativeOrder == java.nio.ByteOrder.LITTLE_ENDIAN

  /** Copies `n` bytes at `offset` of `base` (a byte array, or off-heap memory when null) into `to` from
   *  `at`: a value of a few bytes in an array by System.arraycopy, an intrinsic, rather than
   *  Platform.copyMemory, whose checks and call cost more than such a copy. */
  def copyInto(base: AnyRef, offset: Long, n: Int, to: Array[Byte], at: Int): Unit = base match {
    case bytes: Array[Byte] => System.arraycopy(bytes, (offset - Platform.BYTE_ARRAY_OFFSET).toInt, to, at, n)
    case _ => Platform.copyMemory(base, offset, to, Platform.BYTE_ARRAY_OFFSET + at, n)
  }
}

/**
 * Byte strings laid end to end: row `r` is bytes [offsets(r), offsets(r + 1)) of `bytes` (a NULL row
 * holds none). What a [[StatePacking]] packs states into, what an operator gathers binary values into,
 * and, read as UTF-8 strings, what string_agg emits its groups' strings into: no object per row until
 * one is asked for.
 */
final class BinaryColumn(val bytes: Array[Byte], val offsets: Array[Int], val validity: Array[Long],
    val numRows: Int)
  extends BytesColumn {
  lazy val hasNulls: Boolean = !Validity.allValid(validity, numRows)
  def isNullAt(row: Int): Boolean = !Validity.isValid(validity, row)
  def start(row: Int): Int = offsets(row)
  def length(row: Int): Int = offsets(row + 1) - offsets(row)
}

object BinaryColumn {
  /**
   * The emitted values of n groups, each a range of `arena` (group g's from `start(g)`, `length(g)` bytes;
   * `start(g)` -1: NULL), laid end to end: min / max and mode of strings. The arrays come from
   * [[LargeArrays]] and are lent to the open loan: at a million groups each is humongous, and made new in
   * every emission they started G1 concurrent cycles, which take a core from the tasks.
   */
  def gathered(n: Int, arena: Array[Byte], start: Int => Int, length: Int => Int): BinaryColumn = {
    val offsets = LargeArrays.lentOffsets(n)
    val validity = LargeArrays.lend(LargeArrays.zeroLongs(Validity.words(n)))
    var g = 0
    while (g < n) {
      val present = start(g) >= 0
      if (present) Validity.set(validity, g)
      offsets(g + 1) = offsets(g) + (if (present) length(g) else 0)
      g += 1
    }
    val bytes = LargeArrays.lend(LargeArrays.bytes(offsets(n)))
    g = 0
    while (g < n) {
      val at = start(g)
      if (at >= 0) System.arraycopy(arena, at, bytes, offsets(g), length(g))
      g += 1
    }
    new BinaryColumn(bytes, offsets, validity, n)
  }

  /** `column`'s binary values end to end: the column itself when it already is a BinaryColumn; another column
   *  of bytes (a vector's: states exchanged in packets of columns) over its own array when its values already
   *  lie end to end in it, else copied range by range; any other column value by value. */
  def of(column: Column): BinaryColumn = column match {
    case b: BinaryColumn => b
    case other =>
      val n = other.numRows
      val ranges = other match {
        case b: BytesColumn => b
        case _ => null
      }
      val values =
        if (ranges != null) null
        else Array.tabulate(n)(r => if (other.isNullAt(r)) Array.emptyByteArray else other.getBinary(r))
      val validity = if (!other.hasNulls) null else new Array[Long](Validity.words(n))
      val offsets = new Array[Int](n + 1)
      var inPlace = ranges != null
      var r = 0
      while (r < n) {
        val valid = !other.isNullAt(r)
        if (valid && validity != null) Validity.set(validity, r)
        inPlace &&= !valid || ranges.start(r) == offsets(r)
        offsets(r + 1) = offsets(r) + (if (!valid) 0 else if (ranges != null) ranges.length(r) else values(r).length)
        r += 1
      }
      if (inPlace) new BinaryColumn(ranges.bytes, offsets, validity, n)
      else {
        val bytes = new Array[Byte](offsets(n))
        r = 0
        while (r < n) {
          val length = offsets(r + 1) - offsets(r)
          if (ranges != null) System.arraycopy(ranges.bytes, ranges.start(r), bytes, offsets(r), length)
          else System.arraycopy(values(r), 0, bytes, offsets(r), length)
          r += 1
        }
        new BinaryColumn(bytes, offsets, validity, n)
      }
  }
}

/**
 * Values of any type, boxed in Spark's internal representation (`null` for NULL); lists as `Array[Any]`
 * or primitive arrays, structs as `Array[Any]`, as [[Accumulator.state]] returns them. What the
 * adapter [[AccumulatorGroups]] emits, and the general input for the rare types without a primitive column.
 */
final class ObjectColumn(val values: Array[Any]) extends Column {
  def numRows: Int = values.length
  lazy val hasNulls: Boolean = values.contains(null)
  def isNullAt(row: Int): Boolean = values(row) == null
  override def getBoolean(row: Int): Boolean = values(row).asInstanceOf[Boolean]
  override def getByte(row: Int): Byte = values(row).asInstanceOf[Byte]
  override def getShort(row: Int): Short = values(row).asInstanceOf[Short]
  override def getInt(row: Int): Int = values(row).asInstanceOf[Int]
  override def getLong(row: Int): Long = values(row).asInstanceOf[Long]
  override def getFloat(row: Int): Float = values(row).asInstanceOf[Float]
  override def getDouble(row: Int): Double = values(row).asInstanceOf[Double]
  override def getDecimal(row: Int, precision: Int, scale: Int): Decimal = values(row).asInstanceOf[Decimal]
  override def getUTF8String(row: Int): UTF8String = values(row).asInstanceOf[UTF8String]
  override def getBinary(row: Int): Array[Byte] = values(row).asInstanceOf[Array[Byte]]
  override def getList(row: Int): ListValues = ObjectValues.list(values(row))
  def get(row: Int, dataType: DataType): AnyRef = values(row).asInstanceOf[AnyRef]
  override def copy(row: Int, dataType: DataType): AnyRef = ObjectValues.copyOf(values(row))
  override def toString: String = s"ObjectColumn(${values.map(v => if (v == null) "NULL" else v).mkString(", ")})"
}

/** [[Values]] and [[ListValues]] over boxed values in `Array[Any]`s (state rows, list and struct values). */
object ObjectValues {
  def copyOf(v: Any): AnyRef = v match {
    case s: UTF8String => s.clone()
    case d: Decimal => d.clone()
    case b: Array[Byte] => b.clone()
    case a: Array[Any] => a.map(copyOf)
    case a: Array[Long] => a.clone()
    case a: Array[Int] => a.clone()
    case a: Array[Double] => a.clone()
    case other => other.asInstanceOf[AnyRef]
  }

  def list(v: Any): ListValues = v match {
    case a: Array[Any] => new AnyList(a)
    case a: Array[Long] => new AnyList(a.map(x => x: Any))
    case a: Array[Int] => new AnyList(a.map(x => x: Any))
    case a: Array[Double] => new AnyList(a.map(x => x: Any))
    case other => throw new IllegalArgumentException(s"not a list value: $other")
  }

  final class AnyList(elements: Array[Any]) extends ListValues {
    def numElements: Int = elements.length
    def isNullAt(j: Int): Boolean = elements(j) == null
    def getLong(j: Int): Long = elements(j) match {
      case i: Int => i.toLong
      case x => x.asInstanceOf[Long]
    }
    def getDouble(j: Int): Double = elements(j).asInstanceOf[Double]
    override def getUTF8String(j: Int): UTF8String = elements(j).asInstanceOf[UTF8String]
    def copy(j: Int, elementType: DataType): AnyRef = copyOf(elements(j))
    def getStruct(j: Int, numFields: Int): Values = new Row(elements(j).asInstanceOf[Array[Any]])
  }

  /** One row of boxed values, e.g. an accumulator's state or a struct element. */
  final class Row(fields: Array[Any]) extends Values {
    def numFields: Int = fields.length
    def isNullAt(i: Int): Boolean = fields(i) == null
    def getBoolean(i: Int): Boolean = fields(i).asInstanceOf[Boolean]
    def getByte(i: Int): Byte = fields(i).asInstanceOf[Byte]
    def getShort(i: Int): Short = fields(i).asInstanceOf[Short]
    def getInt(i: Int): Int = fields(i).asInstanceOf[Int]
    def getLong(i: Int): Long = fields(i).asInstanceOf[Long]
    def getFloat(i: Int): Float = fields(i).asInstanceOf[Float]
    def getDouble(i: Int): Double = fields(i).asInstanceOf[Double]
    def getDecimal(i: Int, precision: Int, scale: Int): Decimal = fields(i).asInstanceOf[Decimal]
    def getUTF8String(i: Int): UTF8String = fields(i).asInstanceOf[UTF8String]
    def getBinary(i: Int): Array[Byte] = fields(i).asInstanceOf[Array[Byte]]
    def get(i: Int, dataType: DataType): AnyRef = fields(i).asInstanceOf[AnyRef]
    def copy(i: Int, dataType: DataType): AnyRef = copyOf(fields(i))
    def getList(i: Int): ListValues = list(fields(i))
  }
}

/**
 * The api's row view ([[Values]]) of one position of a batch: what the adapter hands a row-at-a-time
 * [[Accumulator]]. One instance is re-pointed at each row (`row = i`); nothing is allocated per row.
 */
final class ColumnsRow(columns: Columns) extends Values {
  var row: Int = 0
  private val cols = Array.tabulate(columns.numColumns)(columns.column)

  def numFields: Int = cols.length
  def isNullAt(i: Int): Boolean = cols(i).isNullAt(row)
  def getBoolean(i: Int): Boolean = cols(i).getBoolean(row)
  def getByte(i: Int): Byte = cols(i).getByte(row)
  def getShort(i: Int): Short = cols(i).getShort(row)
  def getInt(i: Int): Int = cols(i).getInt(row)
  def getLong(i: Int): Long = cols(i).getLong(row)
  def getFloat(i: Int): Float = cols(i).getFloat(row)
  def getDouble(i: Int): Double = cols(i).getDouble(row)
  def getDecimal(i: Int, precision: Int, scale: Int): Decimal = cols(i).getDecimal(row, precision, scale)
  def getUTF8String(i: Int): UTF8String = cols(i).getUTF8String(row)
  def getBinary(i: Int): Array[Byte] = cols(i).getBinary(row)
  def get(i: Int, dataType: DataType): AnyRef = cols(i).get(row, dataType)
  def copy(i: Int, dataType: DataType): AnyRef = cols(i).copy(row, dataType)
  def getList(i: Int): ListValues = cols(i).getList(row)
}
