package sparkagg.common

/**
 * The shared algebra of variance, standard deviation, covariance, correlation and the regr family (as
 * Spark's CentralMomentAgg is for its own): the count, means, second moments and co-moment of one
 * argument `a` or a pair `(a, b)`, updated with Welford's method, merged with Chan's formula and
 * retracted by running Welford backwards. Welford keeps data with a large common offset exact where a
 * sum-of-squares formula cancels catastrophically.
 *
 * The moments of a set of groups, one array per moment with group g's at index g: the row accumulator
 * holds one group (arrays of length 1), the grouped one its GroupVectors' arrays. Both run the same
 * functions of the companion on them, as DataFusion's variance.rs does over (count, mean, m2), so their
 * states and results are equal to the bit. One argument leaves the B side and the co-moment null. `at`
 * is the group the accessors read, for the functions' `result`.
 */
final class CoMoments(val ns: Array[Long], val meanAs: Array[Double], val m2As: Array[Double],
    val meanBs: Array[Double], val m2Bs: Array[Double], val cs: Array[Double]) {
  var at = 0

  def pair: Boolean = meanBs != null
  def groups: Int = ns.length

  def n: Long = ns(at)
  def meanA: Double = meanAs(at)
  def m2A: Double = m2As(at)
  def meanB: Double = if (pair) meanBs(at) else 0.0
  def m2B: Double = if (pair) m2Bs(at) else 0.0
  def c: Double = if (pair) cs(at) else 0.0
}

object CoMoments {
  /** Moments of `groups` empty groups. */
  def empty(pair: Boolean, groups: Int): CoMoments = {
    def doubles = if (pair) new Array[Double](groups) else null
    new CoMoments(new Array[Long](groups), new Array[Double](groups), new Array[Double](groups), doubles, doubles,
      doubles)
  }

  /**
   * The mean of values among which a NaN or an infinity is: what IEEE's sum over the count gives, which
   * does not depend on the order (NaN with a NaN or with infinities of both signs, else the infinity).
   * Welford's step would give NaN for an infinity followed by a finite value (inf - inf), and inf the
   * other way round. `x` and `y` are means or values, at least one not finite.
   */
  @inline private def nonFiniteMean(x: Double, y: Double): Double =
    if (java.lang.Double.isFinite(x)) y else if (java.lang.Double.isFinite(y)) x else x + y

  @inline private def finite(x: Double, y: Double): Boolean =
    java.lang.Double.isFinite(x) && java.lang.Double.isFinite(y)

  /** Welford's step: group g takes `a`. A NaN or infinity makes m2 NaN and the mean IEEE's. */
  @inline def add(m: CoMoments, g: Int, a: Double): Unit = {
    val n = m.ns; val meanA = m.meanAs; val m2A = m.m2As
    n(g) += 1
    if (finite(a, meanA(g))) {
      val da = a - meanA(g)
      meanA(g) += da / n(g)
      m2A(g) += da * (a - meanA(g))
    } else { meanA(g) = nonFiniteMean(meanA(g), a); m2A(g) = Double.NaN }
  }

  /** Welford's step: group g takes the pair `(a, b)`; each side as [[add]] one value, the co-moment NaN
   *  once either side holds a NaN or infinity. */
  @inline def add(m: CoMoments, g: Int, a: Double, b: Double): Unit = {
    val n = m.ns; val meanA = m.meanAs; val m2A = m.m2As; val meanB = m.meanBs; val m2B = m.m2Bs; val c = m.cs
    n(g) += 1
    if (finite(a, meanA(g)) && finite(b, meanB(g))) {
      val da = a - meanA(g)
      val db = b - meanB(g)
      meanA(g) += da / n(g)
      meanB(g) += db / n(g)
      m2A(g) += da * (a - meanA(g))
      m2B(g) += db * (b - meanB(g))
      c(g) += da * (b - meanB(g))
    } else {
      for ((mean, m2, v) <- Seq((meanA, m2A, a), (meanB, m2B, b)))
        if (finite(v, mean(g))) { val d = v - mean(g); mean(g) += d / n(g); m2(g) += d * (v - mean(g)) }
        else { mean(g) = nonFiniteMean(mean(g), v); m2(g) = Double.NaN }
      c(g) = Double.NaN
    }
  }

  /** Welford's step backwards: group g gives `a` back (false: it held one value and is now empty). A
   *  mean holding a NaN or infinity is left as it is: the accumulator that retracts counts those values
   *  and mends it (Welford cannot run them backwards). */
  @inline def remove(m: CoMoments, g: Int, a: Double): Boolean = {
    val n = m.ns; val meanA = m.meanAs; val m2A = m.m2As
    if (n(g) <= 1) { clear(m, g); false }
    else {
      n(g) -= 1
      if (finite(a, meanA(g))) {
        val previousMeanA = meanA(g) - (a - meanA(g)) / n(g)
        m2A(g) -= (a - previousMeanA) * (a - meanA(g))
        meanA(g) = previousMeanA
      }
      true
    }
  }

  /** Welford's step backwards: group g gives the pair `(a, b)` back (false: it is now empty); a side
   *  holding a NaN or infinity as [[remove]] leaves it. */
  @inline def remove(m: CoMoments, g: Int, a: Double, b: Double): Boolean = {
    val n = m.ns; val meanA = m.meanAs; val m2A = m.m2As; val meanB = m.meanBs; val m2B = m.m2Bs; val c = m.cs
    if (n(g) <= 1) { clear(m, g); false }
    else {
      n(g) -= 1
      val finiteA = finite(a, meanA(g))
      val finiteB = finite(b, meanB(g))
      val previousMeanA = meanA(g) - (a - meanA(g)) / n(g)
      val previousMeanB = meanB(g) - (b - meanB(g)) / n(g)
      if (finiteA && finiteB) c(g) -= (a - previousMeanA) * (b - meanB(g))
      if (finiteA) { m2A(g) -= (a - previousMeanA) * (a - meanA(g)); meanA(g) = previousMeanA }
      if (finiteB) { m2B(g) -= (b - previousMeanB) * (b - meanB(g)); meanB(g) = previousMeanB }
      true
    }
  }

  /**
   * Chan et al.'s pairwise combination of group g with other moments, which must hold `n2 > 0` values
   * (the B side is ignored for one argument).
   */
  @inline def merge(m: CoMoments, g: Int, n2: Long, meanA2: Double, m2A2: Double, meanB2: Double, m2B2: Double,
      c2: Double): Unit = {
    val n = m.ns; val meanA = m.meanAs; val m2A = m.m2As; val meanB = m.meanBs; val m2B = m.m2Bs; val c = m.cs
    val n1 = n(g)
    if (n1 == 0) {
      n(g) = n2; meanA(g) = meanA2; m2A(g) = m2A2
      if (meanB != null) { meanB(g) = meanB2; m2B(g) = m2B2; c(g) = c2 }
    } else {
      // A side holding a NaN or infinity takes IEEE's mean, and NaN moments.
      val total = n1 + n2
      val da = meanA2 - meanA(g)
      val weight = n1.toDouble * n2 / total
      val finiteA = finite(meanA(g), meanA2)
      if (finiteA) { meanA(g) += da * n2 / total; m2A(g) += m2A2 + da * da * weight }
      else { meanA(g) = nonFiniteMean(meanA(g), meanA2); m2A(g) = Double.NaN }
      if (meanB != null) {
        val db = meanB2 - meanB(g)
        val finiteB = finite(meanB(g), meanB2)
        if (finiteB) { meanB(g) += db * n2 / total; m2B(g) += m2B2 + db * db * weight }
        else { meanB(g) = nonFiniteMean(meanB(g), meanB2); m2B(g) = Double.NaN }
        c(g) = if (finiteA && finiteB) c(g) + c2 + da * db * weight else Double.NaN
      }
      n(g) = total
    }
  }

  private def clear(m: CoMoments, g: Int): Unit = {
    m.ns(g) = 0; m.meanAs(g) = 0; m.m2As(g) = 0
    if (m.pair) { m.meanBs(g) = 0; m.m2Bs(g) = 0; m.cs(g) = 0 }
  }
}
/** One of the moments, as a function names it in its state (DataFusion's field names). */
sealed trait Moment { def read(m: CoMoments): Any }
object Moment {
  case object Count extends Moment { def read(m: CoMoments): Any = m.n }
  case object MeanA extends Moment { def read(m: CoMoments): Any = m.meanA }
  case object MeanB extends Moment { def read(m: CoMoments): Any = m.meanB }
  case object M2A extends Moment { def read(m: CoMoments): Any = m.m2A }
  case object M2B extends Moment { def read(m: CoMoments): Any = m.m2B }
  case object CoMoment extends Moment { def read(m: CoMoments): Any = m.c }
}
