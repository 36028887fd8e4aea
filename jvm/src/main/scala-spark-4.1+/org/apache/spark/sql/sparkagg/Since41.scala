package org.apache.spark.sql.sparkagg

import org.apache.spark.SparkEnv
import org.apache.spark.sql.catalyst.expressions.EvalMode
import org.apache.spark.sql.catalyst.expressions.aggregate.Sum
import org.apache.spark.sql.catalyst.parser.ParameterContext
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.execution.{ExternalAppendOnlyUnsafeRowArray, UnsafeKVExternalSorter}
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.types.StructType

// What Spark 4.1 brought and every later minor keeps: spill thresholds in bytes beside the row counts,
// parameters handed to the parser, and sum's evaluation mode inside its NumericEvalContext.

private[sparkagg] trait SpillBuffers {
  /** On the driver, the session's window buffer thresholds; the function it returns makes, in a task, the
   *  buffer Spark's WindowExec keeps a partition in. */
  def windowBuffer(conf: SQLConf): () => WindowRows = {
    val (inMemory, spillRows, spillBytes) =
      (conf.windowExecBufferInMemoryThreshold, conf.windowExecBufferSpillThreshold,
        conf.windowExecBufferSpillSizeThreshold)
    () => new WindowRows(new ExternalAppendOnlyUnsafeRowArray(inMemory, spillBytes, spillRows, spillBytes))
  }

  /** A sorter of key and value rows that spills to disk, with no threshold of its own (its caller spills
   *  when memory is refused). */
  def newKVSorter(keySchema: StructType, valueSchema: StructType, pageSizeBytes: Long): UnsafeKVExternalSorter =
    new UnsafeKVExternalSorter(keySchema, valueSchema, SparkEnv.get.blockManager, SparkEnv.get.serializerManager,
      pageSizeBytes, Int.MaxValue, Long.MaxValue)
}

private[sparkagg] trait ParameterForwarding extends ForwardingParser {
  override def parsePlanWithParameters(sqlText: String, context: ParameterContext): LogicalPlan =
    statement(sqlText).getOrElse(rewrite(delegate.parsePlanWithParameters(sqlText, context)))
}

private[sparkagg] trait SumModes {
  /** How Spark's sum treats an overflow: LEGACY wraps, ANSI fails, TRY gives NULL. */
  def sumMode(sum: Sum): EvalMode.Value = sum.evalContext.evalMode
}
