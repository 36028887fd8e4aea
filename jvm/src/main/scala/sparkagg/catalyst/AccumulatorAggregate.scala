package sparkagg.catalyst

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.analysis.TypeCheckResult
import org.apache.spark.sql.catalyst.expressions.{BoundReference, Descending, Expression, Literal, NullsFirst, SortOrder}
import org.apache.spark.sql.catalyst.expressions.aggregate.{AggregateFunction, TypedImperativeAggregate}
import org.apache.spark.sql.sparkagg.{OrderingWithinGroupHost, SparkInternals}
import org.apache.spark.sql.types.{BooleanType, DataType, NullType}
import sparkagg.api._

/**
 * Runs any [[Accumulator]] inside Spark's partial / final aggregation (ObjectHashAggregateExec,
 * SortAggregateExec, WindowExec): update -> update, merge -> merge, serialize -> state,
 * eval -> evaluate. The buffer object is the accumulator; a deserialized input is the state row,
 * merged straight into the buffer without building a second accumulator.
 *
 * `form` makes the same host serve the state-as-data forms: `_state` returns the state as a struct,
 * `_merge` / `_merge_state` take such structs as input rows and merge them. `sparkOwn`: the call stands
 * for one of Spark's own aggregates on sparkagg's grouped operator ([[SparkAggregates]]).
 */
case class AccumulatorAggregate(
    function: FunctionDef,
    sqlName: String,
    children: Seq[Expression],
    ctx: BindContext,
    form: Form = Form.Plain,
    mutableAggBufferOffset: Int = 0,
    inputAggBufferOffset: Int = 0,
    orderedWithinGroup: Boolean = false,
    ordering: Seq[SortKey] = Nil,
    sparkOwn: Boolean = false)
  extends TypedImperativeAggregate[AnyRef] with OrderingWithinGroupHost {

  // WITHIN GROUP (ORDER BY key [DESC]) for functions whose ordering key is their value (percentile_cont):
  // the same call spelled out, f(key, p, descending), is filled too: the Column API writes it so.
  // For functions ordered by keys (array_agg), the keys follow the arguments, `ordering` their directions.
  override def orderingFilled: Boolean = orderedWithinGroup || (function.withinGroup match {
    case _: WithinGroup.KeyAsValue => children.lastOption.exists(_.dataType == BooleanType)
    case _ => false
  })
  override def isOrderingMandatory: Boolean = function.withinGroup match {
    case WithinGroup.KeyAsValue(mandatory) => mandatory && !form.statesIn
    case _ => false
  }
  override def isDistinctSupported: Boolean = true
  override def withOrderingWithinGroup(order: Seq[SortOrder]): AggregateFunction =
    (function.withinGroup, order) match {
      case (_: WithinGroup.KeyAsValue, Seq(key)) if !form.statesIn =>
        copy(children = key.child +: children :+ Literal(key.direction == Descending), orderedWithinGroup = true)
      case (WithinGroup.OrderedBy, keys) if !form.statesIn =>
        copy(children = children ++ keys.map(_.child), orderedWithinGroup = true,
          ordering = keys.map(k => SortKey(k.direction == Descending, k.nullOrdering == NullsFirst)))
      case _ => throw SparkInternals.withinGroupUnsupported(sqlName)
    }

  @transient private lazy val invocation: Either[String, Call] =
    Call.of(function, sqlName, form, children, ctx, ordering)
  private def binding: Either[String, Bound] = invocation.flatMap(c => c.binding.left.map(c.explain))

  override def checkInputDataTypes(): TypeCheckResult = binding match {
    case Left(why) => TypeCheckResult.TypeCheckFailure(why)
    case Right(_) => TypeCheckResult.TypeCheckSuccess
  }

  override def dataType: DataType =
    binding.fold(_ => NullType, b => if (form.stateOut) b.stateSchema else b.returnType)
  override def nullable: Boolean = !form.stateOut && binding.forall(_.nullable)
  override def prettyName: String = sqlName
  // Plans show the call as written, `df_avg(d#4)`, not every field of the host.
  override protected def flatArguments: Iterator[Any] = children.iterator

  // Arguments, cast to what the accumulator reads, evaluated into one reused row; or, when they are
  // all plain columns of the right type, read in place.
  @transient private lazy val arguments = call.argumentProjection(children)
  @transient private lazy val argumentView = new RowValues
  @transient private lazy val columnView: ColumnValues = {
    val coerce = call.bound.coerceTo
    val plain = children.zipWithIndex.forall {
      case (b: BoundReference, i) => coerce.isEmpty || b.dataType == coerce(i)
      case _ => false
    }
    if (plain) new ColumnValues(children.map(_.asInstanceOf[BoundReference].ordinal).toArray) else null
  }
  @transient private lazy val stateView = new RowValues

  override def createAggregationBuffer(): AnyRef = call.newAccumulator()

  /** The call as bound at analysis: what sparkagg's operators run (see [[Call]]). */
  @transient private[sparkagg] lazy val call: Call = invocation.toOption.get

  override def update(buffer: AnyRef, input: InternalRow): AnyRef = {
    val acc = buffer.asInstanceOf[Accumulator]
    try {
      if (!form.statesIn) {
        if (columnView != null) { columnView.row = input; acc.update(columnView) }
        else { argumentView.row = arguments(input); acc.update(argumentView) }
      } else {
        val state = children.head.eval(input)
        if (state != null) {
          stateView.row = state.asInstanceOf[InternalRow]
          call.mergeGiven(acc, stateView)
        }
      }
    } catch { case e: ArithmeticException => throw overflow(e) }
    acc
  }

  override def merge(buffer: AnyRef, input: AnyRef): AnyRef = {
    val acc = buffer.asInstanceOf[Accumulator]
    stateView.row = input match {
      case state: InternalRow => state
      // Spark's AggregatingAccumulator merges two live buffers.
      case other: Accumulator => call.stateRow(other.state())
    }
    try acc.merge(stateView)
    catch { case e: ArithmeticException => throw overflow(e) }
    acc
  }

  override def eval(buffer: AnyRef): Any = {
    val acc = buffer.asInstanceOf[Accumulator]
    try { if (form.stateOut) call.stateRow(acc.state()) else call.result(acc) }
    catch { case e: ArithmeticException => throw overflow(e) }
  }

  /** The value over no rows (count's 0; a `_state`'s empty state), which Spark's rewrites put back where
   *  they leave an aggregate without rows: the expand of several DISTINCT aggregates, a correlated scalar
   *  subquery turned into a join. Without it they would give NULL where the function gives 0. */
  override def defaultResult: Option[Literal] =
    if (binding.isLeft) None else Option(eval(createAggregationBuffer())).map(Literal(_, dataType))

  override def serialize(buffer: AnyRef): Array[Byte] =
    try call.codec.encode(call.stateRow(buffer.asInstanceOf[Accumulator].state()))
    catch { case e: ArithmeticException => throw overflow(e) }

  override def deserialize(bytes: Array[Byte]): AnyRef = call.codec.decode(bytes)

  /** Spark's own ANSI overflow error (ARITHMETIC_OVERFLOW, SQLSTATE 22003), naming the function and
   *  pointing at the call in the query; sparkagg's operators raise it too. */
  private[sparkagg] def overflow(e: ArithmeticException): Throwable =
    SparkInternals.arithmeticOverflow(s"$sqlName: ${e.getMessage}", origin.context)

  override def withNewMutableAggBufferOffset(offset: Int): AccumulatorAggregate =
    copy(mutableAggBufferOffset = offset)
  override def withNewInputAggBufferOffset(offset: Int): AccumulatorAggregate =
    copy(inputAggBufferOffset = offset)
  override protected def withNewChildrenInternal(newChildren: IndexedSeq[Expression]): AccumulatorAggregate =
    copy(children = newChildren)
}
