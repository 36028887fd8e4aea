package sparkagg.udf

import org.apache.spark.sql.Row
import org.apache.spark.sql.api.java.UDF1
import org.apache.spark.sql.catalyst.{CatalystTypeConverters, InternalRow}
import org.apache.spark.sql.types.{DataType, StructType, UserDefinedType}
import sparkagg.api.{Accumulator, BindContext, FunctionDef}
import sparkagg.common.StateShapes
import sparkagg.catalyst.RowValues

/**
 * Java UDF classes that evaluate one stored state, for `spark.udf.registerJavaFunction` (PySpark's way
 * to register JVM functions by class name):
 * {{{
 *   spark.udf.registerJavaFunction("var_final", "sparkagg.udf.VarSampFinalize")
 *   spark.udf.registerJavaFunction("avg_final", "sparkagg.udf.AvgFinalize", "double")
 * }}}
 * Functions whose result type is fixed (double, bigint, boolean) declare it; those whose result type
 * follows the argument (the catalogue's `follows`: sum, avg, min, max, ...) need the return type passed, and
 * registering them without it fails, saying which to pass. The classes themselves are written by the build from
 * the catalogue (jvm/src/main/catalogue.txt), as `FinalizeClasses` lists them. The SQL function
 * `df_<name>_finalize` does the same with the type inferred.
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

/** A function's finalize class, by name, and the result type it declares (None: the result follows the state). */
final case class FinalizeClass(function: FunctionDef, className: String, declaredResult: Option[String])

/**
 * The declared result of a finalize class whose result type follows the state (one per such function, written
 * by the build). `registerJavaFunction` without a return type infers one
 * from the class's `UDF1` result type: from Object it infers `struct<>`, which registers and then fails inside the
 * first job. For a class annotated `@SQLUserDefinedType` the inference makes that UDT, so each result class
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
