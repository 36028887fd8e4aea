package sparkagg.api

import java.util.Arrays

// Growable primitive arrays indexed by group, the storage of native GroupsAccumulators: one array per
// state field, no object per group. `resize(totalGroups)` gives new groups the initial value; `emit`
// removes the emitted groups and returns them, shifting the rest down (EmitTo.First(n): group n becomes
// group 0). `array` is the backing array for tight loops; it is replaced by `resize` and `emit`, so read
// it again after either.

final class LongVector(initial: Long = 0L) {
  private var data = new Array[Long](16)
  private var len = 0

  def length: Int = len
  def array: Array[Long] = data
  def apply(g: Int): Long = data(g)

  def resize(totalGroups: Int): Unit = if (totalGroups > len) {
    if (totalGroups > data.length) data = Arrays.copyOf(data, GroupVectors.grow(data.length, totalGroups))
    Arrays.fill(data, len, totalGroups, initial)
    len = totalGroups
  }

  def emit(emit: EmitTo): Array[Long] = {
    val n = emit.count(len)
    val out = Arrays.copyOf(data, n)
    if (n == len) data = new Array[Long](16) else System.arraycopy(data, n, data, 0, len - n)
    len -= n
    out
  }

  def size: Long = 16L + 8L * data.length
}

final class DoubleVector(initial: Double = 0.0) {
  private var data = new Array[Double](16)
  private var len = 0

  def length: Int = len
  def array: Array[Double] = data
  def apply(g: Int): Double = data(g)

  def resize(totalGroups: Int): Unit = if (totalGroups > len) {
    if (totalGroups > data.length) data = Arrays.copyOf(data, GroupVectors.grow(data.length, totalGroups))
    Arrays.fill(data, len, totalGroups, initial)
    len = totalGroups
  }

  def emit(emit: EmitTo): Array[Double] = {
    val n = emit.count(len)
    val out = Arrays.copyOf(data, n)
    if (n == len) data = new Array[Double](16) else System.arraycopy(data, n, data, 0, len - n)
    len -= n
    out
  }

  def size: Long = 16L + 8L * data.length
}

final class ByteVector(initial: Byte = 0) {
  private var data = new Array[Byte](16)
  private var len = 0

  def length: Int = len
  def array: Array[Byte] = data
  def apply(g: Int): Byte = data(g)

  def resize(totalGroups: Int): Unit = if (totalGroups > len) {
    if (totalGroups > data.length) data = Arrays.copyOf(data, GroupVectors.grow(data.length, totalGroups))
    Arrays.fill(data, len, totalGroups, initial)
    len = totalGroups
  }

  def emit(emit: EmitTo): Array[Byte] = {
    val n = emit.count(len)
    val out = Arrays.copyOf(data, n)
    if (n == len) data = new Array[Byte](16) else System.arraycopy(data, n, data, 0, len - n)
    len -= n
    out
  }

  def size: Long = 16L + data.length
}

/** One bit per group, all new groups false; `emit` returns the emitted bits as [[Validity]] words. */
final class BitVector {
  private var words = new Array[Long](1)
  private var len = 0
  // Invariant: every bit at or above `len` is clear, so growing needs no clearing.

  def length: Int = len
  def bits: Array[Long] = words
  def get(g: Int): Boolean = (words(g >> 6) & (1L << g)) != 0
  def set(g: Int): Unit = words(g >> 6) |= 1L << g

  def resize(totalGroups: Int): Unit = if (totalGroups > len) {
    val need = Validity.words(totalGroups)
    if (need > words.length) words = Arrays.copyOf(words, GroupVectors.grow(words.length, need))
    len = totalGroups
  }

  def emit(emit: EmitTo): Array[Long] = {
    val n = emit.count(len)
    val out = Arrays.copyOf(words, Validity.words(n))
    if (n % 64 != 0) out(out.length - 1) &= ~(-1L << n)
    if (n == len) { words = new Array[Long](1); len = 0 }
    else {
      val rest = len - n
      val shift = n & 63
      val from = n >> 6
      val restWords = Validity.words(rest)
      var i = 0
      while (i < restWords) {
        val lowPart = words(from + i) >>> shift
        val highPart = if (shift != 0 && from + i + 1 < words.length) words(from + i + 1) << (64 - shift) else 0L
        words(i) = lowPart | highPart
        i += 1
      }
      Arrays.fill(words, restWords, words.length, 0L)
      if (rest % 64 != 0) words(restWords - 1) &= ~(-1L << rest)
      len = rest
    }
    out
  }

  def size: Long = 16L + 8L * words.length
}

object GroupVectors {
  /** A new capacity of at least `need`, growing geometrically. */
  def grow(current: Int, need: Int): Int = {
    val doubled = math.min(Int.MaxValue - 16L, math.max(16L, current.toLong * 2)).toInt
    math.max(doubled, need)
  }
}
