package sparkagg.catalyst

import org.apache.spark.sql.catalyst.expressions.{Cast, Expression, UnsafeProjection}
import sparkagg.api._

/**
 * A call of a function as fixed at analysis: the function, the name it was called by, its argument
 * types. Both hosts (the Catalyst aggregate and the Aggregator adapter) keep one, and bind it again
 * where they run, so only this small serializable description travels with a plan.
 */
final case class Call(function: FunctionDef, sqlName: String, args: Seq[Arg], ctx: BindContext) {
  @transient lazy val binding: Either[String, Bound] = function.bind(args, ctx)

  def bound: Bound = binding.fold(why => throw new IllegalStateException(explain(why)), identity)

  /** The analysis error: the function, what was wrong, what it was given, what it accepts. */
  def explain(why: String): String =
    s"$sqlName $why; got $sqlName${Types.describe(args)}. Accepted: $sqlName${function.signature}"

  @transient lazy val codec = new StateCodec(function.name, bound.stateSchema)

  def newAccumulator(): Accumulator = bound.newAccumulator()

  /** Evaluates `arguments` into one reused row, cast to the types the accumulator reads. */
  def argumentProjection(arguments: Seq[Expression]): UnsafeProjection = {
    val coerce = bound.coerceTo
    UnsafeProjection.create(arguments.zipWithIndex.map { case (a, i) =>
      if (coerce.isEmpty || a.dataType == coerce(i)) a else Cast(a, coerce(i))
    })
  }
}
