package sparkagg.common

import org.apache.spark.sql.types._

/**
 * The shared algebra of skewness, kurtosis and kurtosis_pop: the count, mean and central moment sums M2,
 * M3 (and M4 for kurtosis) of one argument, for a set of groups (one array per moment, group g's at
 * index g; the row accumulator holds one group). The count, mean and M2 are [[CoMoments]] of one argument,
 * which variance keeps, by its steps (Welford's to add, Chan's to merge, a NaN or infinity making M2 NaN);
 * M3 and M4 follow from those before each step, by Welford's step extended to the higher moments and
 * Pébay's pairwise formulas. DataFusion-extra keeps sums of powers instead, which cancel when the values
 * share an offset: it gives six 0.1s a skewness of -1.1e8 where the answer is NULL (no variation).
 * sparkagg gives DataFusion-extra's formulas over these moments: its results where the data is well
 * conditioned, and the right ones where it is not.
 */
final class ShapeMoments(val base: CoMoments, val m3s: Array[Double], val m4s: Array[Double]) {
  def groups: Int = base.groups
  def counts: Array[Long] = base.ns
  def means: Array[Double] = base.meanAs
  def m2s: Array[Double] = base.m2As
  /** Whether the fourth moment is kept (kurtosis); skewness keeps up to the third. */
  def fourth: Boolean = m4s != null
}

object ShapeMoments {
  def apply(counts: Array[Long], means: Array[Double], m2s: Array[Double], m3s: Array[Double],
      m4s: Array[Double]): ShapeMoments =
    new ShapeMoments(new CoMoments(counts, means, m2s, null, null, null), m3s, m4s)

  def empty(fourth: Boolean, groups: Int): ShapeMoments =
    new ShapeMoments(CoMoments.empty(pair = false, groups), new Array[Double](groups),
      if (fourth) new Array[Double](groups) else null)

  /** Group g takes the value `x`. */
  @inline def add(m: ShapeMoments, g: Int, x: Double): Unit = {
    val n1 = m.counts(g).toDouble
    val n = n1 + 1
    val delta = x - m.means(g)
    val deltaN = delta / n
    val term = delta * deltaN * n1
    if (m.fourth) {
      m.m4s(g) += term * deltaN * deltaN * (n * n - 3 * n + 3) + 6 * deltaN * deltaN * m.m2s(g) - 4 * deltaN * m.m3s(g)
    }
    m.m3s(g) += term * deltaN * (n - 2) - 3 * deltaN * m.m2s(g)
    CoMoments.add(m.base, g, x)
  }

  /** Group g takes another state's moments, which hold `nb` > 0 values. */
  @inline def merge(m: ShapeMoments, g: Int, nb: Long, meanB: Double, m2b: Double, m3b: Double, m4b: Double): Unit = {
    val na = m.counts(g).toDouble
    if (na == 0) {
      m.m3s(g) = m3b
      if (m.fourth) m.m4s(g) = m4b
    } else {
      val b = nb.toDouble
      val n = na + b
      val delta = meanB - m.means(g)
      val (m2a, m3a) = (m.m2s(g), m.m3s(g))
      if (m.fourth) {
        m.m4s(g) += m4b + delta * delta * delta * delta * na * b * (na * na - na * b + b * b) / (n * n * n) +
          6 * delta * delta * (na * na * m2b + b * b * m2a) / (n * n) + 4 * delta * (na * m3b - b * m3a) / n
      }
      m.m3s(g) += m3b + delta * delta * delta * na * b * (na - b) / (n * n) + 3 * delta * (na * m2b - b * m2a) / n
    }
    CoMoments.merge(m.base, g, nb, meanB, m2b, 0.0, 0.0, 0.0)
  }

  /** The state fields: count, mean, m2, m3 (and m4). */
  def schema(fourth: Boolean): StructType = StructType(
    StructField("count", LongType, nullable = false) +:
      (Seq("mean", "m2", "m3") ++ (if (fourth) Seq("m4") else Nil)).map(StructField(_, DoubleType, nullable = false)))
}
