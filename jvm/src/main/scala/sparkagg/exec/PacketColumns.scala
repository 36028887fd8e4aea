package sparkagg.exec

import org.apache.spark.sql.types._
import org.apache.spark.unsafe.Platform
import org.apache.spark.sql.execution.vectorized.OnHeapColumnVector
import sparkagg.api.Column
import sparkagg.common.{BinaryColumn, BooleanColumn, Validity}

/**
 * A packet of one integer-like key and bigint, double, boolean, string or binary states in columns, as
 * [[PacketWriter]] writes a [[LongKeyMap]]'s groups: 8 bytes of -1 (a packet of rows starts with a row's size,
 * never negative), the number of groups, then each field in order, key first: its validity bits (a word per 64
 * groups, a bit set for a value), then its values: the key as a long each, bigints and doubles 8 bytes each,
 * booleans a byte each, strings and binaries their lengths (4 bytes each) and then their bytes end to end;
 * each part padded to 8 bytes. The merging side decodes a packet into vectors ([[PacketReader]]) and reads them
 * as it reads a scan's batch.
 *
 * Why: a row per group spends a null word, a word per field and a padded tail on each group; for an ordered
 * first_value of short strings by a bigint key that is 56 bytes a group against 25 here, and the shuffle
 * compresses, checksums and writes every byte. The merging side then reads columns, without gathering rows.
 */
private[exec] final class PacketColumns(columns: Array[Column]) {
  private val numColumns = columns.length
  private val (longs, doubles, booleans, bytes, validity) = ColumnRows.arraysOf(columns)
  // Bytes of a group in every field but the strings' and binaries' own bytes.
  private val fixed = 8 + columns.map { case _: BooleanColumn => 1; case _: BinaryColumn => 4; case _ => 8 }.sum

  private def bound(count: Int, variable: Long): Long =
    16L + 8L * (1 + numColumns) * Validity.words(count) + count.toLong * fixed + variable + 16L * numColumns

  /** How many of the groups order(from until end), at least one, fit in `room` bytes. */
  def fit(order: Array[Int], from: Int, end: Int, room: Int): Int = {
    var count = 0
    var variable = 0L
    var fits = true
    while (fits && from + count < end) {
      val g = order(from + count)
      var more = 0L
      var c = 0
      while (c < numColumns) {
        if (bytes(c) != null && Validity.isValid(validity(c), g)) more += bytes(c).length(g)
        c += 1
      }
      if (count > 0 && bound(count + 1, variable + more) > room) fits = false
      else { count += 1; variable += more }
    }
    count
  }

  /** The bytes of the packet of the `count` groups order(from until from + count). */
  def size(order: Array[Int], from: Int, count: Int): Int = {
    val words = 8L * Validity.words(count)
    var total = 16L + words + 8L * count
    var c = 0
    while (c < numColumns) {
      total += words + (
        if (booleans(c) != null) PacketColumns.padded(count)
        else if (bytes(c) != null)
          PacketColumns.padded(4L * count) + PacketColumns.padded(columnBytes(c, order, from, count))
        else 8L * count)
      c += 1
    }
    if (total > Int.MaxValue - 64) throw new IllegalStateException(s"sparkagg: a packet of $total bytes")
    total.toInt
  }

  private def columnBytes(c: Int, order: Array[Int], from: Int, count: Int): Long = {
    var total = 0L
    var i = from
    while (i < from + count) {
      val g = order(i)
      if (Validity.isValid(validity(c), g)) total += bytes(c).length(g)
      i += 1
    }
    total
  }

  /** Writes the packet of the groups order(from until from + count) at `at` of `to`, keys from `keys`. */
  def write(keys: LongKeyMap.Keys, order: Array[Int], from: Int, count: Int, to: Array[Byte], at: Long): Unit = {
    Platform.putLong(to, at, -1L)
    Platform.putLong(to, at + 8, count.toLong)
    var pos = at + 16
    pos = writeValidity(to, pos, order, from, count, g => g != keys.nullGroup)
    var i = 0
    while (i < count) {
      val g = order(from + i)
      Platform.putLong(to, pos + 8L * i, if (g == keys.nullGroup) 0L else keys.values(g))
      i += 1
    }
    pos += 8L * count
    var c = 0
    while (c < numColumns) {
      val valid = validity(c)
      pos = writeValidity(to, pos, order, from, count, g => Validity.isValid(valid, g))
      pos = writeValues(c, to, pos, order, from, count)
      c += 1
    }
  }

  private def writeValidity(to: Array[Byte], at: Long, order: Array[Int], from: Int, count: Int,
      valid: Int => Boolean): Long = {
    var word = 0L
    var i = 0
    while (i < count) {
      if (valid(order(from + i))) word |= 1L << i
      if ((i & 63) == 63 || i == count - 1) {
        Platform.putLong(to, at + 8L * (i >> 6), word)
        word = 0L
      }
      i += 1
    }
    at + 8L * Validity.words(count)
  }

  private def writeValues(c: Int, to: Array[Byte], at: Long, order: Array[Int], from: Int, count: Int): Long = {
    val valid = validity(c)
    var i = 0
    if (longs(c) != null || doubles(c) != null) {
      val (bigints, floats) = (longs(c), doubles(c))
      while (i < count) {
        val g = order(from + i)
        val word =
          if (!Validity.isValid(valid, g)) 0L
          else if (bigints != null) bigints(g)
          else java.lang.Double.doubleToRawLongBits(floats(g))
        Platform.putLong(to, at + 8L * i, word)
        i += 1
      }
      at + 8L * count
    } else if (booleans(c) != null) {
      val values = booleans(c)
      while (i < count) {
        val g = order(from + i)
        Platform.putBoolean(to, at + i, Validity.isValid(valid, g) && values(g))
        i += 1
      }
      at + PacketColumns.padded(count)
    } else {
      val column = bytes(c)
      var tail = at + PacketColumns.padded(4L * count)
      while (i < count) {
        val g = order(from + i)
        val length = if (Validity.isValid(valid, g)) column.length(g) else 0
        Platform.putInt(to, at + 4L * i, length)
        Platform.copyMemory(column.bytes, Platform.BYTE_ARRAY_OFFSET + column.start(g), to, tail, length)
        tail += length
        i += 1
      }
      at + PacketColumns.padded(tail - at)
    }
  }
}

private[exec] object PacketColumns {
  /** The first long of a packet of columns. */
  val Marker = -1L

  def padded(n: Long): Long = (n + 7) & ~7L

  /** Whether the states `columns` of `types` go into a packet of columns: as into a row ([[ColumnRows]]). */
  def writes(columns: Array[Column], types: Seq[DataType]): Boolean = ColumnRows.columnsWritten(columns, types)

  /** Whether a packet's states, from `at` of `base`, are in columns. */
  def inColumns(base: AnyRef, at: Long): Boolean = Platform.getLong(base, at) == Marker

  /**
   * A packet of columns, from `at` of `base`, into `vectors` (one per field, of the fields' types; reset
   * first); the number of groups. The key, written as a long, is put as the vector's type holds it.
   */
  def read(base: AnyRef, at: Long, vectors: Array[OnHeapColumnVector]): Int = {
    val count = Platform.getLong(base, at + 8).toInt
    val words = 8L * Validity.words(count)
    var pos = at + 16
    var f = 0
    while (f < vectors.length) {
      val vector = vectors(f)
      val validity = pos
      pos += words
      def isNull(i: Int): Boolean = (Platform.getLong(base, validity + 8L * (i >> 6)) & (1L << i)) == 0
      var i = 0
      vector.dataType match {
        case BooleanType =>
          while (i < count) {
            if (isNull(i)) vector.putNull(i) else vector.putBoolean(i, Platform.getBoolean(base, pos + i))
            i += 1
          }
          pos += padded(count)
        case _: StringType | BinaryType =>
          val bytes = base match {
            case b: Array[Byte] => b
            case other => throw new IllegalStateException(s"sparkagg: a packet in a ${other.getClass}")
          }
          var tail = pos + padded(4L * count)
          while (i < count) {
            val length = Platform.getInt(base, pos + 4L * i)
            if (isNull(i)) vector.putNull(i)
            else {
              val start = vector.arrayData().appendBytes(length, bytes, (tail - Platform.BYTE_ARRAY_OFFSET).toInt)
              vector.putArray(i, start, length)
            }
            tail += length
            i += 1
          }
          pos += padded(tail - pos)
        case DoubleType =>
          while (i < count) {
            if (isNull(i)) vector.putNull(i) else vector.putDouble(i, Platform.getDouble(base, pos + 8L * i))
            i += 1
          }
          pos += 8L * count
        case t if t.defaultSize == 8 =>
          while (i < count) {
            if (isNull(i)) vector.putNull(i) else vector.putLong(i, Platform.getLong(base, pos + 8L * i))
            i += 1
          }
          pos += 8L * count
        case _ =>
          while (i < count) {
            if (isNull(i)) vector.putNull(i) else vector.putInt(i, Platform.getLong(base, pos + 8L * i).toInt)
            i += 1
          }
          pos += 8L * count
      }
      f += 1
    }
    count
  }
}
