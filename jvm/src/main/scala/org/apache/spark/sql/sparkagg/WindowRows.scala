package org.apache.spark.sql.sparkagg

import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.execution.ExternalAppendOnlyUnsafeRowArray

/** The rows of one window partition, kept as Spark's WindowExec keeps them: in memory, spilling to disk
 *  past the session's thresholds. (Spark 4.0 keeps the buffer class private to its sql package.) */
final class WindowRows private[sparkagg] (rows: ExternalAppendOnlyUnsafeRowArray) {
  def add(row: UnsafeRow): Unit = rows.add(row)
  def clear(): Unit = rows.clear()
  def length: Int = rows.length.toInt
  /** The rows from index `from` on. */
  def iterator(from: Int): Iterator[UnsafeRow] = rows.generateIterator(from)
}
