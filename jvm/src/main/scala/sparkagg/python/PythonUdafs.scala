package sparkagg.python

import scala.util.matching.Regex

import com.fasterxml.jackson.databind.ObjectMapper
import org.apache.spark.sql.{Row, SparkSession}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.analysis.TypeCheckResult
import org.apache.spark.sql.catalyst.expressions.codegen.{CodegenContext, ExprCode}
import org.apache.spark.sql.catalyst.expressions.{Attribute, Cast, Expression, ExpressionInfo, NamedExpression, PythonUDF}
import org.apache.spark.sql.catalyst.expressions.aggregate.AggregateFunction
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.catalyst.parser.ParserInterface
import org.apache.spark.sql.execution.command.LeafRunnableCommand
import org.apache.spark.sql.sparkagg.{RewritingParser, SparkInternals}
import org.apache.spark.sql.types._

/**
 * A Python aggregate (`sparkagg.udaf.udaf`) as Spark knows it: its name (the udaf's own, which errors and
 * result columns show, whatever SQL name it is registered under), the types it takes and returns, the
 * pickled udaf the workers load (base64), and how its steps reach the Python workers.
 */
final case class PythonUdaf(name: String, payload: String, inputTypes: Seq[DataType], resultType: DataType,
    workers: PythonWorkers) {
  override def toString: String = name // plans print the call, not the pickle
}

/** How a step of the plan reaches the Python workers. */
sealed trait PythonWorkers {

  /** `mapInArrow` over `child` running the pickled `command`, giving `output` (of type `schema`). */
  def step(name: String, command: Array[Byte], schema: StructType, output: Seq[Attribute],
      child: LogicalPlan): LogicalPlan
}

/**
 * A classic session's: a copy of the probe (a MapInArrow node its Python driver made), whose function carries
 * the Python PySpark would run, its environment, includes and broadcasts. The node's class and arity differ
 * between Spark lines: only its first three fields change here.
 */
final case class Probed(probe: LogicalPlan) extends PythonWorkers {
  def step(name: String, command: Array[Byte], schema: StructType, output: Seq[Attribute],
      child: LogicalPlan): LogicalPlan = {
    val call = SparkInternals
      .withCommand(probe.expressions.head.asInstanceOf[PythonUDF], command)
      .copy(name = name, dataType = schema, children = child.output, resultId = NamedExpression.newExprId)
    val fields = probe.productIterator.toArray.map(_.asInstanceOf[AnyRef])
    probe.makeCopy(Array[AnyRef](call, output, child) ++ fields.drop(3))
  }
}

/** A Spark Connect server's, for a udaf its client registered: the Python a server runs for its clients'
 *  `mapInArrow` (PYSPARK_PYTHON, else PYSPARK_DRIVER_PYTHON, else python3), of the client's version. */
final case class ServerSide(pythonVer: String) extends PythonWorkers {
  def step(name: String, command: Array[Byte], schema: StructType, output: Seq[Attribute],
      child: LogicalPlan): LogicalPlan = {
    val exec = sys.env.getOrElse("PYSPARK_PYTHON", sys.env.getOrElse("PYSPARK_DRIVER_PYTHON", "python3"))
    SparkInternals.mapInArrow(name, SparkInternals.pythonFunction(command, exec, pythonVer), schema, output, child)
  }
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
      resultType: String, probe: LogicalPlan): Unit =
    register(spark, name, udaf(udafName, payload, inputTypes, resultType, Probed(probe)))

  /**
   * The same for a Spark Connect client (`CREATE TEMPORARY PYTHON AGGREGATE name FROM 'spec'`): the spec is a
   * JSON object of `udaf`, `payload`, `input` and `result` as above, and `python`, the client's version.
   */
  def register(spark: SparkSession, name: String, spec: String): Unit = {
    val fields = new ObjectMapper().readTree(spec)
    def text(field: String): String = Option(fields.get(field)).map(_.asText).getOrElse(
      throw new IllegalArgumentException(s"sparkagg: a Python aggregate's spec lacks $field: $spec"))
    register(spark, name,
      udaf(text("udaf"), text("payload"), text("input"), text("result"), ServerSide(text("python"))))
  }

  private def udaf(name: String, payload: String, inputTypes: String, resultType: String,
      workers: PythonWorkers): PythonUdaf =
    PythonUdaf(name, payload, DataType.fromJson(inputTypes).asInstanceOf[StructType].map(_.dataType),
      DataType.fromJson(resultType), workers)

  private def register(spark: SparkSession, name: String, udaf: PythonUdaf): Unit = {
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

/**
 * `CREATE TEMPORARY PYTHON AGGREGATE name FROM '<spec>'`: how `sparkagg.udaf.register` registers a udaf
 * from a Spark Connect client, whose protocol carries SQL but no way to hand the server a Python aggregate.
 * Installed by the extension; any other statement is the delegate's.
 */
final class PythonAggregateStatements(delegate: ParserInterface) extends RewritingParser(delegate) {
  protected def rewrite(e: Expression): Expression = e
  protected def rewrite(p: LogicalPlan): LogicalPlan = p

  override protected def statement(sqlText: String): Option[LogicalPlan] = sqlText match {
    case PythonAggregateStatements.Statement(name, spec) => Some(RegisterPythonAggregate(name, spec))
    case _ => None
  }
}

object PythonAggregateStatements {
  val Statement: Regex = """(?is)\s*CREATE\s+TEMPORARY\s+PYTHON\s+AGGREGATE\s+(\w+)\s+FROM\s+'([^']*)'\s*;?\s*""".r
}

/** The statement's command, run on the driver when the statement is. */
case class RegisterPythonAggregate(name: String, spec: String) extends LeafRunnableCommand {
  override def run(spark: SparkSession): Seq[Row] = {
    PythonUdafs.register(spark, name, spec)
    Seq.empty
  }
}
