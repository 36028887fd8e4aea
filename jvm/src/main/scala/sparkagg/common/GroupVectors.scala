package sparkagg.common

import java.util.Arrays

import sparkagg.api.EmitTo

/**
 * A growable primitive array indexed by group, the storage of native GroupsAccumulators: one per state
 * field, no object per group. `resize(totalGroups)` gives new groups the initial value; `emit` removes
 * the emitted groups and returns them, shifting the rest down (EmitTo.First(n): group n becomes group
 * 0). `array` is the backing array for tight loops; it is replaced by `resize` and `emit`, so read it
 * again after either. The subclasses only say how to make and fill their array type.
 */
sealed abstract class GroupVector[A <: AnyRef](bytesPerGroup: Int) {
  protected def newArray(n: Int): A
  /** An array of length n, recycled if one is free: its contents are stale (growth fills it, emission copies
   *  over it). */
  protected def takeArray(n: Int): A = newArray(n)
  protected def fill(a: A, from: Int, until: Int): Unit

  private var data: A = newArray(16)
  private var capacity = 16
  private var len = 0

  def length: Int = len
  def array: A = data

  def resize(totalGroups: Int): Unit = if (totalGroups > len) {
    if (totalGroups > capacity) {
      capacity = GroupVectors.grow(capacity, totalGroups)
      val grown = takeArray(capacity)
      System.arraycopy(data, 0, grown, 0, len)
      LargeArrays.release(data)
      data = grown
    }
    fill(data, len, totalGroups)
    len = totalGroups
  }

  /** The emitted groups' values, in an array of their exact length lent to the open loan ([[LargeArrays.lend]]). */
  def emit(emit: EmitTo): A = {
    val n = emit.count(len)
    val out = LargeArrays.lend(takeArray(n))
    System.arraycopy(data, 0, out, 0, n)
    drop(emit)
    out
  }

  /** `emit` for groups whose values were read already: nothing is copied out. */
  def drop(emit: EmitTo): Unit = {
    val n = emit.count(len)
    if (n == len) { LargeArrays.release(data); data = newArray(16); capacity = 16 }
    else System.arraycopy(data, n, data, 0, len - n)
    len -= n
  }

  def size: Long = 16L + bytesPerGroup.toLong * capacity
}

final class LongVector(initial: Long = 0L) extends GroupVector[Array[Long]](8) {
  protected def newArray(n: Int): Array[Long] = new Array[Long](n)
  override protected def takeArray(n: Int): Array[Long] = LargeArrays.longs(n)
  protected def fill(a: Array[Long], from: Int, until: Int): Unit = Arrays.fill(a, from, until, initial)
  def apply(g: Int): Long = array(g)
}

final class IntVector(initial: Int = 0) extends GroupVector[Array[Int]](4) {
  protected def newArray(n: Int): Array[Int] = new Array[Int](n)
  override protected def takeArray(n: Int): Array[Int] = LargeArrays.ints(n)
  protected def fill(a: Array[Int], from: Int, until: Int): Unit = Arrays.fill(a, from, until, initial)
  def apply(g: Int): Int = array(g)
}

final class DoubleVector(initial: Double = 0.0) extends GroupVector[Array[Double]](8) {
  protected def newArray(n: Int): Array[Double] = new Array[Double](n)
  override protected def takeArray(n: Int): Array[Double] = LargeArrays.doubles(n)
  protected def fill(a: Array[Double], from: Int, until: Int): Unit = Arrays.fill(a, from, until, initial)
  def apply(g: Int): Double = array(g)
}

/** One object per group (a string, binary or decimal value; null for none), for the values that have no
 *  primitive layout. */
final class ObjectVector extends GroupVector[Array[Any]](8) {
  protected def newArray(n: Int): Array[Any] = new Array[Any](n)
  protected def fill(a: Array[Any], from: Int, until: Int): Unit =
    Arrays.fill(a.asInstanceOf[Array[AnyRef]], from, until, null)
}

final class ByteVector(initial: Byte = 0) extends GroupVector[Array[Byte]](1) {
  protected def newArray(n: Int): Array[Byte] = new Array[Byte](n)
  override protected def takeArray(n: Int): Array[Byte] = LargeArrays.bytes(n)
  protected def fill(a: Array[Byte], from: Int, until: Int): Unit = Arrays.fill(a, from, until, initial)
  def apply(g: Int): Byte = array(g)
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
  def clear(g: Int): Unit = words(g >> 6) &= ~(1L << g)

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

  /** A stable counting sort's placing pass: items `0 until count` whose group (`groupOf(i)`) is below `n`,
   *  in group order and each group's in their own order, given where each group's run starts (`offsets`,
   *  n + 1 prefix sums of the counts). The array is recycled ([[LargeArrays]]): the caller releases it. */
  def orderByGroup(groupOf: Array[Int], count: Int, offsets: Array[Int], n: Int): Array[Int] = {
    val order = LargeArrays.ints(offsets(n))
    val cursor = LargeArrays.ints(n)
    System.arraycopy(offsets, 0, cursor, 0, n)
    var i = 0
    while (i < count) {
      val g = groupOf(i)
      if (g < n) { order(cursor(g)) = i; cursor(g) += 1 }
      i += 1
    }
    LargeArrays.release(cursor)
    order
  }
}
