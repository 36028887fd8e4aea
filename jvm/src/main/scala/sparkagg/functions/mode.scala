package sparkagg.functions

import java.util.{HashMap => JHashMap}

import org.apache.spark.sql.types._
import sparkagg.api._

/**
 * mode(x): the most frequent non-NULL value, of x's type (integers, floats, date, timestamp, string, as
 * DataFusion-extra takes them). Equal frequencies: the smallest value wins (datafusion-extra-functions
 * 0.5.5's result), floats in Spark's order (NaN greatest). Floats count by their bits, as DataFusion's
 * hash of them does: -0.0 and 0.0 are two values, every NaN one. NULL on empty input. Retractable: a
 * frame's counts go down as rows leave. State: values, frequencies (two arrays, pair by pair).
 */
object Mode extends FunctionDef {
  val name = "mode"
  private val accepted = "tinyint, smallint, int, bigint, float, double, date, timestamp, timestamp_ntz, string"
  val signature = s"($accepted) -> same type"
  val doc = FunctionDoc(
    usage = "_FUNC_(expr) - The most frequent non-NULL value of expr; of equally frequent ones, the smallest.",
    arguments = Seq("expr" -> accepted),
    examples = Seq(
      "SELECT _FUNC_(col) FROM VALUES (1), (2), (2), (3), (3), (NULL) AS tab(col)" -> "2",
      "SELECT _FUNC_(col) FROM VALUES ('b'), ('a'), ('b') AS tab(col)" -> "b"
    )
  )

  private def acceptsType(t: DataType): Boolean = t match {
    case ByteType | ShortType | IntegerType | LongType | FloatType | DoubleType | DateType | TimestampType |
        StringType =>
      true
    case other => other.typeName == "timestamp_ntz"
  }

  /** A forged state: a NULL value, or frequencies that are not one positive count per value. */
  private val stateCheck = StateCheck.all(
    StateCheck.noNullElements("values"),
    (_, state) => {
      val values = if (state.isNullAt(0)) 0 else state.getList(0).numElements
      val frequencies = if (state.isNullAt(1)) null else state.getList(1)
      val counted = if (frequencies == null) 0 else frequencies.numElements
      if (counted != values) Some(StateFault("frequencies", s"$counted frequencies for $values values"))
      else (0 until counted).find(j => frequencies.isNullAt(j) || frequencies.getLong(j) <= 0)
        .map(j => StateFault("frequencies", s"element $j is not a positive count"))
    }
  )

  def bind(args: Seq[Arg], ctx: BindContext): Either[String, Bound] = args.map(_.dataType) match {
    case Seq(t) if acceptsType(t) =>
      val state = StructType(
        Seq(StructField("values", ArrayType(t, containsNull = false)),
          StructField("frequencies", ArrayType(LongType, containsNull = false))))
      Right(Bound(t, state, () => new ModeAccumulator(t), stateCheck = stateCheck))
    case _ => Left(s"expects one argument of type $accepted")
  }
}

/** Counts per distinct value in a hash map (boxed floats compare by their bits there, as in DataFusion). */
final class ModeAccumulator(t: DataType) extends Accumulator {
  private val counts = new JHashMap[AnyRef, java.lang.Long]()

  private def add(value: AnyRef, n: Long): Unit = {
    val now = counts.getOrDefault(value, 0L) + n
    if (now == 0) counts.remove(value) else counts.put(value, now)
  }

  def update(args: Values): Unit = if (!args.isNullAt(0)) add(args.copy(0, t), 1)
  override def retract(args: Values): Unit = if (!args.isNullAt(0)) add(args.get(0, t), -1)
  override def supportsRetract: Boolean = true

  def merge(state: Values): Unit = if (!state.isNullAt(0)) {
    val (values, frequencies) = (state.getList(0), state.getList(1))
    var j = 0
    while (j < values.numElements) { add(values.copy(j, t), frequencies.getLong(j)); j += 1 }
  }

  def state(): Array[Any] = {
    val entries = counts.entrySet.toArray(new Array[java.util.Map.Entry[AnyRef, java.lang.Long]](0))
    Array(entries.map(_.getKey: Any), entries.map(e => e.getValue.longValue: Any))
  }

  def evaluate(): Any = {
    var best: AnyRef = null
    var bestCount = 0L
    counts.forEach { (value, count) =>
      if (count > bestCount || (count == bestCount && value.asInstanceOf[Comparable[AnyRef]].compareTo(best) < 0)) {
        best = value
        bestCount = count
      }
    }
    best
  }

  def size: Long = 64L + 48L * counts.size
}
