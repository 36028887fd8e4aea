package sparkagg.common

import java.math.{BigDecimal => JBigDecimal, BigInteger}

import org.apache.spark.sql.types.{Decimal, DecimalType}
import org.apache.spark.unsafe.Platform
import sparkagg.api.{Column, Columns, EmitTo, GroupsAccumulator, Overflow, StatePacking, Values}

// Exact running sums shared by sum and avg (DataFusion keeps the like in functions-aggregate-common).
// Each is exact whatever the order of updates, merges and retracts, so a result never depends on how
// Spark partitions the rows or which rows leave a sliding frame first; whether it fits the result
// type is decided only when it is read.

/**
 * A bigint sum kept in 128 bits (two longs, two's complement), so that intermediate overflow that later
 * cancels out is no overflow at all, as in exact arithmetic.
 */
final class LongSum {
  private var lo = 0L
  private var hi = 0L

  def add(v: Long): Unit = {
    val r = lo + v
    hi += (v >> 63) + (if (java.lang.Long.compareUnsigned(r, lo) < 0) 1L else 0L)
    lo = r
  }

  def subtract(v: Long): Unit = {
    val r = lo - v
    hi -= (v >> 63) + (if (java.lang.Long.compareUnsigned(lo, v) < 0) 1L else 0L)
    lo = r
  }

  def fitsLong: Boolean = hi == (lo >> 63)
  def toLong: Long = lo
}

/**
 * A double sum whose NaN and infinite inputs are counted apart from the finite running sum, so that
 * retracting an infinity restores the finite sum instead of leaving inf - inf = NaN.
 */
final class DoubleSum {
  private var finite = 0.0
  private var nans = 0L
  private var positiveInfinities = 0L
  private var negativeInfinities = 0L

  def add(v: Double): Unit = if (java.lang.Double.isFinite(v)) finite += v else countNonFinite(v, 1)
  def subtract(v: Double): Unit = if (java.lang.Double.isFinite(v)) finite -= v else countNonFinite(v, -1)

  private def countNonFinite(v: Double, delta: Int): Unit =
    if (v.isNaN) nans += delta
    else if (v > 0) positiveInfinities += delta
    else negativeInfinities += delta

  def value: Double =
    if (nans > 0 || (positiveInfinities > 0 && negativeInfinities > 0)) Double.NaN
    else if (positiveInfinities > 0) Double.PositiveInfinity
    else if (negativeInfinities > 0) Double.NegativeInfinity
    else finite
}

/**
 * Exact running sum of decimals of one scale, shared by sum and avg: an unscaled Long while it fits,
 * a BigInteger once it does not, so the usual case allocates nothing. Whether the sum fits the declared
 * result precision is decided when it is read, as Spark does for its own decimal sum.
 */
final class DecimalSum(val scale: Int) {
  private var small = 0L
  private var big: BigInteger = null

  def add(d: Decimal): Unit =
    if (d.precision <= Decimal.MAX_LONG_DIGITS && d.scale == scale) addUnscaled(d.toUnscaledLong)
    else addBig(d.toJavaBigDecimal.setScale(scale).unscaledValue)

  def subtract(d: Decimal): Unit =
    if (d.precision <= Decimal.MAX_LONG_DIGITS && d.scale == scale) addUnscaled(-d.toUnscaledLong)
    else addBig(d.toJavaBigDecimal.setScale(scale).unscaledValue.negate)

  private def addUnscaled(u: Long): Unit =
    if (big != null) big = big.add(BigInteger.valueOf(u))
    else {
      val r = small + u
      // Signs of both operands differ from the result's only on overflow.
      if (((small ^ r) & (u ^ r)) < 0) big = BigInteger.valueOf(small).add(BigInteger.valueOf(u))
      else small = r
    }

  private def addBig(u: BigInteger): Unit =
    big = (if (big == null) BigInteger.valueOf(small) else big).add(u)

  def unscaled: BigInteger = if (big == null) BigInteger.valueOf(small) else big

  /** The sum as decimal(`precision`, scale), or null when it needs more digits than that. */
  def toDecimal(precision: Int): Decimal = DecimalSum.fit(unscaled, scale, precision)

  def size: Long = 40 + (if (big == null) 0 else 16 + big.bitLength / 8)
}

object DecimalSum {
  /** `unscaled` at `scale` as decimal(precision, scale), or null when it needs more digits. */
  def fit(unscaled: BigInteger, scale: Int, precision: Int): Decimal =
    if (fits(unscaled, precision)) Decimal(new JBigDecimal(unscaled, scale), precision, scale) else null
  /** Whether `unscaled` has at most `precision` digits. */
  def fits(unscaled: BigInteger, precision: Int): Boolean = unscaled.abs.compareTo(PowersOf10(precision)) < 0

  private val PowersOf10 = Array.tabulate(DecimalType.MAX_PRECISION + 1)(BigInteger.TEN.pow)
  /** 10^p for p up to 18. */
  def longPowerOf10(p: Int): Long = PowersOf10(p).longValueExact
}

/**
 * The state decimal sum and avg share: the exact [[DecimalSum]] of decimal(`in`) values and their count,
 * and whether the sum overflowed `sumType` (read here, or in a merged state that arrived NULL). Sum and
 * avg differ only in what they evaluate and where the two fields sit in their states.
 */
final class DecimalSumCount(in: DecimalType, sumType: DecimalType, failOnOverflow: Boolean, function: String) {
  private val sum = new DecimalSum(in.scale)
  private var n = 0L
  private var overflowed = false

  def count: Long = n
  def unscaled: BigInteger = sum.unscaled

  def update(args: Values): Unit =
    if (!args.isNullAt(0)) { sum.add(args.getDecimal(0, in.precision, in.scale)); n += 1 }
  def retract(args: Values): Unit =
    if (!args.isNullAt(0)) { sum.subtract(args.getDecimal(0, in.precision, in.scale)); n -= 1 }
  def merge(state: Values, sumField: Int, countField: Int): Unit = {
    val n2 = state.getLong(countField)
    if (n2 > 0) {
      if (state.isNullAt(sumField)) overflowed = true
      else sum.add(state.getDecimal(sumField, sumType.precision, sumType.scale))
      n += n2
    }
  }

  /** A result that does not fit `what`: Spark's error in ANSI mode, else NULL. Only this result: the exact
   *  sum stays, so a sliding frame whose sum fits again (the large rows left) reads it again. */
  def overflow(what: DecimalType): Null = {
    if (failOnOverflow) Overflow.raise(s"${what.simpleString} $function")
    null
  }

  /** The sum as `sumType`, or null when there is none or it does not fit. */
  def checkedSum: Decimal =
    if (overflowed || n == 0) null
    else {
      val d = sum.toDecimal(sumType.precision)
      if (d == null) overflow(sumType) else d
    }

  def size: Long = 48 + sum.size
}

/**
 * [[DecimalSumCount]] for every group: exact unscaled sums in 192 bits (three longs; a value or a merged
 * state's sum has at most 38 digits, under 2^127, so no count of rows or states that fits in memory leaves
 * 192 bits), counts, and a bit for the groups that merged an overflowed state. Values and merged sums are
 * read as their unscaled 128 bits ([[DecimalColumn]]), no Decimal made. Whether a sum fits `sumType`
 * is decided when it is read, as the row accumulator does. Sum and avg differ only in what they evaluate
 * and where the two fields sit in their states.
 */
private[sparkagg] abstract class DecimalSumCountGroups(in: DecimalType, sumType: DecimalType, failOnOverflow: Boolean,
    function: String, countFirst: Boolean)
  extends GroupsAccumulator {
  private val (lo, mid, hi) = (new LongVector, new LongVector, new LongVector)
  private val counts = new LongVector
  private val overflowed = new BitVector
  private val (sumField, countField) = if (countFirst) (1, 0) else (0, 1)

  private def resize(totalGroups: Int): Unit = {
    Seq(lo, mid, hi, counts).foreach(_.resize(totalGroups)); overflowed.resize(totalGroups)
  }

  /** Adds the 128-bit two's complement value (vMid, vLo) to group g's sum. */
  @inline private def add(g: Int, vLo: Long, vMid: Long): Unit = {
    val (l, m) = (lo.array, mid.array)
    val low = l(g) + vLo
    val carry = if (java.lang.Long.compareUnsigned(low, l(g)) < 0) 1L else 0L
    val middle = m(g) + vMid
    val middleCarry = if (java.lang.Long.compareUnsigned(middle, m(g)) < 0) 1L else 0L
    val carried = middle + carry
    hi.array(g) += (vMid >> 63) + middleCarry + (if (java.lang.Long.compareUnsigned(carried, middle) < 0) 1L else 0L)
    l(g) = low
    m(g) = carried
  }

  def updateBatch(values: Columns, groupIndices: Array[Int], filter: Option[Column], totalGroups: Int): Unit = {
    resize(totalGroups)
    val c = counts.array
    val column = DecimalColumn.of(values.column(0), in)
    val f = filter.orNull
    var i = 0
    while (i < values.numRows) {
      if (GroupsAccumulator.keep(f, i) && !column.isNullAt(i)) {
        val g = groupIndices(i)
        add(g, column.low(i), column.high(i))
        c(g) += 1
      }
      i += 1
    }
  }

  def mergeBatch(states: Columns, groupIndices: Array[Int], filter: Option[Column], totalGroups: Int): Unit = {
    resize(totalGroups)
    val c = counts.array
    val (sum, count) = (DecimalColumn.of(states.column(sumField), sumType), states.column(countField))
    val f = filter.orNull
    var i = 0
    while (i < states.numRows) {
      val n = count.getLong(i)
      if (GroupsAccumulator.keep(f, i) && n > 0) {
        val g = groupIndices(i)
        if (sum.isNullAt(i)) overflowed.set(g)
        else add(g, sum.low(i), sum.high(i))
        c(g) += n
      }
      i += 1
    }
  }

  /** The emitted groups' counts and checked sums (NULL: none, or overflowed). A sum that fits a long
   *  becomes its column's value without a BigInteger: at a million groups those were most of the emission. */
  protected final def emitted(emit: EmitTo): (Array[Long], DecimalColumn) = {
    val (l, m, h) = (lo.emit(emit), mid.emit(emit), hi.emit(emit))
    val c = counts.emit(emit)
    val over = overflowed.emit(emit)
    // Lent to the emission's loan, as the vectors' emitted arrays are; zero where a group is NULL.
    def zeros(n: Int) = LargeArrays.lend(LargeArrays.zeroLongs(n))
    val (low, high) = (zeros(c.length), if (DecimalColumn.wide(sumType)) zeros(c.length) else null)
    val validity = zeros(Validity.words(c.length))
    val precision = sumType.precision
    var g = 0
    while (g < c.length) {
      if (c(g) != 0 && (over(g >> 6) & (1L << g)) == 0) {
        val sign = l(g) >> 63
        if (h(g) == sign && m(g) == sign && l(g) != Long.MinValue &&
          (precision > Decimal.MAX_LONG_DIGITS || math.abs(l(g)) < DecimalSum.longPowerOf10(precision))) {
          low(g) = l(g)
          if (high != null) high(g) = sign
          Validity.set(validity, g)
        } else {
          val unscaled = BigInteger.valueOf(h(g)).shiftLeft(128).add(DecimalColumn.unsigned(m(g)).shiftLeft(64))
            .add(DecimalColumn.unsigned(l(g)))
          if (!DecimalSum.fits(unscaled, precision)) overflow(sumType)
          else {
            low(g) = unscaled.longValue // a sum that fits here is wide: a narrow one fitted a long above
            high(g) = unscaled.shiftRight(64).longValue
            Validity.set(validity, g)
          }
        }
      }
      g += 1
    }
    (c, new DecimalColumn(sumType, low, high, validity, c.length))
  }

  /** A result that does not fit `what`: Spark's error in ANSI mode, else NULL. */
  protected final def overflow(what: DecimalType): Null = {
    if (failOnOverflow) Overflow.raise(s"${what.simpleString} $function")
    null
  }

  def state(emit: EmitTo): Array[Column] = {
    val (c, sums) = emitted(emit)
    val fields = Array[Column](sums, new LongColumn(c, null, c.length))
    if (countFirst) fields.reverse else fields
  }

  /** A new, empty accumulator like this one (each row's own state is one row summed alone). */
  protected def fresh(): DecimalSumCountGroups
  override def convertToState(values: Columns, filter: Option[Column]): Array[Column] =
    GroupsAccumulator.statesOfRows(fresh(), values, filter)
  override def supportsConvertToState: Boolean = true

  def size: Long = lo.size + mid.size + hi.size + counts.size + overflowed.size
}

/**
 * Decimal sum and avg states as the operator ships them: the count, then, unless the sum is NULL, its
 * unscaled low 64 bits, then its high 64 bits unless they only extend the sign; 8 to 24 bytes of native
 * longs a state. The fields take 32 bytes of a row (a wide sum's word and its 16 bytes, the count), and
 * a BigInteger on each side to write and read the sum.
 */
private[sparkagg] final class DecimalSumPacking private (sumType: DecimalType, countFirst: Boolean)
  extends StatePacking {
  private val (sumField, countField) = if (countFirst) (1, 0) else (0, 1)

  def pack(states: Array[Column], numRows: Int): Column = {
    val (sums, counts) = (DecimalColumn.of(states(sumField), sumType), states(countField))
    // Recycled and lent to the emission's loan: at a million groups both are humongous.
    val bytes = LargeArrays.lend(LargeArrays.bytes(24 * numRows))
    val offsets = LargeArrays.lentOffsets(numRows)
    var at = Platform.BYTE_ARRAY_OFFSET.toLong
    var r = 0
    while (r < numRows) {
      Platform.putLong(bytes, at, counts.getLong(r))
      at += 8
      if (!sums.isNullAt(r)) {
        Platform.putLong(bytes, at, sums.low(r))
        at += 8
        if (sums.high(r) != sums.low(r) >> 63) { Platform.putLong(bytes, at, sums.high(r)); at += 8 }
      }
      r += 1
      offsets(r) = (at - Platform.BYTE_ARRAY_OFFSET).toInt
    }
    new BinaryColumn(bytes, offsets, null, numRows)
  }

  def unpack(packed: Column): Array[Column] = {
    val states = BinaryColumn.of(packed)
    val n = states.numRows
    val (counts, low) = (new Array[Long](n), new Array[Long](n))
    val high = if (DecimalColumn.wide(sumType)) new Array[Long](n) else null
    val validity = new Array[Long](Validity.words(n))
    def get(at: Int): Long = Platform.getLong(states.bytes, Platform.BYTE_ARRAY_OFFSET + at)
    var r = 0
    while (r < n) {
      val at = states.start(r)
      val size = states.length(r)
      counts(r) = get(at)
      if (size > 8) {
        Validity.set(validity, r)
        low(r) = get(at + 8)
        if (high != null) high(r) = if (size > 16) get(at + 16) else low(r) >> 63
      }
      r += 1
    }
    val fields = Array[Column](new DecimalColumn(sumType, low, high, validity, n), new LongColumn(counts, null, n))
    if (countFirst) fields.reverse else fields
  }
}

private[sparkagg] object DecimalSumPacking {
  /** The packing of states whose sum is of `sumType`: only a wide sum's (a narrow one is a fixed word). */
  def of(sumType: DecimalType, countFirst: Boolean): Option[StatePacking] =
    if (DecimalColumn.wide(sumType)) Some(new DecimalSumPacking(sumType, countFirst)) else None
}
