package sparkagg.udaf

import org.apache.spark.sql.types.{BooleanType, DataType, DoubleType, LongType, StringType}
import sparkagg.functions

// One class per function, for spark.udf.registerJavaUDAF(name, "sparkagg.udaf.<Class>"). Each fixes its
// argument types, to which Spark casts: double for the numeric functions (so min, max, first_value,
// array_agg of numbers), string where any value will do (count, approx_distinct), bigint for the bitwise
// ones. A constant parameter's placeholder only types the result; the rows' own value is used.

private object Udaf {
  def of(t: DataType): UdafArg = UdafArg(t)
  def constant(t: DataType, placeholder: Any): UdafArg = UdafArg(t, Some(placeholder))
  val double: UdafArg = of(DoubleType)
}
import Udaf._

class Count extends AccumulatorUdaf(functions.Count, of(StringType))
class Sum extends AccumulatorUdaf(functions.Sum, double)
class Avg extends AccumulatorUdaf(functions.Avg, double)
class Min extends AccumulatorUdaf(functions.Min, double)
class Max extends AccumulatorUdaf(functions.Max, double)
class BitAnd extends AccumulatorUdaf(functions.BitAnd, of(LongType))
class BitOr extends AccumulatorUdaf(functions.BitOr, of(LongType))
class BitXor extends AccumulatorUdaf(functions.BitXor, of(LongType))
class BoolAnd extends AccumulatorUdaf(functions.BoolAnd, of(BooleanType))
class BoolOr extends AccumulatorUdaf(functions.BoolOr, of(BooleanType))
class VarSamp extends AccumulatorUdaf(functions.VarSamp, double)
class VarPop extends AccumulatorUdaf(functions.VarPop, double)
class Stddev extends AccumulatorUdaf(functions.Stddev, double)
class StddevPop extends AccumulatorUdaf(functions.StddevPop, double)
class Skewness extends AccumulatorUdaf(functions.Skewness, double)
class Kurtosis extends AccumulatorUdaf(functions.Kurtosis, double)
class KurtosisPop extends AccumulatorUdaf(functions.KurtosisPop, double)
class CovarSamp extends AccumulatorUdaf(functions.CovarSamp, double, double)
class CovarPop extends AccumulatorUdaf(functions.CovarPop, double, double)
class Corr extends AccumulatorUdaf(functions.Corr, double, double)
class RegrSlope extends AccumulatorUdaf(functions.RegrSlope, double, double)
class RegrIntercept extends AccumulatorUdaf(functions.RegrIntercept, double, double)
class RegrCount extends AccumulatorUdaf(functions.RegrCount, double, double)
class RegrR2 extends AccumulatorUdaf(functions.RegrR2, double, double)
class RegrAvgx extends AccumulatorUdaf(functions.RegrAvgx, double, double)
class RegrAvgy extends AccumulatorUdaf(functions.RegrAvgy, double, double)
class RegrSxx extends AccumulatorUdaf(functions.RegrSxx, double, double)
class RegrSyy extends AccumulatorUdaf(functions.RegrSyy, double, double)
class RegrSxy extends AccumulatorUdaf(functions.RegrSxy, double, double)
class ArrayAgg extends AccumulatorUdaf(functions.ArrayAgg, double)
class StringAgg extends AccumulatorUdaf(functions.StringAgg, of(StringType), constant(StringType, ","))
class FirstValue extends AccumulatorUdaf(functions.FirstValue, double)
class LastValue extends AccumulatorUdaf(functions.LastValue, double)
class AnyValue extends AccumulatorUdaf(functions.AnyValue, double)
class MaxBy extends AccumulatorUdaf(functions.MaxBy, double, double)
class MinBy extends AccumulatorUdaf(functions.MinBy, double, double)
class NthValue extends AccumulatorUdaf(functions.NthValue, double, constant(LongType, 1L))
class Median extends AccumulatorUdaf(functions.Median, double)
class Mode extends AccumulatorUdaf(functions.Mode, double)
/** percentile_cont(x, p): SQL's percentile_cont(p) WITHIN GROUP (ORDER BY x). */
class PercentileCont extends AccumulatorUdaf(functions.PercentileCont, double, constant(DoubleType, 0.5))
class ApproxPercentileCont extends AccumulatorUdaf(functions.ApproxPercentileCont, double, constant(DoubleType, 0.5))
class ApproxPercentileContWithWeight
  extends AccumulatorUdaf(functions.ApproxPercentileContWithWeight, double, double, constant(DoubleType, 0.5))
class ApproxMedian extends AccumulatorUdaf(functions.ApproxMedian, double)
class ApproxDistinct extends AccumulatorUdaf(functions.ApproxDistinct, of(StringType))
