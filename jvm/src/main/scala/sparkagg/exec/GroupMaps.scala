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

/** The emitted groups' keys, by group index. Not an `Int => InternalRow`: a call of that boxes its index,
 *  and those boxes were a tenth of the executor's samples when emitting 1M groups. */
private[exec] trait KeyRows {
  def apply(group: Int): InternalRow
  /** Called once when no key will be asked for again: the arrays behind the keys may be recycled. */
  def release(): Unit = ()
}

/**
 * One UnsafeRow that is each of many rows in turn, their bytes copied into its own words, rather than a
 * reused row pointed at each row where it lies: pointing stores a reference per row, which costs more than
 * copying the words (docs/grouped-operator.md, "What profiles showed").
 */
private[exec] final class RowCopy(numFields: Int) {
  private val row = new UnsafeRow(numFields)
  private var words = new Array[Long](8)
  row.pointTo(words, Platform.LONG_ARRAY_OFFSET, 0)

  /** The row of `bytes` bytes at `offset` of `base`: valid until the next load. */
  def load(base: AnyRef, offset: Long, bytes: Int): UnsafeRow = {
    if (bytes > 8 * words.length) {
      words = new Array[Long](GroupVectors.grow(words.length, (bytes + 7) / 8))
      row.pointTo(words, Platform.LONG_ARRAY_OFFSET, bytes)
    }
    RowCopy.copyWords(base, offset, bytes / 8, words, 0)
    row.setTotalSize(bytes)
    row
  }
}

private[exec] object RowCopy {
  /** `n` words at `offset` of `base` into `to` from `first`, one by one: a row or key is a few words, and
   *  Platform.copyMemory's checks and call cost more than that. */
  def copyWords(base: AnyRef, offset: Long, n: Int, to: Array[Long], first: Int): Unit = {
    var w = 0
    while (w < n) { to(first + w) = Platform.getLong(base, offset + 8L * w); w += 1 }
  }
}

/**
 * Group keys to dense group indices 0, 1, 2, ...: the first new key of a batch gets the next index.
 * `emit` hands over the emitted groups' keys (a [[KeyRows]], valid as long as the caller holds it)
 * and forgets them, as the accumulators forget their groups on [[EmitTo]].
 */
private[exec] abstract class GroupMap {
  def numGroups: Int
  /** The group of the key of `row`, a new one if the key was not seen. */
  def groupOf(row: InternalRow): Int
  /** Row `i` of a batch: `groups(i)` is its group once [[finishBatch]] has run. Here at once; a table
   *  may instead read the key now and look the batch's keys up together. */
  def stage(row: InternalRow, i: Int, groups: Array[Int]): Unit = groups(i) = groupOf(row)
  /** Every row of a columnar batch staged; a table may read its key vector directly. */
  def stageBatch(batch: ColumnarBatch, groups: Array[Int]): Unit = {
    var i = 0
    while (i < batch.numRows) { stage(batch.getRow(i), i, groups); i += 1 }
  }
  /** Row `i`'s key given as a value by generated code: tables of one integer-like key ([[LongKeyMap]]) or one
   *  string key ([[RowKeyMap]] with that field as its `fieldKeys`; null: NULL) take it. */
  def stageLong(i: Int, isNull: Boolean, key: Long, groups: Array[Int]): Unit =
    throw new UnsupportedOperationException(s"${getClass.getSimpleName} takes keys in rows")
  def stageString(i: Int, key: UTF8String, groups: Array[Int]): Unit =
    throw new UnsupportedOperationException(s"${getClass.getSimpleName} takes keys in rows")
  /** Where [[stageLong]] keeps row i's key, for generated code to write it there itself (with `groups(i)` 0,
   *  or -1 for NULL), as `stageLong` would: the array stays the table's for the rows below `capacity`. */
  def stagedLongs(capacity: Int): Array[Long] =
    throw new UnsupportedOperationException(s"${getClass.getSimpleName} takes keys in rows")
  /** Completes `groups` for the batch's `n` staged rows, giving new keys groups in row order. */
  def finishBatch(n: Int, groups: Array[Int]): Unit = ()
  def emit(emit: EmitTo): KeyRows
  /** Bytes held, capacity rather than length. */
  def size: Long
}

private[exec] object RowKeyMap {
  /** The emitted keys, each copied into one row (a [[RowCopy]]). */
  final class ArenaKeys(arena: WordArena, headers: Array[Int], val numKeyFields: Int) extends KeyRows {
    private val key = new RowCopy(numKeyFields)

    def apply(g: Int): InternalRow = {
      val at = headers(g)
      val page = arena.page(at)
      val i = arena.indexOnPage(at)
      key.load(page, Platform.LONG_ARRAY_OFFSET + 8L * (i + 1), (page(i) >>> 32).toInt)
    }

    // Each key is copied out (the RowCopy), so no row handed on points into the arena.
    override def release(): Unit = { arena.release(); LargeArrays.release(headers) }
  }

  /** Keys looked up per touch pass in [[RowKeyMap.finishBatch]]: a chunk's slots are still in cache when
   *  they are read, as a pass over the whole batch's are not (any size from 32 to 256 serves alike). */
  val TouchChunk = 128

  /** Whether a key of these fields can be written without a projection ([[RowKeyMap]]'s `fieldKeys`):
   *  integer-like, boolean and string fields (UTF8_BINARY: a collated string's grouping key is its
   *  collation key, which Spark computes), at most 64 (one word of null bits). */
  def fieldKeyable(types: Seq[DataType]): Boolean =
    types.size <= 64 && types.forall(t => wordWidth(t) != 0 || t == StringType)

  /** The bytes of a field's value within its word: 0 for a type not written as a word (a string's word
   *  holds its offset and size), -1 for a boolean. */
  def wordWidth(t: DataType): Int = t match {
    case BooleanType => -1
    case ByteType => 1
    case ShortType => 2
    case IntegerType | DateType | _: YearMonthIntervalType => 4
    case LongType | TimestampType | TimestampNTZType | _: DayTimeIntervalType => 8
    case _ => 0
  }

  /** A key row's hash over its words (an UnsafeRow's size is a multiple of 8, its padding zeroed): each
   *  word multiplied in, then the bits mixed, so that keys differing in any byte land apart. */
  def hash(key: UnsafeRow): Int = hash(key.getBaseObject, key.getBaseOffset, key.getSizeInBytes)

  def hash(base: AnyRef, offset: Long, bytes: Int): Int = {
    var h = hashStart(bytes)
    var i = 0
    while (i < bytes) { h = hashWord(h, Platform.getLong(base, offset + i)); i += 8 }
    hashEnd(h)
  }

  // The hash in three steps, for a writer that hashes each word as it writes it.
  def hashStart(bytes: Int): Long = bytes * 0x9e3779b97f4a7c15L
  def hashWord(h: Long, word: Long): Long =
    java.lang.Long.rotateLeft(h ^ (word * 0xc2b2ae3d27d4eb4fL), 31) * 0x9e3779b97f4a7c15L
  def hashEnd(hash: Long): Int = {
    var h = hash ^ (hash >>> 29)
    h *= 0xbf58476d1ce4e5b9L
    (h ^ (h >>> 32)).toInt
  }

  /** The last `n` (1 to 7) bytes of a string from `offset` of `base`, as the word that holds them zero
   *  padded in memory. */
  def tailWord(base: AnyRef, offset: Long, n: Int): Long = {
    var w = 0L
    var b = n - 1
    while (b >= 0) { w = (w << 8) | (Platform.getByte(base, offset + b) & 0xffL); b -= 1 }
    if (BytesColumn.LittleEndian) w else java.lang.Long.reverseBytes(w)
  }
}

private[exec] object GroupMap {
  /** Fibonacci hashing: spreads keys that differ in their high bits (and sequential ones) over the slots. */
  @inline def slot(hash: Long, mask: Int): Int = ((hash * 0x9e3779b97f4a7c15L) >>> 32).toInt & mask

  def emitAllOnly(emit: EmitTo, what: String): Unit =
    if (emit != EmitTo.All) throw new UnsupportedOperationException(s"$what emits all its groups at once")
}

/** No grouping keys: one group, which exists even before any row (a global aggregate of no rows). */
private[exec] final class SingleGroup extends GroupMap {
  private val empty = new SpecificInternalRow(Nil)
  def numGroups: Int = 1
  def groupOf(row: InternalRow): Int = 0
  def emit(emit: EmitTo): KeyRows = { GroupMap.emitAllOnly(emit, "a global aggregate"); _ => empty }
  def size: Long = 0L
}

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

/**
 * Keys of two or more integer-like fields (tinyint to bigint, date, timestamp) that fit in two words
 * ([[PackedKeyMap.layout]]: two bigints, an int and a date, a date and a timestamp), packed into them
 * field by field, with no object per key. As [[LongKeyMap]], keys whose fields each fall in a narrow range
 * (a store and a day, two moduli of an id) index an array of groups directly, one access per row: the
 * key's place is its fields' places in their ranges (0 for NULL) in mixed radix. A field's range doubles,
 * on the side of a value outside it, and the groups move to their new places; once the ranges' product
 * passes [[LongKeyMap.DensePerGroup]] times the groups it is likely to hold, every key moves to the hash
 * table for the rest of the groups' life (where probing the hash table was most of a grid's time). There a
 * slot holds the two words and, beside the group, the bits of the key's NULL fields (whose bytes are zero), so
 * that a probe reads one place, where a [[RowKeyMap]] reads a slot and then the key in its arena. As the other tables, a batch's keys are staged first; hashed, their slots are touched and
 * then looked up.
 */
private[exec] final class PackedKeyMap(fields: Seq[(Int, DataType)]) extends GroupMap {
  private val ordinals = fields.map(_._1).toArray
  private val widths = fields.map(f => RowKeyMap.wordWidth(f._2)).toArray
  private val (wordOf, shiftOf) = PackedKeyMap.layout(fields.map(_._2)).get
  private val numFields = ordinals.length
  private var count = 0

  // Dense: field f's values lows(f) to highs(f) (none while highs(f) < lows(f)) at places 1 on, NULL at 0;
  // a key's place is the sum of its fields' places times strides(f), and direct(place) its group + 1 (0:
  // not seen). Null once the keys moved to `slots`.
  private var direct = new Array[Int](1)
  private val lows = new Array[Long](numFields)
  private val highs = Array.fill(numFields)(-1L)
  private val strides = Array.fill(numFields)(1L)
  // The least and greatest value of each field among the groups (none while seenHighs(f) < seenLows(f)).
  private val seenLows = new Array[Long](numFields)
  private val seenHighs = Array.fill(numFields)(-1L)
  private var swept = 0L // the places of the arrays moved from since the last emit
  // Hashed: slot s's key words at 3s and 3s + 1, at 3s + 2 the key's NULL fields' bits << 32 | its group + 1
  // (0: empty).
  private var mask = 0
  private var slots: Array[Long] = null

  // The batch being staged: row i's key words, NULL fields' bits and (hashed) hash.
  private var first = new Array[Long](1024)
  private var second = new Array[Long](1024)
  private var nulls = new Array[Int](1024)
  private var hashes = new Array[Long](1024)
  private var touched = 0L

  def numGroups: Int = count

  def groupOf(row: InternalRow): Int = {
    val nullBits = pack(row)
    groupOfKey(packed0, packed1, nullBits)
  }

  override def stage(row: InternalRow, i: Int, groups: Array[Int]): Unit = {
    room(i + 1)
    nulls(i) = pack(row)
    first(i) = packed0
    second(i) = packed1
  }

  /** The row's key packed into `packed0` and `packed1` (NULL fields' bytes zero); its NULL fields' bits. */
  private def pack(row: InternalRow): Int = {
    var words0, words1 = 0L
    var nullBits = 0
    var f = 0
    while (f < numFields) {
      val o = ordinals(f)
      if (row.isNullAt(o)) nullBits |= 1 << f
      else {
        val bits =
          (widths(f) match {
            case 1 => row.getByte(o) & 0xffL
            case 2 => row.getShort(o) & 0xffffL
            case 4 => row.getInt(o) & 0xffffffffL
            case _ => row.getLong(o)
          }) << shiftOf(f)
        if (wordOf(f) == 0) words0 |= bits else words1 |= bits
      }
      f += 1
    }
    packed0 = words0
    packed1 = words1
    nullBits
  }
  private var packed0, packed1 = 0L

  // A field at a time: each loop calls one vector's getter.
  override def stageBatch(batch: ColumnarBatch, groups: Array[Int]): Unit = {
    val n = batch.numRows
    room(n)
    Arrays.fill(first, 0, n, 0L)
    Arrays.fill(second, 0, n, 0L)
    Arrays.fill(nulls, 0, n, 0)
    var f = 0
    while (f < numFields) {
      val vector = batch.column(ordinals(f))
      val hasNulls = vector.hasNull
      val words = if (wordOf(f) == 0) first else second
      val shift = shiftOf(f)
      val width = widths(f)
      var i = 0
      while (i < n) {
        if (hasNulls && vector.isNullAt(i)) nulls(i) |= 1 << f
        else words(i) |= (width match {
          case 1 => vector.getByte(i) & 0xffL
          case 2 => vector.getShort(i) & 0xffffL
          case 4 => vector.getInt(i) & 0xffffffffL
          case _ => vector.getLong(i)
        }) << shift
        i += 1
      }
      f += 1
    }
  }

  private def room(n: Int): Unit = if (n > first.length) {
    val length = GroupVectors.grow(first.length, n)
    first = Arrays.copyOf(first, length)
    second = Arrays.copyOf(second, length)
    nulls = Arrays.copyOf(nulls, length)
    hashes = Arrays.copyOf(hashes, length)
  }

  override def finishBatch(n: Int, groups: Array[Int]): Unit = {
    var i = 0
    while (i < n && slots == null) { groups(i) = groupOfKey(first(i), second(i), nulls(i)); i += 1 }
    if (i < n) {
      val from = i
      var sum = 0L
      while (i < n) {
        hashes(i) = PackedKeyMap.hash(first(i), second(i), nulls(i))
        sum += slots(3 * GroupMap.slot(hashes(i), mask) + 2)
        i += 1
      }
      touched = sum
      i = from
      while (i < n) { groups(i) = lookUp(first(i), second(i), nulls(i), hashes(i)); i += 1 }
    }
  }

  private def groupOfKey(words0: Long, words1: Long, nullBits: Int): Int =
    if (slots != null) lookUp(words0, words1, nullBits, PackedKeyMap.hash(words0, words1, nullBits))
    else {
      val at = place(words0, words1, nullBits)
      if (at < 0) { widen(words0, words1, nullBits); groupOfKey(words0, words1, nullBits) }
      else if (direct(at) != 0) direct(at) - 1
      else { saw(words0, words1, nullBits); direct(at) = count + 1; count += 1; count - 1 }
    }

  /** A new group's key: its fields' values into the seen ranges. */
  private def saw(words0: Long, words1: Long, nullBits: Int): Unit = {
    var f = 0
    while (f < numFields) {
      if ((nullBits & (1 << f)) == 0) {
        val v = valueOf(words0, words1, f)
        if (seenHighs(f) < seenLows(f)) { seenLows(f) = v; seenHighs(f) = v }
        else if (v < seenLows(f)) seenLows(f) = v
        else if (v > seenHighs(f)) seenHighs(f) = v
      }
      f += 1
    }
  }

  /** Field f's value in the key's words, sign-extended from its width. */
  private def valueOf(words0: Long, words1: Long, f: Int): Long = {
    val bits = (if (wordOf(f) == 0) words0 else words1) >>> shiftOf(f)
    widths(f) match {
      case 1 => bits.toByte
      case 2 => bits.toShort
      case 4 => bits.toInt
      case _ => bits
    }
  }

  /** The key's place in `direct`; -1 when a field's value is outside its range. */
  private def place(words0: Long, words1: Long, nullBits: Int): Int = {
    var at = 0L
    var f = 0
    while (f < numFields) {
      if ((nullBits & (1 << f)) == 0) {
        val v = valueOf(words0, words1, f)
        if (v < lows(f) || v > highs(f)) return -1
        at += (v - lows(f) + 1) * strides(f)
      }
      f += 1
    }
    at.toInt
  }

  /** Ranges that take the key, each field's the least that holds its seen values and the key's, or that
   *  doubled on the key's side (fewer moves for keys that come in order) if that fits too; the groups moved
   *  to their places there, or to the hash table if even the least ranges are too wide for the groups they
   *  are likely to hold (at the seen keys' density, up to 4 times the groups seen). */
  private def widen(words0: Long, words1: Long, nullBits: Int): Unit = {
    val (leastLows, leastHighs) = (seenLows.clone(), seenHighs.clone())
    val (aheadLows, aheadHighs) = (seenLows.clone(), seenHighs.clone())
    var f = 0
    while (f < numFields) {
      if ((nullBits & (1 << f)) == 0) {
        val v = valueOf(words0, words1, f)
        if (seenHighs(f) < seenLows(f)) {
          leastLows(f) = v; leastHighs(f) = v; aheadLows(f) = v; aheadHighs(f) = v
        } else if (v < seenLows(f) || v > seenHighs(f)) {
          val (from, to) = (math.min(seenLows(f), v), math.max(seenHighs(f), v))
          val length = BigInt(to) - BigInt(from) + 1
          if (length > LongKeyMap.MaxDense) { hash(); return }
          leastLows(f) = from; leastHighs(f) = to
          val ahead = length.max(2 * (BigInt(seenHighs(f)) - BigInt(seenLows(f)) + 1))
          // Within the type's values: a range past a bigint's ends would wrap.
          if (v < seenLows(f)) aheadLows(f) = (BigInt(to) - ahead + 1).max(Long.MinValue).toLong
          else aheadHighs(f) = (BigInt(from) + ahead - 1).min(Long.MaxValue).toLong
          aheadLows(f) = math.min(aheadLows(f), from); aheadHighs(f) = math.max(aheadHighs(f), to)
        }
      }
      f += 1
    }
    val least = PackedKeyMap.places(leastLows, leastHighs)
    val expected = math.min(4.0 * count, count * (least.toDouble / PackedKeyMap.places(seenLows, seenHighs)))
    val ahead = PackedKeyMap.places(aheadLows, aheadHighs)
    // Moves that do not double the places (keys that keep landing just outside) would each sweep the array:
    // past twice the places (and a few small arrays' worth), the hash table takes the keys.
    if (least > LongKeyMap.denseLimit(expected.toLong) || swept > 2 * least + PackedKeyMap.SweptFreely) hash()
    else if (ahead <= LongKeyMap.denseLimit(2 * expected.toLong)) move(aheadLows, aheadHighs)
    else move(leastLows, leastHighs)
  }

  /** Every group to its place in the ranges `newLows` to `newHighs`, which hold the seen keys. */
  private def move(newLows: Array[Long], newHighs: Array[Long]): Unit = {
    swept += direct.length
    val groups = direct
    val moved = LargeArrays.zeroInts(PackedKeyMap.places(newLows, newHighs).toInt)
    val newStrides = PackedKeyMap.strides(newLows, newHighs)
    // The first field's stride is 1: its place d > 0 (the value lows(0) + d - 1) moves by `by`.
    val by = lows(0) - newLows(0)
    forEachRun { (start, run, digits) =>
      var rest = 0L
      var f = 1
      while (f < numFields) {
        if (digits(f) != 0) rest += (lows(f) + digits(f) - newLows(f)) * newStrides(f)
        f += 1
      }
      if (groups(start) != 0) moved(rest.toInt) = groups(start)
      var d = 1
      while (d < run) {
        if (groups(start + d) != 0) moved((rest + d + by).toInt) = groups(start + d)
        d += 1
      }
    }
    LargeArrays.release(direct)
    direct = moved
    System.arraycopy(newLows, 0, lows, 0, numFields)
    System.arraycopy(newHighs, 0, highs, 0, numFields)
    System.arraycopy(newStrides, 0, strides, 0, numFields)
  }

  /** `visit` of each run of `direct`'s places that differ only in the first field's (its places from `start`
   *  on, `run` of them), with the other fields' places (0: NULL) in `digits` from 1 on: counted up run by
   *  run as the digits of a number in mixed radix, not divided out of each place. */
  private def forEachRun(visit: PackedKeyMap.Run): Unit = {
    val digits = new Array[Long](numFields)
    val run = PackedKeyMap.placesOf(lows(0), highs(0)).toInt
    var start = 0
    while (start < direct.length) {
      visit(start, run, digits)
      start += run
      var f = 1
      while (f < numFields && { digits(f) += 1; digits(f) == PackedKeyMap.placesOf(lows(f), highs(f)) }) {
        digits(f) = 0
        f += 1
      }
    }
  }

  /** `visit` of each group's key (its group + 1, words and NULL fields' bits, as the hash table holds them),
   *  in the order of their places: the other fields' words once per run, the first field's added per place. */
  private def forEachKey(visit: PackedKeyMap.Key): Unit = {
    val groups = direct
    val (low, width, shift, inFirst) = (lows(0), widths(0), shiftOf(0), wordOf(0) == 0)
    forEachRun { (start, run, digits) =>
      var words0, words1 = 0L
      var nullBits = 0
      var f = 1
      while (f < numFields) {
        if (digits(f) == 0) nullBits |= 1 << f
        else {
          val bits = PackedKeyMap.bitsOf(lows(f) + digits(f) - 1, widths(f)) << shiftOf(f)
          if (wordOf(f) == 0) words0 |= bits else words1 |= bits
        }
        f += 1
      }
      if (groups(start) != 0) visit(groups(start), words0, words1, nullBits | 1)
      var d = 1
      while (d < run) {
        if (groups(start + d) != 0) {
          val bits = PackedKeyMap.bitsOf(low + d - 1, width) << shift
          if (inFirst) visit(groups(start + d), words0 | bits, words1, nullBits)
          else visit(groups(start + d), words0, words1 | bits, nullBits)
        }
        d += 1
      }
    }
  }

  /** The groups so far into the hash table, which takes every key from now on. */
  private def hash(): Unit = {
    mask = Integer.highestOneBit(math.max(1024, 4 * count)) - 1
    slots = LargeArrays.zeroLongs(3 * (mask + 1))
    forEachKey((group, words0, words1, nullBits) => insert(words0, words1, nullBits, group))
    LargeArrays.release(direct)
    direct = null
  }

  private def insert(words0: Long, words1: Long, nullBits: Int, groupPlusOne: Long): Unit = {
    var s = GroupMap.slot(PackedKeyMap.hash(words0, words1, nullBits), mask)
    while (slots(3 * s + 2) != 0) s = (s + 1) & mask
    slots(3 * s) = words0
    slots(3 * s + 1) = words1
    slots(3 * s + 2) = (nullBits.toLong << 32) | groupPlusOne
  }

  private def lookUp(words0: Long, words1: Long, nullBits: Int, hash: Long): Int = {
    var s = GroupMap.slot(hash, mask)
    while (slots(3 * s + 2) != 0) {
      val meta = slots(3 * s + 2)
      if (slots(3 * s) == words0 && slots(3 * s + 1) == words1 && (meta >>> 32).toInt == nullBits)
        return (meta & 0xffffffffL).toInt - 1
      s = (s + 1) & mask
    }
    val g = count
    slots(3 * s) = words0
    slots(3 * s + 1) = words1
    slots(3 * s + 2) = (nullBits.toLong << 32) | (g + 1L)
    count += 1
    if (count * 2 > mask) rehash()
    g
  }

  private def rehash(): Unit = {
    val old = slots
    mask = mask * 2 + 1
    slots = LargeArrays.zeroLongs(3 * (mask + 1))
    var i = 0
    while (i < old.length) {
      if (old(i + 2) != 0) insert(old(i), old(i + 1), (old(i + 2) >>> 32).toInt, old(i + 2) & 0xffffffffL)
      i += 3
    }
    LargeArrays.release(old)
  }

  def emit(emit: EmitTo): KeyRows = {
    GroupMap.emitAllOnly(emit, "the hash table")
    // Each group's key read back from its slot (or its place) into three words of its own (arrays in group
    // order would cost stores per new group), the third the bits of its NULL fields.
    val keys = LargeArrays.lend(LargeArrays.longs(3 * count))
    var i = 0
    if (slots != null)
      while (i < slots.length) {
        val meta = slots(i + 2)
        if (meta != 0) {
          val g = (meta & 0xffffffffL).toInt - 1
          keys(3 * g) = slots(i)
          keys(3 * g + 1) = slots(i + 1)
          keys(3 * g + 2) = meta >>> 32
        }
        i += 3
      }
    else
      forEachKey { (group, words0, words1, nullBits) =>
        keys(3 * group - 3) = words0
        keys(3 * group - 2) = words1
        keys(3 * group - 1) = nullBits
      }
    count = 0
    LargeArrays.release(slots)
    LargeArrays.release(direct)
    slots = null
    direct = new Array[Int](1)
    Arrays.fill(lows, 0L)
    Arrays.fill(highs, -1L)
    Arrays.fill(strides, 1L)
    Arrays.fill(seenLows, 0L)
    Arrays.fill(seenHighs, -1L)
    swept = 0L
    new PackedKeyMap.Keys(keys, fields.map(_._2), wordOf, shiftOf)
  }

  def size: Long = (if (slots != null) 24L * (mask + 1) else 4L * direct.length) + 32L * first.length

  /** Whether the keys are hashed (for tests). */
  private[exec] def hashed: Boolean = slots != null
}

private[exec] object PackedKeyMap {
  /** A key's hash for [[GroupMap.slot]], whose multiplication carries low bits up but not high bits down:
   *  the first word spread over all 64 bits (a small integer in it would touch only the low ones), the
   *  second and the NULL bits added, then the high half folded into the low. */
  def hash(first: Long, second: Long, nullBits: Int): Long = {
    val h = java.lang.Long.rotateLeft(first * 0xc2b2ae3d27d4eb4fL, 31) ^ second ^ nullBits
    h ^ (h >>> 32)
  }

  /** What a [[PackedKeyMap]] does with a run of places, or with a group's key ([[PackedKeyMap.forEachKey]]): a
   *  method of ints, which a Function3 or Function4 would box each time. */
  trait Run { def apply(start: Int, run: Int, digits: Array[Long]): Unit }
  trait Key { def apply(groupPlusOne: Int, words0: Long, words1: Long, nullBits: Int): Unit }

  /** Places a dense array's moves may sweep beyond twice its places: the first moves, of small arrays. */
  val SweptFreely: Long = 1L << 16

  /** The places of keys whose fields range over `lows` to `highs` (NULL among them): the product of their
   *  ranges' places, more than [[LongKeyMap.MaxDense]] if it passes that. */
  def places(lows: Array[Long], highs: Array[Long]): Long = {
    var product = 1L
    var f = 0
    while (f < lows.length && product <= LongKeyMap.MaxDense) { product *= placesOf(lows(f), highs(f)); f += 1 }
    product
  }

  /** A field's places: NULL's and one per value from `low` to `high` (none if `high` is below `low`). */
  def placesOf(low: Long, high: Long): Long = if (high < low) 1L else high - low + 2

  /** Each field's stride among the places: the product of the places of the fields before it. */
  def strides(lows: Array[Long], highs: Array[Long]): Array[Long] =
    lows.indices.scanLeft(1L)((stride, f) => stride * placesOf(lows(f), highs(f))).take(lows.length).toArray

  /** A field's value as its bits in the packed words: `width` bytes of it. */
  def bitsOf(value: Long, width: Int): Long = width match {
    case 1 => value & 0xffL
    case 2 => value & 0xffffL
    case 4 => value & 0xffffffffL
    case _ => value
  }

  /** Where each field of a key of these types goes, if the key packs into two words: its word (0 or 1)
   *  and its bit offset there, the fields in order, none across two words. None unless there are two or
   *  more fields, each integer-like ([[LongKeyMap.supports]]). */
  def layout(types: Seq[DataType]): Option[(Array[Int], Array[Int])] =
    if (types.size < 2 || !types.forall(LongKeyMap.supports)) None
    else {
      val words = new Array[Int](types.size)
      val shifts = new Array[Int](types.size)
      var word = 0
      var used = 0
      for ((t, f) <- types.zipWithIndex) {
        val bits = 8 * RowKeyMap.wordWidth(t)
        if (used + bits > 64) { word += 1; used = 0 }
        words(f) = word
        shifts(f) = used
        used += bits
      }
      if (word > 1) None else Some((words, shifts))
    }

  /**
   * The emitted keys as [[PackedKeyMap]] kept them: group g's fields packed into `keys(3g)` and `keys(3g + 1)`
   * (field f in the word `wordOf(f)` of the two, from bit `shiftOf(f)`), but for the fields whose bits
   * `keys(3g + 2)` has set, which are NULL. [[ColumnRows]] and [[PacketWriter]] read them as they are.
   */
  final class Keys(keys: Array[Long], types: Seq[DataType], wordOf: Array[Int], shiftOf: Array[Int]) extends KeyRows {
    private val row = new SpecificInternalRow(types)
    private val widths = types.map(RowKeyMap.wordWidth).toArray
    val numFields: Int = types.size

    /** Group g's NULL fields, a bit each. */
    def nullsOf(g: Int): Int = keys(3 * g + 2).toInt

    /** Field f of group g's key (not NULL) as an UnsafeRow's word holds it: its bytes in the low ones. */
    def word(g: Int, f: Int): Long = {
      val bits = keys(3 * g + wordOf(f)) >>> shiftOf(f)
      if (widths(f) == 8) bits else bits & ((1L << (8 * widths(f))) - 1)
    }

    /** Field f of group g's key (not NULL), its bytes sign-extended; whether Murmur3Hash reads it as a long. */
    def value(g: Int, f: Int): Long = {
      val unused = 64 - 8 * widths(f)
      word(g, f) << unused >> unused
    }
    def isLong(f: Int): Boolean = widths(f) == 8

    def apply(g: Int): InternalRow = {
      var f = 0
      while (f < numFields) {
        if ((nullsOf(g) & (1 << f)) != 0) row.setNullAt(f)
        else widths(f) match {
          case 1 => row.setByte(f, value(g, f).toByte)
          case 2 => row.setShort(f, value(g, f).toShort)
          case 4 => row.setInt(f, value(g, f).toInt)
          case _ => row.setLong(f, value(g, f))
        }
        f += 1
      }
      row
    }
  }
}

/**
 * Any other key (strings, several columns, decimals...): the key projected to an UnsafeRow, hashed, and
 * looked up by open addressing. Every group's key goes end to end into one [[WordArena]] (UnsafeRows are
 * word-aligned): a header word (the key's bytes, the group) and then the key's bytes, so a key costs no
 * object. A slot holds the key's hash and where its header is, so a probe reads the slot and then one
 * place in the arena, which holds all it compares. As [[LongKeyMap]], a batch's keys are staged first
 * (copied end to end into a batch arena with their hashes) and looked up together, a chunk at a time: a
 * first pass touches every key's slot so that the cache misses of a large table overlap. Emitted keys are
 * read through one UnsafeRow pointed at each in turn (valid until the next key is asked for). Keys are
 * hashed a word at a time ([[RowKeyMap.hash]]), not by UnsafeRow's hashCode, which takes four bytes per
 * step. A key of integer-like, boolean and string fields (`fieldKeys`: their ordinals and types;
 * [[RowKeyMap.fieldKeyable]]) is written as the projection would write it, straight from the row, without a
 * projection per row: the usual keys (a string, two integers, a date and a string) and the key of Spark's
 * DISTINCT rewrite (the grouping keys and the distinct column).
 */
private[exec] final class RowKeyMap(project: UnsafeProjection, numKeyFields: Int,
    fieldKeys: Seq[(Int, DataType)] = Nil)
  extends GroupMap {
  // Slot: the key's hash in the high 32 bits, its header's word + 1 in the low (0: empty).
  private var mask = 1023
  private var slots = new Array[Long](mask + 1)
  private var arena = new WordArena
  private var headers = new Array[Int](16) // group -> its header's word, for emission
  private var count = 0

  // The batch being staged: row i's key bytes from word stagedAt(i) of `staged`, its hash.
  private var staged = new Array[Long](1024)
  private var stagedUsed = 0
  private var stagedAt = new Array[Int](1024)
  private var stagedHash = new Array[Int](1024)
  private var touched = 0L

  def numGroups: Int = count

  def groupOf(row: InternalRow): Int = {
    val key = project(row)
    groupOfKey(key.getBaseObject, key.getBaseOffset, key.getSizeInBytes, RowKeyMap.hash(key))
  }

  override def stage(row: InternalRow, i: Int, groups: Array[Int]): Unit =
    if (fieldKeyed) { holdFields(row, i, null); stageFields(i) }
    else {
      val key = project(row)
      val bytes = key.getSizeInBytes
      val at = staging(i, bytes)
      Platform.copyMemory(key.getBaseObject, key.getBaseOffset, staged, Platform.LONG_ARRAY_OFFSET + 8L * (at + 1),
        bytes)
      stagedHash(i) = RowKeyMap.hash(key)
    }

  // A scan's batch: its string key fields read where the scan put their bytes (VectorBytes).
  override def stageBatch(batch: ColumnarBatch, groups: Array[Int]): Unit =
    if (!fieldKeyed) super.stageBatch(batch, groups)
    else {
      val inPlace = fieldOrdinals.map(o =>
        VectorColumn.of(batch.column(o), batch.numRows) match {
          case b: BytesColumn => b
          case _ => null
        })
      if (oneString && inPlace(0) != null) stageStrings(inPlace(0), batch.numRows)
      else {
        var i = 0
        while (i < batch.numRows) { holdFields(batch.getRow(i), i, inPlace); stageFields(i); i += 1 }
      }
    }

  /** A batch's one string key, read where the scan put its bytes: no row per key, no loop over fields. */
  private def stageStrings(keys: BytesColumn, n: Int): Unit = {
    val bytes = keys.bytes
    var i = 0
    while (i < n) {
      if (keys.isNullAt(i)) stageOneString(i, null, 0L, -1)
      else stageOneString(i, bytes, Platform.BYTE_ARRAY_OFFSET + keys.start(i), keys.length(i))
      i += 1
    }
  }

  /** The key fields of `row` (row `i` of its batch), where `inPlace(f)`, when not null, holds field f's
   *  string bytes. An UnsafeRow's (the shuffle's) strings are read where they lie too: no UTF8String per row. */
  private def holdFields(row: InternalRow, i: Int, inPlace: Array[BytesColumn]): Unit = {
    val unsafe = row match {
      case u: UnsafeRow => u
      case _ => null
    }
    var f = 0
    while (f < fieldOrdinals.length) {
      val o = fieldOrdinals(f)
      if (row.isNullAt(o)) nulls(f) = true
      else {
        nulls(f) = false
        widths(f) match {
          case 0 if inPlace != null && inPlace(f) != null =>
            val b = inPlace(f)
            stringBases(f) = b.bytes
            stringOffsets(f) = Platform.BYTE_ARRAY_OFFSET + b.start(i)
            stringSizes(f) = b.length(i)
          case 0 if unsafe != null =>
            val offsetAndSize = unsafe.getLong(o)
            stringBases(f) = unsafe.getBaseObject
            stringOffsets(f) = unsafe.getBaseOffset + (offsetAndSize >>> 32)
            stringSizes(f) = offsetAndSize.toInt
          case 0 => holdString(f, row.getUTF8String(o))
          case 8 => words(f) = row.getLong(o)
          case 4 => words(f) = row.getInt(o)
          case 2 => words(f) = row.getShort(o)
          case 1 => words(f) = row.getByte(o)
          case _ => words(f) = if (row.getBoolean(o)) 1L else 0L
        }
      }
      f += 1
    }
  }

  // The key fields written without a projection: their ordinals and widths (RowKeyMap.wordWidth; 0: a
  // string), and the values of the row being staged.
  private val fieldOrdinals = fieldKeys.map(_._1).toArray
  // Tested per row, where `fieldOrdinals.nonEmpty` would go through Predef.intArrayOps each time.
  private val fieldKeyed = fieldOrdinals.length > 0
  private val widths = fieldKeys.map(k => RowKeyMap.wordWidth(k._2)).toArray
  private val nulls = new Array[Boolean](fieldOrdinals.length)
  private val words = new Array[Long](fieldOrdinals.length)
  private val stringBases = new Array[AnyRef](fieldOrdinals.length)
  private val stringOffsets = new Array[Long](fieldOrdinals.length)
  private val stringSizes = new Array[Int](fieldOrdinals.length)

  private def holdString(f: Int, s: UTF8String): Unit = {
    stringBases(f) = s.getBaseObject
    stringOffsets(f) = s.getBaseOffset
    stringSizes(f) = s.numBytes
  }

  /** Row `i`'s key from the staged fields' values, as its UnsafeRow: the null bits, a word per field (a
   *  value in its zeroed word as the row's writer puts it, a string's offset and size, zero for a null),
   *  then each string's bytes padded with zeros to a whole word. */
  private def stageFields(i: Int): Unit =
    if (oneString) stageOneString(i, stringBases(0), stringOffsets(0), if (nulls(0)) -1 else stringSizes(0))
    else stageAnyFields(i)

  private def stageAnyFields(i: Int): Unit = {
    val n = fieldOrdinals.length
    var bytes = 8 * (n + 1)
    var f = 0
    while (f < n) { if (widths(f) == 0 && !nulls(f)) bytes += (stringSizes(f) + 7) & ~7; f += 1 }
    val at = staging(i, bytes)
    val start = Platform.LONG_ARRAY_OFFSET + 8L * (at + 1)
    var nullBits = 0L
    var tail = 8 * (n + 1)
    f = 0
    while (f < n) {
      val word = at + 2 + f
      staged(word) = 0L
      if (nulls(f)) nullBits |= 1L << f
      else if (widths(f) != 0) {
        val address = start + 8L * (f + 1)
        widths(f) match {
          case 8 => staged(word) = words(f)
          case 4 => Platform.putInt(staged, address, words(f).toInt)
          case 2 => Platform.putShort(staged, address, words(f).toShort)
          case 1 => Platform.putByte(staged, address, words(f).toByte)
          case _ => Platform.putBoolean(staged, address, words(f) != 0L)
        }
      } else {
        val length = stringSizes(f)
        staged(word) = (tail.toLong << 32) | length
        stageBytes(stringBases(f), stringOffsets(f), length, at + 1 + tail / 8)
        tail += (length + 7) & ~7
      }
      f += 1
    }
    staged(at + 1) = nullBits
    stagedHash(i) = RowKeyMap.hash(staged, start, bytes)
  }

  // The commonest key after an integer one, written without the loops over fields above: two words (the
  // null bits; the string's offset and size) and its bytes, each word hashed as it is written.
  private val oneString = widths.length == 1 && widths(0) == 0

  /** Row `i`'s key of one string of `length` bytes at `offset` of `base` (`length` -1: NULL), as
   *  [[stageAnyFields]] would write it. */
  private def stageOneString(i: Int, base: AnyRef, offset: Long, length: Int): Unit = {
    val whole = if (length < 0) 0 else length >>> 3
    val rest = if (length < 0) 0 else length & 7
    val bytes = 16 + 8 * whole + (if (rest != 0) 8 else 0)
    val at = staging(i, bytes)
    val nullBits = if (length < 0) 1L else 0L
    val offsetAndSize = if (length < 0) 0L else (16L << 32) | length
    staged(at + 1) = nullBits
    staged(at + 2) = offsetAndSize
    var h = RowKeyMap.hashWord(RowKeyMap.hashWord(RowKeyMap.hashStart(bytes), nullBits), offsetAndSize)
    var w = 0
    while (w < whole) {
      val word = Platform.getLong(base, offset + 8L * w)
      staged(at + 3 + w) = word
      h = RowKeyMap.hashWord(h, word)
      w += 1
    }
    if (rest != 0) {
      val word = RowKeyMap.tailWord(base, offset + 8L * whole, rest)
      staged(at + 3 + whole) = word
      h = RowKeyMap.hashWord(h, word)
    }
    stagedHash(i) = RowKeyMap.hashEnd(h)
  }

  /** `length` bytes at `offset` of `base` into the staged words from word `first`, the last one's padding
   *  zeroed: whole words, then the rest byte by byte, not by Platform.copyMemory, whose checks and call cost
   *  more than the copy of a short key. */
  private def stageBytes(base: AnyRef, offset: Long, length: Int, first: Int): Unit = {
    val whole = length >>> 3
    RowCopy.copyWords(base, offset, whole, staged, first)
    if ((length & 7) != 0) {
      staged(first + whole) = 0L
      val to = Platform.LONG_ARRAY_OFFSET + 8L * (first + whole)
      var b = 0
      while (b < (length & 7)) {
        Platform.putByte(staged, to + b, Platform.getByte(base, offset + 8L * whole + b)); b += 1
      }
    }
  }

  /** Room for row `i`'s key of `bytes` in the batch's arena, after a header word holding `bytes`: the
   *  header's word. */
  private def staging(i: Int, bytes: Int): Int = {
    if (i == 0) stagedUsed = 0
    if (i >= stagedAt.length) {
      val n = GroupVectors.grow(stagedAt.length, i + 1)
      stagedAt = Arrays.copyOf(stagedAt, n)
      stagedHash = Arrays.copyOf(stagedHash, n)
    }
    val words = bytes / 8 + 1
    if (stagedUsed + words > staged.length)
      staged = Arrays.copyOf(staged, GroupVectors.grow(staged.length, stagedUsed + words))
    val at = stagedUsed
    staged(at) = bytes
    stagedAt(i) = at
    stagedUsed += words
    at
  }

  /** Row `i`'s key when it is one string field (null: NULL), given by generated code. */
  override def stageString(i: Int, key: UTF8String, groups: Array[Int]): Unit =
    if (key == null) stageOneString(i, null, 0L, -1)
    else stageOneString(i, key.getBaseObject, key.getBaseOffset, key.numBytes)

  // A chunk's slots are touched and then looked up, chunk after chunk: the lines the first pass brought in
  // are still in the nearest caches when the second reads them, which a whole batch's (8192 lines) are not.
  override def finishBatch(n: Int, groups: Array[Int]): Unit = {
    var from = 0
    while (from < n) {
      val until = math.min(n, from + RowKeyMap.TouchChunk)
      var sum = 0L
      var i = from
      while (i < until) { sum += slots(GroupMap.slot(stagedHash(i), mask)); i += 1 }
      touched = sum
      i = from
      while (i < until) {
        val at = stagedAt(i)
        groups(i) = groupOfKey(staged, Platform.LONG_ARRAY_OFFSET + 8L * (at + 1), staged(at).toInt, stagedHash(i))
        i += 1
      }
      from = until
    }
  }

  private def groupOfKey(base: AnyRef, offset: Long, bytes: Int, h: Int): Int = {
    val tag = h.toLong << 32
    var s = GroupMap.slot(h, mask)
    var slot = slots(s)
    while (slot != 0) {
      if ((slot & 0xffffffff00000000L) == tag) {
        val at = (slot & 0xffffffffL).toInt - 1
        val page = arena.page(at)
        val i = arena.indexOnPage(at)
        val header = page(i)
        if ((header >>> 32).toInt == bytes &&
          ByteArrayMethods.arrayEquals(base, offset, page, Platform.LONG_ARRAY_OFFSET + 8L * (i + 1), bytes))
          return header.toInt
      }
      s = (s + 1) & mask
      slot = slots(s)
    }
    insert(s, tag, base, offset, bytes)
  }

  private def insert(s: Int, tag: Long, base: AnyRef, offset: Long, bytes: Int): Int = {
    val g = count
    if (g == headers.length) headers = LargeArrays.copyOf(headers, GroupVectors.grow(headers.length, g + 1))
    val at = arena.allocate(bytes / 8 + 1)
    val page = arena.page(at)
    val i = arena.indexOnPage(at)
    page(i) = (bytes.toLong << 32) | g
    RowCopy.copyWords(base, offset, bytes / 8, page, i + 1) // a key is whole words, as an UnsafeRow is
    headers(g) = at
    slots(s) = tag | (at + 1L)
    count += 1
    if (count * 2 > mask) rehash()
    g
  }

  private def rehash(): Unit = {
    val old = slots
    mask = mask * 2 + 1
    slots = LargeArrays.zeroLongs(mask + 1)
    var i = 0
    while (i < old.length) {
      if (old(i) != 0) {
        var s = GroupMap.slot((old(i) >> 32).toInt, mask)
        while (slots(s) != 0) s = (s + 1) & mask
        slots(s) = old(i)
      }
      i += 1
    }
    LargeArrays.release(old)
  }

  def emit(emit: EmitTo): KeyRows = {
    GroupMap.emitAllOnly(emit, "the hash table")
    val keys = new RowKeyMap.ArenaKeys(arena, headers, numKeyFields)
    arena = new WordArena
    headers = new Array[Int](16)
    count = 0
    mask = 1023
    LargeArrays.release(slots)
    slots = new Array[Long](mask + 1)
    keys
  }

  def size: Long = 8L * (mask + 1) + 4L * headers.length + arena.size + 8L * staged.length +
    8L * stagedAt.length
}

/**
 * Words appended in runs, each run found by the index of its first word, kept in pages that double in size
 * (page p holds `First << p` words). Growing copies nothing and leaves nothing for the collector, where one
 * array doubled would copy every word it holds each time. A run never straddles two pages: one that does
 * not fit in the rest of a page starts the next page that holds it, so its words are read from one array.
 */
private[exec] final class WordArena {
  import WordArena._
  private val pages = new Array[Array[Long]](MaxPages)
  private var used = 0 // the index of the next word
  private var held = 0L // words of the pages made

  /** The index of a new run of `words` words. */
  def allocate(words: Int): Int = {
    var p = pageOf(used)
    var at = used.toLong
    while (at + words > start(p + 1)) { p += 1; at = start(p) }
    if (at + words > Limit) throw new IllegalStateException("group keys past 16 GB")
    if (pages(p) == null) { pages(p) = LargeArrays.longs(First << p); held += First.toLong << p }
    used = (at + words).toInt
    at.toInt
  }

  /** The page holding the word at `index`, and the word's place in it. */
  def page(index: Int): Array[Long] = pages(pageOf(index))
  def indexOnPage(index: Int): Int = (index - start(pageOf(index))).toInt

  /** Bytes of the pages made. */
  def size: Long = 8L * held

  /** Gives the pages to [[LargeArrays]]; the arena is empty and unusable after. */
  def release(): Unit = for (p <- pages.indices) { LargeArrays.release(pages(p)); pages(p) = null }
}

private[exec] object WordArena {
  private val FirstBits = 10
  private val First = 1 << FirstBits
  /** Page p starts at word First * (2^p - 1): the index's page is the top bit of index / First + 1. */
  private def pageOf(index: Int): Int = 31 - Integer.numberOfLeadingZeros((index >>> FirstBits) + 1)
  private def start(p: Int): Long = First.toLong * ((1L << p) - 1)
  // 21 pages end just below 2^31 words, the indices an Int holds.
  private val MaxPages = 21
  private val Limit = start(MaxPages)
}

/**
 * Keys that arrive sorted, each key's rows together: a new group whenever the key changes, no hash
 * table. Emitting the first groups leaves the rest, so memory stays bounded by the groups not yet
 * emitted (the merge of spilled runs, and input already sorted by the group keys).
 */
private[exec] final class SortedKeyGroups(project: UnsafeProjection) extends GroupMap {
  private var keys = new Array[UnsafeRow](16)
  private var count = 0
  private var keyBytes = 0L

  def numGroups: Int = count

  def groupOf(row: InternalRow): Int = {
    val key = project(row)
    if (count > 0 && keys(count - 1) == key) count - 1
    else {
      if (count == keys.length) keys = Arrays.copyOf(keys, GroupVectors.grow(keys.length, count + 1))
      keys(count) = key.copy()
      keyBytes += key.getSizeInBytes + 32L
      count += 1
      count - 1
    }
  }

  def emit(emit: EmitTo): KeyRows = {
    val n = emit.count(count)
    val emitted = Arrays.copyOf(keys, n)
    System.arraycopy(keys, n, keys, 0, count - n)
    Arrays.fill(keys.asInstanceOf[Array[AnyRef]], count - n, count, null)
    count -= n
    keyBytes = keys.iterator.take(count).map(_.getSizeInBytes + 32L).sum
    emitted(_)
  }

  def size: Long = 8L * keys.length + keyBytes
}

/** Every row a group of its own: the keys of rows passed on as states when partial aggregation is skipped. */
private[exec] final class RowPerGroup(project: UnsafeProjection) extends GroupMap {
  private var keys = new Array[UnsafeRow](16)
  private var count = 0

  def numGroups: Int = count

  def groupOf(row: InternalRow): Int = {
    if (count == keys.length) keys = Arrays.copyOf(keys, GroupVectors.grow(keys.length, count + 1))
    keys(count) = project(row).copy()
    count += 1
    count - 1
  }

  def emit(emit: EmitTo): KeyRows = {
    GroupMap.emitAllOnly(emit, "a batch of rows")
    val emitted = keys
    keys = new Array[UnsafeRow](16)
    count = 0
    emitted(_)
  }

  def size: Long = 8L * keys.length
}
