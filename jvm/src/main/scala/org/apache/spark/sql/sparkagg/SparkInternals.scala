package org.apache.spark.sql.sparkagg

import org.apache.spark.QueryContext
import org.apache.spark.sql.errors.QueryExecutionErrors

/**
 * The few Spark internals sparkagg needs that are private to Spark's `sql` package. This file lives in
 * that package for access; everything else goes through it, so upgrades have one place to look.
 */
object SparkInternals {
  /** Spark's ANSI overflow error: [ARITHMETIC_OVERFLOW], SQLSTATE 22003. */
  def arithmeticOverflow(message: String, context: QueryContext): ArithmeticException =
    QueryExecutionErrors.arithmeticOverflowError(message, "", context)
}
