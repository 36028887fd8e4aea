package org.apache.spark.sql.sparkagg

import org.apache.spark.TaskContext
import org.apache.spark.memory.TaskMemoryManager
import org.apache.spark.api.python.{PythonBroadcast, PythonEvalType, PythonFunction, SimplePythonFunction}
import org.apache.spark.broadcast.Broadcast
import org.apache.spark.sql.catalyst.expressions.{Attribute, Expression, NamedExpression, PythonUDF}
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.types.StructType
import org.apache.spark.sql.catalyst.optimizer.NormalizeFloatingNumbers
import org.apache.spark.sql.catalyst.plans.physical.{ClusteredDistribution, Distribution}
import org.apache.spark.sql.errors.QueryCompilationErrors

/**
 * The Spark internals sparkagg needs that are private to Spark's `sql` package or change between Spark
 * minors (docs/spark-versions.md lists them). This file lives in that package for access; everything else
 * goes through it, except the cache's decoders, private to Spark's `columnar` package (CachedVectors there).
 * What differs between minors comes from the traits it mixes in, each defined once per range of minors in
 * jvm/src/main/scala-spark-<range>/ (`3.5`, `4.0+`, `3.5-4.1`: build.sbt picks them).
 */
object SparkInternals
  extends QueryErrors with StringOrder with FunctionKeys with SpillBuffers with SumModes with MapInArrowNode {
  /** Spark's WRONG_NUM_ARGS analysis error. */
  def wrongNumberOfArguments(name: String, expected: Int, got: Int): Throwable =
    QueryCompilationErrors.wrongNumArgsError(name, Seq(expected), got)

  /** Spark's analysis error for WITHIN GROUP on a function that takes none. */
  def withinGroupUnsupported(name: String): Throwable =
    QueryCompilationErrors.functionWithUnsupportedSyntaxError(name, "WITHIN GROUP (ORDER BY ...)")

  /** The task's memory manager, which Spark keeps to its own operators: sparkagg's grouped operator
   *  accounts its groups there, so they spill instead of running the executor out of memory. */
  def taskMemoryManager(task: TaskContext): TaskMemoryManager = task.taskMemoryManager()

  /** A grouping key with NaN and -0.0 normalized, as Spark's Aggregation strategy groups floating keys. */
  def normalizeFloatingKeys(key: Expression): Expression = NormalizeFloatingNumbers.normalize(key)

  /** Rows with equal `keys` in one partition. (Spark 4.3 gave ClusteredDistribution a fourth parameter:
   *  code compiled against one minor must not call its constructor directly.) */
  def clusteredBy(keys: Seq[Expression]): Distribution = ClusteredDistribution(keys)

  /** `udf` with the Python command (a pickle) replaced: the rest of its function (the Python to run, its
   *  environment, includes and broadcasts) is the session's. */
  def withCommand(udf: PythonUDF, command: Array[Byte]): PythonUDF =
    udf.copy(func = udf.func.asInstanceOf[SimplePythonFunction].copy(command = command.toSeq))

  /** A Python function as a Spark Connect server makes one for its clients: `command` run by `pythonExec`
   *  (Python `pythonVer`), with no includes, broadcasts or accumulator of its own. */
  def pythonFunction(command: Array[Byte], pythonExec: String, pythonVer: String): PythonFunction =
    SimplePythonFunction(
      command.toSeq,
      new java.util.HashMap[String, String](),
      new java.util.ArrayList[String](),
      pythonExec,
      pythonVer,
      new java.util.ArrayList[Broadcast[PythonBroadcast]](),
      null
    )

  /** `mapInArrow(function)` over `child` (its whole output in), giving `output` (of type `schema`). */
  def mapInArrow(name: String, function: PythonFunction, schema: StructType, output: Seq[Attribute],
      child: LogicalPlan): LogicalPlan =
    mapInArrow(
      PythonUDF(name, function, schema, child.output, PythonEvalType.SQL_MAP_ARROW_ITER_UDF,
        udfDeterministic = true, resultId = NamedExpression.newExprId),
      output,
      child
    )
}
