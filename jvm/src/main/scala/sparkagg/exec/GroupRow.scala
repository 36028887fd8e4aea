package sparkagg.exec

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{GenericInternalRow, UnsafeArrayData, UnsafeRow}
import org.apache.spark.sql.catalyst.util.{ArrayData, MapData}
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.Platform
import org.apache.spark.sql.sparkagg.SparkAggRow
import org.apache.spark.unsafe.types.{CalendarInterval, UTF8String}
import sparkagg.api._
import sparkagg.common._
import sparkagg.catalyst.CatalystValues

/**
 * One emitted group as a Catalyst row, read in place: the group's key (fields of `keyTypes`, from
 * `key`) and then row `group` of each of `columns` (an accumulator's states or results, of Catalyst types
 * `types`). An UnsafeProjection over it writes the spill rows, and the output and state rows that
 * [[ColumnRows]] does not write; the projection's generated code calls this one class, so its getters
 * inline and long, double and list-of-double columns are read straight from their arrays, with no row of
 * values filled first.
 *
 * A list of doubles is laid out as an UnsafeArrayData in a reused buffer of its column, and a binary value
 * (a packed state) copied into a reused array of its column and length; each is valid until the next group.
 * One per column, not one per row: an interpreted projection (codegen off) reads every field of the row
 * before it writes any, so two list columns sharing a buffer would both hold the last one read.
 */
private[exec] final class GroupRow(keyTypes: Seq[DataType], columns: Array[Column], types: Seq[DataType])
  extends SparkAggRow {
  private val numKeys = keyTypes.size
  var key: InternalRow = _
  var group = 0

  protected def numKeyFields: Int = numKeys
  protected def keyRow: InternalRow = key
  protected def valueAt(i: Int): Any = value(i)

  private val catalystTypes = types.toArray // read per row: a Seq's apply may walk a list
  private val longs = columns.map { case c: LongColumn => c.values; case _ => null }
  private val doubles = columns.map { case c: DoubleColumn => c.values; case _ => null }
  private val validity = columns.map {
    case c: LongColumn => c.validity
    case c: DoubleColumn => c.validity
    case c: DoubleListColumn => c.validity
    case c: BytesListColumn => c.validity
    case c: BinaryColumn => c.validity
    case c: DecimalColumn => c.validity
    case _ => null
  }
  // Whether a column's NULLs are in `validity` (a null bitmap there: no NULLs); else the column is asked.
  private val bitmapped = columns.map {
    case _: LongColumn | _: DoubleColumn | _: DoubleListColumn | _: BytesListColumn | _: BinaryColumn |
        _: DecimalColumn =>
      true
    case _ => false
  }
  // Strings emitted end to end (string_agg, min and max) are read as views of their bytes.
  private val strings = columns.zip(types).map {
    case (c: BinaryColumn, _: StringType) => c
    case _ => null
  }
  private val doubleLists = columns.zip(types).map {
    case (c: DoubleListColumn, ArrayType(DoubleType, _)) => c
    case _ => null
  }
  private val bytesLists = columns.map { case c: BytesListColumn => c; case _ => null }

  def numFields: Int = numKeys + columns.length

  def isNullAt(i: Int): Boolean =
    if (i < numKeys) key.isNullAt(i)
    else {
      val c = i - numKeys
      if (bitmapped(c)) !Validity.isValid(validity(c), group) else columns(c).isNullAt(group)
    }

  override def getBoolean(i: Int): Boolean = if (i < numKeys) key.getBoolean(i) else column(i).getBoolean(group)
  override def getByte(i: Int): Byte = if (i < numKeys) key.getByte(i) else column(i).getByte(group)
  override def getShort(i: Int): Short = if (i < numKeys) key.getShort(i) else column(i).getShort(group)
  override def getInt(i: Int): Int = if (i < numKeys) key.getInt(i) else column(i).getInt(group)
  override def getFloat(i: Int): Float = if (i < numKeys) key.getFloat(i) else column(i).getFloat(group)

  override def getLong(i: Int): Long =
    if (i < numKeys) key.getLong(i)
    else {
      val values = longs(i - numKeys)
      if (values != null) values(group) else column(i).getLong(group)
    }

  override def getDouble(i: Int): Double =
    if (i < numKeys) key.getDouble(i)
    else {
      val values = doubles(i - numKeys)
      if (values != null) values(group) else column(i).getDouble(group)
    }

  override def getUTF8String(i: Int): UTF8String =
    if (i < numKeys) key.getUTF8String(i)
    else {
      val c = strings(i - numKeys)
      if (c != null) c.getUTF8String(group) else value(i).asInstanceOf[UTF8String]
    }
  override def getDecimal(i: Int, precision: Int, scale: Int): Decimal =
    if (i < numKeys) key.getDecimal(i, precision, scale) else column(i).getDecimal(group, precision, scale)
  override def getBinary(i: Int): Array[Byte] =
    if (i < numKeys) key.getBinary(i)
    else columns(i - numKeys) match {
      case c: BinaryColumn => bytesOf(i - numKeys, c)
      case c => c.getBinary(group)
    }

  override def getInterval(i: Int): CalendarInterval =
    if (i < numKeys) key.getInterval(i) else value(i).asInstanceOf[CalendarInterval]
  override def getStruct(i: Int, numFields: Int): InternalRow =
    if (i < numKeys) key.getStruct(i, numFields) else value(i).asInstanceOf[InternalRow]
  override def getMap(i: Int): MapData = if (i < numKeys) key.getMap(i) else value(i).asInstanceOf[MapData]

  override def getArray(i: Int): ArrayData =
    if (i < numKeys) key.getArray(i)
    else {
      val c = i - numKeys
      if (doubleLists(c) != null) doubleList(c, doubleLists(c))
      else if (bytesLists(c) != null) bytesList(c, bytesLists(c))
      else value(i).asInstanceOf[ArrayData]
    }

  def get(i: Int, dataType: DataType): AnyRef =
    if (i < numKeys) key.get(i, dataType) else if (isNullAt(i)) null else value(i).asInstanceOf[AnyRef]

  private def column(i: Int): Column = columns(i - numKeys)
  private def value(i: Int): Any =
    CatalystValues.toCatalyst(column(i).get(group, catalystTypes(i - numKeys)), catalystTypes(i - numKeys))

  // Per binary column, one array per length, reused: packed states come in a few lengths.
  private val byLength = Array.fill[Array[Array[Byte]]](columns.length)(null)

  private def bytesOf(c: Int, column: BinaryColumn): Array[Byte] = {
    val n = column.length(group)
    if (byLength(c) == null) byLength(c) = new Array[Array[Byte]](256)
    val arrays = byLength(c)
    val out = if (n < arrays.length) {
      if (arrays(n) == null) arrays(n) = new Array[Byte](n)
      arrays(n)
    } else new Array[Byte](n)
    System.arraycopy(column.bytes, column.start(group), out, 0, n)
    out
  }

  private val lists = Array.tabulate(columns.length)(c =>
    if (doubleLists(c) != null || bytesLists(c) != null) new UnsafeArrayData else null)
  private val buffers = Array.fill(columns.length)(new Array[Long](0))

  /** Column `column`'s reused buffer, of at least `bytes` bytes, its first `zeroed` bytes zero. It grows to
   *  twice its length or to the size asked, whichever is more: one huge list (an array_agg of 5 million
   *  strings is 80 MB) gets no room to spare. */
  private def buffer(column: Int, bytes: Int, zeroed: Int): Array[Long] = {
    if (bytes > 8 * buffers(column).length)
      buffers(column) = new Array[Long](math.max(64, math.max((bytes + 7) / 8, 2 * buffers(column).length)))
    java.util.Arrays.fill(buffers(column), 0, zeroed / 8, 0L)
    buffers(column)
  }

  private def doubleList(column: Int, c: DoubleListColumn): ArrayData = {
    val start = c.start(group)
    val n = c.length(group)
    val header = UnsafeArrayData.calculateHeaderPortionInBytes(n)
    val bytes = header + 8 * n
    val buffer = this.buffer(column, bytes, header)
    buffer(0) = n
    // Null bits follow the length word, bit j for element j.
    if (c.elementValidity != null) {
      var e = 0
      while (e < n) { if (c.isElementNull(start + e)) buffer(1 + (e >> 6)) |= 1L << e; e += 1 }
    }
    Platform.copyMemory(c.values, Platform.DOUBLE_ARRAY_OFFSET + 8L * start, buffer,
      Platform.LONG_ARRAY_OFFSET + header, 8L * n)
    lists(column).pointTo(buffer, Platform.LONG_ARRAY_OFFSET, bytes)
    lists(column)
  }

  /** A list of strings or binaries laid out as UnsafeArrayData: the header (length, null bits), each
   *  element's offset and size, then the elements' bytes, each padded with zeros to a whole word. */
  private def bytesList(column: Int, c: BytesListColumn): ArrayData = {
    val first = c.rowStarts(group)
    val n = c.rowStarts(group + 1) - first
    val header = UnsafeArrayData.calculateHeaderPortionInBytes(n)
    var bytes = header + 8 * n
    var e = first
    while (e < first + n) { bytes += (c.elementLength(e) + 7) & ~7; e += 1 }
    val buffer = this.buffer(column, bytes, bytes)
    buffer(0) = n
    var at = header + 8 * n
    var j = 0
    while (j < n) {
      val e = first + j
      if (c.isElementNull(e)) buffer(1 + (j >> 6)) |= 1L << j
      else {
        val size = c.elementLength(e)
        buffer((header >> 3) + j) = (at.toLong << 32) | size
        Platform.copyMemory(
          c.bytes, Platform.BYTE_ARRAY_OFFSET + c.starts(e), buffer, Platform.LONG_ARRAY_OFFSET + at, size)
        at += (size + 7) & ~7
      }
      j += 1
    }
    lists(column).pointTo(buffer, Platform.LONG_ARRAY_OFFSET, bytes)
    lists(column)
  }

  def setNullAt(i: Int): Unit = throw new UnsupportedOperationException("a group's row is read-only")
  def update(i: Int, value: Any): Unit = throw new UnsupportedOperationException("a group's row is read-only")
  def copy(): InternalRow = {
    val fieldTypes = keyTypes ++ types
    new GenericInternalRow(Array.tabulate[Any](numFields)(i => InternalRow.copyValue(get(i, fieldTypes(i)))))
  }
}

/**
 * Emitted groups' rows of (keys, columns) written from a group table's keys and the columns' arrays as an
 * UnsafeProjection of them lays a row out: null bits, a word per field (an integer in the low bytes of its
 * zeroed word, a string's offset and size, a NULL field's word zero), then the strings' bytes in field order,
 * each padded with zeros to a whole word. No row of values is made and then copied, no field read through a
 * row, no string object made per value. A [[RowKeyMap]]'s key is such a row already: its words and bytes are
 * copied, its strings' offsets moved by the room the columns' words take. Rows of the forms
 * [[ColumnRows.writes]] accepts: [[load]] a group, then [[write]] its [[size]] bytes.
 */
private[exec] final class ColumnRows(keys: KeyRows, keyTypes: Seq[DataType], columns: Array[Column]) {
  private val numKeys = keyTypes.size
  private val numColumns = columns.length
  private val nullWords = Validity.words(numKeys + numColumns)
  private val fixed = 8 * (nullWords + numKeys + numColumns)
  private val longKeys = keys match { case k: LongKeyMap.Keys => k; case _ => null }
  private val packedKeys = keys match { case k: PackedKeyMap.Keys => k; case _ => null }
  private val keyMask = if (longKeys == null) 0L
  else RowKeyMap.wordWidth(keyTypes.head) match {
    case 8 => -1L
    case width => (1L << (8 * width)) - 1
  }
  private val keyNullWords = Validity.words(numKeys)
  private val keyFixed = 8 * (keyNullWords + numKeys)
  private val keyStrings = keyTypes.map(_ == StringType).toArray
  private val (longs, doubles, booleans, bytes, validity) = ColumnRows.arraysOf(columns)

  private var g = 0
  /** The loaded group's key row ([[RowKeyMap]] keys; null for a [[LongKeyMap]]'s, read by [[nullKey]] and
   *  [[longKey]], or by [[group]] from [[PackedKeyMap.Keys]]) and its row's size in bytes. */
  var keyRow: UnsafeRow = null
  var size = 0
  def nullKey: Boolean = g == longKeys.nullGroup
  def longKey: Long = longKeys.values(g)

  def group: Int = g

  def load(group: Int): Unit = {
    g = group
    if (longKeys == null && packedKeys == null) keyRow = keys(g).asInstanceOf[UnsafeRow]
    size = fixed + (if (keyRow == null) 0 else keyRow.getSizeInBytes - keyFixed)
    var c = 0
    while (c < numColumns) {
      if (bytes(c) != null && Validity.isValid(validity(c), g)) size += (bytes(c).length(g) + 7) & ~7
      c += 1
    }
  }

  /** The loaded group's row at `at` of `to`. */
  def write(to: Array[Byte], at: Long): Unit = {
    var w = 0
    while (w < nullWords) { Platform.putLong(to, at + 8L * w, 0L); w += 1 }
    var tail = fixed
    if (packedKeys != null) writePackedKey(to, at)
    else if (keyRow == null) {
      if (nullKey) Platform.putLong(to, at, 1L)
      Platform.putLong(to, at + 8L * nullWords, if (nullKey) 0L else longKey & keyMask)
    } else tail = copyKey(to, at)
    var c = 0
    while (c < numColumns) {
      val field = numKeys + c
      val slot = at + 8L * (nullWords + field)
      if (!Validity.isValid(validity(c), g)) {
        Platform.putLong(to, slot, 0L)
        val word = at + 8L * (field >> 6)
        Platform.putLong(to, word, Platform.getLong(to, word) | (1L << field))
      } else if (longs(c) != null) Platform.putLong(to, slot, longs(c)(g))
      else if (doubles(c) != null) Platform.putDouble(to, slot, doubles(c)(g))
      else if (booleans(c) != null) {
        Platform.putLong(to, slot, 0L)
        Platform.putBoolean(to, slot, booleans(c)(g))
      } else {
        val n = bytes(c).length(g)
        Platform.putLong(to, slot, (tail.toLong << 32) | n)
        val padded = (n + 7) & ~7
        if (padded > n) Platform.putLong(to, at + tail + padded - 8, 0L)
        System.arraycopy(bytes(c).bytes, bytes(c).start(g), to, (at - Platform.BYTE_ARRAY_OFFSET).toInt + tail, n)
        tail += padded
      }
      c += 1
    }
  }

  /** The packed key's null bits (the first word's, as the keys come first) and a word per field. */
  private def writePackedKey(to: Array[Byte], at: Long): Unit = {
    val nulls = packedKeys.nullsOf(g)
    Platform.putLong(to, at, nulls.toLong)
    var f = 0
    while (f < numKeys) {
      Platform.putLong(to, at + 8L * (nullWords + f), if ((nulls & (1 << f)) != 0) 0L else packedKeys.word(g, f))
      f += 1
    }
  }

  /** The key row's null bits, words and strings' bytes into the row at `at`; where the row's bytes go on. */
  private def copyKey(to: Array[Byte], at: Long): Int = {
    val base = keyRow.getBaseObject
    val offset = keyRow.getBaseOffset
    var w = 0
    while (w < keyNullWords) { Platform.putLong(to, at + 8L * w, Platform.getLong(base, offset + 8L * w)); w += 1 }
    val shift = (fixed - keyFixed).toLong << 32
    var f = 0
    while (f < numKeys) {
      val word = Platform.getLong(base, offset + 8L * (keyNullWords + f))
      Platform.putLong(to, at + 8L * (nullWords + f), if (keyStrings(f) && !keyRow.isNullAt(f)) word + shift else word)
      f += 1
    }
    val tail = keyRow.getSizeInBytes - keyFixed
    Platform.copyMemory(base, offset + keyFixed, to, at + fixed, tail)
    fixed + tail
  }
}

private[exec] object ColumnRows {
  /** The arrays of columns of bigints, doubles, booleans and bytes, each column's in one of the first four (null
   *  in the others), and every column's validity bits. */
  def arraysOf(columns: Array[Column])
      : (Array[Array[Long]], Array[Array[Double]], Array[Array[Boolean]], Array[BinaryColumn], Array[Array[Long]]) = (
    columns.map { case c: LongColumn => c.values; case _ => null },
    columns.map { case c: DoubleColumn => c.values; case _ => null },
    columns.map { case c: BooleanColumn => c.values; case _ => null },
    columns.map { case c: BinaryColumn => c; case _ => null },
    columns.map {
      case c: LongColumn => c.validity
      case c: DoubleColumn => c.validity
      case c: BooleanColumn => c.validity
      case c: BinaryColumn => c.validity
    }
  )

  /** Whether a [[ColumnRows]] writes these rows: the keys a [[LongKeyMap]] kept, or a [[RowKeyMap]]'s of
   *  integer-like, boolean and string fields; columns of bigints, doubles, booleans, and strings or binaries
   *  end to end. */
  def writes(keys: KeyRows, keyTypes: Seq[DataType], columns: Array[Column], types: Seq[DataType]): Boolean = {
    val keysWritten = keys match {
      case _: LongKeyMap.Keys => keyTypes.size == 1
      case k: PackedKeyMap.Keys => k.numFields == keyTypes.size
      case k: RowKeyMap.ArenaKeys => k.numKeyFields == keyTypes.size && RowKeyMap.fieldKeyable(keyTypes)
      case _ => false
    }
    keysWritten && columnsWritten(columns, types)
  }

  /** Whether every column is of bigints, doubles, booleans, or strings or binaries end to end, as its type. */
  def columnsWritten(columns: Array[Column], types: Seq[DataType]): Boolean =
    columns.length == types.length && columns.zip(types).forall {
      case (_: LongColumn, LongType) | (_: DoubleColumn, DoubleType) | (_: BooleanColumn, BooleanType) => true
      case (_: BinaryColumn, _: StringType | BinaryType) => true
      case _ => false
    }
}
