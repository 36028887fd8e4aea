package sparkagg.functions

import sparkagg.api.FunctionDoc
import sparkagg.common.{CoMoments, Moment}
import sparkagg.common.Moment._

/**
 * corr(y, x): Pearson's correlation coefficient of the pairs where neither is NULL, as double. NULL
 * with fewer than two pairs (DataFusion 51's rule; 50 gave 0.0 for one) and when either variance is 0.
 * State: count, mean1, m2_1, mean2, m2_2, algo_const. Retractable.
 */
object Corr extends CoMomentAggregate("corr", pair = true,
    Seq("count" -> Moment.Count, "mean1" -> MeanA,
      "m2_1" -> M2A, "mean2" -> MeanB, "m2_2" -> M2B, "algo_const" -> CoMoment)) {
  val doc = FunctionDoc(
    usage = "_FUNC_(y, x) - Pearson's correlation coefficient of the pairs where neither is NULL.",
    arguments = Seq("y" -> sparkagg.api.Types.Numeric, "x" -> sparkagg.api.Types.Numeric),
    examples = Seq("SELECT _FUNC_(y, x) FROM VALUES (1, 2), (2, 4), (3, 7) AS tab(y, x)" -> "0.9933992677987828"),
    note = "n < 2 or zero variance: NULL; retracts (DataFusion's does not)",
    accepts = "numeric pair",
    result = "double",
    emptyInput = "NULL",
    dataFusion = "deviation: NaN in one column",
    nan = "a NaN in either column gives NaN",
    spark = "`corr`: the same results, NULL for fewer than two pairs or a constant column alike"
  )

  def result(m: CoMoments): Any =
    if (m.n < 2 || m.m2A == 0 || m.m2B == 0) null else m.c / math.sqrt(m.m2A * m.m2B)
}
