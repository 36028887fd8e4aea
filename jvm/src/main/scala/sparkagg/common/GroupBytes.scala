package sparkagg.common

import org.apache.spark.unsafe.Platform
import sparkagg.api.{Column, EmitTo}

/**
 * One byte string per group (a string's or a binary's bytes, or none: NULL), all in one arena shared by
 * the groups, no object per group: the best of min / max of strings and binaries, the chosen value of
 * first / last_value. A new value overwrites the group's old one where it fits, else goes to the arena's
 * end, and the arena is compacted once abandoned bytes fill half of it.
 */
private[sparkagg] final class GroupBytes {
  private var arena = new Array[Byte](GroupBytes.InitialArena)
  private var used = 0
  private var abandoned = 0 // bytes of the arena no group points at
  // Each group's value: where it starts in the arena (high word) and its length (low word), in one long so
  // that a group's update reads one place; -1 for no value.
  private val slots = new LongVector(-1L)

  private def start(g: Int): Int = (slots.array(g) >>> 32).toInt
  private def length(g: Int): Int = slots.array(g).toInt
  private def slotOf(at: Int, n: Int): Long = (at.toLong << 32) | n

  def resize(totalGroups: Int): Unit = slots.resize(totalGroups)
  def has(g: Int): Boolean = slots.array(g) >= 0

  /** The `n` bytes at `offset` of `base` against group g's (which it has): unsigned, first byte first. */
  def compare(g: Int, base: AnyRef, offset: Long, n: Int): Int = {
    val slot = slots.array(g)
    GroupBytes.compare(base, offset, n, arena, Platform.BYTE_ARRAY_OFFSET + (slot >>> 32), slot.toInt)
  }

  /** Group g's value becomes the `n` bytes at `offset` of `base`. */
  def put(g: Int, base: AnyRef, offset: Long, n: Int): Unit = {
    val slot = slots.array(g)
    val at =
      if (slot >= 0 && n <= slot.toInt) { abandoned += slot.toInt - n; (slot >>> 32).toInt }
      else {
        clear(g) // not kept by a compaction in room
        room(n)
        used += n
        used - n
      }
    BytesColumn.copyInto(base, offset, n, arena, at)
    slots.array(g) = slotOf(at, n)
  }

  /** Group g's value becomes row `row` of `column` (strings or binaries), NULL included. */
  def putRow(g: Int, column: Column, row: Int, strings: Boolean): Unit =
    if (column.isNullAt(row)) clear(g)
    else
      column match {
        case b: BytesColumn => put(g, b.bytes, Platform.BYTE_ARRAY_OFFSET + b.start(row), b.length(row))
        case _ if strings =>
          val s = column.getUTF8String(row)
          put(g, s.getBaseObject, s.getBaseOffset, s.numBytes)
        case _ =>
          val b = column.getBinary(row)
          put(g, b, Platform.BYTE_ARRAY_OFFSET, b.length)
      }

  /** Group g holds no value. */
  def clear(g: Int): Unit = if (has(g)) { abandoned += length(g); slots.array(g) = -1L }

  /** Room for `n` more bytes at the arena's end: the held bytes compacted first when half are abandoned. */
  private def room(n: Int): Unit = if (used + n > arena.length) {
    val live = used - abandoned
    if (abandoned >= live) compact(0, math.max(arena.length, 2 * (live + n)))
    if (used + n > arena.length) arena = LargeArrays.copyOf(arena, math.max(2 * arena.length, used + n))
  }

  /** Copies the values of groups `from` onwards, in group order, to the front of a new arena of `capacity`. */
  private def compact(from: Int, capacity: Int): Unit = {
    val fresh = LargeArrays.zeroBytes(capacity)
    var at = 0
    var g = from
    while (g < slots.length) {
      if (has(g)) {
        val n = length(g)
        System.arraycopy(arena, start(g), fresh, at, n)
        slots.array(g) = slotOf(at, n)
        at += n
      }
      g += 1
    }
    LargeArrays.release(arena)
    arena = fresh
    used = at
    abandoned = 0
  }

  /** The emitted groups' values end to end (read as strings or binaries alike); the others compacted. */
  def emit(emit: EmitTo): BinaryColumn = {
    val n = emit.count(slots.length)
    val out = BinaryColumn.gathered(n, arena, start, length)
    if (n == slots.length) {
      LargeArrays.release(arena)
      arena = new Array[Byte](GroupBytes.InitialArena); used = 0; abandoned = 0
    } else compact(n, math.max(GroupBytes.InitialArena, used - abandoned - out.offsets(n)))
    slots.drop(emit)
    out
  }

  def size: Long = slots.size + arena.length
}

private[sparkagg] object GroupBytes {
  val InitialArena = 1 << 12

  /** Unsigned lexicographic order of two byte ranges, eight bytes at a time. */
  def compare(a: AnyRef, aAt: Long, aLength: Int, b: AnyRef, bAt: Long, bLength: Int): Int = {
    val common = math.min(aLength, bLength)
    var i = 0
    while (i + 8 <= common) {
      val x = Platform.getLong(a, aAt + i)
      val y = Platform.getLong(b, bAt + i)
      if (x != y)
        return if (BytesColumn.LittleEndian)
          java.lang.Long.compareUnsigned(java.lang.Long.reverseBytes(x), java.lang.Long.reverseBytes(y))
        else java.lang.Long.compareUnsigned(x, y)
      i += 8
    }
    while (i < common) {
      val c = (Platform.getByte(a, aAt + i) & 0xff) - (Platform.getByte(b, bAt + i) & 0xff)
      if (c != 0) return c
      i += 1
    }
    aLength - bLength
  }
}
