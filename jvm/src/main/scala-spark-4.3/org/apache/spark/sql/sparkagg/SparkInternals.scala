package org.apache.spark.sql.sparkagg

import org.apache.spark.{QueryContext, SparkEnv, TaskContext}
import org.apache.spark.memory.TaskMemoryManager
import org.apache.spark.sql.catalyst.FunctionIdentifier
import org.apache.spark.sql.catalyst.expressions.Expression
import org.apache.spark.sql.catalyst.optimizer.NormalizeFloatingNumbers
import org.apache.spark.sql.catalyst.plans.physical.{ClusteredDistribution, Distribution}
import org.apache.spark.sql.connector.catalog.CatalogManager
import org.apache.spark.sql.errors.{QueryCompilationErrors, QueryExecutionErrors}
import org.apache.spark.sql.execution.{ExternalAppendOnlyUnsafeRowArray, UnsafeKVExternalSorter}
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.types.StructType
import org.apache.spark.unsafe.types.UTF8String

/**
 * The Spark internals sparkagg needs that are private to Spark's `sql` package or change between Spark
 * minors (docs/spark-versions.md lists them). This file lives in that package for access; everything else
 * goes through it, so a Spark version has one place to adapt.
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

  /** Rows with equal `keys` in one partition. (Spark 4.3 gave ClusteredDistribution a fourth parameter:
   *  code compiled against one minor must not call its constructor directly.) */
  def clusteredBy(keys: Seq[Expression]): Distribution = ClusteredDistribution(keys)

  /** On the driver, the session's window buffer thresholds; the function it returns makes, in a task, the
   *  buffer Spark's WindowExec keeps a partition in (its constructor changed in Spark 4.1). */
  def windowBuffer(conf: SQLConf): () => ExternalAppendOnlyUnsafeRowArray = {
    val (inMemory, spillRows, spillBytes) =
      (conf.windowExecBufferInMemoryThreshold, conf.windowExecBufferSpillThreshold,
        conf.windowExecBufferSpillSizeThreshold)
    () => new ExternalAppendOnlyUnsafeRowArray(inMemory, spillBytes, spillRows, spillBytes)
  }

  /** A sorter of key and value rows that spills to disk, with no threshold of its own (its caller spills
   *  when memory is refused); its constructor changed in Spark 4.1. */
  def newKVSorter(keySchema: StructType, valueSchema: StructType, pageSizeBytes: Long): UnsafeKVExternalSorter =
    new UnsafeKVExternalSorter(keySchema, valueSchema, SparkEnv.get.blockManager, SparkEnv.get.serializerManager,
      pageSizeBytes, Int.MaxValue, Long.MaxValue)

  /** Strings compared byte by byte (UTF8String.binaryCompare, which Spark 3.5 spells compareTo). */
  def compareUtf8(a: UTF8String, b: UTF8String): Int = a.binaryCompare(b)
}
