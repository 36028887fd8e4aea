package sparkagg.python

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.analysis.TypeCheckResult
import org.apache.spark.sql.catalyst.expressions.codegen.{CodegenContext, ExprCode}
import org.apache.spark.sql.catalyst.expressions.{Cast, Expression, ExpressionInfo}
import org.apache.spark.sql.catalyst.expressions.aggregate.AggregateFunction
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.sparkagg.SparkInternals
import org.apache.spark.sql.types._

/**
 * A Python aggregate (`sparkagg.udaf.udaf`) as Spark knows it: its name (the udaf's own, which errors and
 * result columns show, whatever SQL name it is registered under), the types it takes and returns, the
 * pickled udaf the workers load (base64), and the probe: a `mapInArrow` node the Python driver made, whose
 * function carries the session's Python environment.
 */
final case class PythonUdaf(name: String, payload: String, inputTypes: Seq[DataType], resultType: DataType,
    probe: LogicalPlan) {
  override def toString: String = name // plans print the call, not the pickle
}

/**
 * A call of a Python aggregate in a query: what the analyzer resolves and checks, and what
 * [[PythonAggregates]] replaces by the two Python phases before planning (it never runs itself).
 * An argument of another type is taken where Spark's cast loses nothing (NULL, a narrower integer, any
 * number for a double); anything else fails analysis naming the udaf, the argument and both types.
 */
case class PythonUdafCall(udaf: PythonUdaf, children: Seq[Expression]) extends AggregateFunction {
  override def dataType: DataType = udaf.resultType
  override def nullable: Boolean = true
  override def prettyName: String = udaf.name
  override def toString: String = s"$prettyName(${children.mkString(", ")})"
  override def aggBufferSchema: StructType = StructType(Nil)
  override lazy val aggBufferAttributes = Nil
  override lazy val inputAggBufferAttributes = Nil
  // Never evaluated: PythonAggregates replaces the call before planning.
  override def eval(input: InternalRow): Any = throw new IllegalStateException(s"${udaf.name}: not planned")
  override protected def doGenCode(ctx: CodegenContext, ev: ExprCode): ExprCode = eval(null).asInstanceOf[ExprCode]

  override def checkInputDataTypes(): TypeCheckResult =
    if (children.length != udaf.inputTypes.length)
      TypeCheckResult.TypeCheckFailure(s"udaf ${udaf.name} takes ${udaf.inputTypes.length} argument(s) " +
        s"(${udaf.inputTypes.map(_.simpleString).mkString(", ")}), got ${children.length}")
    else
      children.zip(udaf.inputTypes).zipWithIndex.collectFirst {
        case ((arg, expected), j) if !PythonUdafCall.widens(arg.dataType, expected) =>
          TypeCheckResult.TypeCheckFailure(s"udaf ${udaf.name}: argument ${j + 1} (${arg.sql}) is " +
            s"${arg.dataType.simpleString}; it takes ${expected.simpleString}")
      }.getOrElse(TypeCheckResult.TypeCheckSuccess)

  /** The arguments, each of exactly the type the udaf declares. */
  def arguments: Seq[Expression] = children.zip(udaf.inputTypes).map { case (arg, expected) =>
    if (arg.dataType == expected) arg else Cast(arg, expected)
  }

  override protected def withNewChildrenInternal(newChildren: IndexedSeq[Expression]): PythonUdafCall =
    copy(children = newChildren)
}

object PythonUdafCall {
  /** Whether a value of `actual` casts to `expected` keeping its meaning, as sparkagg.udaf.plan does. */
  def widens(actual: DataType, expected: DataType): Boolean = (actual, expected) match {
    case (a, e) if a == e => true
    case (NullType, _) => true
    case (a, e) if integral(a) && integral(e) => a.defaultSize <= e.defaultSize
    case (_: NumericType, DoubleType) => true
    case _ => false
  }

  private def integral(t: DataType): Boolean = Seq(ByteType, ShortType, IntegerType, LongType).contains(t)
}

/** Entry points for the Python package (py4j). */
object PythonUdafs {

  /**
   * Makes `name` an aggregate function of `spark` (temporary, as `spark.udf.register` makes them) calling the
   * Python udaf `udafName`, and adds [[PythonAggregates]] to the session's optimizer. Types are given as Spark's JSON.
   */
  def register(spark: SparkSession, name: String, udafName: String, payload: String, inputTypes: String,
      resultType: String, probe: LogicalPlan): Unit = {
    val udaf = PythonUdaf(udafName, payload, DataType.fromJson(inputTypes).asInstanceOf[StructType].map(_.dataType),
      DataType.fromJson(resultType), probe)
    val info = new ExpressionInfo(
      classOf[PythonUdafCall].getName,
      null,
      name,
      s"$name(${udaf.inputTypes.map(_.simpleString).mkString(", ")}) - a Python aggregate (sparkagg.udaf), " +
        s"returning ${udaf.resultType.simpleString}",
      "",
      "",
      "",
      "agg_funcs",
      "",
      "",
      "python_udf"
    )
    spark.sessionState.functionRegistry.registerFunction(
      SparkInternals.temporaryFunction(name), info, (args: Seq[Expression]) => PythonUdafCall(udaf, args))
    val optimizations = spark.experimental.extraOptimizations
    if (!optimizations.contains(PythonAggregates))
      spark.experimental.extraOptimizations = optimizations :+ PythonAggregates
  }
}
