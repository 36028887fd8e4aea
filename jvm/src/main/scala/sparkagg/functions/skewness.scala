package sparkagg.functions

import sparkagg.api.{FunctionDoc, Types}

/**
 * skewness(x): the sample skewness of the non-NULL values, adjusted for the sample size, DataFusion-extra's
 * formula sqrt(n(n-1)) / (n-2) * m3 / m2^1.5 over central moments. NULL for fewer than three values and
 * when m2 is not positive (no variation) or NaN (a NaN or infinite value: DataFusion-extra's max(0) takes
 * NaN to 0, and 0 to NULL). State: count, mean, m2, m3.
 */
object Skewness extends ShapeMomentAggregate("skewness", fourth = false) {
  val doc = FunctionDoc(
    usage = "_FUNC_(expr) - The sample skewness of the non-NULL values of expr, adjusted for the sample size.",
    arguments = Seq("expr" -> Types.Numeric),
    examples = Seq("SELECT _FUNC_(col) FROM VALUES (1), (2), (2), (10) AS tab(col)" -> "1.9225217141412747"),
    note = "n < 3 or no variation: NULL; sample-size adjusted",
    accepts = "numeric",
    result = "double",
    emptyInput = "NULL",
    dataFusion = "not in DataFusion 55",
    nan = "a NaN or an infinite value gives NULL (Spark gives NaN)",
    spark = "`skewness`: the same on three or more finite values; for two values Spark gives 0.0 where this " +
      "gives NULL"
  )

  def result(n: Long, m2: Double, m3: Double, m4: Double): Any =
    if (n <= 2 || !(m2 > 0)) null
    else math.sqrt(n.toDouble * (n - 1)) / (n - 2) * m3 / math.sqrt(m2 * m2 * m2)
}
