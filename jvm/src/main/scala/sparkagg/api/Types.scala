package sparkagg.api

import org.apache.spark.sql.types._

/** Groupings of Spark types that signatures are written in, and the wording used in error messages. */
object Types {
  def isIntegral(t: DataType): Boolean = t match {
    case ByteType | ShortType | IntegerType | LongType => true
    case _ => false
  }
  def isFloating(t: DataType): Boolean = t == FloatType || t == DoubleType
  def isDecimal(t: DataType): Boolean = t.isInstanceOf[DecimalType]
  def isNumeric(t: DataType): Boolean = isIntegral(t) || isFloating(t) || isDecimal(t)

  /** An untyped NULL literal (`void`): accepted wherever a number is, as DataFusion does. */
  def isUntypedNull(t: DataType): Boolean = t == NullType

  /** Types with a total order that min / max accept. */
  def isOrderable(t: DataType): Boolean = isNumeric(t) || (t match {
    case BooleanType | DateType | TimestampType | TimestampNTZType | BinaryType | NullType => true
    case _: StringType => true
    case _ => false
  })

  val Numeric = "numeric (tinyint, smallint, int, bigint, float, double, decimal)"
  val Orderable = "numeric, decimal, string, binary, boolean, date, timestamp, timestamp_ntz"

  /** decimal(p, s) widened by `extra` digits of precision, capped at Spark's 38. */
  def widenDecimal(t: DecimalType, extraPrecision: Int, extraScale: Int): DecimalType =
    DecimalType(math.min(DecimalType.MAX_PRECISION, t.precision + extraPrecision),
      math.min(DecimalType.MAX_SCALE, t.scale + extraScale))

  def describe(args: Seq[Arg]): String = args.map(_.dataType.simpleString).mkString("(", ", ", ")")
}
