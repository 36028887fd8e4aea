package sparkagg.functions

import org.apache.spark.sql.types._
import sparkagg.api._
import sparkagg.common.{FoldGroups, LongFold, ValueKind}

/**
 * bit_and, bit_or, bit_xor over integers (tinyint to bigint), returning the input type; NULL on empty or
 * all-NULL input. State: the running value, of the input type. bit_xor retracts (x ^ v ^ v = x);
 * bit_xor(DISTINCT x) comes from Spark's DISTINCT keyword.
 */
sealed abstract class Bitwise(val name: String, val identity: Long, example: (String, String), note: String = "")
  extends FunctionDef {
  private[sparkagg] def combine(acc: Long, v: Long): Long
  private[sparkagg] def retractable: Boolean = false

  val signature = "(tinyint|smallint|int|bigint) -> same type"
  val doc = FunctionDoc(
    usage = s"_FUNC_(expr) - The bitwise ${name.stripPrefix("bit_").toUpperCase} of the non-NULL values of expr.",
    arguments = Seq("expr" -> "an integer type: tinyint, smallint, int or bigint"),
    examples = Seq(example),
    note = note,
    accepts = "tinyint, smallint, int, bigint",
    result = "same",
    emptyInput = "NULL",
    dataFusion = "yes",
    nan = "does not apply: integers only",
    spark = s"`$name`: the same results"
  )

  def bind(args: Seq[Arg], ctx: BindContext): Either[String, Bound] = args.map(_.dataType) match {
    case Seq(t) if Types.isIntegral(t) =>
      val kind = new ValueKind.LongLike(t)
      Right(Bound(t, StructType(Seq(StructField(name, t))), () => new BitwiseAccumulator(this, kind),
          newGroupsAccumulator = Some(() => new FoldGroups(new BitwiseFold(this, kind)))))
    case _ => Left("expects one argument of an integer type (tinyint, smallint, int, bigint)")
  }
}

final class BitwiseAccumulator(fn: Bitwise, kind: ValueKind.LongLike) extends Accumulator {
  private var value = fn.identity
  private var count = 0L

  def update(args: Values): Unit =
    if (!args.isNullAt(0)) { value = fn.combine(value, kind.readLong(args, 0)); count += 1 }
  // Only bit_xor is retractable: xor is its own inverse.
  override def retract(args: Values): Unit =
    if (!args.isNullAt(0)) { value = fn.combine(value, kind.readLong(args, 0)); count -= 1 }
  override def supportsRetract: Boolean = fn.retractable
  def merge(state: Values): Unit = update(state)
  def state(): Array[Any] = Array(evaluate())
  def evaluate(): Any = if (count == 0) null else kind.box(value)
  def size: Long = 32
}

object BitAnd extends Bitwise("bit_and", -1L,
    "SELECT _FUNC_(col) FROM VALUES (3), (5) AS tab(col)" -> "1") {
  private[sparkagg] def combine(acc: Long, v: Long): Long = acc & v
}

object BitOr extends Bitwise("bit_or", 0L,
    "SELECT _FUNC_(col) FROM VALUES (3), (5) AS tab(col)" -> "7") {
  private[sparkagg] def combine(acc: Long, v: Long): Long = acc | v
}

object BitXor extends Bitwise("bit_xor", 0L,
    "SELECT _FUNC_(col) FROM VALUES (3), (5), (NULL) AS tab(col)" -> "6", note = "`bit_xor(DISTINCT)` via Spark") {
  private[sparkagg] def combine(acc: Long, v: Long): Long = acc ^ v
  override private[sparkagg] def retractable: Boolean = true
}

/** bit_and / bit_or / bit_xor for every group ([[BitwiseAccumulator]]'s semantics). State: as the result. */
private[sparkagg] final class BitwiseFold(fn: Bitwise, kind: ValueKind.LongLike) extends LongFold(kind, fn.identity) {
  def combine(acc: Long, v: Long): Long = fn.combine(acc, v)
}
