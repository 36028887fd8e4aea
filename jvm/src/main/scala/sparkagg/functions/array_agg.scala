package sparkagg.functions

import scala.collection.mutable.ArrayBuffer

import org.apache.spark.sql.types._
import org.apache.spark.unsafe.types.UTF8String
import sparkagg.api._

/**
 * array_agg(x): the values of x, NULLs kept, as array<T> with nullable elements (seed 004); NULL on
 * empty input, not []. DISTINCT comes from Spark's DISTINCT keyword. Without an ordering the order of
 * the elements follows the input, which partitioning may change. State: array_agg, the list so far.
 */
object ArrayAgg extends FunctionDef {
  val name = "array_agg"
  val signature = "(any) -> array<same type>"
  val doc = FunctionDoc(
    usage = "_FUNC_(expr) - The values of expr, NULLs included, as an array; NULL if there are no rows.",
    arguments = Seq("expr" -> "any type"),
    examples = Seq(
      "SELECT _FUNC_(col) FROM VALUES (1), (NULL), (1) AS tab(col)" -> "[1, null, 1]",
      "SELECT _FUNC_(col) FROM VALUES (1) AS tab(col) WHERE col > 1" -> "NULL"))

  def bind(args: Seq[Arg], ctx: BindContext): Either[String, Bound] = args.map(_.dataType) match {
    case Seq(t) =>
      val list = ArrayType(t, containsNull = true)
      Right(Bound(list, StructType(Seq(StructField(name, list))), () => new ArrayAggAccumulator(t)))
    case _ => Left("expects exactly one argument")
  }
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
