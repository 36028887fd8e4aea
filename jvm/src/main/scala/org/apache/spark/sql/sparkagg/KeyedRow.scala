package org.apache.spark.sql.sparkagg

import org.apache.spark.sql.catalyst.InternalRow

/**
 * A row of key fields (read from `keyRow`) then value fields. InternalRow gains getters minor by minor
 * (variant in Spark 4.0, then geography, binary views, nanosecond timestamps); each minor's SparkAggRow
 * answers its own from the key row or the value as Catalyst holds it, so sparkagg's rows implement only
 * what every Spark has.
 */
trait KeyedRow extends InternalRow {
  /** Fields below this index come from [[keyRow]]. */
  protected def numKeyFields: Int
  protected def keyRow: InternalRow
  /** Value field `i` (at least [[numKeyFields]]) as Catalyst holds it. */
  protected def valueAt(i: Int): Any
}
