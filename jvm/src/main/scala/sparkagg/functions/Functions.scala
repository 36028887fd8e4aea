package sparkagg.functions

import sparkagg.api.FunctionDef

/**
 * A family of functions: the file of functions/ that defines them (`name`, without ".scala"), and the
 * title of its page in the function reference.
 */
final case class Family(name: String, title: String, functions: Seq[FunctionDef])

/** Every function sparkagg registers, in one place, by family; each family's file defines its own. */
object Functions {
  val families: Seq[Family] = Seq(
    Family("count", "Counting", Seq(Count)),
    Family("sum", "Sum", Seq(Sum)),
    Family("average", "Average", Seq(Avg)),
    Family("min_max", "Minimum and maximum", Seq(Min, Max)),
    Family("bitwise", "Bitwise aggregates", Seq(BitAnd, BitOr, BitXor)),
    Family("boolean", "Boolean aggregates", Seq(BoolAnd, BoolOr)),
    Family("variance", "Variance and standard deviation", Seq(VarSamp, VarPop, Stddev, StddevPop)),
    Family("skewness", "Skewness", Seq(Skewness)),
    Family("kurtosis", "Kurtosis", Seq(Kurtosis, KurtosisPop)),
    Family("covariance", "Covariance", Seq(CovarSamp, CovarPop)),
    Family("correlation", "Correlation", Seq(Corr)),
    Family(
      "regr",
      "Linear regression",
      Seq(RegrSlope, RegrIntercept, RegrCount, RegrR2, RegrAvgx, RegrAvgy, RegrSxx, RegrSyy, RegrSxy)),
    Family("array_agg", "Arrays", Seq(ArrayAgg)),
    Family("string_agg", "String concatenation", Seq(StringAgg)),
    Family("first_last", "First, last and any value", Seq(FirstValue, LastValue, AnyValue)),
    Family("nth_value", "The n-th value", Seq(NthValue)),
    Family("max_min_by", "Value at the largest or smallest key", Seq(MaxBy, MinBy)),
    Family("median", "Median", Seq(Median)),
    Family("mode", "Mode", Seq(Mode)),
    Family("percentile", "Exact percentiles", Seq(PercentileCont)),
    Family(
      "approx_percentile",
      "Approximate percentiles",
      Seq(ApproxPercentileCont, ApproxPercentileContWithWeight, ApproxMedian)),
    Family("approx_distinct", "Approximate distinct count", Seq(ApproxDistinct))
  )

  val all: Seq[FunctionDef] = families.flatMap(_.functions)

  def byName(name: String): Option[FunctionDef] =
    all.find(f => f.name == name || f.aliases.contains(name))
}
