package sparkagg.catalyst

import java.util.Locale

import org.apache.spark.sql.catalyst.analysis.{UnresolvedFunction, UnresolvedStar}
import org.apache.spark.sql.catalyst.expressions.Expression
import org.apache.spark.sql.catalyst.parser.ParserInterface
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.sparkagg.RewritingParser

/**
 * Spark turns `count(*)` into `count(1)` for its own count only; any other function gets `*` expanded
 * to every column, which for a count means "rows where no column is NULL". This parser, installed by
 * [[sparkagg.SparkAggExtensions]], rewrites `<prefix>count(*)` to the argument-less form, which counts
 * rows. Everything else is the delegate's ([[RewritingParser]] forwards it).
 */
final class CountStarParser(delegate: ParserInterface, countName: String) extends RewritingParser(delegate) {
  private val name = countName.toLowerCase(Locale.ROOT)

  protected def rewrite(e: Expression): Expression = e.transformUp {
    case f: UnresolvedFunction
        if !f.isDistinct && f.arguments == Seq(UnresolvedStar(None)) &&
          f.nameParts.map(_.toLowerCase(Locale.ROOT)) == Seq(name) =>
      f.copy(arguments = Nil)
  }
  protected def rewrite(p: LogicalPlan): LogicalPlan =
    p.transformUpWithSubqueries { case node => node.transformExpressions { case e => rewrite(e) } }
}
