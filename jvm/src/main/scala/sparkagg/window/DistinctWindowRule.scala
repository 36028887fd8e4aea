package sparkagg.window

import org.apache.spark.sql.catalyst.expressions.WindowExpression
import org.apache.spark.sql.catalyst.expressions.aggregate.AggregateExpression
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.catalyst.rules.Rule
import sparkagg.catalyst.{AccumulatorAggregate, Form}
import sparkagg.common.Distinct

/**
 * Spark rejects `DISTINCT` in window functions at analysis. For sparkagg's own aggregates this rule,
 * run in the analyzer's resolution batch (before that check), moves the DISTINCT into the function:
 * `df_count(DISTINCT x) OVER w` becomes `Distinct(count)(x) OVER w`, whose accumulator counts values.
 */
object DistinctWindowRule extends Rule[LogicalPlan] {
  override def apply(plan: LogicalPlan): LogicalPlan = plan.resolveOperatorsUp {
    case node => node.transformExpressionsUp {
        case w @ WindowExpression(a @ AggregateExpression(f: AccumulatorAggregate, _, true, _, _), _)
            if f.form == Form.Plain && f.childrenResolved =>
          w.copy(windowFunction = a.copy(aggregateFunction = f.copy(function = Distinct(f.function)),
            isDistinct = false))
      }
  }
}
