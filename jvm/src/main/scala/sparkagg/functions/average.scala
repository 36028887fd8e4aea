package sparkagg.functions

import java.math.BigInteger

import org.apache.spark.sql.types._
import sparkagg.api._
import sparkagg.common._

/**
 * avg (alias mean): integers and floats are averaged as double; decimal(p, s) exactly, returning
 * decimal(min(38, p + 4), min(38, s + 4)) with the quotient truncated toward zero as DataFusion does.
 * NULL on empty or all-NULL input. Retractable.
 * State: count: bigint, sum: double, or decimal(min(38, p + 10), s) for decimals.
 */
object Avg extends FunctionDef {
  val name = "avg"
  override val aliases = Seq("mean")
  val signature = "(integer|float|double) -> double, (decimal(p,s)) -> decimal(min(38,p+4),min(38,s+4))"
  val doc = FunctionDoc(
    usage = "_FUNC_(expr) - Returns the mean of the non-NULL values of expr, NULL if there are none.",
    arguments = Seq("expr" -> Types.Numeric),
    examples = Seq(
      "SELECT _FUNC_(col) FROM VALUES (1), (2), (NULL), (4) AS tab(col)" -> "2.3333333333333335",
      "SELECT _FUNC_(col) FROM VALUES (1.00BD), (2.00BD), (2.00BD) AS tab(col)" -> "1.666666"
    ),
    note = "decimal quotient truncated, as DataFusion",
    accepts = "numeric",
    result = "integer, float, double: double; decimal(p,s): decimal(min(38,p+4),min(38,s+4))",
    emptyInput = "NULL",
    dataFusion = "deviation: overflow, sliding doubles",
    nan = "any NaN gives NaN; +Infinity and -Infinity together give NaN",
    spark = "`avg` (`mean`): the same doubles and the same decimal type, but Spark rounds the decimal quotient " +
      "half up where this truncates (1.666667 against 1.666666 for 1.00, 2.00, 2.00)"
  )

  private def stateOf(sumType: DataType): StructType = StructType(
    Seq(
      StructField("count", LongType, nullable = false), StructField("sum", sumType)))
  private val countCheck = StateCheck.nonNegative("count")

  def bind(args: Seq[Arg], ctx: BindContext): Either[String, Bound] = args.map(_.dataType) match {
    case Seq(t: DecimalType) =>
      val sumType = Types.widenDecimal(t, 10, 0)
      val out = Types.widenDecimal(t, 4, 4)
      Right(
        Bound(
          out,
          stateOf(sumType),
          () => new DecimalAvgAccumulator(t, sumType, out, ctx.failOnOverflow),
          newGroupsAccumulator = Some(() => new DecimalAvgGroups(t, sumType, out, ctx.failOnOverflow)),
          packing = DecimalSumPacking.of(sumType, countFirst = true),
          stateCheck = countCheck
        ))
    case Seq(t) if Types.isNumeric(t) || Types.isUntypedNull(t) =>
      Right(
        Bound(
          DoubleType,
          stateOf(DoubleType),
          () => new DoubleAvgAccumulator,
          coerceTo = Seq(DoubleType),
          newGroupsAccumulator = Some(() => new DoubleAvgGroups),
          stateCheck = countCheck
        ))
    case _ => Left(s"expects one argument of type ${Types.Numeric}")
  }
}

final class DoubleAvgAccumulator extends Accumulator {
  private var count = 0L
  private val sum = new DoubleSum

  def update(args: Values): Unit = if (!args.isNullAt(0)) { sum.add(args.getDouble(0)); count += 1 }
  override def retract(args: Values): Unit = if (!args.isNullAt(0)) { sum.subtract(args.getDouble(0)); count -= 1 }
  override def supportsRetract: Boolean = true
  def merge(state: Values): Unit = {
    val n = state.getLong(0)
    if (n > 0) { count += n; sum.add(state.getDouble(1)) }
  }
  def state(): Array[Any] = Array(count, if (count == 0) null else sum.value)
  def evaluate(): Any = if (count == 0) null else sum.value / count
  def size: Long = 64
}

final class DecimalAvgAccumulator(in: DecimalType, sumType: DecimalType, out: DecimalType,
    failOnOverflow: Boolean)
  extends Accumulator {
  private val sum = new DecimalSumCount(in, sumType, failOnOverflow, "avg")

  def update(args: Values): Unit = sum.update(args)
  override def retract(args: Values): Unit = sum.retract(args)
  override def supportsRetract: Boolean = true
  def merge(state: Values): Unit = sum.merge(state, sumField = 1, countField = 0)
  def state(): Array[Any] = Array(sum.count, sum.checkedSum)

  def evaluate(): Any =
    if (sum.checkedSum == null) null
    else {
      val d = DecimalAvgAccumulator.mean(sum.unscaled, sum.count, in, out)
      if (d == null) sum.overflow(out) else d
    }

  def size: Long = sum.size
}

object DecimalAvgAccumulator {
  /** The mean of `count` decimal(`in`) values summing to `unscaled`, as `out`; null when it does not fit.
   *  BigInteger division truncates toward zero, as DataFusion's decimal average does. */
  def mean(unscaled: BigInteger, count: Long, in: DecimalType, out: DecimalType): Decimal = {
    val scaled = unscaled.multiply(BigInteger.TEN.pow(out.scale - in.scale))
    DecimalSum.fit(scaled.divide(BigInteger.valueOf(count)), out.scale, out.precision)
  }
}

/** Decimal avg for every group ([[DecimalAvgAccumulator]]'s semantics). */
private[sparkagg] final class DecimalAvgGroups(in: DecimalType, sumType: DecimalType, out: DecimalType,
    failOnOverflow: Boolean)
  extends DecimalSumCountGroups(in, sumType, failOnOverflow, "avg", countFirst = true) {
  protected def fresh(): DecimalSumCountGroups = new DecimalAvgGroups(in, sumType, out, failOnOverflow)
  def evaluate(emit: EmitTo): Column = {
    val (counts, sums) = emitted(emit)
    new ObjectColumn(
      Array.tabulate[Any](counts.length) { g =>
        if (sums.isNullAt(g)) null
        else {
          val d = DecimalAvgAccumulator.mean(sums.unscaled(g), counts(g), in, out)
          if (d == null) overflow(out) else d
        }
      })
  }
}

/** avg as double for every group ([[DoubleAvgAccumulator]]'s semantics). State: count, sum (NULL when none). */
final class DoubleAvgGroups extends DoubleSumCountGroups(countFirst = true) {
  def evaluate(emit: EmitTo): Column = {
    val (s, c) = emitted(emit)
    var g = 0
    while (g < c.length) {
      if (c(g) != 0) s(g) = s(g) / c(g)
      g += 1
    }
    new DoubleColumn(s, GroupColumns.nonZero(c), c.length)
  }
}
