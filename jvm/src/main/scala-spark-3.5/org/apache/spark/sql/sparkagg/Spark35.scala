package org.apache.spark.sql.sparkagg

import org.apache.spark.{QueryContext, SPARK_VERSION}
import org.apache.spark.sql.AnalysisException
import org.apache.spark.sql.catalyst.expressions.{Attribute, Expression, PythonUDF, SortOrder}
import org.apache.spark.sql.catalyst.expressions.aggregate.AggregateFunction
import org.apache.spark.sql.catalyst.parser.{ParseException, ParserInterface}
import org.apache.spark.sql.catalyst.plans.logical.{LogicalPlan, PythonMapInArrow}
import org.apache.spark.sql.catalyst.trees.SQLQueryContext
import org.apache.spark.sql.errors.QueryExecutionErrors
import org.apache.spark.unsafe.types.UTF8String

private[sparkagg] trait QueryErrors {
  /** Spark's ANSI overflow error: [ARITHMETIC_OVERFLOW], SQLSTATE 22003 (3.5 takes its own context type). */
  def arithmeticOverflow(message: String, context: QueryContext): ArithmeticException =
    QueryExecutionErrors.arithmeticOverflowError(message, "", context match {
      case c: SQLQueryContext => c
      case _ => null
    })
}

private[sparkagg] trait StringOrder {
  /** Strings compared byte by byte, which is what compareTo does in Spark 3.5. */
  def compareUtf8(a: UTF8String, b: UTF8String): Int = a.compareTo(b)
}

/** Spark 3.5 parses WITHIN GROUP only for its own percentile_cont and percentile_disc, so nothing calls
 *  these; they are declared so the host's overrides compile on every minor. */
trait OrderingWithinGroupHost { self: AggregateFunction =>
  def withOrderingWithinGroup(orderingWithinGroup: Seq[SortOrder]): AggregateFunction
  def orderingFilled: Boolean
  def isOrderingMandatory: Boolean
  def isDistinctSupported: Boolean
}

abstract class SparkAggRow extends KeyedRow

/** Spark 3.5's grammar has WITHIN GROUP for its own percentile_cont and percentile_disc only: any other
 *  `f(...) WITHIN GROUP (...)` is a syntax error, which is explained here naming the function. */
abstract class RewritingParser(protected val delegate: ParserInterface) extends ForwardingParser {
  override def parsePlan(sqlText: String): LogicalPlan = explained(sqlText)(super.parsePlan(sqlText))
  override def parseQuery(sqlText: String): LogicalPlan = explained(sqlText)(super.parseQuery(sqlText))
  override def parseExpression(sqlText: String): Expression = explained(sqlText)(super.parseExpression(sqlText))

  private val withinGroupCall = """(?i)([\w`.]+)\s*\((?:[^()]|\([^()]*\))*\)\s*WITHIN\s+GROUP\b""".r

  private def explained[T](sqlText: String)(parse: => T): T =
    try parse
    catch {
      case e: ParseException =>
        withinGroupCall.findFirstMatchIn(sqlText) match {
          case Some(call) =>
            throw new AnalysisException(
              s"sparkagg: ${call.group(1)}(...) WITHIN GROUP (ORDER BY ...) needs Spark 4.0 or later; Spark " +
                s"$SPARK_VERSION parses WITHIN GROUP only for its own percentile_cont and percentile_disc. " +
                s"Spark's parser said: ${e.getMessage}",
              cause = Some(e))
          case None => throw e
        }
    }
}

private[sparkagg] trait MapInArrowNode {
  /** `mapInArrow`'s node: PythonMapInArrow in 3.5. */
  def mapInArrow(udf: PythonUDF, output: Seq[Attribute], child: LogicalPlan): LogicalPlan =
    PythonMapInArrow(udf, output, child, isBarrier = false)
}
