package sparkagg.udf

import org.apache.spark.sql.Row
import org.apache.spark.sql.api.java.UDF1
import org.apache.spark.sql.catalyst.{CatalystTypeConverters, InternalRow}
import org.apache.spark.sql.types.StructType
import sparkagg.api.{Accumulator, BindContext, FunctionDef}
import sparkagg.common.StateShapes
import sparkagg.catalyst.RowValues
import sparkagg.functions._

/**
 * Java UDF classes that evaluate one stored state, for `spark.udf.registerJavaFunction` (PySpark's way
 * to register JVM functions by class name):
 * {{{
 *   spark.udf.registerJavaFunction("var_final", "sparkagg.udf.VarSampFinalize")
 *   spark.udf.registerJavaFunction("avg_final", "sparkagg.udf.AvgFinalize", "double")
 * }}}
 * Functions whose result type is fixed (double, bigint, boolean) declare it; those whose result type
 * follows the argument (sum, avg, min, max, bit_*, array_agg, median, mode, any_value, max_by, min_by) need the return
 * type passed, and registering them without it fails, saying which to pass.
 * The SQL function `df_<name>_finalize` does the same with the type inferred.
 */
abstract class FinalizeUdf[R](function: FunctionDef) extends Serializable {
  @transient private var schema: StructType = _
  @transient private var evaluate: Row => Any = _

  /** UDF1.call: each class names UDF1 among its own interfaces, as registerJavaFunction requires. */
  def call(state: Row): R =
    (if (state == null) null
     else {
       if (state.schema != schema) bind(state.schema)
       evaluate(state)
     }).asInstanceOf[R]

  private def bind(stateSchema: StructType): Unit = {
    val ctx = BindContext(failOnOverflow = true)
    val args = StateShapes.argumentsFor(function, stateSchema, ctx).getOrElse(
      throw new IllegalArgumentException(
        s"${getClass.getSimpleName}: ${stateSchema.simpleString} is not a state of ${function.name}"))
    val call = sparkagg.catalyst.Call(function, getClass.getName, args, ctx)
    val bound = call.bound
    val toInternal = CatalystTypeConverters.createToCatalystConverter(stateSchema)
    val toExternal = CatalystTypeConverters.createToScalaConverter(bound.returnType)
    val view = new RowValues
    evaluate = (row: Row) => {
      val acc: Accumulator = bound.newAccumulator()
      view.row = toInternal(row).asInstanceOf[InternalRow]
      call.mergeGiven(acc, view)
      toExternal(sparkagg.catalyst.CatalystValues.toCatalyst(acc.evaluate(), bound.returnType))
    }
    schema = stateSchema
  }
}

// Result types: java.lang.Double and java.lang.Long are inferred by registerJavaFunction; a *Result class
// (the result follows the state, ResultTypes.scala) makes registering without the return type fail at once.
class CountFinalize extends FinalizeUdf[java.lang.Long](Count) with UDF1[Row, java.lang.Long]
class SumFinalize extends FinalizeUdf[SumResult](Sum) with UDF1[Row, SumResult]
class AvgFinalize extends FinalizeUdf[AvgResult](Avg) with UDF1[Row, AvgResult]
class MinFinalize extends FinalizeUdf[MinResult](Min) with UDF1[Row, MinResult]
class MaxFinalize extends FinalizeUdf[MaxResult](Max) with UDF1[Row, MaxResult]
class BitAndFinalize extends FinalizeUdf[BitAndResult](BitAnd) with UDF1[Row, BitAndResult]
class BitOrFinalize extends FinalizeUdf[BitOrResult](BitOr) with UDF1[Row, BitOrResult]
class BitXorFinalize extends FinalizeUdf[BitXorResult](BitXor) with UDF1[Row, BitXorResult]
class BoolAndFinalize extends FinalizeUdf[java.lang.Boolean](BoolAnd) with UDF1[Row, java.lang.Boolean]
class BoolOrFinalize extends FinalizeUdf[java.lang.Boolean](BoolOr) with UDF1[Row, java.lang.Boolean]
class VarSampFinalize extends FinalizeUdf[java.lang.Double](VarSamp) with UDF1[Row, java.lang.Double]
class VarPopFinalize extends FinalizeUdf[java.lang.Double](VarPop) with UDF1[Row, java.lang.Double]
class StddevFinalize extends FinalizeUdf[java.lang.Double](Stddev) with UDF1[Row, java.lang.Double]
class StddevPopFinalize extends FinalizeUdf[java.lang.Double](StddevPop) with UDF1[Row, java.lang.Double]
class SkewnessFinalize extends FinalizeUdf[java.lang.Double](Skewness) with UDF1[Row, java.lang.Double]
class KurtosisFinalize extends FinalizeUdf[java.lang.Double](Kurtosis) with UDF1[Row, java.lang.Double]
class KurtosisPopFinalize extends FinalizeUdf[java.lang.Double](KurtosisPop) with UDF1[Row, java.lang.Double]
class CovarSampFinalize extends FinalizeUdf[java.lang.Double](CovarSamp) with UDF1[Row, java.lang.Double]
class CovarPopFinalize extends FinalizeUdf[java.lang.Double](CovarPop) with UDF1[Row, java.lang.Double]
class CorrFinalize extends FinalizeUdf[java.lang.Double](Corr) with UDF1[Row, java.lang.Double]
class RegrSlopeFinalize extends FinalizeUdf[java.lang.Double](RegrSlope) with UDF1[Row, java.lang.Double]
class RegrInterceptFinalize extends FinalizeUdf[java.lang.Double](RegrIntercept) with UDF1[Row, java.lang.Double]
class RegrCountFinalize extends FinalizeUdf[java.lang.Long](RegrCount) with UDF1[Row, java.lang.Long]
class RegrR2Finalize extends FinalizeUdf[java.lang.Double](RegrR2) with UDF1[Row, java.lang.Double]
class RegrAvgxFinalize extends FinalizeUdf[java.lang.Double](RegrAvgx) with UDF1[Row, java.lang.Double]
class RegrAvgyFinalize extends FinalizeUdf[java.lang.Double](RegrAvgy) with UDF1[Row, java.lang.Double]
class RegrSxxFinalize extends FinalizeUdf[java.lang.Double](RegrSxx) with UDF1[Row, java.lang.Double]
class RegrSyyFinalize extends FinalizeUdf[java.lang.Double](RegrSyy) with UDF1[Row, java.lang.Double]
class RegrSxyFinalize extends FinalizeUdf[java.lang.Double](RegrSxy) with UDF1[Row, java.lang.Double]
class ArrayAggFinalize extends FinalizeUdf[ArrayAggResult](ArrayAgg) with UDF1[Row, ArrayAggResult]
class AnyValueFinalize extends FinalizeUdf[AnyValueResult](AnyValue) with UDF1[Row, AnyValueResult]
class MaxByFinalize extends FinalizeUdf[MaxByResult](MaxBy) with UDF1[Row, MaxByResult]
class MinByFinalize extends FinalizeUdf[MinByResult](MinBy) with UDF1[Row, MinByResult]
class MedianFinalize extends FinalizeUdf[MedianResult](Median) with UDF1[Row, MedianResult]
class ModeFinalize extends FinalizeUdf[ModeResult](Mode) with UDF1[Row, ModeResult]
// string_agg has none: its delimiter is not in its state; df_string_agg_finalize(state, delimiter) is.
