package sparkagg.functions

import org.apache.spark.sql.types._
import sparkagg.api._
import sparkagg.common._

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
  private[functions] def resultOf(m: ShapeMoments, g: Int): Any = {
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
