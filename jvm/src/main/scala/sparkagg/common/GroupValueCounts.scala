package sparkagg.common

import org.apache.spark.sql.types._
import org.apache.spark.unsafe.Platform
import org.apache.spark.unsafe.array.ByteArrayMethods
import org.apache.spark.unsafe.hash.Murmur3_x86_32
import sparkagg.api.EmitTo

/**
 * A count per distinct value of every group, with no object per group or per value: mode's grouped state.
 * Each distinct (group, value) pair is numbered as first seen and kept in arrays by number (group, count,
 * value; a string's bytes lie in one arena, its value being their offset and length there), so a group's
 * pairs list its values in the order first seen. Each group finds its pairs through an open-addressing
 * table of its own, a segment of one shared array of slots: a merged state (one group's whole list) then
 * probes one small region, not the whole table. A slot holds its pair's hash (high half) and number + 1
 * (low half), so a probe reads a pair only when the hashes agree. A group's segment doubles past three
 * quarters full; the segments it leaves behind are at most as large as the live ones and go when the groups
 * are emitted. A float or double is kept by its canonical bits (`floatToIntBits`): -0.0 and 0.0 are two
 * values and every NaN one. `kind` is one of the companion's kinds ([[GroupValueCounts.kindOf]]).
 */
private[sparkagg] final class GroupValueCounts(val kind: Int) {
  import GroupValueCounts._

  private var segments = new Array[Long](InitialSlots)
  private var segmentsUsed = 0
  private val segmentStart = new IntVector(-1) // per group: its segment's first slot, -1 before its first pair
  private val segmentBits = new ByteVector // per group: log2 of its segment's slots
  private val segmentPairs = new IntVector // per group: its pairs
  /** Per pair: its group, its count, and its value's bits or a string's offset << 32 | length. */
  private var _pairGroup = new Array[Int](InitialPairs)
  private var _pairCount = new Array[Long](InitialPairs)
  private var _pairValue = new Array[Long](InitialPairs)
  private var _pairs = 0
  /** The strings' bytes, pair p's at `start(p)` for `length(p)`. */
  private var _arena = new Array[Byte](if (kind == Strings) InitialArena else 0)
  private var used = 0
  private var _groups = 0

  // Read by mode's emit; only this class writes them (the arrays are replaced as they grow).
  def pairGroup: Array[Int] = _pairGroup
  def pairCount: Array[Long] = _pairCount
  def pairValue: Array[Long] = _pairValue
  def pairs: Int = _pairs
  def arena: Array[Byte] = _arena
  def groups: Int = _groups

  def start(p: Int): Int = (_pairValue(p) >>> 32).toInt
  def length(p: Int): Int = _pairValue(p).toInt

  def resize(totalGroups: Int): Unit = {
    _groups = totalGroups
    segmentStart.resize(totalGroups)
    segmentBits.resize(totalGroups)
    segmentPairs.resize(totalGroups)
  }

  /** Group g's segment (made at its first pair). */
  private def segmentOf(g: Int): Int = {
    val at = segmentStart.array(g)
    if (at >= 0) at else newSegment(g, MinSegmentBits)
  }

  private def newSegment(g: Int, bits: Int): Int = {
    val size = 1 << bits
    if (segmentsUsed + size > segments.length)
      segments = LargeArrays.copyOf(segments, math.max(2 * segments.length, segmentsUsed + size))
    segmentStart.array(g) = segmentsUsed
    segmentBits.array(g) = bits.toByte
    segmentsUsed += size
    segmentsUsed - size
  }

  /** n more of value `bits` in group g; h is the value's hash ([[GroupValueCounts.hashBits]]). */
  def addBits(g: Int, bits: Long, n: Long, h: Int): Unit = {
    val at = segmentOf(g)
    val mask = (1 << segmentBits.array(g)) - 1
    var s = h & mask
    var slot = segments(at + s)
    while (slot != 0) {
      if ((slot >>> 32).toInt == h && _pairValue(slot.toInt - 1) == bits) { _pairCount(slot.toInt - 1) += n; return }
      s = (s + 1) & mask
      slot = segments(at + s)
    }
    val p = newPair(g, n) // before pairValue is read: it may grow the arrays
    _pairValue(p) = bits
    place(g, at + s, h)
  }

  /** n more of the string of `length` bytes at `offset` of `base` in group g; h is the string's hash
   *  ([[GroupValueCounts.hashBytes]]). */
  def addBytes(g: Int, base: AnyRef, offset: Long, length: Int, n: Long, h: Int): Unit = {
    val at = segmentOf(g)
    val mask = (1 << segmentBits.array(g)) - 1
    var s = h & mask
    var slot = segments(at + s)
    while (slot != 0) {
      if ((slot >>> 32).toInt == h) {
        val p = slot.toInt - 1
        if (this.length(p) == length &&
          ByteArrayMethods.arrayEquals(_arena, Platform.BYTE_ARRAY_OFFSET + start(p), base, offset, length)) {
          _pairCount(p) += n
          return
        }
      }
      s = (s + 1) & mask
      slot = segments(at + s)
    }
    if (used + length > _arena.length) _arena = LargeArrays.copyOf(_arena, math.max(2 * _arena.length, used + length))
    BytesColumn.copyInto(base, offset, length, _arena, used)
    val p = newPair(g, n)
    _pairValue(p) = (used.toLong << 32) | length
    used += length
    place(g, at + s, h)
  }

  /** Group g's slot for hash h, or nothing before its first pair: reading it brings the slot into the
   *  caches before the value is added. */
  def touch(g: Int, h: Int): Long = {
    val at = segmentStart.array(g)
    if (at < 0) 0L else segments(at + (h & ((1 << segmentBits.array(g)) - 1)))
  }

  private def newPair(g: Int, n: Long): Int = {
    if (_pairs == _pairGroup.length) {
      _pairGroup = LargeArrays.copyOf(_pairGroup, 2 * _pairs)
      _pairCount = LargeArrays.copyOf(_pairCount, 2 * _pairs)
      _pairValue = LargeArrays.copyOf(_pairValue, 2 * _pairs)
    }
    _pairGroup(_pairs) = g
    _pairCount(_pairs) = n
    _pairs += 1
    _pairs - 1
  }

  /** Slot `at` (empty) of group g's segment takes the newest pair, of hash h; the segment doubles past
   *  three quarters full. */
  private def place(g: Int, at: Int, h: Int): Unit = {
    segments(at) = (h.toLong << 32) | _pairs
    val count = segmentPairs.array(g) + 1
    segmentPairs.array(g) = count
    val bits = segmentBits.array(g)
    if (4 * count > 3 * (1 << bits)) {
      val from = segmentStart.array(g)
      val to = newSegment(g, bits + 1)
      var s = from
      while (s < from + (1 << bits)) { if (segments(s) != 0) insert(to, bits + 1, segments(s)); s += 1 }
    }
  }

  /** A slot's content into the first empty slot from its hash's, in the segment of 2^bits slots at `at`. */
  private def insert(at: Int, bits: Int, slot: Long): Unit = segments(emptySlot(at, bits, (slot >>> 32).toInt)) = slot

  /** The first empty slot from hash h's in the segment of 2^bits slots at `at`. */
  private def emptySlot(at: Int, bits: Int, h: Int): Int = {
    val mask = (1 << bits) - 1
    var s = h & mask
    while (segments(at + s) != 0) s = (s + 1) & mask
    at + s
  }

  private def hashOf(p: Int): Int =
    if (kind == Strings) hashBytes(_arena, Platform.BYTE_ARRAY_OFFSET + start(p), length(p))
    else hashBits(_pairValue(p))

  /** Forgets the groups below n (emitted): the others' pairs move down, renumbered, their strings to a new
   *  arena, and their segments are made again. */
  def drop(n: Int): Unit = {
    val fresh =
      new Array[Byte](if (kind != Strings) 0 else if (n == _groups) InitialArena else math.max(InitialArena, used))
    var kept = 0
    var at = 0
    var p = 0
    while (p < _pairs) {
      if (_pairGroup(p) >= n) {
        _pairGroup(kept) = _pairGroup(p) - n
        _pairCount(kept) = _pairCount(p)
        if (kind != Strings) _pairValue(kept) = _pairValue(p)
        else {
          System.arraycopy(_arena, start(p), fresh, at, length(p))
          _pairValue(kept) = (at.toLong << 32) | length(p)
          at += length(p)
        }
        kept += 1
      }
      p += 1
    }
    _pairs = kept
    _groups -= n
    if (kept == 0) {
      Seq(_pairGroup, _pairCount, _pairValue).foreach(LargeArrays.release)
      _pairGroup = new Array[Int](InitialPairs)
      _pairCount = new Array[Long](InitialPairs)
      _pairValue = new Array[Long](InitialPairs)
    }
    LargeArrays.release(_arena)
    _arena = fresh
    used = at
    LargeArrays.release(segments)
    segments = new Array[Long](InitialSlots)
    segmentsUsed = 0
    Seq(segmentStart, segmentBits, segmentPairs).foreach(_.drop(EmitTo.All))
    resize(_groups)
    // The kept pairs, in order, into segments again.
    _pairs = 0
    while (_pairs < kept) {
      val g = _pairGroup(_pairs)
      val h = hashOf(_pairs)
      val at = emptySlot(segmentOf(g), segmentBits.array(g), h)
      _pairs += 1
      place(g, at, h)
    }
  }

  def size: Long = 8L * segments.length + segmentStart.size + segmentBits.size + segmentPairs.size +
    20L * _pairGroup.length + _arena.length
}

private[sparkagg] object GroupValueCounts {
  private val InitialSlots = 1 << 10
  private val MinSegmentBits = 2
  private val StringSeed = 42
  private val InitialPairs = 1 << 9
  private val InitialArena = 1 << 12

  // How values are read and kept: an Int per type, so that the per-row match is a switch.
  final val Bytes = 0
  final val Shorts = 1
  final val Ints = 2
  final val Longs = 3
  final val Floats = 4
  final val Doubles = 5
  final val Strings = 6

  def kindOf(t: DataType): Int = t match {
    case ByteType => Bytes
    case ShortType => Shorts
    case IntegerType | DateType => Ints
    case FloatType => Floats
    case DoubleType => Doubles
    case _: StringType => Strings
    case _ => Longs // bigint, timestamp, timestamp_ntz
  }

  /** A value's hash: its bits mixed (MurmurHash3's 64-bit finaliser). */
  def hashBits(bits: Long): Int = {
    var h = bits
    h ^= h >>> 33
    h *= 0xff51afd7ed558ccdL
    h ^= h >>> 33
    h *= 0xc4ceb9fe1a85ec53L
    h ^= h >>> 33
    h.toInt
  }

  /** A string's hash, from its bytes. */
  def hashBytes(base: AnyRef, offset: Long, length: Int): Int =
    Murmur3_x86_32.hashUnsafeBytes(base, offset, length, StringSeed)

  /** Items `0 until count` of groups below n (item i's group: `groupOf(i)`) in group order, each group's in
   *  their own order (a stable counting sort): group g's are `order(offsets(g) until offsets(g + 1))`. Both
   *  arrays are recycled ([[LargeArrays]]): the caller gives them back or lends them. */
  def byGroup(groupOf: Array[Int], count: Int, n: Int): (Array[Int], Array[Int]) = {
    val offsets = LargeArrays.zeroInts(n + 1)
    var i = 0
    while (i < count) { if (groupOf(i) < n) offsets(groupOf(i) + 1) += 1; i += 1 }
    var g = 0
    while (g < n) { offsets(g + 1) += offsets(g); g += 1 }
    (GroupVectors.orderByGroup(groupOf, count, offsets, n), offsets)
  }
}
