package sparkagg.exec

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{UnsafeArrayData, UnsafeRow}
import org.apache.spark.sql.catalyst.util.ArrayData
import org.apache.spark.sql.execution.vectorized.OnHeapColumnVector
import org.apache.spark.sql.types._
import org.apache.spark.sql.vectorized.{ColumnVector, ColumnarBatch}
import org.apache.spark.unsafe.Platform
import org.apache.spark.unsafe.types.UTF8String
import sparkagg.api._
import sparkagg.common._
import sparkagg.catalyst.ArrayValues

/**
 * Gathers chosen fields of up to `capacity` Catalyst rows into the api's [[Column]]s, the batches a
 * [[GroupsAccumulator]] reads: integer-like fields into a long array, float and double into a double
 * array, booleans into a boolean array, strings, binaries and lists of doubles end to end into one array,
 * decimals by their unscaled values, anything else as copied Catalyst values. The arrays are reused:
 * a batch's columns are valid until the next batch is built (accumulators copy what they keep).
 *
 * Generated code may hand the values of primitive and string fields over without a row ([[FieldBuilder.pushOf]]):
 * an integer-like or floating value, or a decimal of at most 18 digits as its unscaled long, it writes into the
 * field's arrays itself (`valuesOf`, `validityOf`), a boolean or a string it gives to a setter (`putBoolean`,
 * `putString`).
 */
private[exec] final class BatchBuilder(fields: Seq[(Int, DataType)], capacity: Int) {
  private val builders: Array[FieldBuilder] = fields.map { case (ordinal, dataType) =>
    FieldBuilder(ordinal, dataType, capacity)
  }.toArray

  /** Row `i`'s fields. An UnsafeRow's primitive fields are read by calls bound at compile time: through the
   *  builders' shared `append`, the calls of `put` and of the row's getters are virtual once a JVM has run
   *  queries of other types through them (the bench runs a dozen functions in one JVM, and so do users). */
  def append(row: InternalRow, i: Int): Unit = {
    val unsafe = row match { case u: UnsafeRow => u; case _ => null }
    var j = 0
    while (j < builders.length) {
      builders(j) match {
        case b: LongBuilder if unsafe != null => b.appendUnsafe(unsafe, i)
        case b: DoubleBuilder if unsafe != null => b.appendUnsafe(unsafe, i)
        case b: IntBuilder if unsafe != null => b.appendUnsafe(unsafe, i)
        case b => b.append(row, i)
      }
      j += 1
    }
  }

  /** The columns of the first `numRows` appended rows, then ready for the next batch. */
  def columns(numRows: Int): Array[Column] = builders.map(_.build(numRows))

  /** Field j's values (a long[] or double[]) and validity words, for generated code to write row i's value and
   *  bit itself (FieldBuilder.pushOf says which fields), clearing the words first at row 0. The arrays are
   *  the builder's for its lifetime. */
  def valuesOf(j: Int): AnyRef = builders(j).asInstanceOf[InPlaceValues].values
  def validityOf(j: Int): Array[Long] = builders(j).validity

  // Field j of row i given as a value: j's type takes that setter (FieldBuilder.pushOf).
  def putBoolean(j: Int, i: Int, isNull: Boolean, v: Boolean): Unit = {
    val b = builders(j)
    if (b.start(i, isNull)) b.asInstanceOf[BooleanBuilder].putBoolean(i, v)
  }
  def putString(j: Int, i: Int, v: UTF8String): Unit = {
    val b = builders(j)
    if (b.start(i, v == null)) b.asInstanceOf[BinaryBuilder].putString(i, v)
  }
}

private abstract class FieldBuilder(ordinal: Int, capacity: Int) {
  val validity = new Array[Long](Validity.words(capacity))

  final def append(row: InternalRow, i: Int): Unit = if (start(i, row.isNullAt(ordinal))) put(row, ordinal, i)

  /** Row `i`'s validity: whether it has a value to put. */
  final def start(i: Int, isNull: Boolean): Boolean = {
    if (i == 0) java.util.Arrays.fill(validity, 0L) // the previous batch's column is done with
    if (!isNull) Validity.set(validity, i)
    !isNull
  }

  protected def put(row: InternalRow, ordinal: Int, i: Int): Unit

  /** The column over this batch; the next batch starts from the first row again. */
  final def build(numRows: Int): Column = make(validity, numRows)
  protected def make(validity: Array[Long], numRows: Int): Column
}

private[exec] object FieldBuilder {
  private def intLike(t: DataType): Boolean = t match {
    case ByteType | ShortType | IntegerType | DateType | _: YearMonthIntervalType => true
    case _ => false
  }
  private def longLike(t: DataType): Boolean = t match {
    case LongType | TimestampType | TimestampNTZType | _: DayTimeIntervalType => true
    case _ => false
  }

  /** How generated code hands a value of this type to a [[BatchBuilder]] without a row, if it can. */
  def pushOf(dataType: DataType): Option[Push] = dataType match {
    case t if intLike(t) || longLike(t) => Some(Push.InPlace("long[]"))
    case FloatType | DoubleType => Some(Push.InPlace("double[]"))
    case BooleanType => Some(Push.Setter("putBoolean"))
    case _: StringType => Some(Push.Setter("putString"))
    // A decimal of at most 18 digits by its unscaled long, as DecimalBuilder keeps it.
    case t: DecimalType if !DecimalColumn.wide(t) => Some(Push.InPlace("long[]", v => s"$v.toUnscaledLong()"))
    case _ => None
  }

  sealed trait Push
  object Push {
    /** Written by the generated code into the field's array of this Java type: `of` the value's Java
     *  expression, by a widening assignment. */
    final case class InPlace(javaArray: String, of: String => String = v => v) extends Push
    /** Given to this BatchBuilder setter. */
    final case class Setter(name: String) extends Push
  }

  def apply(ordinal: Int, dataType: DataType, capacity: Int): FieldBuilder = dataType match {
    case BooleanType => new BooleanBuilder(ordinal, capacity)
    case t if intLike(t) => new IntBuilder(ordinal, capacity)
    case t if longLike(t) => new LongBuilder(ordinal, capacity)
    case FloatType => new FloatBuilder(ordinal, capacity)
    case DoubleType => new DoubleBuilder(ordinal, capacity)
    case ArrayType(DoubleType, _) => new DoubleListBuilder(ordinal, capacity)
    case ArrayType(t @ (BinaryType | _: StringType), _) => new BytesListBuilder(ordinal, t, capacity)
    case BinaryType => new BinaryBuilder(ordinal, capacity, strings = false)
    case _: StringType => new BinaryBuilder(ordinal, capacity, strings = true)
    case t: DecimalType => new DecimalBuilder(ordinal, t, capacity)
    case _ => new ValueBuilder(ordinal, dataType, capacity)
  }
}

// Each primitive builder reads its field by the width Catalyst stores it in.

/** A builder whose values generated code may write in place (`FieldBuilder.Push.InPlace`). */
private trait InPlaceValues { def values: AnyRef }

private final class LongBuilder(ordinal: Int, capacity: Int)
  extends FieldBuilder(ordinal, capacity) with InPlaceValues {
  val values = new Array[Long](capacity)
  protected def put(row: InternalRow, o: Int, i: Int): Unit = values(i) = row.getLong(o)
  def appendUnsafe(row: UnsafeRow, i: Int): Unit = if (start(i, row.isNullAt(ordinal))) values(i) = row.getLong(ordinal)
  protected def make(validity: Array[Long], n: Int): Column = new LongColumn(values, validity, n)
}

private final class IntBuilder(ordinal: Int, capacity: Int) extends FieldBuilder(ordinal, capacity) with InPlaceValues {
  val values = new Array[Long](capacity)
  protected def put(row: InternalRow, o: Int, i: Int): Unit = values(i) = row.getInt(o)
  def appendUnsafe(row: UnsafeRow, i: Int): Unit = if (start(i, row.isNullAt(ordinal))) values(i) = row.getInt(ordinal)
  protected def make(validity: Array[Long], n: Int): Column = new LongColumn(values, validity, n)
}

private final class DoubleBuilder(ordinal: Int, capacity: Int)
  extends FieldBuilder(ordinal, capacity) with InPlaceValues {
  val values = new Array[Double](capacity)
  protected def put(row: InternalRow, o: Int, i: Int): Unit = values(i) = row.getDouble(o)
  def appendUnsafe(row: UnsafeRow, i: Int): Unit =
    if (start(i, row.isNullAt(ordinal))) values(i) = row.getDouble(ordinal)
  protected def make(validity: Array[Long], n: Int): Column = new DoubleColumn(values, validity, n)
}

private final class FloatBuilder(ordinal: Int, capacity: Int)
  extends FieldBuilder(ordinal, capacity) with InPlaceValues {
  val values = new Array[Double](capacity)
  protected def put(row: InternalRow, o: Int, i: Int): Unit = values(i) = row.getFloat(o)
  protected def make(validity: Array[Long], n: Int): Column = new DoubleColumn(values, validity, n)
}

private final class BooleanBuilder(ordinal: Int, capacity: Int) extends FieldBuilder(ordinal, capacity) {
  private val values = new Array[Boolean](capacity)
  protected def put(row: InternalRow, o: Int, i: Int): Unit = values(i) = row.getBoolean(o)
  def putBoolean(i: Int, v: Boolean): Unit = values(i) = v
  protected def make(validity: Array[Long], n: Int): Column = new BooleanColumn(values, validity, n)
}

/** Values laid end to end in one array per batch, row `i` ending at `offsets(i + 1)`: a row without a
 *  value of its own (NULL) ends where the values before it end. */
private abstract class EndToEndBuilder(ordinal: Int, capacity: Int) extends FieldBuilder(ordinal, capacity) {
  protected val offsets = new Array[Int](capacity + 1)
  protected var length = 0
  private var filled = 0 // offsets(0 to filled) are set

  protected final def fillTo(row: Int): Unit = while (filled < row) { filled += 1; offsets(filled) = length }

  /** Appends row `i`'s value at `length`, moving `length` past it. */
  protected def putValue(row: InternalRow, o: Int): Unit

  protected final def put(row: InternalRow, o: Int, i: Int): Unit = { fillTo(i); putValue(row, o); ended(i) }

  /** Row `i`'s value is in place, before `length`. */
  protected final def ended(i: Int): Unit = { offsets(i + 1) = length; filled = i + 1 }

  /** The batch's column over `offsets`; the next batch starts from the first value again. */
  protected def column(validity: Array[Long], n: Int): Column

  protected final def make(validity: Array[Long], n: Int): Column = {
    fillTo(n)
    val c = column(validity, n)
    length = 0
    filled = 0
    c
  }
}

/** Lists of doubles (t-digest states, array_agg states of double) gathered end to end: no copy per list. */
private final class DoubleListBuilder(ordinal: Int, capacity: Int) extends EndToEndBuilder(ordinal, capacity) {
  private var values = new Array[Double](4 * capacity)
  private var elementValidity: Array[Long] = null // made at the first NULL element

  private def growTo(need: Int): Unit = if (need > values.length) {
    val capacity = math.max(2 * values.length, need)
    values = java.util.Arrays.copyOf(values, capacity)
    if (elementValidity != null) {
      val old = elementValidity.length
      elementValidity = java.util.Arrays.copyOf(elementValidity, Validity.words(capacity))
      java.util.Arrays.fill(elementValidity, old, elementValidity.length, -1L)
    }
  }

  protected def putValue(row: InternalRow, o: Int): Unit = {
    val list = row.getArray(o)
    val n = list.numElements()
    growTo(length + n)
    var j = 0
    while (j < n) {
      if (!list.isNullAt(j)) values(length) = list.getDouble(j)
      else {
        if (elementValidity == null) {
          elementValidity = new Array[Long](Validity.words(values.length))
          java.util.Arrays.fill(elementValidity, -1L)
        }
        elementValidity(length >> 6) &= ~(1L << length)
      }
      length += 1
      j += 1
    }
  }

  protected def column(validity: Array[Long], n: Int): Column = {
    val c = new DoubleListColumn(values, offsets, validity, n, elementValidity)
    elementValidity = null
    c
  }
}

/** Lists of strings or binaries (array_agg's and mode's states) gathered end to end: no object per list or
 *  element. `offsets` count elements, `starts` bytes; a shuffled list's bytes are copied straight out of it. */
private final class BytesListBuilder(ordinal: Int, elementType: DataType, capacity: Int)
  extends EndToEndBuilder(ordinal, capacity) {
  private var starts = new Array[Int](4 * capacity + 1)
  private var bytes = new Array[Byte](32 * capacity)
  private var elementValidity: Array[Long] = null // made at the first NULL element

  private def used: Int = starts(length)

  private def roomForElements(need: Int): Unit = if (need + 1 > starts.length) {
    val grown = math.max(2 * starts.length, need + 1)
    starts = java.util.Arrays.copyOf(starts, grown)
    if (elementValidity != null) {
      val old = elementValidity.length
      elementValidity = java.util.Arrays.copyOf(elementValidity, Validity.words(grown))
      java.util.Arrays.fill(elementValidity, old, elementValidity.length, -1L)
    }
  }

  private def roomForBytes(n: Int): Unit =
    if (used + n > bytes.length) bytes = java.util.Arrays.copyOf(bytes, math.max(2 * bytes.length, used + n))

  /** The next element: `size` bytes of `base` at `offset`. */
  private def element(base: AnyRef, offset: Long, size: Int): Unit = {
    roomForBytes(size)
    BytesColumn.copyInto(base, offset, size, bytes, used)
    starts(length + 1) = used + size
    length += 1
  }

  private def nullElement(): Unit = {
    if (elementValidity == null) {
      elementValidity = new Array[Long](Validity.words(starts.length))
      java.util.Arrays.fill(elementValidity, -1L)
    }
    elementValidity(length >> 6) &= ~(1L << length)
    starts(length + 1) = used
    length += 1
  }

  protected def putValue(row: InternalRow, o: Int): Unit = {
    val list = row.getArray(o)
    val n = list.numElements()
    roomForElements(length + n)
    var j = 0
    list match {
      case u: UnsafeArrayData =>
        // Element j's offset (from the list's start) and size are the long after the header.
        val header = UnsafeArrayData.calculateHeaderPortionInBytes(n)
        while (j < n) {
          if (u.isNullAt(j)) nullElement()
          else {
            val offsetAndSize = Platform.getLong(u.getBaseObject, u.getBaseOffset + header + 8L * j)
            element(u.getBaseObject, u.getBaseOffset + (offsetAndSize >>> 32), offsetAndSize.toInt)
          }
          j += 1
        }
      case other =>
        while (j < n) {
          other.get(j, elementType) match {
            case null => nullElement()
            case s: UTF8String => element(s.getBaseObject, s.getBaseOffset, s.numBytes)
            case b: Array[Byte] => element(b, Platform.BYTE_ARRAY_OFFSET, b.length)
          }
          j += 1
        }
    }
  }

  protected def column(validity: Array[Long], n: Int): Column = {
    val c = new BytesListColumn(bytes, starts, offsets, validity, n, elementValidity)
    elementValidity = null
    c
  }
}

/** Binary values (packed states) or strings gathered end to end, no object per value: a string column reads
 *  each row as a view of these bytes (copied only by a function that keeps it). */
private final class BinaryBuilder(ordinal: Int, capacity: Int, strings: Boolean)
  extends EndToEndBuilder(ordinal, capacity) {
  private var bytes = new Array[Byte](64 * capacity)

  protected def putValue(row: InternalRow, o: Int): Unit = row match {
    // A shuffled row's bytes copied straight out of it (strings and binaries are laid out alike), without
    // the array getBinary makes.
    case u: UnsafeRow if u.getBaseObject.isInstanceOf[Array[Byte]] =>
      val offsetAndSize = u.getLong(o)
      val size = offsetAndSize.toInt
      room(size)
      System.arraycopy(u.getBaseObject, (u.getBaseOffset - Platform.BYTE_ARRAY_OFFSET + (offsetAndSize >>> 32)).toInt,
        bytes, length, size)
      length += size
    case _ if strings => write(row.getUTF8String(o))
    case _ =>
      val value = row.getBinary(o)
      room(value.length)
      System.arraycopy(value, 0, bytes, length, value.length)
      length += value.length
  }

  def putString(i: Int, value: UTF8String): Unit = { fillTo(i); write(value); ended(i) }

  // A string over a byte array (a scan's vector, a row's) by System.arraycopy: writeToMemory's
  // Unsafe.copyMemory checks its arguments on every call, which costs more than copying a short string.
  private def write(value: UTF8String): Unit = {
    room(value.numBytes)
    value.getBaseObject match {
      case array: Array[Byte] =>
        System.arraycopy(array, (value.getBaseOffset - Platform.BYTE_ARRAY_OFFSET).toInt, bytes, length, value.numBytes)
      case _ => value.writeToMemory(bytes, Platform.BYTE_ARRAY_OFFSET + length)
    }
    length += value.numBytes
  }

  private def room(n: Int): Unit =
    if (length + n > bytes.length) bytes = java.util.Arrays.copyOf(bytes, math.max(2 * bytes.length, length + n))

  protected def column(validity: Array[Long], n: Int): Column = new BinaryColumn(bytes, offsets, validity, n)
}

/**
 * Decimals by their unscaled values ([[DecimalColumn]]). A row's decimal of at most 18 digits is its
 * unscaled long; a wider one is up to 16 big-endian bytes, decoded here from a shuffled row without the
 * array, BigInteger, BigDecimal and Decimal that getDecimal makes of it.
 */
private final class DecimalBuilder(ordinal: Int, t: DecimalType, capacity: Int)
  extends FieldBuilder(ordinal, capacity) with InPlaceValues {
  private val wide = DecimalColumn.wide(t)
  private val low = new Array[Long](capacity)
  def values: AnyRef = low // written in place only when not wide (FieldBuilder.pushOf)
  private val high = if (wide) new Array[Long](capacity) else null

  protected def put(row: InternalRow, o: Int, i: Int): Unit = row match {
    case u: UnsafeRow if !wide => low(i) = u.getLong(o)
    case u: UnsafeRow =>
      val offsetAndSize = u.getLong(o)
      val base = u.getBaseObject
      val at = u.getBaseOffset + (offsetAndSize >>> 32)
      var h = if (Platform.getByte(base, at) < 0) -1L else 0L // sign-extended
      var l = h
      var j = 0
      while (j < offsetAndSize.toInt) {
        h = (h << 8) | (l >>> 56)
        l = (l << 8) | (Platform.getByte(base, at + j) & 0xffL)
        j += 1
      }
      low(i) = l
      high(i) = h
    case _ => DecimalColumn.put(row.getDecimal(o, t.precision, t.scale), t, low, high, i)
  }
  protected def make(validity: Array[Long], n: Int): Column = new DecimalColumn(t, low, high, validity, n)
}

private final class ValueBuilder(ordinal: Int, dataType: DataType, capacity: Int)
  extends FieldBuilder(ordinal, capacity) {
  private val values = new Array[Any](capacity)
  // A copy by the type's own getter: the generic `get` looks the type up on every call.
  private val read: (InternalRow, Int) => Any = dataType match {
    case _: ArrayType => (r, o) => r.getArray(o).copy()
    case s: StructType => (r, o) => r.getStruct(o, s.size).copy()
    case _ => (r, o) => InternalRow.copyValue(r.get(o, dataType))
  }
  protected def put(row: InternalRow, o: Int, i: Int): Unit = values(i) = read(row, o)
  protected def make(validity: Array[Long], n: Int): Column = new CatalystColumn(values, validity, n)
}

/**
 * Values in Catalyst's own representation (ArrayData, InternalRow, ...), copied out of their rows: the
 * column of any type without a primitive or end-to-end layout (lists, structs).
 */
private[exec] final class CatalystColumn(values: Array[Any], validity: Array[Long], val numRows: Int) extends Column {
  lazy val hasNulls: Boolean = !Validity.allValid(validity, numRows)
  def isNullAt(row: Int): Boolean = !Validity.isValid(validity, row)
  override def getBoolean(row: Int): Boolean = values(row).asInstanceOf[Boolean]
  override def getUTF8String(row: Int): UTF8String = values(row).asInstanceOf[UTF8String]
  override def getBinary(row: Int): Array[Byte] = values(row).asInstanceOf[Array[Byte]]
  override def getList(row: Int): ListValues = new ArrayValues(values(row).asInstanceOf[ArrayData])
  def get(row: Int, dataType: DataType): AnyRef = if (isNullAt(row)) null else values(row).asInstanceOf[AnyRef]
  override def copy(row: Int, dataType: DataType): AnyRef =
    InternalRow.copyValue(get(row, dataType)).asInstanceOf[AnyRef]
}

/**
 * One value for every row: a constant argument or filter (Catalyst's representation, null for NULL),
 * evaluated once. Integer-like and floating values are read by any getter of their kind, as
 * [[LongColumn]] and [[DoubleColumn]] read theirs.
 */
private[exec] final class ConstantColumn(value: Any, val numRows: Int) extends Column {
  val hasNulls: Boolean = value == null && numRows > 0
  def isNullAt(row: Int): Boolean = value == null
  // Read once: adapters read a constant on every row.
  private lazy val number = value match {
    case b: Boolean => if (b) 1L else 0L
    case n: java.lang.Number => n.longValue
    case other => unsupported(String.valueOf(other))
  }
  override def getBoolean(row: Int): Boolean = value match {
    case b: Boolean => b
    case _ => number != 0
  }
  override def getByte(row: Int): Byte = number.toByte
  override def getShort(row: Int): Short = number.toShort
  override def getInt(row: Int): Int = number.toInt
  override def getLong(row: Int): Long = number
  override def getFloat(row: Int): Float = value.asInstanceOf[java.lang.Number].floatValue
  override def getDouble(row: Int): Double = value.asInstanceOf[java.lang.Number].doubleValue
  override def getDecimal(row: Int, precision: Int, scale: Int): Decimal = value.asInstanceOf[Decimal]
  override def getUTF8String(row: Int): UTF8String = value.asInstanceOf[UTF8String]
  override def getBinary(row: Int): Array[Byte] = value.asInstanceOf[Array[Byte]]
  override def getList(row: Int): ListValues = new ArrayValues(value.asInstanceOf[ArrayData])
  def get(row: Int, dataType: DataType): AnyRef = value.asInstanceOf[AnyRef]
  override def copy(row: Int, dataType: DataType): AnyRef = InternalRow.copyValue(value).asInstanceOf[AnyRef]
}

private[exec] object VectorColumn {
  /** A scan's vector as a column: one of strings or binaries that an on-heap vector holds end to end (a
   *  Parquet scan's without a dictionary) as [[VectorBytes]], any other as a [[VectorColumn]]. */
  def of(vector: ColumnVector, numRows: Int): Column = vector match {
    case v: OnHeapColumnVector if !v.hasDictionary && (v.dataType match {
          case _: StringType | BinaryType => true
          case _ => false
        }) => new VectorBytes(v, numRows)
    case _ => new VectorColumn(vector, numRows)
  }
}

/** An on-heap vector of strings or binaries without a dictionary, its values' bytes read where the scan put
 *  them: one array (its byte child's) for the batch, an offset and a length per row. */
private[exec] final class VectorBytes(vector: OnHeapColumnVector, val numRows: Int) extends BytesColumn {
  // The byte child's array itself: getByteBuffer wraps it without a copy.
  val bytes: Array[Byte] = vector.arrayData().getByteBuffer(0, 0).array()
  lazy val hasNulls: Boolean = vector.hasNull
  def isNullAt(row: Int): Boolean = vector.isNullAt(row)
  def start(row: Int): Int = vector.getArrayOffset(row)
  def length(row: Int): Int = vector.getArrayLength(row)
}

/**
 * A column of a ColumnarBatch read in place (a Parquet or cached-table scan's vector): what the grouped
 * operator hands an accumulator when the argument is a plain column of the type it reads, no copy made.
 * Valid while the batch is; accumulators copy what they keep (`copy`).
 */
private[exec] final class VectorColumn(vector: ColumnVector, val numRows: Int) extends Column {
  lazy val hasNulls: Boolean = vector.hasNull
  def isNullAt(row: Int): Boolean = vector.isNullAt(row)
  override def getBoolean(row: Int): Boolean = vector.getBoolean(row)
  override def getByte(row: Int): Byte = vector.getByte(row)
  override def getShort(row: Int): Short = vector.getShort(row)
  override def getInt(row: Int): Int = vector.getInt(row)
  override def getLong(row: Int): Long = vector.getLong(row)
  override def getFloat(row: Int): Float = vector.getFloat(row)
  override def getDouble(row: Int): Double = vector.getDouble(row)
  override def getDecimal(row: Int, precision: Int, scale: Int): Decimal = vector.getDecimal(row, precision, scale)
  override def getUTF8String(row: Int): UTF8String = vector.getUTF8String(row)
  override def getBinary(row: Int): Array[Byte] = vector.getBinary(row)
  override def getList(row: Int): ListValues = new ArrayValues(vector.getArray(row))
  // Boxed reads through a one-column batch's row view, which knows every type's getter.
  private lazy val single = new ColumnarBatch(Array(vector), numRows)
  def get(row: Int, dataType: DataType): AnyRef = if (isNullAt(row)) null else single.getRow(row).get(0, dataType)
  override def copy(row: Int, dataType: DataType): AnyRef =
    InternalRow.copyValue(get(row, dataType)).asInstanceOf[AnyRef]
}
