package sparkagg.functions

import sparkagg.api.FunctionDef

/** Every function sparkagg registers, in one place; each family's file defines its own. */
object Functions {
  val all: Seq[FunctionDef] = Seq(
    Count,
    Sum,
    Avg,
    Min,
    Max,
    BitAnd,
    BitOr,
    BitXor,
    BoolAnd,
    BoolOr,
    VarSamp,
    VarPop,
    Stddev,
    StddevPop,
    Skewness,
    Kurtosis,
    KurtosisPop,
    CovarSamp,
    CovarPop,
    Corr,
    RegrSlope,
    RegrIntercept,
    RegrCount,
    RegrR2,
    RegrAvgx,
    RegrAvgy,
    RegrSxx,
    RegrSyy,
    RegrSxy,
    ArrayAgg,
    StringAgg,
    FirstValue,
    LastValue,
    AnyValue,
    NthValue,
    MaxBy,
    MinBy,
    Median,
    Mode,
    PercentileCont,
    ApproxPercentileCont,
    ApproxPercentileContWithWeight,
    ApproxMedian,
    ApproxDistinct
  )

  def byName(name: String): Option[FunctionDef] =
    all.find(f => f.name == name || f.aliases.contains(name))
}
