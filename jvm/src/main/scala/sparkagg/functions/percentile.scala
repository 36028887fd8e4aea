package sparkagg.functions

import org.apache.spark.sql.types._
import sparkagg.api._

/**
 * percentile_cont(p) WITHIN GROUP (ORDER BY x [DESC]): the p-th percentile of the non-NULL values of
 * x, interpolated linearly at index p * (n - 1) of the sorted values (DESC reads it from the top:
 * 1 - p); a double. p is a constant in [0, 1]. Floats sort with NaN greatest. NULL on empty input.
 * `percentile_cont(x, p, descending)` is the same call spelled out (what sparkagg.functions writes).
 * State: percentile_cont, the list of values, as doubles.
 */
object PercentileCont extends FunctionDef {
  val name = "percentile_cont"
  /** DataFusion 55's alias. */
  override val aliases = Seq("quantile_cont")
  val signature = "(p: constant double in [0, 1]) WITHIN GROUP (ORDER BY numeric [DESC]) -> double"
  override val withinGroup: WithinGroup = WithinGroup.KeyAsValue(mandatory = true)
  val doc = FunctionDoc(
    usage = "_FUNC_(p) WITHIN GROUP (ORDER BY expr [DESC]) - The p-th percentile of expr, interpolated " +
      "linearly between the nearest values.",
    arguments = Seq("p" -> "a constant in [0, 1]", "expr" -> Types.Numeric),
    examples = Seq(
      "SELECT _FUNC_(0.25) WITHIN GROUP (ORDER BY col) FROM VALUES (0), (10), (20), (30), (NULL) AS tab(col)" -> "7.5",
      "SELECT _FUNC_(0.25) WITHIN GROUP (ORDER BY col DESC) FROM VALUES (0), (10), (20), (30) AS tab(col)" -> "22.5"
    )
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
          Right(
            Bound(
              DoubleType,
              state,
              () => new PercentileContAccumulator(if (fromTop) 1 - f else f),
              coerceTo = Seq(DoubleType, p.dataType) ++ rest.map(_ => BooleanType),
              stateCheck = StateCheck.noNullElements(
                name)
            ))
        case _ => Left("expects a constant percentile p in [0, 1]")
      }
    case _ => Left(s"expects (p) WITHIN GROUP (ORDER BY expr) with p a constant in [0, 1] and expr of type " +
        Types.Numeric)
  }
}

final class PercentileContAccumulator(fraction: Double) extends Accumulator {
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
    Array(Array.tabulate(values.length)(j => decode(values.values(j))))
  }
  def evaluate(): Any =
    if (values.length == 0) null
    else {
      val a = values.sortInPlace()
      val index = fraction * (values.length - 1)
      val (lo, hi) = (math.floor(index).toInt, math.ceil(index).toInt)
      val (low, high) = (decode(a(lo)), decode(a(hi)))
      if (lo == hi) low else low + (high - low) * (index - lo)
    }
  def size: Long = 48 + 8L * values.values.length
}
