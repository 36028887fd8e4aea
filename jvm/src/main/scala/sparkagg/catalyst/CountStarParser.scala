package sparkagg.catalyst

import java.util.Locale

import org.apache.spark.sql.catalyst.{FunctionIdentifier, TableIdentifier}
import org.apache.spark.sql.catalyst.analysis.{UnresolvedFunction, UnresolvedStar}
import org.apache.spark.sql.catalyst.expressions.Expression
import org.apache.spark.sql.catalyst.parser.{ParameterContext, ParserInterface, SqlStatementSplitResult}
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.types.{DataType, StructType}

/**
 * Spark turns `count(*)` into `count(1)` for its own count only; any other function gets `*` expanded
 * to every column, which for a count means "rows where no column is NULL". This parser, installed by
 * [[sparkagg.SparkAggExtensions]], rewrites `<prefix>count(*)` to the argument-less form, which counts
 * rows. Everything else is the delegate's.
 */
final class CountStarParser(delegate: ParserInterface, countName: String) extends ParserInterface {
  private val name = countName.toLowerCase(Locale.ROOT)

  private def rewrite(e: Expression): Expression = e.transformUp {
    case f: UnresolvedFunction
        if !f.isDistinct && f.arguments == Seq(UnresolvedStar(None)) &&
          f.nameParts.map(_.toLowerCase(Locale.ROOT)) == Seq(name) =>
      f.copy(arguments = Nil)
  }
  private def rewrite(p: LogicalPlan): LogicalPlan =
    p.transformUpWithSubqueries { case node => node.transformExpressions { case e => rewrite(e) } }

  override def parsePlan(sqlText: String): LogicalPlan = rewrite(delegate.parsePlan(sqlText))
  override def parsePlanWithParameters(sqlText: String, context: ParameterContext): LogicalPlan =
    rewrite(delegate.parsePlanWithParameters(sqlText, context))
  override def parseQuery(sqlText: String): LogicalPlan = rewrite(delegate.parseQuery(sqlText))
  override def parseExpression(sqlText: String): Expression = rewrite(delegate.parseExpression(sqlText))
  override def parseTableIdentifier(sqlText: String): TableIdentifier = delegate.parseTableIdentifier(sqlText)
  override def parseFunctionIdentifier(sqlText: String): FunctionIdentifier =
    delegate.parseFunctionIdentifier(sqlText)
  override def parseMultipartIdentifier(sqlText: String): Seq[String] = delegate.parseMultipartIdentifier(sqlText)
  override def parseRoutineParam(sqlText: String): StructType = delegate.parseRoutineParam(sqlText)
  override def splitStatements(sqlText: String): SqlStatementSplitResult = delegate.splitStatements(sqlText)
  override def parseTableSchema(sqlText: String): StructType = delegate.parseTableSchema(sqlText)
  override def parseDataType(sqlText: String): DataType = delegate.parseDataType(sqlText)
}
