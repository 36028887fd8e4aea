package sparkagg.catalyst

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.analysis.TypeCheckResult
import org.apache.spark.sql.catalyst.expressions.{Expression, GenericInternalRow}
import org.apache.spark.sql.catalyst.expressions.aggregate.TypedImperativeAggregate
import org.apache.spark.sql.sparkagg.SparkInternals
import org.apache.spark.sql.types.{DataType, NullType}
import sparkagg.api._

/**
 * Runs any [[Accumulator]] inside Spark's partial / final aggregation (ObjectHashAggregateExec,
 * SortAggregateExec, WindowExec): update -> update, merge -> merge, serialize -> state,
 * eval -> evaluate. The buffer object is the accumulator; a deserialized input is the state row,
 * merged straight into the buffer without building a second accumulator.
 */
case class AccumulatorAggregate(
    function: FunctionDef,
    sqlName: String,
    children: Seq[Expression],
    ctx: BindContext,
    mutableAggBufferOffset: Int = 0,
    inputAggBufferOffset: Int = 0)
  extends TypedImperativeAggregate[AnyRef] {

  @transient private lazy val call: Call = Call(function, sqlName,
    children.map(c => Arg(c.dataType, c.nullable, if (c.foldable) Option(c.eval()) else None)), ctx)

  override def checkInputDataTypes(): TypeCheckResult = call.binding match {
    case Left(why) => TypeCheckResult.TypeCheckFailure(call.explain(why))
    case Right(_) => TypeCheckResult.TypeCheckSuccess
  }

  override def dataType: DataType = call.binding.fold(_ => NullType, _.returnType)
  override def nullable: Boolean = call.binding.forall(_.nullable)
  override def prettyName: String = sqlName

  // Arguments, cast to what the accumulator reads, evaluated into one reused row.
  @transient private lazy val arguments = call.argumentProjection(children)
  @transient private lazy val argumentView = new RowValues
  @transient private lazy val stateView = new RowValues

  override def createAggregationBuffer(): AnyRef = call.newAccumulator()

  override def update(buffer: AnyRef, input: InternalRow): AnyRef = {
    val acc = buffer.asInstanceOf[Accumulator]
    argumentView.row = arguments(input)
    try acc.update(argumentView) catch { case e: ArithmeticException => throw overflow(e) }
    acc
  }

  override def merge(buffer: AnyRef, input: AnyRef): AnyRef = {
    val acc = buffer.asInstanceOf[Accumulator]
    stateView.row = input match {
      case state: InternalRow => state
      // Spark's AggregatingAccumulator merges two live buffers.
      case other: Accumulator => new GenericInternalRow(other.state().asInstanceOf[Array[Any]])
    }
    try acc.merge(stateView) catch { case e: ArithmeticException => throw overflow(e) }
    acc
  }

  override def eval(buffer: AnyRef): Any =
    try buffer.asInstanceOf[Accumulator].evaluate() catch { case e: ArithmeticException => throw overflow(e) }

  override def serialize(buffer: AnyRef): Array[Byte] =
    try call.codec.encode(buffer.asInstanceOf[Accumulator].state())
    catch { case e: ArithmeticException => throw overflow(e) }

  override def deserialize(bytes: Array[Byte]): AnyRef = call.codec.decode(bytes)

  /** Spark's own ANSI overflow error (ARITHMETIC_OVERFLOW, SQLSTATE 22003), naming the function. */
  private def overflow(e: ArithmeticException): Throwable =
    SparkInternals.arithmeticOverflow(s"$sqlName: ${e.getMessage}", origin.context)

  override def withNewMutableAggBufferOffset(offset: Int): AccumulatorAggregate =
    copy(mutableAggBufferOffset = offset)
  override def withNewInputAggBufferOffset(offset: Int): AccumulatorAggregate =
    copy(inputAggBufferOffset = offset)
  override protected def withNewChildrenInternal(newChildren: IndexedSeq[Expression]): AccumulatorAggregate =
    copy(children = newChildren)
}
