package sparkagg.functions

import java.io.ByteArrayOutputStream

import org.apache.spark.sql.types._
import org.apache.spark.unsafe.types.UTF8String
import sparkagg.api._
import sparkagg.common.{OrderKeys, OrderedValues}

/**
 * string_agg(x, delimiter) [WITHIN GROUP (ORDER BY key [DESC], ...)]: the non-NULL strings of x joined
 * by a constant delimiter, in the order of the keys if given; NULL when there are none. Without an
 * ordering the order follows the input, which partitioning may change. State: string_agg, the joined
 * string so far (NULL while empty); ordered, the strings sorted and string_agg_orderings, their keys.
 */
object StringAgg extends FunctionDef {
  val name = "string_agg"
  val signature = "(string, delimiter: constant string) [WITHIN GROUP (ORDER BY any orderable, ...)] -> string"
  override val withinGroup: WithinGroup = WithinGroup.OrderedBy
  val doc = FunctionDoc(
    usage = "_FUNC_(expr, delimiter) [WITHIN GROUP (ORDER BY key [DESC], ...)] - The non-NULL values of expr " +
      "joined by delimiter, in the order of the keys if given; NULL if there are none.",
    arguments = Seq("expr" -> "string", "delimiter" -> "a constant string", "key" -> Types.Orderable),
    examples = Seq(
      "SELECT _FUNC_(col, '-') FROM VALUES ('a'), (NULL), ('a') AS tab(col)" -> "a-a",
      "SELECT _FUNC_(col, ', ') FROM VALUES (CAST(NULL AS STRING)) AS tab(col)" -> "NULL",
      "SELECT _FUNC_(col, ',') WITHIN GROUP (ORDER BY t) FROM VALUES ('a', 3), (NULL, 1), ('c', 2) AS tab(col, t)" ->
        "c,a"
    )
  )

  private val state = StructType(Seq(StructField(name, StringType)))

  def bind(args: Seq[Arg], ctx: BindContext): Either[String, Bound] = OrderKeys.of(args).flatMap { keys =>
    args.filter(_.sortKey.isEmpty) match {
      case Seq(x, d) if x.dataType.isInstanceOf[StringType] || Types.isUntypedNull(x.dataType) =>
        d.constant match {
          case Some(delimiter: UTF8String) if d.dataType.isInstanceOf[StringType] =>
            val coerce = Seq(StringType, StringType) ++ keys.types
            if (keys.isEmpty)
              Right(Bound(StringType, state, () => new StringAggAccumulator(delimiter.getBytes), coerceTo = coerce))
            else
              Right(
                Bound(
                  StringType,
                  OrderedValues.stateSchema(name, StringType, keys),
                  () => new OrderedStringAggAccumulator(delimiter.getBytes, keys),
                  coerceTo = coerce,
                  stateCheck = OrderedValues.stateCheck(
                    name)
                ))
          case _ => Left("expects a constant string as its delimiter (the second argument)")
        }
      case _ => Left("expects two arguments: a string and a constant string delimiter")
    }
  }

  override def argumentsOf(state: StructType, parameters: Seq[Arg]): Option[Seq[Arg]] =
    OrderedValues.argumentsOf(name, state, parameters)
}

final class StringAggAccumulator(delimiter: Array[Byte]) extends Accumulator {
  private val joined = new ByteArrayOutputStream()
  private var empty = true

  private def append(s: UTF8String): Unit = {
    if (!empty) joined.write(delimiter)
    joined.write(s.getBytes)
    empty = false
  }

  def update(args: Values): Unit = if (!args.isNullAt(0)) append(args.getUTF8String(0))
  def merge(state: Values): Unit = if (!state.isNullAt(0)) append(state.getUTF8String(0))
  def state(): Array[Any] = Array(evaluate())
  def evaluate(): Any = if (empty) null else UTF8String.fromBytes(joined.toByteArray)
  def size: Long = 64 + joined.size
}

/** string_agg with WITHIN GROUP: the strings kept with their keys, joined in key order when read. */
final class OrderedStringAggAccumulator(delimiter: Array[Byte], keys: OrderKeys) extends Accumulator {
  private val values = new OrderedValues(StringType, keys)
  def update(args: Values): Unit = if (!args.isNullAt(0)) values.add(args, 0, 2)
  def merge(state: Values): Unit = values.merge(state, 0)
  def state(): Array[Any] = values.state()
  def evaluate(): Any =
    if (values.isEmpty) null
    else UTF8String.concatWs(UTF8String.fromBytes(delimiter), values.sortedValues.map(_.asInstanceOf[UTF8String]): _*)
  def size: Long = values.size
}
