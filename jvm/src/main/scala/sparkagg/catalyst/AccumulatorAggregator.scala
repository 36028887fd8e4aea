package sparkagg.catalyst

import org.apache.spark.sql.{Encoder, Encoders}
import org.apache.spark.sql.catalyst.CatalystTypeConverters
import org.apache.spark.sql.catalyst.encoders.{encoderFor => expressionEncoderFor, AgnosticEncoder, AgnosticEncoders, ExpressionEncoder}
import org.apache.spark.sql.catalyst.expressions.BoundReference
import org.apache.spark.sql.expressions.Aggregator
import org.apache.spark.sql.types._
import sparkagg.api._

/**
 * Any [[FunctionDef]] as a Spark `Aggregator`, for `functions.udaf` and typed Datasets:
 * {{{
 *   spark.udf.register("my_avg", functions.udaf(AccumulatorAggregator(MyAvg, Encoders.DOUBLE)))
 *   ds.select(AccumulatorAggregator(Avg, Encoders.scalaDouble).toColumn)
 * }}}
 * The input encoder's fields are the function's arguments; use boxed encoders (`Encoders.DOUBLE`) so
 * that NULLs reach the accumulator as NULLs. The buffer is the accumulator; Spark
 * serializes it through the same versioned state bytes as the Catalyst host.
 */
class AccumulatorAggregator[IN](function: FunctionDef, inputEncoder: Encoder[IN], failOnOverflow: Boolean)
  extends Aggregator[IN, AccumulatorBuffer, Any] {

  private val call = Call(function, function.name,
    inputEncoder.schema.fields.toSeq.map(f => Arg(f.dataType, f.nullable)), BindContext(failOnOverflow))
  require(call.binding.isRight, call.binding.left.getOrElse(""))

  @transient private lazy val toInternal = expressionEncoderFor(inputEncoder).createSerializer()
  @transient private lazy val arguments = call.argumentProjection(
    inputEncoder.schema.fields.toSeq.zipWithIndex.map { case (f, i) => BoundReference(i, f.dataType, f.nullable) })
  @transient private lazy val view = new RowValues
  @transient private lazy val toExternal = CatalystTypeConverters.createToScalaConverter(call.bound.returnType)

  def zero: AccumulatorBuffer = new AccumulatorBuffer(call, call.newAccumulator())

  def reduce(buffer: AccumulatorBuffer, input: IN): AccumulatorBuffer = {
    view.row = arguments(toInternal(input))
    buffer.accumulator.update(view)
    buffer
  }

  def merge(left: AccumulatorBuffer, right: AccumulatorBuffer): AccumulatorBuffer = {
    left.accumulator.merge(RowValues.of(call.stateRow(right.accumulator.state())))
    left
  }

  def finish(buffer: AccumulatorBuffer): Any = toExternal(call.result(buffer.accumulator))

  def bufferEncoder: Encoder[AccumulatorBuffer] = Encoders.javaSerialization[AccumulatorBuffer]

  def outputEncoder: Encoder[Any] =
    ExpressionEncoder(AccumulatorAggregator.encoderFor(call.bound.returnType)).asInstanceOf[Encoder[Any]]
}

object AccumulatorAggregator {
  def apply[IN](function: FunctionDef, inputEncoder: Encoder[IN], failOnOverflow: Boolean = true) =
    new AccumulatorAggregator[IN](function, inputEncoder, failOnOverflow)

  import AgnosticEncoders._
  private def encoderFor(t: DataType): AgnosticEncoder[_] = t match {
    case BooleanType => BoxedBooleanEncoder
    case ByteType => BoxedByteEncoder
    case ShortType => BoxedShortEncoder
    case IntegerType => BoxedIntEncoder
    case LongType => BoxedLongEncoder
    case FloatType => BoxedFloatEncoder
    case DoubleType => BoxedDoubleEncoder
    case d: DecimalType => JavaDecimalEncoder(d, lenientSerialization = false)
    case _: StringType => StringEncoder
    case BinaryType => BinaryEncoder
    case DateType => STRICT_LOCAL_DATE_ENCODER
    case TimestampType => STRICT_INSTANT_ENCODER
    case TimestampNTZType => LocalDateTimeEncoder
    case other => throw new UnsupportedOperationException(s"sparkagg: no Aggregator output encoder for $other")
  }
}

/** An accumulator as an Aggregator buffer; Java serialization writes its versioned state bytes. */
final class AccumulatorBuffer(val call: Call, @transient val accumulator: Accumulator) extends Serializable {
  private def writeReplace(): AnyRef =
    new AccumulatorBuffer.Serialized(call, call.codec.encode(call.stateRow(accumulator.state())))
}

object AccumulatorBuffer {
  private final class Serialized(call: Call, state: Array[Byte]) extends Serializable {
    private def readResolve(): AnyRef = {
      val accumulator = call.newAccumulator()
      accumulator.merge(RowValues.of(call.codec.decode(state)))
      new AccumulatorBuffer(call, accumulator)
    }
  }
}
