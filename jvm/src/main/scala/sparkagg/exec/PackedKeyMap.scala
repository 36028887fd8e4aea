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
