package sparkagg.udf

import org.apache.spark.sql.types.{DataType, SQLUserDefinedType, UserDefinedType}
import sparkagg.api.FunctionDef
import sparkagg.functions._

/**
 * The declared results of the finalize classes whose result type follows the state (sum, avg, min, max,
 * bit_*, array_agg, median, mode, any_value, max_by, min_by). `registerJavaFunction` without a return type infers one
 * from the class's `UDF1` result type: from Object it infers `struct<>`, which registers and then fails inside the
 * first job. For a class annotated `@SQLUserDefinedType` the inference makes that UDT, so each result class here
 * is its own UDT and refuses to be made: registration fails at once, naming the type to pass. With the
 * type passed Spark never looks at these classes (the values returned are Double, BigDecimal, ...).
 */
abstract class ResultTypeRequired(udfClass: Class[_], function: FunctionDef, example: String)
  extends UserDefinedType[AnyRef] {
  throw new UnsupportedOperationException(
    s"${udfClass.getName} returns what df_${function.name}_finalize returns for the state, whose type follows " +
      s"the values that made it (${function.name}: ${function.signature}), so registerJavaFunction cannot " +
      s"infer it: pass it as the third argument, e.g. spark.udf.registerJavaFunction(" +
      s""""${function.name}_final", "${udfClass.getName}", "$example")""")

  // Never reached: the constructor throws.
  override def sqlType: DataType = ???
  override def serialize(obj: AnyRef): Any = ???
  override def deserialize(datum: Any): AnyRef = ???
  override def userClass: Class[AnyRef] = ???
}

@SQLUserDefinedType(udt = classOf[SumResult])
final class SumResult extends ResultTypeRequired(classOf[SumFinalize], Sum, "bigint")
@SQLUserDefinedType(udt = classOf[AvgResult])
final class AvgResult extends ResultTypeRequired(classOf[AvgFinalize], Avg, "double")
@SQLUserDefinedType(udt = classOf[MinResult])
final class MinResult extends ResultTypeRequired(classOf[MinFinalize], Min, "double")
@SQLUserDefinedType(udt = classOf[MaxResult])
final class MaxResult extends ResultTypeRequired(classOf[MaxFinalize], Max, "double")
@SQLUserDefinedType(udt = classOf[BitAndResult])
final class BitAndResult extends ResultTypeRequired(classOf[BitAndFinalize], BitAnd, "bigint")
@SQLUserDefinedType(udt = classOf[BitOrResult])
final class BitOrResult extends ResultTypeRequired(classOf[BitOrFinalize], BitOr, "bigint")
@SQLUserDefinedType(udt = classOf[BitXorResult])
final class BitXorResult extends ResultTypeRequired(classOf[BitXorFinalize], BitXor, "bigint")
@SQLUserDefinedType(udt = classOf[ArrayAggResult])
final class ArrayAggResult extends ResultTypeRequired(classOf[ArrayAggFinalize], ArrayAgg, "array<string>")
@SQLUserDefinedType(udt = classOf[MedianResult])
final class MedianResult extends ResultTypeRequired(classOf[MedianFinalize], Median, "double")
@SQLUserDefinedType(udt = classOf[ModeResult])
final class ModeResult extends ResultTypeRequired(classOf[ModeFinalize], Mode, "double")
@SQLUserDefinedType(udt = classOf[MaxByResult])
final class MaxByResult extends ResultTypeRequired(classOf[MaxByFinalize], MaxBy, "double")
@SQLUserDefinedType(udt = classOf[MinByResult])
final class MinByResult extends ResultTypeRequired(classOf[MinByFinalize], MinBy, "double")
@SQLUserDefinedType(udt = classOf[AnyValueResult])
final class AnyValueResult extends ResultTypeRequired(classOf[AnyValueFinalize], AnyValue, "double")
