package org.apache.spark.sql.sparkagg

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.unsafe.types.{BinaryView, TimestampNanosVal, VariantVal}

/**
 * A row of key fields (read from `keyRow`) then value fields, answering the getters InternalRow gains
 * minor by minor (variant in Spark 4.0; binary views and nanosecond timestamps later) from the key row or
 * the value as Catalyst holds it. sparkagg's own rows extend it and implement only what every Spark has.
 */
abstract class SparkAggRow extends InternalRow {
  /** Fields below this index come from [[keyRow]]. */
  protected def numKeyFields: Int
  protected def keyRow: InternalRow
  /** Value field `i` (at least [[numKeyFields]]) as Catalyst holds it. */
  protected def valueAt(i: Int): Any

  def getVariant(i: Int): VariantVal =
    if (i < numKeyFields) keyRow.getVariant(i) else valueAt(i).asInstanceOf[VariantVal]
  def getBinaryView(i: Int): BinaryView =
    if (i < numKeyFields) keyRow.getBinaryView(i) else valueAt(i).asInstanceOf[BinaryView]
  def getTimestampLTZNanos(i: Int): TimestampNanosVal =
    if (i < numKeyFields) keyRow.getTimestampLTZNanos(i) else valueAt(i).asInstanceOf[TimestampNanosVal]
  def getTimestampNTZNanos(i: Int): TimestampNanosVal =
    if (i < numKeyFields) keyRow.getTimestampNTZNanos(i) else valueAt(i).asInstanceOf[TimestampNanosVal]
}
