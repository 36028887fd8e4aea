package sparkagg.common

import org.apache.spark.sql.types._
import sparkagg.api._

/**
 * The shared algebra of skewness, kurtosis and kurtosis_pop: the count, mean and central moment sums M2,
 * M3 (and M4 for kurtosis) of one argument, for a set of groups (one array per moment, group g's at
 * index g; the row accumulator holds one group). The count, mean and M2 are [[CoMoments]] of one argument,
 * which variance keeps, by its steps (Welford's to add, Chan's to merge, a NaN or infinity making M2 NaN);
 * M3 and M4 follow from those before each step, by Welford's step extended to the higher moments and
 * Pébay's pairwise formulas. DataFusion-extra keeps sums of powers instead, which cancel when the values
 * share an offset: it gives six 0.1s a skewness of -1.1e8 where the answer is NULL (no variation).
 * sparkagg gives DataFusion-extra's formulas over these moments: its results where the data is well
 * conditioned, and the right ones where it is not.
 */
final class ShapeMoments(val base: CoMoments, val m3s: Array[Double], val m4s: Array[Double]) {
  def groups: Int = base.groups
  def counts: Array[Long] = base.ns
  def means: Array[Double] = base.meanAs
  def m2s: Array[Double] = base.m2As
  /** Whether the fourth moment is kept (kurtosis); skewness keeps up to the third. */
  def fourth: Boolean = m4s != null
}

object ShapeMoments {
  def apply(counts: Array[Long], means: Array[Double], m2s: Array[Double], m3s: Array[Double],
      m4s: Array[Double]): ShapeMoments =
    new ShapeMoments(new CoMoments(counts, means, m2s, null, null, null), m3s, m4s)

  def empty(fourth: Boolean, groups: Int): ShapeMoments =
    new ShapeMoments(CoMoments.empty(pair = false, groups), new Array[Double](groups),
      if (fourth) new Array[Double](groups) else null)

  /** Group g takes the value `x`. */
  @inline def add(m: ShapeMoments, g: Int, x: Double): Unit = {
    val n1 = m.counts(g).toDouble
    val n = n1 + 1
    val delta = x - m.means(g)
    val deltaN = delta / n
    val term = delta * deltaN * n1
    if (m.fourth) {
      m.m4s(g) += term * deltaN * deltaN * (n * n - 3 * n + 3) + 6 * deltaN * deltaN * m.m2s(g) - 4 * deltaN * m.m3s(g)
    }
    m.m3s(g) += term * deltaN * (n - 2) - 3 * deltaN * m.m2s(g)
    CoMoments.add(m.base, g, x)
  }

  /** Group g takes another state's moments, which hold `nb` > 0 values. */
  @inline def merge(m: ShapeMoments, g: Int, nb: Long, meanB: Double, m2b: Double, m3b: Double, m4b: Double): Unit = {
    val na = m.counts(g).toDouble
    if (na == 0) {
      m.m3s(g) = m3b
      if (m.fourth) m.m4s(g) = m4b
    } else {
      val b = nb.toDouble
      val n = na + b
      val delta = meanB - m.means(g)
      val (m2a, m3a) = (m.m2s(g), m.m3s(g))
      if (m.fourth) {
        m.m4s(g) += m4b + delta * delta * delta * delta * na * b * (na * na - na * b + b * b) / (n * n * n) +
          6 * delta * delta * (na * na * m2b + b * b * m2a) / (n * n) + 4 * delta * (na * m3b - b * m3a) / n
      }
      m.m3s(g) += m3b + delta * delta * delta * na * b * (na - b) / (n * n) + 3 * delta * (na * m2b - b * m2a) / n
    }
    CoMoments.merge(m.base, g, nb, meanB, m2b, 0.0, 0.0, 0.0)
  }

  /** The state fields: count, mean, m2, m3 (and m4). */
  def schema(fourth: Boolean): StructType = StructType(
    StructField("count", LongType, nullable = false) +:
      (Seq("mean", "m2", "m3") ++ (if (fourth) Seq("m4") else Nil)).map(StructField(_, DoubleType, nullable = false)))
}

/**
 * A function of the [[ShapeMoments]] of one numeric argument (read as double; NULLs skipped), `result` its
 * final formula over n and the central moments m2, m3, m4 (the sums divided by n). Not retractable:
 * running the steps backwards drifts (a constant frame would keep a tiny m2, and a number instead of
 * NULL), so sliding frames merge these fixed-size states on two stacks, at the same cost per row.
 */
abstract class ShapeMomentAggregate(val name: String, fourth: Boolean) extends FunctionDef {
  /** The result from n and the central moments (m4 is 0 for skewness): a Double or null. */
  def result(n: Long, m2: Double, m3: Double, m4: Double): Any

  val signature: String = "(numeric) -> double"
  private val schema = ShapeMoments.schema(fourth)

  def bind(args: Seq[Arg], ctx: BindContext): Either[String, Bound] = args.map(_.dataType) match {
    case Seq(t) if Types.isNumeric(t) || Types.isUntypedNull(t) =>
      Right(
        Bound(
          DoubleType,
          schema,
          () => new ShapeMomentAccumulator(this, fourth),
          coerceTo = Seq(DoubleType),
          newGroupsAccumulator = Some(() => new ShapeMomentGroups(this, fourth)),
          stateCheck = StateCheck.all(StateCheck.nonNegative("count"), StateCheck.nonNegative("m2"))
        ))
    case _ => Left(s"expects one argument of type ${Types.Numeric}")
  }

  /** An infinite M2 (the squares of huge values overflow) is read as NaN, as a NaN or infinity among the
   *  values makes it. */
  private[common] def resultOf(m: ShapeMoments, g: Int): Any = {
    val n = m.counts(g)
    if (n == 0) result(0, Double.NaN, Double.NaN, Double.NaN)
    else {
      val m2 = m.m2s(g) / n
      result(n, if (m2.isInfinite) Double.NaN else m2, m.m3s(g) / n, if (m.fourth) m.m4s(g) / n else 0.0)
    }
  }
}

final class ShapeMomentAccumulator(fn: ShapeMomentAggregate, fourth: Boolean) extends Accumulator {
  private val m = ShapeMoments.empty(fourth, 1)

  def update(args: Values): Unit = if (!args.isNullAt(0)) ShapeMoments.add(m, 0, args.getDouble(0))
  def merge(state: Values): Unit = {
    val n = state.getLong(0)
    if (n > 0) ShapeMoments.merge(m, 0, n, state.getDouble(1), state.getDouble(2), state.getDouble(3),
      if (fourth) state.getDouble(4) else 0.0)
  }
  def state(): Array[Any] =
    Array[Any](m.counts(0), m.means(0), m.m2s(0), m.m3s(0)) ++ (if (fourth) Array[Any](m.m4s(0)) else Array.empty[Any])
  def evaluate(): Any = fn.resultOf(m, 0)
  def size: Long = 56
}

/** [[ShapeMomentAccumulator]] for every group: the count in a LongVector, each moment in a DoubleVector. */
final class ShapeMomentGroups(fn: ShapeMomentAggregate, fourth: Boolean) extends GroupsAccumulator {
  private val counts = new LongVector
  private val moments = Array.fill(if (fourth) 4 else 3)(new DoubleVector) // mean, m2, m3 (, m4)

  private def of(n: Array[Long], d: Array[Array[Double]]): ShapeMoments =
    ShapeMoments(n, d(0), d(1), d(2), if (fourth) d(3) else null)

  /** The moments over the vectors' arrays, which resize and emit replace: so once per batch. */
  private def resize(totalGroups: Int): ShapeMoments = {
    counts.resize(totalGroups)
    moments.foreach(_.resize(totalGroups))
    of(counts.array, moments.map(_.array))
  }

  def updateBatch(values: Columns, groupIndices: Array[Int], filter: Option[Column], totalGroups: Int): Unit = {
    val m = resize(totalGroups)
    val v = values.column(0)
    val taken = GroupColumns.taken(values.numRows, filter, v)
    val array = GroupColumns.doubleArray(v)
    var i = 0
    while (i < values.numRows) {
      if (taken == null || taken(i))
        ShapeMoments.add(m, groupIndices(i), if (array != null) array(i) else v.getDouble(i))
      i += 1
    }
  }

  def mergeBatch(states: Columns, groupIndices: Array[Int], filter: Option[Column], totalGroups: Int): Unit = {
    val m = resize(totalGroups)
    val f = filter.orNull
    val Array(n, mean, m2, m3) = Array.tabulate(4)(states.column)
    val m4 = if (fourth) states.column(4) else null
    var i = 0
    while (i < states.numRows) {
      if (GroupsAccumulator.keep(f, i) && n.getLong(i) > 0) {
        ShapeMoments.merge(m, groupIndices(i), n.getLong(i), mean.getDouble(i), m2.getDouble(i), m3.getDouble(i),
          if (m4 == null) 0.0 else m4.getDouble(i))
      }
      i += 1
    }
  }

  private def emitted(emit: EmitTo): ShapeMoments = of(counts.emit(emit), moments.map(_.emit(emit)))

  def evaluate(emit: EmitTo): Column = {
    val m = emitted(emit)
    new ObjectColumn(Array.tabulate(m.groups)(g => fn.resultOf(m, g)))
  }

  def state(emit: EmitTo): Array[Column] = {
    val m = emitted(emit)
    val doubles = Seq(m.means, m.m2s, m.m3s) ++ (if (fourth) Seq(m.m4s) else Nil)
    (new LongColumn(m.counts, null, m.groups) +: doubles.map(d => new DoubleColumn(d, null, m.groups))).toArray
  }

  /** Each row's own state: Welford's first step from an empty group (mean = 0.0 + x turns -0.0 into 0.0). */
  override def convertToState(values: Columns, filter: Option[Column]): Array[Column] =
    GroupsAccumulator.statesOfRows(new ShapeMomentGroups(fn, fourth), values, filter)
  override def supportsConvertToState: Boolean = true

  def size: Long = counts.size + moments.map(_.size).sum
}
