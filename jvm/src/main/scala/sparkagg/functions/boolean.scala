package sparkagg.functions

import org.apache.spark.sql.types._
import sparkagg.api._
import sparkagg.common._

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
    examples = Seq(example),
    accepts = "boolean",
    result = "boolean",
    emptyInput = "NULL",
    dataFusion = "yes",
    nan = "does not apply: booleans only",
    spark = s"`$name` (${if (isAnd) "`every`" else "`some`, `any`"}): the same results"
  )

  def bind(args: Seq[Arg], ctx: BindContext): Either[String, Bound] = args.map(_.dataType) match {
    case Seq(BooleanType | NullType) =>
      Right(
        Bound(
          BooleanType,
          StructType(Seq(StructField(name, BooleanType))),
          () => new BoolAccumulator(isAnd),
          coerceTo = Seq(BooleanType),
          newGroupsAccumulator = Some(() => new BoolGroups(isAnd))
        ))
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

/**
 * bool_and / bool_or for every group ([[BoolAccumulator]]'s semantics): one bit per group saying whether
 * it saw the value that decides it (false for bool_and, true for bool_or), so a new group needs no
 * initial value, and [[NullState]] for which groups saw any value. State: as the result.
 */
final class BoolGroups(isAnd: Boolean) extends GroupsAccumulator {
  private val decided = new BitVector
  private val nulls = new NullState

  def updateBatch(values: Columns, groupIndices: Array[Int], filter: Option[Column], totalGroups: Int): Unit = {
    decided.resize(totalGroups)
    val c = values.column(0)
    nulls.accumulateRows(groupIndices, c, values.numRows, filter, totalGroups,
      (g, i) => if (c.getBoolean(i) != isAnd) decided.set(g))
  }

  def mergeBatch(states: Columns, groupIndices: Array[Int], filter: Option[Column], totalGroups: Int): Unit =
    updateBatch(states, groupIndices, filter, totalGroups)

  def evaluate(emit: EmitTo): Column = {
    val n = emit.count(decided.length)
    val d = decided.emit(emit)
    new BooleanColumn(Fill.booleans(n)(g => Validity.isValid(d, g) != isAnd), nulls.build(emit), n)
  }
  def state(emit: EmitTo): Array[Column] = Array(evaluate(emit))

  override def convertToState(values: Columns, filter: Option[Column]): Array[Column] = {
    val n = values.numRows
    val c = values.column(0)
    val kept = GroupColumns.rowCounts(n, filter, c)
    Array(new BooleanColumn(Fill.booleans(n)(i => kept(i) != 0 && c.getBoolean(i)), GroupColumns.nonZero(kept), n))
  }
  override def supportsConvertToState: Boolean = true

  def size: Long = decided.size + nulls.size
}
