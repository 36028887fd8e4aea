package sparkagg.functions

import org.apache.spark.sql.types._
import sparkagg.api._
import sparkagg.common.{GroupColumns, LongColumn, LongVector}

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
      "SELECT _FUNC_(DISTINCT col) FROM VALUES (NULL), (5), (5), (10) AS tab(col)" -> "2"
    ),
    note = "rows where every argument is non-NULL; `DISTINCT` via Spark; `(*)` needs the extension",
    accepts = "any",
    result = "bigint",
    emptyInput = "0",
    dataFusion = "yes",
    nan = "a value like any other, counted; DISTINCT counts every NaN as one value",
    spark = "`count`: the same, `count(*)`, `count(a, b)` and DISTINCT alike"
  )

  private val state = StructType(Seq(StructField("count", LongType, nullable = false)))

  def bind(args: Seq[Arg], ctx: BindContext): Either[String, Bound] =
    Right(
      Bound(
        LongType,
        state,
        () => new CountAccumulator(args.size),
        nullable = false,
        newGroupsAccumulator = Some(() => new CountGroups(args.size)),
        stateCheck = StateCheck.nonNegative(
          "count")
      ))
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

/**
 * count for every group: one bigint per group. A row counts when it passes the filter and none of its
 * `arity` arguments is NULL; the loop checks neither when there is no filter and no column has NULLs.
 */
final class CountGroups(arity: Int) extends GroupsAccumulator {
  private val counts = new LongVector

  def updateBatch(values: Columns, groupIndices: Array[Int], filter: Option[Column], totalGroups: Int): Unit = {
    counts.resize(totalGroups)
    val c = counts.array
    val n = values.numRows
    val taken = GroupColumns.taken(n, filter, (0 until arity).map(values.column): _*)
    var i = 0
    if (taken == null) {
      while (i < n) { c(groupIndices(i)) += 1; i += 1 }
    } else {
      while (i < n) { if (taken(i)) c(groupIndices(i)) += 1; i += 1 }
    }
  }

  def mergeBatch(states: Columns, groupIndices: Array[Int], filter: Option[Column], totalGroups: Int): Unit = {
    counts.resize(totalGroups)
    val c = counts.array
    val s = states.column(0)
    val f = filter.orNull
    var i = 0
    while (i < states.numRows) {
      if (GroupsAccumulator.keep(f, i)) c(groupIndices(i)) += s.getLong(i)
      i += 1
    }
  }

  def evaluate(emit: EmitTo): Column = {
    val c = counts.emit(emit)
    new LongColumn(c, null, c.length)
  }
  def state(emit: EmitTo): Array[Column] = Array(evaluate(emit))

  override def convertToState(values: Columns, filter: Option[Column]): Array[Column] = {
    val n = values.numRows
    Array(new LongColumn(GroupColumns.rowCounts(n, filter, (0 until arity).map(values.column): _*), null, n))
  }
  override def supportsConvertToState: Boolean = true

  def size: Long = counts.size
}
