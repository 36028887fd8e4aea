package sparkagg.functions

import sparkagg.api.{FunctionDoc, Types}

/**
 * kurtosis(x) and kurtosis_pop(x): the excess kurtosis (Fisher's, normal = 0) of the non-NULL values,
 * DataFusion-extra's formulas over central moments: kurtosis corrects for the sample size,
 * (n-1)((n+1) m4 / m2^2 - 3(n-1)) / ((n-2)(n-3)); kurtosis_pop is m4 / m2^2 - 3. NULL when m2 <= 0 (no
 * variation; a NaN m2 gives NaN, as in DataFusion-extra), and for fewer than four values (kurtosis) or
 * none (kurtosis_pop). State: count, mean, m2, m3, m4.
 */
sealed abstract class KurtosisFamily(name: String, sample: Boolean, example: String)
  extends ShapeMomentAggregate(name, fourth = true) {
  val doc = FunctionDoc(
    usage = s"_FUNC_(expr) - The excess kurtosis of the non-NULL values of expr, " +
      (if (sample) "corrected for the sample size." else "without correction (m4 / m2^2 - 3)."),
    arguments = Seq("expr" -> Types.Numeric),
    examples = Seq("SELECT _FUNC_(col) FROM VALUES (1), (2), (2), (3), (10) AS tab(col)" -> example),
    note = if (sample) "n < 4 or no variation: NULL; excess, sample-size corrected"
    else "no variation: NULL; m4 / m2^2 - 3",
    accepts = "numeric",
    result = "double",
    emptyInput = "NULL",
    dataFusion = "not in DataFusion 55",
    nan = "a NaN gives NaN; an infinite value gives NULL (Spark gives NaN)",
    spark = "`kurtosis`: the population excess kurtosis, as df_kurtosis_pop; df_kurtosis corrects for the " +
      "sample size and gives NULL below four values (Spark's gives -1.5 for 1, 2, 4)"
  )

  def result(n: Long, m2: Double, m3: Double, m4: Double): Any =
    if (n < (if (sample) 4 else 1) || m2 <= 0) null
    else {
      val ratio = m4 / (m2 * m2)
      if (sample) (n - 1.0) * ((n + 1.0) * ratio - 3.0 * (n - 1)) / ((n - 2.0) * (n - 3.0)) else ratio - 3.0
    }
}

object Kurtosis extends KurtosisFamily("kurtosis", sample = true, "4.272146531742888")
object KurtosisPop extends KurtosisFamily("kurtosis_pop", sample = false, "0.06803663293572226")
