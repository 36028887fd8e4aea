package sparkagg.common

import java.lang.ref.WeakReference
import java.lang.reflect.{Array => JArray}
import java.util.{ArrayDeque, ArrayList, Arrays, HashMap => JHashMap}

/**
 * Recycles the large primitive arrays that group vectors and key tables grow through and let go of.
 *
 * Why: on G1 an array over half a heap region (1 MiB on the 2 MiB regions of a 4-8 GB heap) is a
 * humongous object, allocated in whole regions and counted as old generation at once. Growing its vectors
 * and key table to a million groups, a query of df_avg left 239 MB of them, enough to cross G1's
 * initiating occupancy and start concurrent marking cycles (22 in five runs), which take one of a
 * two-core executor's cores. Spark pools its own heap pages the same way (HeapMemoryAllocator).
 *
 * Arrays are kept by type and exact length (the vectors grow by doubling, so lengths repeat), weakly
 * referenced: the collector may still take any of them. Only an owner that holds the sole reference
 * may `release` an array.
 *
 * Emitted groups' arrays (exact copies, read lazily as their rows are made) are `lend`t under a [[Loan]]
 * that the grouped operator opens around an emission and repays once every emitted row has been read:
 * a query of the same shape then emits into the same arrays again.
 */
object LargeArrays {

  // The tests (build.sbt) set sparkagg.test.recycleAll: nearly every array is recycled and scribbled
  // over when released, so that a use after release, or a reader expecting zeros, gives a wrong result.
  private val recycleAll = java.lang.Boolean.getBoolean("sparkagg.test.recycleAll")

  /** Arrays smaller than this are left to the allocator: no region of any heap holds them alone. */
  val MinBytes: Long = if (recycleAll) 64L else 256L * 1024

  private val pools = new JHashMap[(Class[_], Int), ArrayDeque[WeakReference[AnyRef]]]

  /** Arrays of length n whose contents are what they last held (for owners that set before reading). */
  def longs(n: Int): Array[Long] = longsZeroedFrom(n, n)
  def doubles(n: Int): Array[Double] = doublesZeroedFrom(n, n)
  def ints(n: Int): Array[Int] = intsZeroedFrom(n, n)
  def bytes(n: Int): Array[Byte] = bytesZeroedFrom(n, n)

  /** All-zero arrays, as `new` makes them. */
  def zeroLongs(n: Int): Array[Long] = longsZeroedFrom(n, 0)
  def zeroInts(n: Int): Array[Int] = intsZeroedFrom(n, 0)
  def zeroDoubles(n: Int): Array[Double] = doublesZeroedFrom(n, 0)
  def zeroBytes(n: Int): Array[Byte] = bytesZeroedFrom(n, 0)

  /** `java.util.Arrays.copyOf` for an owner that lets go of `old`: the copy is recycled if one is free,
   *  `old` is released. */
  def copyOf(old: Array[Long], n: Int): Array[Long] = moved(old, longsZeroedFrom(n, math.min(old.length, n)))
  def copyOf(old: Array[Int], n: Int): Array[Int] = moved(old, intsZeroedFrom(n, math.min(old.length, n)))
  def copyOf(old: Array[Double], n: Int): Array[Double] = moved(old, doublesZeroedFrom(n, math.min(old.length, n)))
  def copyOf(old: Array[Byte], n: Int): Array[Byte] = moved(old, bytesZeroedFrom(n, math.min(old.length, n)))

  // Each element type's array of length n, zero from `zeroFrom` on (see `take`).
  private def longsZeroedFrom(n: Int, zeroFrom: Int) = take(classOf[Array[Long]], n, 8, new Array[Long](_), zeroFrom)
  private def intsZeroedFrom(n: Int, zeroFrom: Int) = take(classOf[Array[Int]], n, 4, new Array[Int](_), zeroFrom)
  private def doublesZeroedFrom(n: Int, zeroFrom: Int) =
    take(classOf[Array[Double]], n, 8, new Array[Double](_), zeroFrom)
  private def bytesZeroedFrom(n: Int, zeroFrom: Int) = take(classOf[Array[Byte]], n, 1, new Array[Byte](_), zeroFrom)

  /** `copyOf` for an owner that sets every element past `old`'s before reading it: a recycled copy keeps
   *  what it held there (a pool's slots grown by doubling, which need not pay for clearing the new half). */
  def grown(old: Array[Long], n: Int): Array[Long] = moved(old, longs(n))
  def grown(old: Array[Int], n: Int): Array[Int] = moved(old, ints(n))
  def grown(old: Array[Byte], n: Int): Array[Byte] = moved(old, bytes(n))

  /** Gives back an array that nothing else refers to; small arrays, null and other types are ignored. */
  def release(array: AnyRef): Unit = if (recyclable(array)) {
    if (recycleAll) scribble(array)
    pools.synchronized {
      val pool =
        pools.computeIfAbsent((array.getClass, JArray.getLength(array)), _ => new ArrayDeque[WeakReference[AnyRef]])
      // An array given back twice would go to two owners.
      if (pool.stream().anyMatch(_.get() eq array)) {
        if (recycleAll) throw new IllegalStateException("an array was given back twice")
      } else pool.push(new WeakReference[AnyRef](array))
    }
  }

  private def recyclable(array: AnyRef): Boolean =
    (array match {
      case a: Array[Long] => 8L * a.length
      case a: Array[Double] => 8L * a.length
      case a: Array[Int] => 4L * a.length
      case a: Array[Byte] => a.length.toLong
      case _ => 0L
    }) >= MinBytes

  /** The arrays lent with one emission, given back together by `repay` once nothing reads them. */
  final class Loan {
    private val lent = new ArrayList[AnyRef]
    private[LargeArrays] def add(array: AnyRef): Unit = lent.add(array)
    def repay(): Unit = { lent.forEach(release(_)); lent.clear() }
  }

  private val open = new ThreadLocal[Loan]

  /** Runs `body` (an emission, on this thread) with `loan` open: the arrays it lends join the loan. */
  def lending[T](loan: Loan)(body: => T): T = {
    val outer = open.get
    open.set(loan)
    try body
    finally open.set(outer)
  }

  /** An array handed out with emitted groups and referred to only by what reads them: it joins the open
   *  loan, if any, or is left to the collector. */
  def lend[A <: AnyRef](array: A): A = {
    val loan = open.get
    if (loan != null && recyclable(array)) loan.add(array)
    array
  }

  /** The offsets of n emitted rows' lists or bytes: n + 1 ints, recycled, lent to the open loan, the first
   *  set to 0 (a recycled array holds what it last held); the caller writes the other n. */
  def lentOffsets(n: Int): Array[Int] = {
    val offsets = lend(ints(n + 1))
    offsets(0) = 0
    offsets
  }

  /** An array of length n, recycled if one is free (then zeroed from `zeroFrom` on), else new (all zero). */
  private def take[A <: AnyRef](kind: Class[A], n: Int, bytesEach: Int, make: Int => A, zeroFrom: Int): A =
    if (bytesEach.toLong * n < MinBytes) make(n)
    else {
      val found = pools.synchronized {
        val pool = pools.get((kind, n))
        var found: AnyRef = null
        while (found == null && pool != null && !pool.isEmpty) found = pool.pop().get()
        found
      }
      if (found == null) make(n) else cleared(kind.cast(found), zeroFrom)
    }

  /** `to` with `from`'s elements in front; `from` released. */
  private def moved[A <: AnyRef](from: A, to: A): A = {
    System.arraycopy(from, 0, to, 0, math.min(JArray.getLength(from), JArray.getLength(to)))
    release(from)
    to
  }

  private def scribble(array: AnyRef): Unit = array match {
    case a: Array[Long] => Arrays.fill(a, 0x5a5a5a5a5a5a5a5aL)
    case a: Array[Double] => Arrays.fill(a, -1.2345e300)
    case a: Array[Int] => Arrays.fill(a, 0x5a5a5a5a)
    case a: Array[Byte] => Arrays.fill(a, 0x5a.toByte)
  }

  private def cleared[A <: AnyRef](array: A, from: Int): A = {
    array match {
      case a: Array[Long] => Arrays.fill(a, from, a.length, 0L)
      case a: Array[Double] => Arrays.fill(a, from, a.length, 0.0)
      case a: Array[Int] => Arrays.fill(a, from, a.length, 0)
      case a: Array[Byte] => Arrays.fill(a, from, a.length, 0.toByte)
    }
    array
  }
}
