package sparkagg.common

import java.math.{BigDecimal => JBigDecimal, BigInteger}

import org.apache.spark.sql.types.{Decimal, DecimalType}
import sparkagg.api.{Overflow, Values}

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
    if (unscaled.abs.compareTo(BigInteger.TEN.pow(precision)) >= 0) null
    else Decimal(new JBigDecimal(unscaled, scale), precision, scale)
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

  /** A result that does not fit `what`: Spark's error in ANSI mode, else NULL, now and from now on. */
  def overflow(what: DecimalType): Null = {
    if (failOnOverflow) Overflow.raise(s"${what.simpleString} $function")
    overflowed = true
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
