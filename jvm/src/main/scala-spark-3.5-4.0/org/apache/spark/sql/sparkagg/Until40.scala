package org.apache.spark.sql.sparkagg

import org.apache.spark.SparkEnv
import org.apache.spark.sql.catalyst.expressions.EvalMode
import org.apache.spark.sql.catalyst.expressions.aggregate.Sum
import org.apache.spark.sql.execution.{ExternalAppendOnlyUnsafeRowArray, UnsafeKVExternalSorter}
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.types.StructType

// Spark 3.5 and 4.0 bound spill buffers by row counts only, and keep sum's evaluation mode on the Sum itself.

private[sparkagg] trait SpillBuffers {
  /** On the driver, the session's window buffer thresholds; the function it returns makes, in a task, the
   *  buffer Spark's WindowExec keeps a partition in. */
  def windowBuffer(conf: SQLConf): () => WindowRows = {
    val (inMemory, spillRows) = (conf.windowExecBufferInMemoryThreshold, conf.windowExecBufferSpillThreshold)
    () => new WindowRows(new ExternalAppendOnlyUnsafeRowArray(inMemory, spillRows))
  }

  /** A sorter of key and value rows that spills to disk, with no threshold of its own (its caller spills
   *  when memory is refused). */
  def newKVSorter(keySchema: StructType, valueSchema: StructType, pageSizeBytes: Long): UnsafeKVExternalSorter =
    new UnsafeKVExternalSorter(keySchema, valueSchema, SparkEnv.get.blockManager, SparkEnv.get.serializerManager,
      pageSizeBytes, Int.MaxValue)
}

private[sparkagg] trait SumModes {
  /** How Spark's sum treats an overflow: LEGACY wraps, ANSI fails, TRY gives NULL. */
  def sumMode(sum: Sum): EvalMode.Value = sum.evalMode
}
