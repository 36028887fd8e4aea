package sparkagg.functions

import scala.collection.mutable.ArrayBuffer

import org.apache.spark.sql.types._
import org.apache.spark.unsafe.types.UTF8String
import sparkagg.api._

/**
 * array_agg(x) [WITHIN GROUP (ORDER BY key [DESC], ...)]: the values of x, NULLs kept, as array<T> with
 * nullable elements (seed 004); NULL on empty input, not []. DISTINCT comes from Spark's DISTINCT
 * keyword; DataFusion's IGNORE NULLS is `FILTER (WHERE x IS NOT NULL)` (Spark's parser keeps IGNORE
 * NULLS for its own first/last). Without an ordering the order of the elements follows the input,
 * which partitioning may change. State: array_agg, the list so far; ordered, the list sorted and
 * array_agg_orderings, the keys of its elements.
 */
object ArrayAgg extends FunctionDef {
  val name = "array_agg"
  val signature = "(any) [WITHIN GROUP (ORDER BY any orderable, ...)] -> array<same type>"
  override val withinGroup: WithinGroup = WithinGroup.OrderedBy
  val doc = FunctionDoc(
    usage = "_FUNC_(expr) [WITHIN GROUP (ORDER BY key [DESC], ...)] - The values of expr, NULLs included, " +
      "as an array, in the order of the keys if given; NULL if there are no rows.",
    arguments = Seq("expr" -> "any type", "key" -> Types.Orderable),
    examples = Seq(
      "SELECT _FUNC_(col) FROM VALUES (1), (NULL), (1) AS tab(col)" -> "[1, null, 1]",
      "SELECT _FUNC_(col) FROM VALUES (1) AS tab(col) WHERE col > 1" -> "NULL",
      "SELECT _FUNC_(col) WITHIN GROUP (ORDER BY t DESC) FROM VALUES ('a', 1), ('b', 3), (NULL, 2) AS tab(col, t)" ->
        "[b, null, a]",
      "SELECT _FUNC_(col) FILTER (WHERE col IS NOT NULL) FROM VALUES (1), (NULL), (2) AS tab(col)" -> "[1, 2]"),
    note = "IGNORE NULLS is written FILTER (WHERE expr IS NOT NULL).")

  def bind(args: Seq[Arg], ctx: BindContext): Either[String, Bound] = OrderKeys.of(args).flatMap { keys =>
    args.filter(_.sortKey.isEmpty).map(_.dataType) match {
      case Seq(t) =>
        val list = ArrayType(t, containsNull = true)
        if (keys.isEmpty) Right(Bound(list, StructType(Seq(StructField(name, list))), () => new ArrayAggAccumulator(t)))
        else Right(Bound(list, OrderedValues.stateSchema(name, t, keys), () => new OrderedArrayAggAccumulator(t, keys)))
      case _ => Left("expects exactly one argument")
    }
  }

  override def argumentsOf(state: StructType, parameters: Seq[Arg]): Option[Seq[Arg]] =
    OrderedValues.argumentsOf(name, state, parameters)
}

/** array_agg with WITHIN GROUP: the values sorted by their keys, which start at `keyOffset` in a row. */
final class OrderedArrayAggAccumulator(elementType: DataType, keys: OrderKeys, keyOffset: Int = 1) extends Accumulator {
  private val values = new OrderedValues(elementType, keys)
  def update(args: Values): Unit = values.add(args, 0, keyOffset)
  def merge(state: Values): Unit = values.merge(state, 0)
  def state(): Array[Any] = values.state()
  def evaluate(): Any = if (values.isEmpty) null else values.sortedValues
  def size: Long = values.size
}

final class ArrayAggAccumulator(elementType: DataType) extends Accumulator {
  private val values = new ArrayBuffer[Any]
  private var bytes = 0L

  private def keep(v: Any): Unit = {
    values += v
    bytes += 16 + (v match {
      case s: UTF8String => s.numBytes
      case b: Array[Byte] => b.length
      case _ => 8
    })
  }

  def update(args: Values): Unit = keep(if (args.isNullAt(0)) null else args.copy(0, elementType))

  def merge(state: Values): Unit = if (!state.isNullAt(0)) {
    val list = state.getList(0)
    var j = 0
    while (j < list.numElements) {
      keep(if (list.isNullAt(j)) null else list.copy(j, elementType))
      j += 1
    }
  }

  def state(): Array[Any] = Array(values.toArray[Any])
  def evaluate(): Any = if (values.isEmpty) null else values.toArray[Any]
  def size: Long = 48 + 8L * values.length + bytes
}
