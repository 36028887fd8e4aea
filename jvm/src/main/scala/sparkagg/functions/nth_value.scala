package sparkagg.functions

import org.apache.spark.sql.types._
import sparkagg.api._
import sparkagg.common.{ObjectColumn, OrderKeys, OrderedValueGroups, OrderedValues, SlidingOrderedRows}

/**
 * nth_value(x, n) [WITHIN GROUP (ORDER BY key [DESC], ...)]: the value of x on the n-th row (1-based)
 * in the order of the keys, or without keys in the order rows were seen; a negative n counts from the
 * end (-1 is the last). NULL values count. NULL on empty input and when n is beyond the rows. n is a
 * constant integer other than 0. Over a sliding frame the frame's rows are kept in key order
 * ([[SlidingNthValueAccumulator]], O(log w) a row); on the grouped operator every group's values share
 * array_agg's pool ([[NthValueGroups]]). State: array_agg's, the values (and their keys) so far.
 */
object NthValue extends FunctionDef {
  val name = "nth_value"
  val signature = "(any, n: constant integer other than 0) [WITHIN GROUP (ORDER BY any orderable, ...)] -> same type"
  override val withinGroup: WithinGroup = WithinGroup.OrderedBy
  val doc = FunctionDoc(
    usage = "_FUNC_(expr, n) [WITHIN GROUP (ORDER BY key [DESC], ...)] - The value of expr on the n-th row in " +
      "the order of the keys; negative n counts from the last row; NULL if there is no such row.",
    arguments = Seq("expr" -> "any type", "n" -> "a constant integer, not 0", "key" -> Types.Orderable),
    examples = Seq(
      "SELECT _FUNC_(col, 2) WITHIN GROUP (ORDER BY t) FROM VALUES (10, 3), (20, 1), (30, 2) AS tab(col, t)" -> "30",
      "SELECT _FUNC_(col, -1) WITHIN GROUP (ORDER BY t) FROM VALUES (10, 3), (20, 1), (30, 2) AS tab(col, t)" -> "10",
      "SELECT _FUNC_(col, 4) WITHIN GROUP (ORDER BY t) FROM VALUES (10, 3), (20, 1), (30, 2) AS tab(col, t)" -> "NULL"
    ),
    note = "n < 0 counts from the last row; NULL past the rows",
    accepts = "any, constant integer other than 0",
    result = "same",
    emptyInput = "NULL",
    dataFusion = "yes",
    nan = "a value like any other",
    spark = "`nth_value` is a window function in Spark (OVER only), never an aggregate; it counts from the " +
      "frame's start and takes no negative n"
  )

  def bind(args: Seq[Arg], ctx: BindContext): Either[String, Bound] = OrderKeys.of(args).flatMap { keys =>
    args.filter(_.sortKey.isEmpty) match {
      case Seq(x, n) =>
        n.constant match {
          case Some(k: java.lang.Number) if Types.isIntegral(n.dataType) && k.longValue != 0 =>
            val t = x.dataType
            val list = ArrayType(t, containsNull = true)
            val (state, values, groups) =
              if (keys.isEmpty)
                (StructType(Seq(StructField(name, list))), () => new ArrayAggAccumulator(t),
                  () => new ArrayAggGroups(t))
              else
                (OrderedValues.stateSchema(name, t, keys), () => new OrderedArrayAggAccumulator(t, keys, keyOffset = 2),
                  () => new OrderedValueGroups(t, keys, keyOffset = 2, skipNullValues = false, result = v => v))
            Right(
              Bound(
                t,
                state,
                () => new NthValueAccumulator(values(), k.longValue),
                newSlidingAccumulator = Some(() => new SlidingNthValueAccumulator(t, keys, k.longValue)),
                newGroupsAccumulator = Some(() => new NthValueGroups(groups(), t, k.longValue)),
                stateCheck = if (keys.isEmpty) StateCheck.AcceptAll else OrderedValues.stateCheck(name)
              ))
          case _ =>
            Left("expects a constant integer n other than 0 as its second argument (1 is the first row, -1 the last)")
        }
      case _ => Left("expects two arguments: a value and a constant integer n")
    }
  }

  override def argumentsOf(state: StructType, parameters: Seq[Arg]): Option[Seq[Arg]] =
    OrderedValues.argumentsOf(name, state, parameters)
}

/** Where the n-th of `count` values is, from 0; None beyond them. */
private object NthPosition {
  def index(n: Long, count: Long): Option[Long] = Some(if (n > 0) n - 1 else count + n).filter(i => i >= 0 && i < count)
}

/** The values in order, as array_agg keeps them; the n-th is picked when read. */
final class NthValueAccumulator(values: Accumulator, n: Long) extends Accumulator {
  def update(args: Values): Unit = values.update(args)
  def merge(state: Values): Unit = values.merge(state)
  def state(): Array[Any] = values.state()
  def evaluate(): Any = values.evaluate() match {
    case all: Array[Any] => NthPosition.index(n, all.length).map(i => all(i.toInt)).orNull
    case _ => null
  }
  def size: Long = values.size
}

/** nth_value over a sliding frame: the frame's rows in key order (arrival order without keys). */
final class SlidingNthValueAccumulator(valueType: DataType, keys: OrderKeys, n: Long) extends Accumulator {
  private val rows = new SlidingOrderedRows(valueType, keys)
  def update(args: Values): Unit = rows.add(args, 0, 2)
  override def retract(args: Values): Unit = rows.removeOldest(args, 2)
  override def supportsRetract: Boolean = true
  def merge(state: Values): Unit = rows.merge(state, 0)
  def state(): Array[Any] = rows.state()
  def evaluate(): Any = NthPosition.index(n, rows.size).map(rows.valueAt).orNull
  def size: Long = rows.sizeInBytes
}

/** nth_value for every group: array_agg's grouped accumulator (ordered or not) `lists` holds the values in
 *  order, and the n-th of each group's list is picked when read, as [[NthValueAccumulator]] picks it. */
private[sparkagg] final class NthValueGroups(lists: GroupsAccumulator, valueType: DataType, n: Long)
  extends GroupsAccumulator {
  def updateBatch(values: Columns, groupIndices: Array[Int], filter: Option[Column], totalGroups: Int): Unit =
    lists.updateBatch(values, groupIndices, filter, totalGroups)
  def mergeBatch(states: Columns, groupIndices: Array[Int], filter: Option[Column], totalGroups: Int): Unit =
    lists.mergeBatch(states, groupIndices, filter, totalGroups)

  def evaluate(emit: EmitTo): Column = {
    val all = lists.evaluate(emit)
    new ObjectColumn(
      Array.tabulate[Any](all.numRows) { g =>
        if (all.isNullAt(g)) null
        else {
          val list = all.getList(g)
          NthPosition.index(
            n, list.numElements).map(_.toInt).filter(!list.isNullAt(_)).map(list.copy(_, valueType)).orNull
        }
      })
  }

  def state(emit: EmitTo): Array[Column] = lists.state(emit)
  override def convertToState(values: Columns, filter: Option[Column]): Array[Column] =
    lists.convertToState(values, filter)
  override def supportsConvertToState: Boolean = lists.supportsConvertToState
  def size: Long = lists.size
}
