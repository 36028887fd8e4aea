package sparkagg.functions

import org.apache.spark.sql.types._
import sparkagg.api._
import sparkagg.common.{Fill, ValueKind}

/**
 * percentile_cont(p) WITHIN GROUP (ORDER BY x [DESC]): the p-th percentile of the non-NULL values of
 * x, interpolated linearly at index p * (n - 1) of the sorted values (DESC reads it from the top:
 * 1 - p); a float for float x, else a double (as DataFusion 55). p is a constant in [0, 1]. Unlike
 * DataFusion 55, which truncates the interpolation weight to six decimals (percentile_cont(0.3) of {1, 2,
 * 3, 5} is 1.899999 there), the interpolation is exact, as Spark's percentile_cont. Floats sort with NaN greatest. NULL
 * on empty input. `percentile_cont(x, p [, descending])` is the same call spelled out: DataFusion 55's direct form, and
 * what sparkagg.functions writes.
 * State: percentile_cont, the list of values, as doubles.
 */
object PercentileCont extends FunctionDef {
  val name = "percentile_cont"
  /** DataFusion 55's alias. */
  override val aliases = Seq("quantile_cont")
  val signature = "(p: constant double in [0, 1]) WITHIN GROUP (ORDER BY numeric [DESC]) -> float for float, " +
    "else double; or (numeric, p)"
  override val withinGroup: WithinGroup = WithinGroup.KeyAsValue(mandatory = false)
  val doc = FunctionDoc(
    usage = "_FUNC_(p) WITHIN GROUP (ORDER BY expr [DESC]) - The p-th percentile of expr, interpolated " +
      "linearly between the nearest values. Also _FUNC_(expr, p).",
    arguments = Seq("p" -> "a constant in [0, 1]", "expr" -> Types.Numeric),
    examples = Seq(
      "SELECT _FUNC_(0.25) WITHIN GROUP (ORDER BY col) FROM VALUES (0), (10), (20), (30), (NULL) AS tab(col)" -> "7.5",
      "SELECT _FUNC_(0.25) WITHIN GROUP (ORDER BY col DESC) FROM VALUES (0), (10), (20), (30) AS tab(col)" -> "22.5",
      "SELECT _FUNC_(col, 0.5) FROM VALUES (0), (10), (20), (30) AS tab(col)" -> "15.0"
    ),
    note = "linear interpolation at p*(n-1); equals Spark's percentile_cont",
    accepts = "constant p in [0,1], numeric",
    result = "float: float; else double",
    emptyInput = "NULL",
    dataFusion = "deviation: exact interpolation",
    nan = "NaN sorts above every number, so the top ranks are NaN when the column has any",
    spark = "`percentile_cont(p) WITHIN GROUP (ORDER BY x)` and `percentile(x, p)`: the same interpolation and " +
      "the same double"
  )

  private val state = StructType(Seq(StructField(name, ArrayType(DoubleType, containsNull = true))))

  def bind(args: Seq[Arg], ctx: BindContext): Either[String, Bound] = args match {
    // (x, p, descending) from WITHIN GROUP; (x, p) where a state form is given p again.
    case Seq(x, p, rest @ _*) if rest.size <= 1 && (Types.isNumeric(x.dataType) || Types.isUntypedNull(x.dataType)) =>
      val fraction = p.constant.collect {
        case n: java.lang.Number => n.doubleValue
        case d: Decimal => d.toDouble
      }
      fraction match {
        case Some(f) if f >= 0 && f <= 1 && Types.isNumeric(p.dataType) =>
          val fromTop = rest.exists(_.constant.contains(true))
          val result = if (x.dataType == FloatType) FloatType else DoubleType
          Right(
            Bound(
              result,
              state,
              () => new PercentileContAccumulator(if (fromTop) 1 - f else f, result == FloatType),
              newGroupsAccumulator = Some(() => PercentileContAccumulator.groups(if (fromTop) 1 - f else f)),
              newSlidingAccumulator =
                Some(() => new SlidingPercentileContAccumulator(if (fromTop) 1 - f else f, result == FloatType)),
              coerceTo = Seq(DoubleType, p.dataType) ++ rest.map(_ => BooleanType),
              stateCheck = StateCheck.noNullElements(
                name)
            ))
        case _ => Left("expects a constant percentile p in [0, 1]")
      }
    case _ => Left(s"expects (p) WITHIN GROUP (ORDER BY expr), or (expr, p), with p a constant in [0, 1] and " +
        s"expr of type ${Types.Numeric}")
  }
}

final class PercentileContAccumulator(fraction: Double, asFloat: Boolean) extends Accumulator {
  private val values = new GrowableLongs
  import MedianAccumulator.{decode, encode}

  def update(args: Values): Unit = if (!args.isNullAt(0)) values.add(encode(args.getDouble(0)))
  def merge(state: Values): Unit = if (!state.isNullAt(0)) {
    val list = state.getList(0)
    var j = 0
    while (j < list.numElements) { if (!list.isNullAt(j)) values.add(encode(list.getDouble(j))); j += 1 }
  }
  def state(): Array[Any] = {
    values.sortInPlace() // as median's: the same bytes whether or not it was evaluated
    Array(Fill.doubles(values.length)(j => decode(values.values(j))))
  }
  def evaluate(): Any =
    if (values.length == 0) null
    else {
      val a = values.sortInPlace()
      PercentileContAccumulator.interpolate(fraction, values.length, k => decode(a(k.toInt)),
        asFloat)
    }
  def size: Long = 48 + 8L * values.values.length
}

object PercentileContAccumulator {
  /**
   * The `fraction` percentile of `n` sorted values, `at(k)` the k-th from 0: linear between the values at
   * floor and ceil of fraction * (n - 1).
   */
  def interpolate(fraction: Double, n: Long, at: Long => Double, asFloat: Boolean): Any = {
    val q = unrounded(fraction, n, at)
    if (asFloat) q.toFloat else q
  }

  /** [[interpolate]]'s value before it is rounded to float. */
  private def unrounded(fraction: Double, n: Long, at: Long => Double): Double = {
    val index = fraction * (n - 1)
    val lo = math.floor(index).toLong
    val low = at(lo)
    if (index == lo) low else low + (at(lo + 1) - low) * (index - lo)
  }

  /** The GroupsAccumulator: median's, the values read as doubles, the percentile of each group's sorted
   *  values (a float result rounded from the double as [[interpolate]] rounds it). */
  def groups(fraction: Double): GroupsAccumulator =
    new SortedValueGroups(
      new ValueKind.DoubleLike(DoubleType),
      (a, from, until) => unrounded(fraction, until - from, k => MedianAccumulator.decode(a(from + k.toInt))))
}

/** percentile_cont over a sliding frame (results as [[PercentileContAccumulator]]'s, to the bit). */
final class SlidingPercentileContAccumulator(fraction: Double, asFloat: Boolean)
  extends SlidingOrderAccumulator[java.lang.Long](DoubleType) {
  import MedianAccumulator.{decode, encode}
  protected def held(value: AnyRef): java.lang.Long = encode(value.asInstanceOf[java.lang.Double])
  protected def internal(k: java.lang.Long): Any = decode(k)
  def evaluate(): Any =
    if (values.size == 0) null
    else PercentileContAccumulator.interpolate(fraction, values.size, k => decode(values.kth(k)), asFloat)
}
