package sparkagg.common

import sparkagg.api._
import org.apache.spark.sql.types.DataType

// Shared machinery of the native GroupsAccumulators (count.scala, sum.scala, average.scala,
// min_max.scala, bitwise.scala, boolean.scala and CoMoments.scala hold the accumulators themselves): the
// exact sums of Sums.scala laid out as primitive arrays indexed by group, so that a group costs a few
// array slots instead of an object, and the fold of one primitive value that min, max and bit_* share.

/**
 * Every group's exact bigint sum in 128 bits, [[LongSum]]'s arithmetic over two arrays: `lo` holds the
 * low 64 bits, `hi` the high. An overflow that cancels out is none; whether a sum fits is judged when read.
 */
private[sparkagg] final class GroupLongSums {
  private val lo = new LongVector
  private val hi = new LongVector

  def resize(totalGroups: Int): Unit = { lo.resize(totalGroups); hi.resize(totalGroups) }
  def low: Array[Long] = lo.array
  def high: Array[Long] = hi.array
  def emit(emit: EmitTo): (Array[Long], Array[Long]) = (lo.emit(emit), hi.emit(emit))
  def size: Long = lo.size + hi.size
}

private[sparkagg] object GroupLongSums {
  @inline def add(lo: Array[Long], hi: Array[Long], g: Int, v: Long): Unit = {
    val l = lo(g)
    val r = l + v
    hi(g) += (v >> 63) + (if (java.lang.Long.compareUnsigned(r, l) < 0) 1L else 0L)
    lo(g) = r
  }
  @inline def fitsLong(lo: Array[Long], hi: Array[Long], g: Int): Boolean = hi(g) == (lo(g) >> 63)
}

/**
 * Every group's double sum as [[DoubleSum]] keeps it, minus retraction: the finite running sum in one
 * array, and in another which non-finite values were seen (bit 0 NaN, bit 1 +inf, bit 2 -inf). Adds
 * happen in the same order as the row-at-a-time accumulator's, so the sums are the same to the bit.
 */
private[sparkagg] final class GroupDoubleSums {
  private val finite = new DoubleVector
  private val flags = new ByteVector

  def resize(totalGroups: Int): Unit = { finite.resize(totalGroups); flags.resize(totalGroups) }
  def sums: Array[Double] = finite.array
  def nonFinite: Array[Byte] = flags.array

  /** The emitted groups' sums as DoubleSum.value gives them. */
  def emit(emit: EmitTo): Array[Double] = {
    val s = finite.emit(emit)
    val f = flags.emit(emit)
    var g = 0
    while (g < s.length) {
      if (f(g) != 0) s(g) = GroupDoubleSums.value(s(g), f(g))
      g += 1
    }
    s
  }
  def size: Long = finite.size + flags.size
}

private[sparkagg] object GroupDoubleSums {
  @inline def add(sums: Array[Double], flags: Array[Byte], g: Int, v: Double): Unit =
    if (java.lang.Double.isFinite(v)) sums(g) += v
    else flags(g) = (flags(g) | (if (v.isNaN) 1 else if (v > 0) 2 else 4)).toByte

  def value(finite: Double, flags: Byte): Double =
    if ((flags & 1) != 0 || (flags & 6) == 6) Double.NaN
    else if ((flags & 2) != 0) Double.PositiveInfinity
    else if ((flags & 4) != 0) Double.NegativeInfinity
    else finite
}

/**
 * Every group's double sum and count: the state sum and avg share. The state holds both columns, sum
 * first or, for avg (`countFirst`), count first, as their row-at-a-time states do; a group's value is
 * NULL while its count is 0.
 */
private[sparkagg] abstract class DoubleSumCountGroups(countFirst: Boolean) extends GroupsAccumulator {
  private val sums = new GroupDoubleSums
  private val counts = new LongVector // a group's count says whether it saw a value: no NullState
  private val (sumField, countField) = if (countFirst) (1, 0) else (0, 1)

  private def resize(totalGroups: Int): Unit = { sums.resize(totalGroups); counts.resize(totalGroups) }

  def updateBatch(values: Columns, groupIndices: Array[Int], filter: Option[Column], totalGroups: Int): Unit = {
    resize(totalGroups)
    val (s, fl, c) = (sums.sums, sums.nonFinite, counts.array)
    val column = values.column(0)
    val taken = GroupColumns.taken(values.numRows, filter, column)
    val array = GroupColumns.doubleArray(column)
    var i = 0
    while (i < values.numRows) {
      if (taken == null || taken(i)) {
        val g = groupIndices(i)
        GroupDoubleSums.add(s, fl, g, if (array != null) array(i) else column.getDouble(i))
        c(g) += 1
      }
      i += 1
    }
  }

  def mergeBatch(states: Columns, groupIndices: Array[Int], filter: Option[Column], totalGroups: Int): Unit = {
    resize(totalGroups)
    val (s, fl, c) = (sums.sums, sums.nonFinite, counts.array)
    val (sum, count) = (states.column(sumField), states.column(countField))
    val f = filter.orNull
    var i = 0
    while (i < states.numRows) {
      if (GroupsAccumulator.keep(f, i)) {
        val n = count.getLong(i)
        if (n > 0) {
          val g = groupIndices(i)
          GroupDoubleSums.add(s, fl, g, sum.getDouble(i))
          c(g) += n
        }
      }
      i += 1
    }
  }

  /** The emitted groups' sums and counts. */
  protected def emitted(emit: EmitTo): (Array[Double], Array[Long]) = {
    val s = sums.emit(emit)
    (s, counts.emit(emit))
  }

  private def columns(s: Array[Double], c: Array[Long]): Array[Column] = {
    val sum = new DoubleColumn(s, GroupColumns.nonZero(c), c.length)
    val count = new LongColumn(c, null, c.length)
    if (countFirst) Array(count, sum) else Array(sum, count)
  }

  def state(emit: EmitTo): Array[Column] = { val (s, c) = emitted(emit); columns(s, c) }

  override def convertToState(values: Columns, filter: Option[Column]): Array[Column] = {
    val n = values.numRows
    val v = values.column(0)
    val c = GroupColumns.rowCounts(n, filter, v)
    columns(Fill.doubles(n)(i => if (c(i) != 0) v.getDouble(i) else 0.0), c)
  }
  override def supportsConvertToState: Boolean = true

  def size: Long = sums.size + counts.size
}

/**
 * A function whose state is one primitive value folded from an identity (min, max, bit_and, bit_or,
 * bit_xor): one value per group in a [[PrimitiveFold]] starting at its identity, so the loop only
 * combines, and [[NullState]] for which groups saw a value (NULL otherwise). The state is the result
 * itself, so a state merges as a value updates, and a row's own state is its value
 * (`combine(identity, v) == v`). As DataFusion's PrimitiveGroupsAccumulator, written once over the
 * native type: the fold says how to store, read and combine.
 */
private[sparkagg] final class FoldGroups(fold: PrimitiveFold[_]) extends GroupsAccumulator {
  private val nulls = new NullState

  def updateBatch(values: Columns, groupIndices: Array[Int], filter: Option[Column], totalGroups: Int): Unit = {
    fold.resize(totalGroups)
    val c = values.column(0)
    nulls.accumulateRows(groupIndices, c, values.numRows, filter, totalGroups, (g, i) => fold.fold(g, c, i))
  }

  def mergeBatch(states: Columns, groupIndices: Array[Int], filter: Option[Column], totalGroups: Int): Unit =
    updateBatch(states, groupIndices, filter, totalGroups)

  def evaluate(emit: EmitTo): Column = fold.emit(emit, nulls.build(emit))
  def state(emit: EmitTo): Array[Column] = Array(evaluate(emit))

  override def convertToState(values: Columns, filter: Option[Column]): Array[Column] = {
    val c = values.column(0)
    Array(fold.rows(c, GroupColumns.rowCounts(values.numRows, filter, c)))
  }
  override def supportsConvertToState: Boolean = true

  def size: Long = fold.size + nulls.size
}

/**
 * The storage of a [[FoldGroups]]: every group's value in a primitive array, folded in place. The two
 * native types differ only in how they read, combine and wrap a value, so the accumulator stays one
 * class without boxing a value per row.
 */
private[sparkagg] sealed abstract class PrimitiveFold[A <: AnyRef](values: GroupVector[A]) {
  /** The vector's array, read again after it is replaced (resize, emit). */
  protected var acc: A = values.array

  /** Folds row `i` of `c` into group `g`. */
  def fold(g: Int, c: Column, i: Int): Unit
  protected def column(v: A, validity: Array[Long]): Column
  /** Row i's value of `c` where `kept(i)` is not 0, else the type's zero. */
  protected def own(c: Column, kept: Array[Long]): A

  final def resize(totalGroups: Int): Unit = { values.resize(totalGroups); acc = values.array }
  /** The emitted groups' values, NULL where `validity` says so. */
  final def emit(emit: EmitTo, validity: Array[Long]): Column = {
    val v = values.emit(emit)
    acc = values.array
    column(v, validity)
  }
  /** Each row's own state: its value where `kept` is not 0, else NULL. */
  final def rows(c: Column, kept: Array[Long]): Column = column(own(c, kept), GroupColumns.nonZero(kept))
  final def size: Long = values.size
}

/** A fold of integer-likes (integers, boolean, date, timestamps) held as Long. */
private[sparkagg] abstract class LongFold(kind: ValueKind.LongLike, identity: Long)
  extends PrimitiveFold[Array[Long]](new LongVector(identity)) {
  def combine(acc: Long, v: Long): Long

  final def fold(g: Int, c: Column, i: Int): Unit = acc(g) = combine(acc(g), kind.readLong(c, i))
  protected final def column(v: Array[Long], validity: Array[Long]): Column = new LongColumn(v, validity, v.length)
  protected final def own(c: Column, kept: Array[Long]): Array[Long] =
    Fill.longs(kept.length)(i => if (kept(i) != 0) kind.readLong(c, i) else 0L)
}

/** A fold of float or double held as Double. */
private[sparkagg] abstract class DoubleFold(kind: ValueKind.DoubleLike, identity: Double)
  extends PrimitiveFold[Array[Double]](new DoubleVector(identity)) {
  def combine(acc: Double, v: Double): Double

  final def fold(g: Int, c: Column, i: Int): Unit = acc(g) = combine(acc(g), kind.readDouble(c, i))
  protected final def column(v: Array[Double], validity: Array[Long]): Column = new DoubleColumn(v, validity, v.length)
  protected final def own(c: Column, kept: Array[Long]): Array[Double] =
    Fill.doubles(kept.length)(i => if (kept(i) != 0) kind.readDouble(c, i) else 0.0)
}

private[sparkagg] object GroupColumns {
  /** convertToState of a function whose state is its one value: each kept non-NULL row's value, copied out
   *  of its batch (NULL otherwise), as one column of boxed values. */
  def ownValues(values: Columns, filter: Option[Column], dataType: DataType): Array[Column] = {
    val column = values.column(0)
    val f = filter.orNull
    Array(
      new ObjectColumn(
        Array.tabulate[Any](values.numRows) { i =>
          if (GroupsAccumulator.keep(f, i) && !column.isNullAt(i)) column.copy(i, dataType) else null
        }))
  }

  /** Validity words with a bit set for each group whose count is not zero. A word is made in a register and
   *  stored once (`(c | -c) >>> 63` is 1 for any c but 0), where setting bit by bit would read and write the
   *  word per group. */
  def nonZero(counts: Array[Long]): Array[Long] = {
    val bits = new Array[Long](Validity.words(counts.length))
    var w = 0
    while (w < bits.length) {
      val first = w << 6
      val end = math.min(first + 64, counts.length)
      var word = 0L
      var g = first
      while (g < end) { val c = counts(g); word |= ((c | -c) >>> 63) << (g - first); g += 1 }
      bits(w) = word
      w += 1
    }
    bits
  }

  /** The rows an accumulator takes, kept by the filter and NULL in none of `columns`; null when it takes every
   *  row. Asked once per batch, so that the accumulator's own loop makes no call per row to learn it. */
  def taken(numRows: Int, filter: Option[Column], columns: Column*): Array[Boolean] = {
    var nullable = Array.empty[Column] // (plain loops: this runs for every batch of every function)
    var j = 0
    while (j < columns.length) { if (columns(j).hasNulls) nullable :+= columns(j); j += 1 }
    if (filter.isEmpty && nullable.isEmpty) return null
    val f = filter.orNull
    val taken = new Array[Boolean](numRows)
    var i = 0
    while (i < numRows) {
      var keep = GroupsAccumulator.keep(f, i)
      j = 0
      while (keep && j < nullable.length) { keep = !nullable(j).isNullAt(i); j += 1 }
      taken(i) = keep
      i += 1
    }
    taken
  }

  /** A gathered batch's values as their array (a [[DoubleColumn]]'s or [[LongColumn]]'s), read without a
   *  call per row; null for any other column, read through its getter. */
  def doubleArray(column: Column): Array[Double] = column match { case d: DoubleColumn => d.values; case _ => null }
  def longArray(column: Column): Array[Long] = column match { case l: LongColumn => l.values; case _ => null }

  /** convertToState's count field: 1 where the row is kept and NULL in none of `columns`, else 0. */
  def rowCounts(numRows: Int, filter: Option[Column], columns: Column*): Array[Long] = {
    val rows = taken(numRows, filter, columns: _*)
    val counts = new Array[Long](numRows) // a plain loop: Array.tabulate would box every row's count
    if (rows == null) java.util.Arrays.fill(counts, 1L)
    else {
      var i = 0
      while (i < numRows) { if (rows(i)) counts(i) = 1L; i += 1 }
    }
    counts
  }
}
