package sparkagg.functions

import java.math.{BigDecimal => JBigDecimal, RoundingMode}

import scala.collection.mutable.ArrayBuffer

import org.apache.spark.sql.types._
import sparkagg.api._
import sparkagg.common.ValueKind

/**
 * median(x): the middle non-NULL value, of the input type; with an even count the two middle values
 * averaged in that type (integers and decimals truncate toward zero: median{1, 2} = 1). Floats sort with
 * NaN greatest. NULL on empty input. DISTINCT comes from Spark's DISTINCT keyword. State: median, the
 * list of values (primitive arrays for numbers, so a group of millions of values stays compact).
 */
object Median extends FunctionDef {
  val name = "median"
  val signature = s"(${Types.Numeric}) -> same type"
  val doc = FunctionDoc(
    usage = "_FUNC_(expr) - The median of the non-NULL values of expr, in its type.",
    arguments = Seq("expr" -> Types.Numeric),
    examples = Seq(
      "SELECT _FUNC_(col) FROM VALUES (1), (2), (9) AS tab(col)" -> "2",
      "SELECT _FUNC_(col) FROM VALUES (1), (2) AS tab(col)" -> "1",
      "SELECT _FUNC_(col) FROM VALUES (1.0D), (2.0D), (NULL) AS tab(col)" -> "1.5"
    )
  )

  def bind(args: Seq[Arg], ctx: BindContext): Either[String, Bound] = args.map(_.dataType) match {
    case Seq(t) if Types.isNumeric(t) =>
      val state = StructType(Seq(StructField(name, ArrayType(t, containsNull = true))))
      Right(
        Bound(
          t,
          state,
          () =>
            t match {
              case d: DecimalType => new DecimalMedianAccumulator(d)
              case _ => new MedianAccumulator(ValueKind.of(t))
            },
          stateCheck = StateCheck.noNullElements(
            name)
        ))
    case _ => Left(s"expects one argument of type ${Types.Numeric}")
  }

  /** (a + b) / 2 truncated toward zero, without overflowing. */
  private[sparkagg] def truncatedMean(a: Long, b: Long): Long = {
    val sum = a + b
    if (((a ^ sum) & (b ^ sum)) < 0) ((BigInt(a) + BigInt(b)) / 2).toLong else sum / 2
  }
}

/** A growable primitive array: no object per value. */
private[sparkagg] final class GrowableLongs {
  var values = new Array[Long](16)
  var length = 0
  def add(v: Long): Unit = {
    if (length == values.length) values = java.util.Arrays.copyOf(values, length * 2)
    values(length) = v
    length += 1
  }
  /** The values sorted where they are (a median needs no copy of millions of values); the first `length`. */
  def sortInPlace(): Array[Long] = { java.util.Arrays.sort(values, 0, length); values }
}

/**
 * median over integers and floats, kept as longs that sort as the values do: integers as they are,
 * doubles as their bits with the magnitude flipped for negatives, which orders them as Double.compare
 * does (NaN greatest, -0.0 before 0.0) and maps back exactly.
 */
final class MedianAccumulator(kind: ValueKind) extends Accumulator {
  private val values = new GrowableLongs
  private val floating = kind.isInstanceOf[ValueKind.DoubleLike]

  import MedianAccumulator.{decode, encode}
  private def read(v: Values, i: Int): Long = kind match {
    case k: ValueKind.DoubleLike => encode(k.readDouble(v, i))
    case k: ValueKind.LongLike => k.readLong(v, i)
    case _ => throw new IllegalStateException(s"median over ${kind.dataType}")
  }
  private def box(x: Long): Any = kind match {
    case k: ValueKind.DoubleLike => k.box(decode(x))
    case k: ValueKind.LongLike => k.box(x)
    case _ => null
  }

  def update(args: Values): Unit = if (!args.isNullAt(0)) values.add(read(args, 0))

  def merge(state: Values): Unit = if (!state.isNullAt(0)) {
    val list = state.getList(0)
    var j = 0
    while (j < list.numElements) {
      if (!list.isNullAt(j)) values.add(
        kind.dataType match {
          case LongType => list.getLong(j)
          case DoubleType => encode(list.getDouble(j))
          case t =>
            val x = list.copy(j, t).asInstanceOf[Number]
            if (floating) encode(x.doubleValue) else x.longValue
        })
      j += 1
    }
  }

  // Sorted, so a state's bytes do not depend on whether it was evaluated (which sorts in place); bigint
  // and double lists leave unboxed: a group of millions of values is one array, not millions of objects.
  def state(): Array[Any] = Array(
    { values.sortInPlace(); kind.dataType } match {
      case LongType => java.util.Arrays.copyOf(values.values, values.length)
      case DoubleType => Array.tabulate(values.length)(j => decode(values.values(j)))
      case _ => Array.tabulate[Any](values.length)(j => box(values.values(j)))
    })

  def evaluate(): Any =
    if (values.length == 0) null
    else {
      val a = values.sortInPlace()
      val n = values.length
      if (n % 2 == 1) box(a(n / 2))
      else if (floating) kind.asInstanceOf[ValueKind.DoubleLike].box((decode(a(n / 2 - 1)) + decode(a(n / 2))) / 2)
      else box(Median.truncatedMean(a(n / 2 - 1), a(n / 2)))
    }

  def size: Long = 48 + 8L * values.values.length
}

object MedianAccumulator {
  /** Bits that sort as the doubles do, and back (the map is its own inverse). */
  private def sortable(bits: Long): Long = bits ^ ((bits >> 63) & Long.MaxValue)
  def encode(d: Double): Long = sortable(java.lang.Double.doubleToLongBits(d))
  def decode(x: Long): Double = java.lang.Double.longBitsToDouble(sortable(x))
}

final class DecimalMedianAccumulator(t: DecimalType) extends Accumulator {
  private val values = new ArrayBuffer[Decimal]

  def update(args: Values): Unit = if (!args.isNullAt(0)) values += args.getDecimal(0, t.precision, t.scale).clone()
  def merge(state: Values): Unit = if (!state.isNullAt(0)) {
    val list = state.getList(0)
    var j = 0
    while (j < list.numElements) { if (!list.isNullAt(j)) values += list.copy(j, t).asInstanceOf[Decimal]; j += 1 }
  }
  def state(): Array[Any] = Array(values.toArray[Any])
  def evaluate(): Any =
    if (values.isEmpty) null
    else {
      val a = values.sorted
      val n = a.length
      if (n % 2 == 1) a(n / 2)
      else {
        val mean = a(n / 2 - 1).toJavaBigDecimal.add(a(n / 2).toJavaBigDecimal)
          .divide(JBigDecimal.valueOf(2), t.scale, RoundingMode.DOWN)
        Decimal(mean, t.precision, t.scale)
      }
    }
  def size: Long = 48 + 64L * values.length
}
