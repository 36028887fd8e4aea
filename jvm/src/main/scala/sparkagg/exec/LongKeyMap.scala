package sparkagg.exec

import java.util.Arrays

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{SpecificInternalRow, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.Platform
import org.apache.spark.unsafe.array.ByteArrayMethods
import org.apache.spark.sql.vectorized.ColumnarBatch
import org.apache.spark.unsafe.types.UTF8String
import sparkagg.api.EmitTo
import sparkagg.common.{BytesColumn, GroupVectors, LargeArrays}

/**
 * The fast path for one integer-like key (tinyint to bigint, date, timestamp) read at `ordinal` of the
 * row, with no object per key; NULL is a group of its own. Keys that fall in a dense range (ids, days,
 * a modulus) index an array of groups directly: one access per row, in key order when keys come in order.
 * Once the keys' range passes [[LongKeyMap.DensePerGroup]] times the groups it is likely to hold (where
 * the array would cost more than the table), every key moves to open addressing over a primitive array,
 * for the rest of the groups' life.
 */
private[exec] final class LongKeyMap(ordinal: Int, keyType: DataType) extends GroupMap {
  private var nullGroup = -1
  private var count = 0

  // Dense: key `low + i` has group `direct(i) - 1` (0: not seen). Null once the keys moved to `slots`.
  private var direct = new Array[Int](LongKeyMap.InitialDense)
  private var low = 0L
  // Hashed: slot s holds its key at 2s and its group + 1 at 2s + 1 (0: empty), a probe touches one cache line.
  private var mask = 0
  private var slots: Array[Long] = null

  // The key's width in bytes, matched per row instead of calling a closure, which would box the Long.
  private val width = RowKeyMap.wordWidth(keyType)
  private def read(row: InternalRow): Long = width match {
    case 1 => row.getByte(ordinal)
    case 2 => row.getShort(ordinal)
    case 4 => row.getInt(ordinal)
    case _ => row.getLong(ordinal)
  }

  def numGroups: Int = count

  def groupOf(row: InternalRow): Int = if (row.isNullAt(ordinal)) groupOfNull() else groupOfKey(read(row))

  // A batch's keys are read first and looked up together: hashed, in two passes, the first touching
  // every key's slot so that the cache misses of a large table overlap instead of coming one after another.
  private var staged = new Array[Long](1024)
  private var touched = 0L

  // An UnsafeRow (a shuffled row, a packet's) read by calls bound at compile time, as BatchBuilder.append.
  override def stage(row: InternalRow, i: Int, groups: Array[Int]): Unit = row match {
    case u: UnsafeRow =>
      if (u.isNullAt(ordinal)) stageLong(i, isNull = true, 0L, groups)
      else stageLong(i, isNull = false,
        width match {
          case 1 => u.getByte(ordinal)
          case 2 => u.getShort(ordinal)
          case 4 => u.getInt(ordinal)
          case _ => u.getLong(ordinal)
        }, groups)
    case _ =>
      if (row.isNullAt(ordinal)) stageLong(i, isNull = true, 0L, groups)
      else stageLong(i, isNull = false, read(row), groups)
  }

  override def stageLong(i: Int, isNull: Boolean, key: Long, groups: Array[Int]): Unit = {
    if (i >= staged.length) staged = Arrays.copyOf(staged, GroupVectors.grow(staged.length, i + 1))
    if (isNull) groups(i) = -1 else { groups(i) = 0; staged(i) = key }
  }

  override def stagedLongs(capacity: Int): Array[Long] = {
    if (capacity > staged.length) staged = Arrays.copyOf(staged, capacity)
    staged
  }

  // The key vector read in one loop: no row view, and the vector's getter is the only one the loop calls.
  override def stageBatch(batch: ColumnarBatch, groups: Array[Int]): Unit = {
    val n = batch.numRows
    if (n > staged.length) staged = Arrays.copyOf(staged, GroupVectors.grow(staged.length, n))
    val keys = batch.column(ordinal)
    val nulls = keys.hasNull
    var i = 0
    while (i < n) {
      if (nulls && keys.isNullAt(i)) groups(i) = -1
      else {
        groups(i) = 0
        staged(i) = width match {
          case 1 => keys.getByte(i)
          case 2 => keys.getShort(i)
          case 4 => keys.getInt(i)
          case _ => keys.getLong(i)
        }
      }
      i += 1
    }
  }

  override def finishBatch(n: Int, groups: Array[Int]): Unit = {
    var i = 0
    if (slots != null) {
      var sum = 0L
      while (i < n) { sum += slots(2 * GroupMap.slot(staged(i), mask) + 1); i += 1 }
      touched = sum
      i = 0
    }
    while (i < n) { groups(i) = if (groups(i) < 0) groupOfNull() else groupOfKey(staged(i)); i += 1 }
  }

  private def groupOfNull(): Int = {
    if (nullGroup < 0) { nullGroup = count; count += 1 }
    nullGroup
  }

  private def groupOfKey(key: Long): Int =
    if (slots != null) hashedGroupOf(key)
    else {
      val at = key - low
      if (at >= 0 && at < direct.length) {
        val g = direct(at.toInt)
        if (g != 0) g - 1
        else {
          direct(at.toInt) = count + 1
          count += 1
          count - 1
        }
      } else {
        widen(key)
        groupOfKey(key)
      }
    }

  /** Makes room for `key`: a dense array over the keys' new range, or the hash table when that range
   *  is too wide for the groups it is likely to hold. The first key of all places the range. */
  private def widen(key: Long): Unit = {
    if (count == (if (nullGroup >= 0) 1 else 0)) { low = key; return }
    // The keys seen span [first, last] of the array, which was grown ahead of them.
    var first = 0
    while (direct(first) == 0) first += 1
    var last = direct.length - 1
    while (direct(last) == 0) last -= 1
    val (from, to) = (math.min(low + first, key), math.max(low + last, key))
    val span = BigInt(to) - BigInt(from) + 1
    // A new range fills as densely as the seen one (a shuffle partition's keys, 1 in P of a dense range,
    // come in runs that jump), but is not trusted to hold more than 4 times the groups seen.
    val expected = math.min(4.0 * count, count * (span.toDouble / (last - first + 1)))
    val limit = LongKeyMap.denseLimit(expected.toLong)
    if (span > limit) { hash(); return }
    // Doubled, the new room on the side the key came from (keys in order grow one way); up to the room of
    // twice the groups, so that keys at the limit's spacing do not widen the array at every new key.
    val length = math.min(math.max(span.toLong, 2L * direct.length), LongKeyMap.denseLimit(2 * expected.toLong)).toInt
    val start = if (key < low) to - length + 1 else from
    // Only the slots the seen keys' groups do not fill are zeroed: the array is about twice their span.
    val widened = LargeArrays.ints(length)
    val (at, seen) = ((low + first - start).toInt, last - first + 1)
    Arrays.fill(widened, 0, at, 0)
    System.arraycopy(direct, first, widened, at, seen)
    Arrays.fill(widened, at + seen, length, 0)
    LargeArrays.release(direct)
    direct = widened
    low = start
  }

  /** The keys seen so far into the hash table, which takes every key from now on. */
  private def hash(): Unit = {
    mask = Integer.highestOneBit(math.max(1024, 4 * count)) - 1
    slots = LargeArrays.zeroLongs(2 * (mask + 1))
    var i = 0
    while (i < direct.length) {
      if (direct(i) != 0) insert(low + i, direct(i))
      i += 1
    }
    LargeArrays.release(direct)
    direct = null
  }

  private def insert(key: Long, groupPlusOne: Long): Unit = {
    var s = GroupMap.slot(key, mask)
    while (slots(2 * s + 1) != 0) s = (s + 1) & mask
    slots(2 * s) = key
    slots(2 * s + 1) = groupPlusOne
  }

  private def hashedGroupOf(key: Long): Int = {
    var s = GroupMap.slot(key, mask)
    while (slots(2 * s + 1) != 0 && slots(2 * s) != key) s = (s + 1) & mask
    if (slots(2 * s + 1) != 0) (slots(2 * s + 1) - 1).toInt
    else {
      val g = count
      slots(2 * s) = key
      slots(2 * s + 1) = g + 1L
      count += 1
      if (count * 2 > mask) rehash()
      g
    }
  }

  private def rehash(): Unit = {
    val old = slots
    mask = mask * 2 + 1
    slots = LargeArrays.zeroLongs(2 * (mask + 1))
    var i = 0
    while (i < old.length) {
      if (old(i + 1) != 0) insert(old(i), old(i + 1))
      i += 2
    }
    LargeArrays.release(old)
  }

  def emit(emit: EmitTo): KeyRows = {
    GroupMap.emitAllOnly(emit, "the hash table")
    // Each group's key, read back from where it is kept (a key array in group order would cost a store per new group).
    // Every group's entry is written but the NULL group's, which is never read.
    val emitted = LargeArrays.lend(LargeArrays.longs(count))
    var i = 0
    if (slots != null)
      while (i < slots.length) { if (slots(i + 1) != 0) emitted((slots(i + 1) - 1).toInt) = slots(i); i += 2 }
    else while (i < direct.length) { if (direct(i) != 0) emitted(direct(i) - 1) = low + i; i += 1 }
    val nulls = nullGroup
    nullGroup = -1
    count = 0
    LargeArrays.release(direct)
    LargeArrays.release(slots)
    direct = new Array[Int](LongKeyMap.InitialDense)
    slots = null
    new LongKeyMap.Keys(emitted, nulls, keyType, width)
  }

  def size: Long = if (slots != null) 16L * (mask + 1) else 4L * direct.length

  /** Whether the keys are hashed (for tests). */
  private[exec] def hashed: Boolean = slots != null
}

object LongKeyMap {
  /** The emitted keys as they were kept: `values(g)` is group g's key (of `keyType`, `width` bytes wide),
   *  but for group `nullGroup` (-1: none), whose key is NULL. [[PacketWriter]] reads them as they are. */
  final class Keys(val values: Array[Long], val nullGroup: Int, keyType: DataType, width: Int) extends KeyRows {
    private val row = new SpecificInternalRow(Seq(keyType))

    def apply(g: Int): InternalRow = {
      if (g == nullGroup) row.setNullAt(0)
      else width match {
        case 1 => row.setByte(0, values(g).toByte)
        case 2 => row.setShort(0, values(g).toShort)
        case 4 => row.setInt(0, values(g).toInt)
        case _ => row.setLong(0, values(g))
      }
      row
    }
  }

  private val InitialDense = 1024
  /** A dense array may span this many keys per group: at 4 bytes a key it then costs what the hash
   *  table does (16-byte slots, at least two per group). */
  val DensePerGroup = 8

  /** The most places a dense array of groups (or a field's range, [[PackedKeyMap]]) may have. */
  val MaxDense: Long = 1L << 30

  private[exec] def denseLimit(groups: Long): Long =
    math.min(DensePerGroup * math.max(groups, InitialDense.toLong), MaxDense)

  def supports(keyType: DataType): Boolean = keyType match {
    case ByteType | ShortType | IntegerType | DateType | LongType | TimestampType | TimestampNTZType => true
    case _ => false
  }
}
