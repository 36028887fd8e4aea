package sparkagg.functions

import sparkagg.api.FunctionDoc
import sparkagg.common.{CoMoments, Moment}
import sparkagg.common.Moment._

/**
 * covar_samp (covar) and covar_pop of (y, x), numeric as double; pairs with a NULL skipped; NULL on
 * empty input; with one pair covar_samp is NULL and covar_pop 0. State: count, mean1, mean2,
 * algo_const (the co-moment). Retractable (DataFusion is not: sparkagg runs Welford backwards).
 */
sealed abstract class Covariance(name: String, sample: Boolean, example: (String, String))
  extends CoMomentAggregate(name, pair = true,
    Seq("count" -> Moment.Count, "mean1" -> MeanA, "mean2" -> MeanB, "algo_const" -> CoMoment)) {
  val doc = FunctionDoc(
    usage = s"_FUNC_(y, x) - The ${if (sample) "sample" else "population"} covariance of the pairs " +
      "where neither is NULL.",
    arguments = Seq("y" -> sparkagg.api.Types.Numeric, "x" -> sparkagg.api.Types.Numeric),
    examples = Seq(example),
    note = "NULL pairs skipped; retracts (DataFusion's does not)",
    accepts = "numeric pair",
    result = "double",
    emptyInput = "NULL",
    dataFusion = "yes",
    nan = "a NaN in either column gives NaN",
    spark = s"`$name`: the same results"
  )

  def result(m: CoMoments): Any = {
    val denominator = if (sample) m.n - 1 else m.n
    if (denominator <= 0) { if (!sample && m.n == 1) 0.0 else null }
    else m.c / denominator
  }
}

object CovarSamp extends Covariance("covar_samp", sample = true,
    "SELECT _FUNC_(y, x) FROM VALUES (1, 1), (2, 3), (4, 5) AS tab(y, x)" -> "3.0") {
  override val aliases = Seq("covar")
}
object CovarPop extends Covariance("covar_pop", sample = false,
    "SELECT _FUNC_(y, x) FROM VALUES (1, 1), (2, 3), (4, 5) AS tab(y, x)" -> "2.0")
