package org.apache.spark.sql.sparkagg

import org.apache.spark.QueryContext
import org.apache.spark.sql.catalyst.expressions.aggregate.{AggregateFunction, SupportsOrderingWithinGroup}
import org.apache.spark.sql.catalyst.expressions.{Attribute, PythonUDF}
import org.apache.spark.sql.catalyst.parser.ParserInterface
import org.apache.spark.sql.catalyst.plans.logical.{LogicalPlan, MapInArrow}
import org.apache.spark.sql.errors.QueryExecutionErrors
import org.apache.spark.sql.types.StructType
import org.apache.spark.unsafe.types.{UTF8String, VariantVal}

// What Spark 4.0 brought and every later minor keeps.

private[sparkagg] trait QueryErrors {
  /** Spark's ANSI overflow error: [ARITHMETIC_OVERFLOW], SQLSTATE 22003. */
  def arithmeticOverflow(message: String, context: QueryContext): ArithmeticException =
    QueryExecutionErrors.arithmeticOverflowError(message, "", context)
}

private[sparkagg] trait StringOrder {
  /** Strings compared byte by byte (UTF8String.compareTo refuses to run in Spark's tests from 4.0 on). */
  def compareUtf8(a: UTF8String, b: UTF8String): Int = a.binaryCompare(b)
}

/** `f(args) WITHIN GROUP (ORDER BY ...)`, which Spark parses for any function from 4.0 on. */
trait OrderingWithinGroupHost extends SupportsOrderingWithinGroup { self: AggregateFunction => }

private[sparkagg] trait VariantGetter extends KeyedRow {
  def getVariant(i: Int): VariantVal =
    if (i < numKeyFields) keyRow.getVariant(i) else valueAt(i).asInstanceOf[VariantVal]
}

private[sparkagg] trait RoutineParamForwarding extends ForwardingParser {
  override def parseRoutineParam(sqlText: String): StructType = delegate.parseRoutineParam(sqlText)
}

private[sparkagg] trait MapInArrowNode {
  /** `mapInArrow`'s node: MapInArrow, with a resource profile, from 4.0. */
  def mapInArrow(udf: PythonUDF, output: Seq[Attribute], child: LogicalPlan): LogicalPlan =
    MapInArrow(udf, output, child, isBarrier = false, profile = None)
}
