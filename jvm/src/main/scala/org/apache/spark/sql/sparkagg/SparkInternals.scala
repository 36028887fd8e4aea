package org.apache.spark.sql.sparkagg

import org.apache.spark.{QueryContext, TaskContext}
import org.apache.spark.memory.TaskMemoryManager
import org.apache.spark.sql.catalyst.FunctionIdentifier
import org.apache.spark.sql.catalyst.expressions.Expression
import org.apache.spark.sql.catalyst.optimizer.NormalizeFloatingNumbers
import org.apache.spark.sql.connector.catalog.CatalogManager
import org.apache.spark.sql.errors.{QueryCompilationErrors, QueryExecutionErrors}

/**
 * The few Spark internals sparkagg needs that are private to Spark's `sql` package. This file lives in
 * that package for access; everything else goes through it, so upgrades have one place to look.
 */
object SparkInternals {
  /** Spark's ANSI overflow error: [ARITHMETIC_OVERFLOW], SQLSTATE 22003. */
  def arithmeticOverflow(message: String, context: QueryContext): ArithmeticException =
    QueryExecutionErrors.arithmeticOverflowError(message, "", context)

  /** A session's registry keeps temporary functions as system.session.<name> (as spark.udf does). */
  def temporaryFunction(name: String): FunctionIdentifier =
    FunctionIdentifier(name, Some(CatalogManager.SESSION_NAMESPACE), Some(CatalogManager.SYSTEM_CATALOG_NAME))

  /** A built-in's identifier, system.builtin.<name>: registered in one session's registry, it replaces
   *  the built-in for that session only. */
  def builtinFunction(name: String): FunctionIdentifier =
    FunctionIdentifier(name, Some(CatalogManager.BUILTIN_NAMESPACE), Some(CatalogManager.SYSTEM_CATALOG_NAME))

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
}
