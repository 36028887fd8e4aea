package sparkagg.catalyst

import org.apache.spark.sql.catalyst.expressions.{EvalMode, Expression}
import org.apache.spark.sql.catalyst.expressions.aggregate.{AggregateFunction, Average, Count, Max, Min, Sum}
import org.apache.spark.sql.sparkagg.SparkInternals
import org.apache.spark.sql.types._
import sparkagg.api.{BindContext, FunctionDef, Types}

/**
 * Spark's own aggregate functions that sparkagg's grouped operator runs itself when a query mixes them
 * with sparkagg's: the one place that decides which. Each runs as the sparkagg function that gives Spark's
 * result for those argument types (the same type, values and NULLs):
 *
 *  - `count(*)`, `count(expr, ...)`: rows where no argument is NULL, 0 over none.
 *  - `sum` of floats and doubles: their double sum, NULL over none.
 *  - `sum` of decimal(p, s): decimal(p + 10, s), NULL when the total does not fit (with ANSI on, Spark's
 *    error), which Spark decides on running sums as it does for integers (below).
 *  - `sum` of integers: with ANSI off, the total wrapped around to a bigint, as Spark's; with ANSI on, an
 *    exact sum, failing with Spark's ARITHMETIC_OVERFLOW when it does not fit a bigint. Spark checks each
 *    addition instead, so over rows whose running sum leaves bigint and comes back it may fail, depending
 *    on the order the rows come in; sparkagg gives the total then, as Spark does for an order that keeps
 *    the running sum in range. `try_sum` (NULL from the first overflow on) stays Spark's.
 *  - `avg` of integers, floats and doubles: the double sum over the count.
 *  - `min`, `max` of numbers, booleans, dates, timestamps, binaries and strings (byte order: not under
 *    another collation): NaN above every number, as in Spark. Between -0.0 and 0.0, which Spark holds equal and keeps
 *    whichever came first, sparkagg orders -0.0 first.
 *
 * Any other Spark aggregate (decimal averages, which Spark rounds and sparkagg truncates; first,
 * collect_list, ...)
 * keeps the whole aggregation on Spark's path. The functions standing in are handed over (by `SparkAgg`, as
 * the Registry's are): catalyst does not know the function list.
 */
final case class SparkAggregates(count: FunctionDef, sum: FunctionDef, avg: FunctionDef, min: FunctionDef,
    max: FunctionDef) {
  private val plain = BindContext(failOnOverflow = false)

  /** sparkagg's call standing for Spark's `f`, or None when `f` must stay Spark's. */
  def equivalent(f: AggregateFunction): Option[AccumulatorAggregate] = f match {
    case c: Count => Some(standIn(count, "count", c.children, plain))
    case s: Sum if Types.isFloating(s.child.dataType) => Some(standIn(sum, "sum", s.children, plain))
    case s: Sum if Types.isDecimal(s.child.dataType) =>
      Some(standIn(sum, "sum", s.children, BindContext(SparkInternals.sumMode(s) == EvalMode.ANSI)))
    case s: Sum if Types.isIntegral(s.child.dataType) =>
      integerSum(SparkInternals.sumMode(s)).map(standIn(sum, "sum", s.children, _))
    case a: Average if Types.isIntegral(a.child.dataType) || Types.isFloating(a.child.dataType) =>
      Some(standIn(avg, "avg", a.children, plain))
    case m: Min if ordersAsSpark(m.child.dataType) => Some(standIn(min, "min", m.children, plain))
    case m: Max if ordersAsSpark(m.child.dataType) => Some(standIn(max, "max", m.children, plain))
    case _ => None
  }

  /** An integer sum's overflow as Spark's evaluation mode has it: ANSI fails, LEGACY wraps around (the
   *  total's low 64 bits, whatever the order); TRY (NULL from the first overflow on) is not offered. */
  private def integerSum(mode: EvalMode.Value): Option[BindContext] = mode match {
    case EvalMode.ANSI => Some(BindContext(failOnOverflow = true))
    case EvalMode.LEGACY => Some(BindContext(failOnOverflow = false, wrapOnOverflow = true))
    case _ => None
  }

  // StringType itself is the byte order; a collated string type is another instance, which stays Spark's.
  private def ordersAsSpark(t: DataType): Boolean = Types.isNumeric(t) || t == StringType || (t match {
    case BooleanType | DateType | TimestampType | TimestampNTZType | BinaryType => true
    case _ => false
  })

  private def standIn(function: FunctionDef, name: String, children: Seq[Expression], ctx: BindContext)
      : AccumulatorAggregate =
    AccumulatorAggregate(function, name, children, ctx, sparkOwn = true)
}
