package org.apache.spark.sql.sparkagg

import org.apache.spark.sql.catalyst.{FunctionIdentifier, TableIdentifier}
import org.apache.spark.sql.catalyst.expressions.Expression
import org.apache.spark.sql.catalyst.parser.ParserInterface
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.types.{DataType, StructType}

/**
 * A parser that hands every call to `delegate` and passes what it parses, plans and expressions, through
 * [[rewrite]]. ParserInterface gains members minor by minor (routine parameters, query parameters,
 * statement splitting, temporal identifiers); each minor's RewritingParser mixes in the forwarding of its
 * own, which keeps the delegate's behaviour whole, so a subclass says only what it rewrites.
 */
trait ForwardingParser extends ParserInterface {
  protected def delegate: ParserInterface
  protected def rewrite(plan: LogicalPlan): LogicalPlan
  protected def rewrite(expression: Expression): Expression

  /** A statement of sparkagg's own, which Spark's grammar lacks, parsed here instead of by the delegate. */
  protected def statement(sqlText: String): Option[LogicalPlan] = None

  override def parsePlan(sqlText: String): LogicalPlan =
    statement(sqlText).getOrElse(rewrite(delegate.parsePlan(sqlText)))
  override def parseQuery(sqlText: String): LogicalPlan = rewrite(delegate.parseQuery(sqlText))
  override def parseExpression(sqlText: String): Expression = rewrite(delegate.parseExpression(sqlText))
  override def parseTableIdentifier(sqlText: String): TableIdentifier = delegate.parseTableIdentifier(sqlText)
  override def parseFunctionIdentifier(sqlText: String): FunctionIdentifier =
    delegate.parseFunctionIdentifier(sqlText)
  override def parseMultipartIdentifier(sqlText: String): Seq[String] = delegate.parseMultipartIdentifier(sqlText)
  override def parseTableSchema(sqlText: String): StructType = delegate.parseTableSchema(sqlText)
  override def parseDataType(sqlText: String): DataType = delegate.parseDataType(sqlText)
}
