package sparkagg.functions

import sparkagg.api.FunctionDoc
import sparkagg.common.{CoMoments, Moment}
import sparkagg.common.Moment._

/**
 * var_samp (var, var_sample), var_pop (var_population), stddev (stddev_samp), stddev_pop: numeric
 * arguments as double; NULL on empty input; with one value the sample forms are NULL and the
 * population forms 0. State: count, mean, m2 (Welford). Retractable.
 */
sealed abstract class VarianceFamily(name: String, sample: Boolean, root: Boolean, example: (String, String))
  extends CoMomentAggregate(name, pair = false, Seq("count" -> Moment.Count, "mean" -> MeanA, "m2" -> M2A)) {
  val doc = FunctionDoc(
    usage = s"_FUNC_(expr) - The ${if (sample) "sample" else "population"} " +
      s"${if (root) "standard deviation" else "variance"} of the non-NULL values of expr.",
    arguments = Seq("expr" -> sparkagg.api.Types.Numeric),
    examples = Seq(example),
    note = s"n = 1: ${if (sample) "NULL" else "0"}",
    accepts = "numeric",
    result = "double",
    emptyInput = "NULL",
    dataFusion = "yes",
    nan = "any NaN gives NaN",
    spark = s"`$name`: the same results, one row included"
  )

  def result(m: CoMoments): Any = {
    val denominator = if (sample) m.n - 1 else m.n
    if (denominator <= 0) { if (!sample && m.n == 1) 0.0 else null }
    else { val v = m.m2A / denominator; if (root) math.sqrt(v) else v }
  }
}

object VarSamp extends VarianceFamily("var_samp", sample = true, root = false,
    "SELECT _FUNC_(col) FROM VALUES (1), (2), (3), (4) AS tab(col)" -> "1.6666666666666667") {
  override val aliases = Seq("var", "var_sample")
}
object VarPop extends VarianceFamily("var_pop", sample = false, root = false,
    "SELECT _FUNC_(col) FROM VALUES (1), (2), (3), (4) AS tab(col)" -> "1.25") {
  override val aliases = Seq("var_population")
}
object Stddev extends VarianceFamily("stddev", sample = true, root = true,
    "SELECT _FUNC_(col) FROM VALUES (2), (4), (4), (4), (5), (5), (7), (9) AS tab(col)" -> "2.138089935299395") {
  override val aliases = Seq("stddev_samp")
}
object StddevPop extends VarianceFamily("stddev_pop", sample = false, root = true,
    "SELECT _FUNC_(col) FROM VALUES (2), (4), (4), (4), (5), (5), (7), (9) AS tab(col)" -> "2.0")
