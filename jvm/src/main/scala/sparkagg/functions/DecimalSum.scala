package sparkagg.functions

import java.math.{BigDecimal => JBigDecimal, BigInteger}

import org.apache.spark.sql.types.Decimal

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
