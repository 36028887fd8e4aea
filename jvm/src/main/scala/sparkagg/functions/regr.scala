package sparkagg.functions

import org.apache.spark.sql.types.{DataType, LongType}
import sparkagg.api.{FunctionDoc, Types}
import sparkagg.common.{CoMoments, Moment}
import sparkagg.common.Moment._

/**
 * The SQL-standard linear regression aggregates of (y, x): pairs where either is NULL are skipped.
 * NULL on empty input; regr_count gives 0. State: count, mean_x, mean_y, m2_x, m2_y, algo_const.
 * Retractable.
 */
sealed abstract class Regression(name: String, usage: String, example: (String, String), note: String = "",
    emptyInput: String = "NULL", dataFusion: String = "yes", sparkDiffers: String = "")
  extends CoMomentAggregate(name, pair = true,
    Seq("count" -> Moment.Count, "mean_x" -> MeanB, "mean_y" -> MeanA,
      "m2_x" -> M2B, "m2_y" -> M2A, "algo_const" -> CoMoment)) {
  val doc = FunctionDoc(
    usage = s"_FUNC_(y, x) - $usage, over the pairs where neither y nor x is NULL.",
    arguments = Seq("y" -> s"the dependent variable: ${Types.Numeric}", "x" -> "the independent variable: same"),
    examples = Seq(example),
    note = note,
    accepts = "numeric pair",
    result = resultType.simpleString,
    emptyInput = emptyInput,
    dataFusion = dataFusion,
    nan = "a pair with a NaN counts as a pair; a NaN in a column the result reads gives NaN (regr_avgx and " +
      "regr_sxx read x alone, regr_avgy and regr_syy y alone)",
    spark = s"`$name` (Spark 3.4+): " + (if (sparkDiffers.isEmpty) "the same results" else sparkDiffers)
  )

  /** A moment-based result, NULL for an empty input. */
  protected def nonEmpty(m: CoMoments)(value: => Double): Any = if (m.n == 0) null else value

  /** The least-squares slope, or NULL where it is undefined (fewer than 2 pairs, constant x). */
  protected def slope(m: CoMoments): Any = if (m.n < 2 || m.m2B == 0) null else m.c / m.m2B
}

private object Example {
  val data = "FROM VALUES (1, 1), (3, 2), (4, 4) AS tab(y, x)"
}

object RegrSlope extends Regression(
    "regr_slope",
    "The slope of the least-squares line",
    s"SELECT _FUNC_(y, x) ${Example.data}" -> "0.9285714285714286",
    note = "NULL pairs skipped, as every regr_"
  ) {
  def result(m: CoMoments): Any = slope(m)
}
object RegrIntercept extends Regression("regr_intercept", "The y-intercept of the least-squares line",
    s"SELECT _FUNC_(y, x) ${Example.data}" -> "0.5") {
  def result(m: CoMoments): Any = slope(m) match {
    case null => null
    case s: Double => m.meanA - s * m.meanB
  }
}
object RegrCount extends Regression("regr_count", "The number of pairs",
    s"SELECT _FUNC_(y, x) ${Example.data}" -> "3", emptyInput = "0") {
  override def resultType: DataType = LongType
  override def resultNullable: Boolean = false
  def result(m: CoMoments): Any = m.n
}
/** NULL for constant y as well as constant x, as DataFusion does (PostgreSQL and Spark give 1.0 there). */
object RegrR2 extends Regression(
    "regr_r2",
    "The coefficient of determination of the least-squares line",
    s"SELECT _FUNC_(y, x) ${Example.data}" -> "0.8622448979591837",
    sparkDiffers = "the same, except for a constant y, where Spark gives 1.0 and this NULL"
  ) {
  def result(m: CoMoments): Any =
    if (m.n < 2 || m.m2B == 0 || m.m2A == 0) null else m.c * m.c / (m.m2B * m.m2A)
}
object RegrAvgx extends Regression(
    "regr_avgx",
    "The mean of x",
    s"SELECT _FUNC_(y, x) ${Example.data}" -> "2.3333333333333335",
    note = "avg of x over the pairs",
    dataFusion = "deviation: infinities"
  ) {
  def result(m: CoMoments): Any = nonEmpty(m)(m.meanB)
}
object RegrAvgy extends Regression(
    "regr_avgy",
    "The mean of y",
    s"SELECT _FUNC_(y, x) ${Example.data}" -> "2.6666666666666665",
    note = "avg of y over the pairs",
    dataFusion = "deviation: infinities"
  ) {
  def result(m: CoMoments): Any = nonEmpty(m)(m.meanA)
}
object RegrSxx extends Regression("regr_sxx", "The sum of squares of x's deviations from its mean",
    s"SELECT _FUNC_(y, x) ${Example.data}" -> "4.666666666666667") {
  def result(m: CoMoments): Any = nonEmpty(m)(m.m2B)
}
object RegrSyy extends Regression("regr_syy", "The sum of squares of y's deviations from its mean",
    s"SELECT _FUNC_(y, x) ${Example.data}" -> "4.666666666666667") {
  def result(m: CoMoments): Any = nonEmpty(m)(m.m2A)
}
object RegrSxy extends Regression("regr_sxy", "The sum of products of x's and y's deviations from their means",
    s"SELECT _FUNC_(y, x) ${Example.data}" -> "4.333333333333333") {
  def result(m: CoMoments): Any = nonEmpty(m)(m.c)
}
