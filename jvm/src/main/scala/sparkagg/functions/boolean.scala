package sparkagg.functions

import org.apache.spark.sql.types._
import sparkagg.api._

/**
 * bool_and (true when every non-NULL value is true) and bool_or (true when any is); NULL on empty or
 * all-NULL input. State: the running boolean.
 */
sealed abstract class BoolAggregate(val name: String, isAnd: Boolean, example: (String, String)) extends FunctionDef {
  val signature = "(boolean) -> boolean"
  val doc = FunctionDoc(
    usage = s"_FUNC_(expr) - True if ${if (isAnd) "all" else "any"} of the non-NULL values of expr " +
      s"${if (isAnd) "are" else "is"} true; NULL if there are none.",
    arguments = Seq("expr" -> "boolean"),
    examples = Seq(example))

  def bind(args: Seq[Arg], ctx: BindContext): Either[String, Bound] = args.map(_.dataType) match {
    case Seq(BooleanType | NullType) =>
      Right(Bound(BooleanType, StructType(Seq(StructField(name, BooleanType))), () => new BoolAccumulator(isAnd),
        coerceTo = Seq(BooleanType)))
    case _ => Left("expects one boolean argument")
  }
}

object BoolAnd extends BoolAggregate("bool_and", isAnd = true,
  "SELECT _FUNC_(col) FROM VALUES (true), (false), (NULL) AS tab(col)" -> "false")
object BoolOr extends BoolAggregate("bool_or", isAnd = false,
  "SELECT _FUNC_(col) FROM VALUES (true), (false), (NULL) AS tab(col)" -> "true")

final class BoolAccumulator(isAnd: Boolean) extends Accumulator {
  private var value = isAnd
  private var seen = false

  def update(args: Values): Unit = if (!args.isNullAt(0)) {
    value = if (isAnd) value && args.getBoolean(0) else value || args.getBoolean(0)
    seen = true
  }
  def merge(state: Values): Unit = update(state)
  def state(): Array[Any] = Array(evaluate())
  def evaluate(): Any = if (seen) value else null
  def size: Long = 24
}
