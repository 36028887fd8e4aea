package sparkagg.udaf

import org.apache.spark.sql.Row
import org.apache.spark.sql.catalyst.{CatalystTypeConverters, InternalRow}
import org.apache.spark.sql.catalyst.expressions.{BoundReference, UnsafeProjection}
import org.apache.spark.sql.expressions.{MutableAggregationBuffer, UserDefinedAggregateFunction}
import org.apache.spark.sql.types._
import sparkagg.SparkLineCheck
import sparkagg.api.{Arg, BindContext, FunctionDef}
import sparkagg.catalyst.{Call, RowValues}

/** One argument of a UDAF class: its type and, for a parameter the function takes as a constant (a
 *  delimiter, a percentile), the value its result type is worked out with before any row is seen. */
final case class UdafArg(dataType: DataType, constant: Option[Any] = None)

/**
 * A sparkagg function as Spark's UserDefinedAggregateFunction, so the JAR alone registers it by class
 * name, with no extension and no Python package (on Spark Connect, after `spark.addArtifacts(jar)`):
 * {{{
 *   spark.udf.registerJavaUDAF("df_avg", "sparkagg.udaf.Avg")
 * }}}
 * The class fixes the argument types (Spark casts to them). A constant parameter is read from the first
 * row and must stay the same. This is Spark's row-at-a-time UDAF path: its buffer is a row, here the
 * constants and the accumulator's state in its versioned bytes, decoded and encoded again for every row.
 * That costs in proportion to the state (a list grows quadratically); the extension's host keeps the
 * accumulator as an object instead.
 */
abstract class AccumulatorUdaf(function: FunctionDef, arguments: UdafArg*) extends UserDefinedAggregateFunction {
  SparkLineCheck.require()

  /** The arguments this class takes, in order. */
  def argumentSpecs: Seq[UdafArg] = arguments

  private val constants = arguments.indices.filter(i => arguments(i).constant.isDefined)

  override def inputSchema: StructType =
    StructType(arguments.zipWithIndex.map { case (a, i) => StructField(s"arg$i", a.dataType) })

  override def bufferSchema: StructType = StructType(
    constants.map(i => StructField(s"constant$i", arguments(i).dataType)) :+ StructField("state", BinaryType))

  override def dataType: DataType = placeholder.bound.returnType
  override def deterministic: Boolean = true

  /** The call as bound with the placeholder constants: the result type, and the result of no rows. */
  @transient private lazy val placeholder = call(arguments.map(_.constant.orNull))
  @transient private lazy val calls = new java.util.HashMap[Seq[Any], Call]()
  @transient private lazy val projections = new java.util.HashMap[Call, UnsafeProjection]()
  @transient private lazy val toCatalyst = CatalystTypeConverters.createToCatalystConverter(inputSchema)
  @transient private lazy val toScala = CatalystTypeConverters.createToScalaConverter(dataType)

  private def call(values: Seq[Any]): Call = calls.computeIfAbsent(
    constants.map(values),
    _ => {
      val args = arguments.zipWithIndex.map { case (a, i) =>
        // Constants as Catalyst holds them (a delimiter as UTF8String), as a literal's value would be.
        val constant = if (constants.contains(i)) Some(CatalystTypeConverters.convertToCatalyst(values(i))) else None
        Arg(a.dataType, nullable = true, constant = constant)
      }
      val c = Call(function, function.name, args, BindContext(failOnOverflow = true))
      c.binding.left.foreach(why => throw new IllegalArgumentException(c.explain(why)))
      c
    }
  )

  private def stateIndex = constants.size
  private def constantsOf(buffer: Row): Seq[Any] = {
    val given = constants.indices.map(buffer.get)
    arguments.indices.map(i => if (constants.contains(i)) given(constants.indexOf(i)) else null)
  }
  private def callOf(buffer: Row): Call =
    if (constants.nonEmpty && buffer.isNullAt(0)) placeholder else call(constantsOf(buffer))

  override def initialize(buffer: MutableAggregationBuffer): Unit =
    (0 to stateIndex).foreach(buffer.update(_, null))

  override def update(buffer: MutableAggregationBuffer, input: Row): Unit = {
    adoptConstants(buffer, constants.map(input.get))
    val c = callOf(buffer)
    val acc = restore(c, buffer)
    val project = projections.computeIfAbsent(c,
      _ => c.argumentProjection(arguments.zipWithIndex.map { case (a, i) => BoundReference(i, a.dataType, true) }))
    val row = project(toCatalyst(input).asInstanceOf[InternalRow])
    acc.update(RowValues.of(row))
    buffer.update(stateIndex, c.codec.encode(c.stateRow(acc.state())))
  }

  override def merge(buffer: MutableAggregationBuffer, other: Row): Unit = if (!other.isNullAt(stateIndex)) {
    adoptConstants(buffer, constants.indices.map(other.get))
    val c = callOf(buffer)
    val acc = restore(c, buffer)
    acc.merge(RowValues.of(c.codec.decode(other.getAs[Array[Byte]](stateIndex))))
    buffer.update(stateIndex, c.codec.encode(c.stateRow(acc.state())))
  }

  /** The constants the buffer's rows were given: the first ones seen, which every later one must equal. */
  private def adoptConstants(buffer: MutableAggregationBuffer, given: Seq[Any]): Unit = if (constants.nonEmpty) {
    if (buffer.isNullAt(0)) given.indices.foreach(j => buffer.update(j, given(j)))
    else if (given.indices.exists(j => given(j) != buffer.get(j)))
      throw new IllegalArgumentException(s"${function.name}: its constant parameters changed between rows")
  }

  override def evaluate(buffer: Row): Any = {
    val c = callOf(buffer)
    toScala(c.result(restore(c, buffer)))
  }

  private def restore(c: Call, buffer: Row) = {
    val acc = c.newAccumulator()
    if (!buffer.isNullAt(stateIndex)) acc.merge(RowValues.of(c.codec.decode(buffer.getAs[Array[Byte]](stateIndex))))
    acc
  }
}
