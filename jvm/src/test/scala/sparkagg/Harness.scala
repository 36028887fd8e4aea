package sparkagg

import scala.util.Random

import org.apache.spark.sql.catalyst.expressions.{BoundReference, GenericInternalRow, Literal}
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.types.UTF8String
import sparkagg.api._
import sparkagg.catalyst.{Call, RowValues}

/** Drives one function's accumulators directly, as the Catalyst host does, without a session. Rows hold
 *  values of `types`, then of the `WITHIN GROUP` keys' types; `constants` (a percentile, ...) follow the
 *  values as constant arguments, and the keys follow them. */
final class Harness(val function: FunctionDef, val types: Seq[DataType], failOnOverflow: Boolean = true,
    constants: Seq[Literal] = Nil, keys: Seq[(DataType, SortKey)] = Nil) {
  val call: Call = Call(
    function,
    function.name,
    types.map(Arg(_, nullable = true)) ++
      constants.map(c => Arg(c.dataType, nullable = false, constant = Some(c.value))) ++
      keys.map { case (t, k) => Arg(t, nullable = true, sortKey = Some(k)) },
    BindContext(failOnOverflow)
  )
  private val project = call.argumentProjection(
    types.zipWithIndex.map { case (t, i) => BoundReference(i, t, true) } ++ constants ++
      keys.zipWithIndex.map { case ((t, _), k) => BoundReference(types.size + k, t, true) })
  private val view = new RowValues

  def feed(acc: Accumulator, rows: Seq[Seq[Any]], retract: Boolean = false): Accumulator = {
    rows.foreach { r =>
      view.row = project(new GenericInternalRow(r.toArray))
      if (retract) acc.retract(view) else acc.update(view)
    }
    acc
  }
  def accumulate(rows: Seq[Seq[Any]]): Accumulator = feed(call.newAccumulator(), rows)
  def sliding(rows: Seq[Seq[Any]]): Accumulator =
    feed(call.bound.newSlidingAccumulator.getOrElse(call.bound.newAccumulator)(), rows)
  def bytes(acc: Accumulator): Array[Byte] = call.codec.encode(call.stateRow(acc.state()))
  def merged(states: Seq[Array[Byte]]): Accumulator = {
    val acc = call.newAccumulator()
    states.foreach(s => acc.merge(RowValues.of(call.codec.decode(s))))
    acc
  }
}

/** Generated columns in Spark's internal representation, with NULLs and edge values mixed in. */
object Gen {
  def column(t: DataType, n: Int, rnd: Random, finite: Boolean = false): Seq[Any] = Seq.fill(n) {
    if (rnd.nextInt(10) == 0) null else value(t, rnd, finite)
  }

  def value(t: DataType, rnd: Random, finite: Boolean): Any = t match {
    case BooleanType => rnd.nextBoolean()
    case ByteType => (rnd.nextInt(256) - 128).toByte
    case ShortType => (rnd.nextInt(65536) - 32768).toShort
    case IntegerType => rnd.nextInt()
    case LongType => if (rnd.nextInt(4) == 0) rnd.nextLong() >> 20 else rnd.nextInt(1000).toLong - 500
    case FloatType => (rnd.nextGaussian() * 100).toFloat
    case DoubleType if !finite && rnd.nextInt(12) == 0 =>
      Seq(Double.NaN, Double.PositiveInfinity, Double.NegativeInfinity, -0.0)(rnd.nextInt(4))
    case DoubleType => rnd.nextGaussian() * 1e6
    case d: DecimalType =>
      val digits = math.min(d.precision - 1, 17)
      Decimal(BigDecimal(rnd.nextLong() % math.pow(10, digits).toLong, d.scale), d.precision, d.scale)
    case _: StringType => UTF8String.fromString(rnd.alphanumeric.take(rnd.nextInt(6)).mkString)
    case BinaryType => Array.fill(rnd.nextInt(5))(rnd.nextInt(256).toByte)
    case DateType => rnd.nextInt(40000) - 10000
    case TimestampType | TimestampNTZType => rnd.nextLong() >> 12
    case other => throw new IllegalArgumentException(s"no generator for $other")
  }

  def rows(types: Seq[DataType], n: Int, rnd: Random, finite: Boolean = false): Seq[Seq[Any]] = {
    val cols = types.map(column(_, n, rnd, finite))
    (0 until n).map(i => cols.map(_(i)))
  }

  /** Equal results: doubles to 1e-9 relative (NaN equal to NaN), binaries by content, lists (from an
   *  unordered array_agg) as multisets. */
  def same(a: Any, b: Any): Boolean = (a, b) match {
    case (x: Array[Any], y: Array[Any]) =>
      def key(v: Any) = v match { case b: Array[Byte] => b.toSeq.toString; case other => String.valueOf(other) }
      x.map(key).sorted.sameElements(y.map(key).sorted)
    case (x: Double, y: Double) =>
      (x.isNaN && y.isNaN) || x == y || math.abs(x - y) <= 1e-9 * math.max(math.abs(x), math.abs(y))
    case (x: Array[Byte], y: Array[Byte]) => x.sameElements(y)
    case _ => a == b
  }
}
