package sparkagg.functions

import java.io.ByteArrayOutputStream

import org.apache.spark.sql.types._
import org.apache.spark.unsafe.types.UTF8String
import sparkagg.api._

/**
 * string_agg(x, delimiter): the non-NULL strings of x joined by a constant delimiter; NULL when there
 * are none. Without an ordering the order follows the input, which partitioning may change. State:
 * string_agg, the joined string so far (NULL while empty).
 */
object StringAgg extends FunctionDef {
  val name = "string_agg"
  val signature = "(string, delimiter: constant string) -> string"
  val doc = FunctionDoc(
    usage = "_FUNC_(expr, delimiter) - The non-NULL values of expr joined by delimiter; NULL if there are none.",
    arguments = Seq("expr" -> "string", "delimiter" -> "a constant string"),
    examples = Seq(
      "SELECT _FUNC_(col, '-') FROM VALUES ('a'), (NULL), ('a') AS tab(col)" -> "a-a",
      "SELECT _FUNC_(col, ', ') FROM VALUES (CAST(NULL AS STRING)) AS tab(col)" -> "NULL"))

  private val state = StructType(Seq(StructField(name, StringType)))

  def bind(args: Seq[Arg], ctx: BindContext): Either[String, Bound] = args match {
    case Seq(x, d) if x.dataType.isInstanceOf[StringType] || Types.isUntypedNull(x.dataType) =>
      d.constant match {
        case Some(delimiter: UTF8String) if d.dataType.isInstanceOf[StringType] =>
          Right(Bound(StringType, state, () => new StringAggAccumulator(delimiter.getBytes),
            coerceTo = Seq(StringType, StringType)))
        case _ => Left("expects a constant string as its delimiter (the second argument)")
      }
    case _ => Left("expects two arguments: a string and a constant string delimiter")
  }
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
