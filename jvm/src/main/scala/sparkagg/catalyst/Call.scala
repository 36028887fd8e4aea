package sparkagg.catalyst

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Cast, Expression, GenericInternalRow, UnsafeProjection}
import org.apache.spark.sql.types.{BinaryType, DataType, DoubleType, LongType, StructField, StructType}
import sparkagg.api._
import sparkagg.common.{AccumulatorGroups, ColumnsRow, StateShapes}
import sparkagg.compat._

/**
 * A call of a function as fixed at analysis: the function, the name it was called by, its argument
 * types. It is the one bridge between Catalyst and the accumulators: the Catalyst host
 * ([[AccumulatorAggregate]]), the Aggregator adapter and sparkagg's operators (exec/'s grouped
 * aggregation, window/'s sliding window) take from it their accumulators, the casts of their
 * arguments, the fields a grouped state crosses the exchange in, and every value they hand to Catalyst.
 * Only this small serializable description travels with a plan; each task binds it again (a bound
 * function holds factories, not data).
 */
final case class Call(function: FunctionDef, sqlName: String, args: Seq[Arg], ctx: BindContext) {
  @transient lazy val binding: Either[String, Bound] = function.bind(args, ctx)

  def bound: Bound = binding.fold(why => throw new IllegalStateException(explain(why)), identity)

  /** The analysis error: the function, what was wrong, what it was given, what it accepts. */
  def explain(why: String): String =
    s"$sqlName $why; got $sqlName${Types.describe(args)}. Accepted: $sqlName${function.signature}"

  @transient lazy val codec = new StateCodec(function.name, bound.stateSchema)

  def newAccumulator(): Accumulator = bound.newAccumulator()

  /** Merges a state a user gave (the state forms), refusing one no accumulator could have made. */
  def mergeGiven(acc: Accumulator, state: Values): Unit = {
    checkGiven(state)
    acc.merge(state)
  }

  private def checkGiven(state: Values): Unit =
    bound.faultOf(state).foreach(fault => throw StateCheck.refuse(sqlName, fault))

  /** Refuses, as [[mergeGiven]], a batch of states a user gave (the rows `filter` passes) of which one
   *  could not have come from an accumulator: the grouped operator's state forms merge them as a batch. */
  def checkGiven(states: Columns, filter: Option[Column]): Unit = {
    val state = new ColumnsRow(states)
    val passes: Int => Boolean = filter match {
      case Some(f) => r => !f.isNullAt(r) && f.getBoolean(r)
      case None => _ => true
    }
    var r = 0
    while (r < states.numRows) {
      if (passes(r)) { state.row = r; checkGiven(state) }
      r += 1
    }
  }

  /** An accumulator for sliding frames: the function's sliding variant where it has one. */
  def newSlidingAccumulator(): Accumulator = bound.newSlidingAccumulator.getOrElse(bound.newAccumulator)()

  /** Whether the function has its own GroupsAccumulator for these arguments (else the adapter serves). */
  def hasNativeGroups: Boolean = bound.newGroupsAccumulator.isDefined

  def newGroupsAccumulator(): GroupsAccumulator = AccumulatorGroups.of(bound)

  /** The fields a grouped state crosses the exchange in, partial to final: the state fields, or one
   *  binary field when the function packs its states ([[StatePacking]]). */
  def exchangedFields: Seq[StructField] =
    if (bound.packing.isDefined) Seq(StructField("packed", BinaryType)) else bound.stateSchema.fields.toSeq

  /** States as they cross the exchange (packed when the function packs), and back. */
  def exchanged(states: Array[Column], numRows: Int): Array[Column] =
    bound.packing.fold(states)(p => Array[Column](p.pack(states, numRows)))
  def received(columns: Array[Column]): Array[Column] = bound.packing.fold(columns)(_.unpack(columns(0)))

  /** `arguments`, each cast to the type the accumulator reads where it differs. */
  def castArguments(arguments: Seq[Expression]): Seq[Expression] = {
    val coerce = bound.coerceTo
    arguments.zipWithIndex.map { case (a, i) =>
      if (coerce.isEmpty || a.dataType == coerce(i)) a else Cast(a, coerce(i))
    }
  }

  /** Evaluates `arguments` into one reused row, cast to the types the accumulator reads. */
  def argumentProjection(arguments: Seq[Expression]): UnsafeProjection =
    UnsafeProjection.create(castArguments(arguments))

  /** An accumulator's state as a Catalyst row of the state schema. */
  def stateRow(state: Array[Any]): InternalRow = {
    val fields = bound.stateSchema.fields
    new GenericInternalRow(
      Array.tabulate[Any](state.length)(i => CatalystValues.toCatalyst(state(i), fields(i).dataType)))
  }

  /** Grouped states, a column per state field, as one column of state rows (as [[stateRow]] makes them):
   *  a `_state` form's result on the grouped operator. */
  def stateColumn(states: Array[Column], numRows: Int): Column = {
    val fields = bound.stateSchema.fields
    new StateRows(
      numRows,
      row =>
        new GenericInternalRow(
          Array.tabulate[Any](fields.length) { i =>
            CatalystValues.toCatalyst(states(i).get(row, fields(i).dataType), fields(i).dataType)
          })
    )
  }

  /** An accumulator's result as a Catalyst value of the return type. */
  def result(acc: Accumulator): Any = CatalystValues.toCatalyst(acc.evaluate(), bound.returnType)
}

object Call {
  /** The call of `function` on `children` as the host of `form` sees it: on rows, the children's
   *  types, the last `ordering.size` being WITHIN GROUP keys; on states, the argument types that made a
   *  state of the child's shape. */
  def of(function: FunctionDef, sqlName: String, form: Form, children: Seq[Expression],
      ctx: BindContext, ordering: Seq[SortKey] = Nil): Either[String, Call] =
    if (!form.statesIn) {
      val own = children.size - ordering.size
      val keys = children.drop(own).zip(ordering).map { case (c, k) => argumentOf(c).copy(sortKey = Some(k)) }
      Right(Call(function, sqlName, children.take(own).map(argumentOf) ++ keys, ctx))
    } else {
      // The state, then any constant parameters the function keeps outside its state.
      val arguments = children.headOption.map(_.dataType) match {
        case Some(state: StructType) =>
          StateShapes.argumentsFor(function, state, ctx, children.tail.map(argumentOf))
        case _ => None
      }
      arguments.map(args => Call(function, sqlName, args, ctx))
        .toRight(wrongState(function, sqlName, form, children.map(_.dataType), ctx))
    }

  private def argumentOf(c: Expression): Arg = Arg(c.dataType, c.nullable, if (c.foldable) Option(c.eval()) else None)

  private def wrongState(function: FunctionDef, sqlName: String, form: Form, got: Seq[DataType],
      ctx: BindContext): String = {
    val producer = sqlName.stripSuffix(form.suffix) + Form.State.suffix
    val example = Seq(Seq(DoubleType), Seq(DoubleType, DoubleType), Seq(LongType), Nil).iterator
      .flatMap(types => function.bind(types.map(Arg(_, nullable = true)), ctx).toOption).nextOption()
      .map(b => s", such as ${b.stateSchema.simpleString}").getOrElse("")
    s"$sqlName expects a state of ${function.name} as $producer returns it$example (then any constant " +
      s"parameters of ${function.name}); " +
      s"got $sqlName${got.map(_.simpleString).mkString("(", ", ", ")")}"
  }
}

/** A column of state rows, never NULL (a state of no rows is a state). */
private final class StateRows(val numRows: Int, rowAt: Int => InternalRow) extends Column {
  def hasNulls: Boolean = false
  def isNullAt(row: Int): Boolean = false
  def get(row: Int, dataType: DataType): AnyRef = rowAt(row)
}

/** What a host reads and returns: the function itself, or one of its state-as-data forms. */
sealed abstract class Form(val suffix: String, val statesIn: Boolean, val stateOut: Boolean) extends Serializable

object Form {
  /** f(args): rows in, the value out. */
  case object Plain extends Form("", statesIn = false, stateOut = false)
  /** f_state(args): rows in, the state out, as a struct of the declared state fields. */
  case object State extends Form("_state", statesIn = false, stateOut = true)
  /** f_merge(state): states in, the value out. */
  case object Merge extends Form("_merge", statesIn = true, stateOut = false)
  /** f_merge_state(state): states in, the merged state out (rollups of rollups). */
  case object MergeState extends Form("_merge_state", statesIn = true, stateOut = true)
  /** f_finalize(state): a scalar function, one state in, its value out. */
  case object Finalize extends Form("_finalize", statesIn = true, stateOut = false)

  val aggregates: Seq[Form] = Seq(Plain, State, Merge, MergeState)
}
