package sparkagg.api

import org.apache.spark.sql.types.{DataType, StructType}

/**
 * One argument of a call as seen at analysis: its type, and its value when it is a constant. A key of
 * `WITHIN GROUP (ORDER BY ...)` is an argument too, after the function's own, carrying its direction.
 */
final case class Arg(dataType: DataType, nullable: Boolean, constant: Option[Any] = None,
    sortKey: Option[SortKey] = None)

/** How one ordering key sorts: `ORDER BY key [ASC | DESC] [NULLS FIRST | NULLS LAST]`. */
final case class SortKey(descending: Boolean, nullsFirst: Boolean) {
  /** The direction as a name, e.g. "desc_nulls_last": ordered states carry it in their field names. */
  def name: String = (if (descending) "desc" else "asc") + (if (nullsFirst) "_nulls_first" else "_nulls_last")
}

object SortKey {
  def fromName(name: String): Option[SortKey] = Seq(false, true).flatMap(d => Seq(false, true).map(SortKey(d, _)))
    .find(k => name.endsWith(k.name))
}

/** Session settings a function may depend on, fixed at analysis. */
final case class BindContext(
    /** spark.sql.ansi.enabled: integer overflow raises an error (true) or gives NULL (false). */
    failOnOverflow: Boolean,
    /** Spark's legacy arithmetic instead: an integer result that does not fit wraps around. Only for
     *  Spark's own sum with ANSI off, when sparkagg's grouped operator runs it. */
    wrapOnOverflow: Boolean = false)

/**
 * A function with its argument types known: what it returns, what its state is, how to make one.
 *
 * `coerceTo` (DataFusion's coerce_types) lists the types the accumulator reads its arguments as; the
 * host casts to them before `update`, so an accumulator reads one physical type. Empty: as given.
 *
 * `newSlidingAccumulator` is DataFusion's create_sliding_accumulator: a variant whose retract costs
 * memory the plain one should not pay in every group (min / max keep a monotonic queue). None: the
 * plain accumulator serves sliding frames too, retracting if it supports it.
 *
 * `newGroupsAccumulator` is DataFusion's create_groups_accumulator: a native [[GroupsAccumulator]] that
 * keeps every group's state in primitive arrays, with the accumulator's results. None: a query calling the
 * function keeps Spark's path, where it runs as a TypedImperativeAggregate (one Accumulator per group).
 *
 * `packing`: a smaller encoding of whole states (see [[StatePacking]]) for an operator's exchange
 * between its partial and final halves. None: the state fields travel as they are.
 *
 * `stateCheck` refuses user-given states no accumulator could have made (see [[StateCheck]]).
 */
final case class Bound(
    returnType: DataType,
    stateSchema: StructType,
    newAccumulator: () => Accumulator,
    nullable: Boolean = true,
    coerceTo: Seq[DataType] = Nil,
    newSlidingAccumulator: Option[() => Accumulator] = None,
    newGroupsAccumulator: Option[() => GroupsAccumulator] = None,
    packing: Option[StatePacking] = None,
    stateCheck: StateCheck = StateCheck.AcceptAll) {
  /** The first fault of a user-given state: a NULL where the schema says no state holds one (a count),
   *  then what [[stateCheck]] finds. */
  def faultOf(state: Values): Option[StateFault] = {
    val fields = stateSchema.fields
    var i = 0
    while (i < fields.length && (fields(i).nullable || !state.isNullAt(i))) i += 1
    if (i < fields.length) Some(StateFault(fields(i).name, "is NULL, which no state holds"))
    else stateCheck(stateSchema, state)
  }
}

/**
 * States packed into one binary value per row, and back: what the grouped operator ships between its
 * partial and final halves instead of the state fields, where Spark's shuffle costs by the byte. The
 * state schema, `state` and `mergeBatch` stay as they are; `unpack(pack(states))` gives the same
 * columns, every value to the bit. A packing may leave out what it can recompute exactly (it checks
 * before it leaves anything out).
 */
trait StatePacking {
  /** Rows 0 until `numRows` of `states` (the state schema's columns), one binary value each. */
  def pack(states: Array[Column], numRows: Int): Column
  /** The state columns of `packed`'s rows (binary values as `pack` made them). */
  def unpack(packed: Column): Array[Column]
}

/**
 * The documentation a function shows in `DESCRIBE FUNCTION EXTENDED` (`_FUNC_` stands for its name), and
 * the facts of its entry in the function reference (`make docs`) and its row in the README's function
 * table, which are written here only:
 *  - `note`: what else a user should know, in brief (Markdown);
 *  - `accepts`: the argument types, in brief;
 *  - `result`: the result type, by argument type where it depends on it;
 *  - `emptyInput`: the result over no rows (or only rows the function skips);
 *  - `dataFusion`: "yes" when results equal DataFusion 55's, "deviation: ..." naming the cases
 *    docs/deviations.md explains, or "not in DataFusion 55";
 *  - `nan`: what a NaN among the values does to the result ("does not apply: ..." for types without NaN);
 *  - `spark`: Spark's nearest built-in (its name in backticks) and how its results differ.
 */
final case class FunctionDoc(
    usage: String,
    arguments: Seq[(String, String)],
    examples: Seq[(String, String)],
    note: String = "",
    accepts: String = "",
    result: String = "",
    emptyInput: String = "",
    dataFusion: String = "",
    nan: String = "",
    spark: String = "")

/**
 * An aggregate function: DataFusion's AggregateUDFImpl reduced to what Spark needs.
 *
 * `bind` is called at analysis with the argument types; it either returns the [[Bound]] function or a
 * message saying what was wrong, which the host reports naming the function and [[signature]].
 * Implementations are usually Scala objects; they must be serializable because query plans carry them.
 */
trait FunctionDef extends Serializable {
  /** DataFusion's name, without the SQL prefix (e.g. "avg"). */
  def name: String
  def aliases: Seq[String] = Nil
  /** The accepted argument types, for error messages and listings, e.g. "(numeric) -> double". */
  def signature: String
  def doc: FunctionDoc
  def bind(args: Seq[Arg], ctx: BindContext): Either[String, Bound]

  /**
   * How the function takes SQL's `WITHIN GROUP (ORDER BY key [DESC])`. [[WithinGroup.Refused]]: not at
   * all. [[WithinGroup.KeyAsValue]]: the ordering key becomes the first argument and a constant
   * boolean `descending` the last (percentile_cont(p) WITHIN GROUP (ORDER BY x)); `mandatory` when the
   * function cannot be called without it. [[WithinGroup.OrderedBy]]: the keys order the values.
   */
  def withinGroup: WithinGroup = WithinGroup.Refused

  /**
   * The arguments that made a state of shape `state`, when the state shows more than `sparkagg.common.StateShapes`'
   * search over its field types can find (ordering keys and their directions), or less (a t-digest
   * forgets its input type). `parameters` are the constant arguments given again to the state forms.
   * None: let the search find them.
   */
  def argumentsOf(state: StructType, parameters: Seq[Arg]): Option[Seq[Arg]] = None

  override def toString: String = name
}

sealed trait WithinGroup
object WithinGroup {
  case object Refused extends WithinGroup
  final case class KeyAsValue(mandatory: Boolean) extends WithinGroup
  /**
   * The keys order the values the function sees (array_agg, first_value): they become trailing
   * arguments, each with its [[SortKey]], and the function keeps them in its state so that merging
   * partial states honours the order.
   */
  case object OrderedBy extends WithinGroup
}
