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
  private val start = new IntVector(-1) // -1: no value
  private val length = new IntVector

  def resize(totalGroups: Int): Unit = { start.resize(totalGroups); length.resize(totalGroups) }
  def has(g: Int): Boolean = start.array(g) >= 0

  /** The `n` bytes at `offset` of `base` against group g's (which it has): unsigned, first byte first. */
  def compare(g: Int, base: AnyRef, offset: Long, n: Int): Int =
    GroupBytes.compare(base, offset, n, arena, Platform.BYTE_ARRAY_OFFSET + start.array(g), length.array(g))

  /** Group g's value becomes the `n` bytes at `offset` of `base`. */
  def put(g: Int, base: AnyRef, offset: Long, n: Int): Unit = {
    val at = start.array(g)
    val held = length.array(g)
    if (at >= 0 && n <= held) abandoned += held - n
    else {
      clear(g) // not kept by a compaction in room
      room(n)
      start.array(g) = used
      used += n
    }
    BytesColumn.copyInto(base, offset, n, arena, start.array(g))
    length.array(g) = n
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
  def clear(g: Int): Unit = if (start.array(g) >= 0) { abandoned += length.array(g); start.array(g) = -1 }

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
    val s = start.array
    val l = length.array
    while (g < start.length) {
      if (s(g) >= 0) { System.arraycopy(arena, s(g), fresh, at, l(g)); s(g) = at; at += l(g) }
      g += 1
    }
    LargeArrays.release(arena)
    arena = fresh
    used = at
    abandoned = 0
  }

  /** The emitted groups' values end to end (read as strings or binaries alike); the others compacted. */
  def emit(emit: EmitTo): BinaryColumn = {
    val n = emit.count(start.length)
    val (s, l) = (start.array, length.array)
    val out = BinaryColumn.gathered(n, arena, s(_), l(_))
    if (n == start.length) {
      LargeArrays.release(arena)
      arena = new Array[Byte](GroupBytes.InitialArena); used = 0; abandoned = 0
    } else compact(n, math.max(GroupBytes.InitialArena, used - abandoned - out.offsets(n)))
    start.drop(emit)
    length.drop(emit)
    out
  }

  def size: Long = start.size + length.size + arena.length
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
