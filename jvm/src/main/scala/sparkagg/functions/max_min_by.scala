package sparkagg.functions

import org.apache.spark.sql.types._
import sparkagg.api._
import sparkagg.common.OrderKeys

/**
 * max_by(x, y) and min_by(x, y): the x of the row with the largest (smallest) y, as DataFusion-extra gives
 * them (it rewrites them to first/last_value ordered by y, and so does sparkagg: first_value's accumulator
 * over y descending or ascending). Rows whose y is NULL are skipped; NULL when no row has a y (x itself
 * may be NULL). Equal ys: the first row to arrive wins, so across partitions any of them. y sorts as Spark
 * sorts (NaN greatest). State: the value, y (its field named with the direction), <name>_is_set.
 */
sealed abstract class ExtremeBy(val name: String, largest: Boolean, example: (String, String)) extends FunctionDef {
  private val isSet = s"${name}_is_set"
  private val direction = SortKey(descending = largest, nullsFirst = false)
  val signature = s"(any, ${Types.Orderable}) -> type of the first"
  val doc = FunctionDoc(
    usage = s"_FUNC_(x, y) - The value of x on the row with the ${if (largest) "largest" else "smallest"} y " +
      "(rows where y is NULL skipped).",
    arguments = Seq("x" -> "any type", "y" -> Types.Orderable),
    examples = Seq(example),
    note = "Of rows with equal y, the first to arrive: which one may change with partitioning."
  )

  def bind(args: Seq[Arg], ctx: BindContext): Either[String, Bound] = args.map(_.dataType) match {
    case Seq(x, y) if Types.isOrderable(y) =>
      val keys = OrderKeys(Seq(y), Seq(direction))
      val state = StructType(StructField(name, x) +: keys.fields :+ StructField(isSet, BooleanType))
      Right(
        Bound(
          x,
          state,
          () => new ExtremeByAccumulator(new FirstLastAccumulator(x, keys, 1, last = false, ignoreNulls = false)),
          newSlidingAccumulator = Some(() =>
            new ExtremeByAccumulator(new SlidingFirstLastAccumulator(x, keys, 1, last = false,
                ignoreNulls = false)))
        ))
    case Seq(_, y) => Left(s"cannot choose by a value of type ${y.simpleString} (accepted: ${Types.Orderable})")
    case _ => Left("expects two arguments: the value and the key it is chosen by")
  }

  override def argumentsOf(state: StructType, parameters: Seq[Arg]): Option[Seq[Arg]] =
    state.fields.toSeq match {
      case Seq(StructField(`name`, x, _, _), StructField(_, y, _, _), StructField(`isSet`, BooleanType, _, _)) =>
        Some(Seq(Arg(x, nullable = true), Arg(y, nullable = true)))
      case _ => None
    }
}

object MaxBy extends ExtremeBy("max_by", largest = true,
    "SELECT _FUNC_(x, y) FROM VALUES ('a', 5), ('b', NULL), ('c', 7) AS tab(x, y)" -> "c")
object MinBy extends ExtremeBy("min_by", largest = false,
    "SELECT _FUNC_(x, y) FROM VALUES ('a', 5), ('b', NULL), ('c', 7) AS tab(x, y)" -> "a")

/** first_value's accumulator (or its sliding variant) over the rows whose key y (the second argument) is
 *  not NULL. */
final class ExtremeByAccumulator(chosen: Accumulator) extends Accumulator {
  def update(args: Values): Unit = if (!args.isNullAt(1)) chosen.update(args)
  override def retract(args: Values): Unit = if (!args.isNullAt(1)) chosen.retract(args)
  override def supportsRetract: Boolean = chosen.supportsRetract
  def merge(state: Values): Unit = chosen.merge(state)
  def state(): Array[Any] = chosen.state()
  def evaluate(): Any = chosen.evaluate()
  def size: Long = chosen.size
}
