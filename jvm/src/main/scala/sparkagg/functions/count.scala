package sparkagg.functions

import org.apache.spark.sql.types._
import sparkagg.api._

/**
 * count: rows where every argument is non-NULL; `count(*)` and `count()` count all rows.
 * Never NULL: 0 on empty input. DISTINCT comes from Spark's DISTINCT keyword. Retractable.
 * State: count: bigint.
 */
object Count extends FunctionDef {
  val name = "count"
  val signature = "(*), (), or (any, ...) -> bigint"
  val doc = FunctionDoc(
    usage = "_FUNC_(*) - Returns the number of rows. _FUNC_(expr[, expr...]) - Returns the number of " +
      "rows for which all the arguments are non-NULL. _FUNC_(DISTINCT expr) - the number of distinct " +
      "non-NULL values.",
    arguments = Seq("expr" -> "any type; several arguments count rows where none is NULL"),
    examples = Seq(
      "SELECT _FUNC_(*) FROM VALUES (NULL), (5), (5), (20) AS tab(col)" -> "4",
      "SELECT _FUNC_(col) FROM VALUES (NULL), (5), (5), (20) AS tab(col)" -> "3",
      "SELECT _FUNC_(DISTINCT col) FROM VALUES (NULL), (5), (5), (10) AS tab(col)" -> "2"))

  private val state = StructType(Seq(StructField("count", LongType, nullable = false)))

  def bind(args: Seq[Arg], ctx: BindContext): Either[String, Bound] =
    Right(Bound(LongType, state, () => new CountAccumulator(args.size), nullable = false))
}

final class CountAccumulator(arity: Int) extends Accumulator {
  private var count = 0L

  private def allPresent(args: Values): Boolean = {
    var i = 0
    while (i < arity) {
      if (args.isNullAt(i)) return false
      i += 1
    }
    true
  }

  def update(args: Values): Unit = if (allPresent(args)) count += 1
  override def retract(args: Values): Unit = if (allPresent(args)) count -= 1
  override def supportsRetract: Boolean = true
  def merge(state: Values): Unit = count += state.getLong(0)
  def state(): Array[Any] = Array(count)
  def evaluate(): Any = count
  def size: Long = 24
}
