package sparkagg.api

import org.apache.spark.sql.types.{DataType, StructType}

/** One argument of a call as seen at analysis: its type, and its value when it is a constant. */
final case class Arg(dataType: DataType, nullable: Boolean, constant: Option[Any] = None)

/** Session settings a function may depend on, fixed at analysis. */
final case class BindContext(
    /** spark.sql.ansi.enabled: integer overflow raises an error (true) or gives NULL (false). */
    failOnOverflow: Boolean)

/**
 * A function with its argument types known: what it returns, what its state is, how to make one.
 *
 * `coerceTo` (DataFusion's coerce_types) lists the types the accumulator reads its arguments as; the
 * host casts to them before `update`, so an accumulator reads one physical type. Empty: as given.
 *
 * `newSlidingAccumulator` is DataFusion's create_sliding_accumulator: a variant whose retract costs
 * memory the plain one should not pay in every group (min / max keep a monotonic queue). None: the
 * plain accumulator serves sliding frames too, retracting if it supports it.
 */
final case class Bound(
    returnType: DataType,
    stateSchema: StructType,
    newAccumulator: () => Accumulator,
    nullable: Boolean = true,
    coerceTo: Seq[DataType] = Nil,
    newSlidingAccumulator: Option[() => Accumulator] = None)

/** The documentation a function shows in `DESCRIBE FUNCTION EXTENDED` (`_FUNC_` stands for its name). */
final case class FunctionDoc(
    usage: String,
    arguments: Seq[(String, String)],
    examples: Seq[(String, String)],
    note: String = "")

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
   * function cannot be called without it.
   */
  def withinGroup: WithinGroup = WithinGroup.Refused

  override def toString: String = name
}

sealed trait WithinGroup
object WithinGroup {
  case object Refused extends WithinGroup
  final case class KeyAsValue(mandatory: Boolean) extends WithinGroup
}
