package sparkagg.common

import org.apache.spark.sql.types._
import sparkagg.api._

/**
 * The shared algebra of variance, standard deviation, covariance, correlation and the regr family (as
 * Spark's CentralMomentAgg is for its own): the count, means, second moments and co-moment of one
 * argument `a` or a pair `(a, b)`, updated with Welford's method, merged with Chan's formula and
 * retracted by running Welford backwards. Welford keeps data with a large common offset exact where a
 * sum-of-squares formula cancels catastrophically.
 *
 * Running Welford backwards leaves rounding residue (a frame holding one value, or one value repeated,
 * should have m2 = 0, not 1e-4). So the newest run of equal values of each argument is tracked, and
 * when a retract leaves only that run, its moments are set exactly.
 */
final class CoMoments {
  var n = 0L
  var meanA = 0.0
  var meanB = 0.0
  var m2A = 0.0
  var m2B = 0.0
  var c = 0.0
  private var lastA, lastB = 0.0
  private var runA, runB = 0L

  private def trackRuns(a: Double, b: Double): Unit = {
    if (runA > 0 && a == lastA) runA += 1 else { lastA = a; runA = 1 }
    if (runB > 0 && b == lastB) runB += 1 else { lastB = b; runB = 1 }
  }

  /** After a retract: an argument whose remaining values are all its newest run is constant. */
  private def settleRuns(): Unit = {
    if (n <= runA) { runA = n; meanA = lastA; m2A = 0; c = 0 }
    if (n <= runB) { runB = n; meanB = lastB; m2B = 0; c = 0 }
  }

  def add(a: Double): Unit = {
    n += 1
    trackRuns(a, 0.0)
    val da = a - meanA
    meanA += da / n
    m2A += da * (a - meanA)
  }

  def add(a: Double, b: Double): Unit = {
    n += 1
    trackRuns(a, b)
    val da = a - meanA
    val db = b - meanB
    meanA += da / n
    meanB += db / n
    m2A += da * (a - meanA)
    m2B += db * (b - meanB)
    c += da * (b - meanB)
  }

  def remove(a: Double): Unit =
    if (n <= 1) reset()
    else {
      n -= 1
      val previousMeanA = meanA - (a - meanA) / n
      m2A -= (a - previousMeanA) * (a - meanA)
      meanA = previousMeanA
      settleRuns()
    }

  def remove(a: Double, b: Double): Unit =
    if (n <= 1) reset()
    else {
      n -= 1
      val previousMeanA = meanA - (a - meanA) / n
      val previousMeanB = meanB - (b - meanB) / n
      m2A -= (a - previousMeanA) * (a - meanA)
      m2B -= (b - previousMeanB) * (b - meanB)
      c -= (a - previousMeanA) * (b - meanB)
      meanA = previousMeanA
      meanB = previousMeanB
      settleRuns()
    }

  /** Chan et al.'s pairwise combination with another set of moments. */
  def merge(n2: Long, meanA2: Double, meanB2: Double, m2A2: Double, m2B2: Double, c2: Double): Unit =
    if (n2 > 0) {
      runA = 0
      runB = 0
      if (n == 0) { n = n2; meanA = meanA2; meanB = meanB2; m2A = m2A2; m2B = m2B2; c = c2 }
      else {
        val total = n + n2
        val da = meanA2 - meanA
        val db = meanB2 - meanB
        val weight = n.toDouble * n2 / total
        meanA += da * n2 / total
        meanB += db * n2 / total
        m2A += m2A2 + da * da * weight
        m2B += m2B2 + db * db * weight
        c += c2 + da * db * weight
        n = total
      }
    }

  def reset(): Unit = { n = 0; meanA = 0; meanB = 0; m2A = 0; m2B = 0; c = 0; runA = 0; runB = 0 }
}

/** One of the moments, as a function names it in its state (DataFusion's field names). */
sealed trait Moment { def read(m: CoMoments): Any }
object Moment {
  case object Count extends Moment { def read(m: CoMoments): Any = m.n }
  case object MeanA extends Moment { def read(m: CoMoments): Any = m.meanA }
  case object MeanB extends Moment { def read(m: CoMoments): Any = m.meanB }
  case object M2A extends Moment { def read(m: CoMoments): Any = m.m2A }
  case object M2B extends Moment { def read(m: CoMoments): Any = m.m2B }
  case object CoMoment extends Moment { def read(m: CoMoments): Any = m.c }
}

/**
 * A function over [[CoMoments]]: numeric arguments (one, or the pair (a, b)) read as double, rows with
 * a NULL argument skipped, state = the moments it needs under DataFusion's names, result = `result`.
 */
abstract class CoMomentAggregate(val name: String, pair: Boolean, stateFields: Seq[(String, Moment)])
    extends FunctionDef {
  /** The final value from the moments: a java.lang.Double, or null. */
  def result(m: CoMoments): Any
  def resultType: DataType = DoubleType
  def resultNullable: Boolean = true

  private val arity = if (pair) 2 else 1
  val signature: String = (if (pair) "(numeric, numeric)" else "(numeric)") + s" -> ${resultType.simpleString}"
  private val schema = StructType(stateFields.map { case (field, moment) =>
    StructField(field, if (moment == Moment.Count) LongType else DoubleType, nullable = false)
  })
  private[sparkagg] val moments: Array[Moment] = stateFields.map(_._2).toArray
  // The count and the sums of squared deviations are never negative; a co-moment may be.
  private val stateCheck = StateCheck.all(stateFields.collect {
    case (field, Moment.Count | Moment.M2A | Moment.M2B) => StateCheck.nonNegative(field)
  }: _*)

  def bind(args: Seq[Arg], ctx: BindContext): Either[String, Bound] =
    if (args.size == arity && args.forall(a => Types.isNumeric(a.dataType) || Types.isUntypedNull(a.dataType)))
      Right(Bound(resultType, schema, () => new CoMomentAccumulator(this, pair), resultNullable,
        coerceTo = Seq.fill(arity)(DoubleType), newGroupsAccumulator = Some(() => new CoMomentGroups(this, pair)),
        stateCheck = stateCheck))
    else Left(s"expects ${if (pair) "two arguments (y, x)" else "one argument"} of type ${Types.Numeric}")
}

final class CoMomentAccumulator(fn: CoMomentAggregate, pair: Boolean) extends Accumulator {
  private val m = new CoMoments
  // Welford cannot run a NaN or infinity backwards: count those in the frame, and ask for a rebuild
  // once the last has left.
  private var nonFiniteInFrame = 0L
  private var poisoned = false

  private def nonFinite(args: Values): Boolean =
    !java.lang.Double.isFinite(args.getDouble(0)) || (pair && !java.lang.Double.isFinite(args.getDouble(1)))

  private def present(args: Values): Boolean = !args.isNullAt(0) && (!pair || !args.isNullAt(1))

  def update(args: Values): Unit = if (present(args)) {
    if (nonFinite(args)) { nonFiniteInFrame += 1; poisoned = true }
    if (pair) m.add(args.getDouble(0), args.getDouble(1)) else m.add(args.getDouble(0))
  }

  override def retract(args: Values): Unit = if (present(args)) {
    if (nonFinite(args)) nonFiniteInFrame -= 1
    if (pair) m.remove(args.getDouble(0), args.getDouble(1)) else m.remove(args.getDouble(0))
  }
  override def supportsRetract: Boolean = true
  override def needsRebuild: Boolean = poisoned && nonFiniteInFrame == 0

  def merge(state: Values): Unit = {
    var n2 = 0L
    var meanA2, meanB2, m2A2, m2B2, c2 = 0.0
    var i = 0
    while (i < fn.moments.length) {
      fn.moments(i) match {
        case Moment.Count => n2 = state.getLong(i)
        case Moment.MeanA => meanA2 = state.getDouble(i)
        case Moment.MeanB => meanB2 = state.getDouble(i)
        case Moment.M2A => m2A2 = state.getDouble(i)
        case Moment.M2B => m2B2 = state.getDouble(i)
        case Moment.CoMoment => c2 = state.getDouble(i)
      }
      i += 1
    }
    m.merge(n2, meanA2, meanB2, m2A2, m2B2, c2)
  }

  def state(): Array[Any] = fn.moments.map(_.read(m))
  def evaluate(): Any = fn.result(m)
  def size: Long = 72
}

/**
 * Every [[CoMomentAggregate]] for every group: [[CoMoments]]' count in a LongVector and each moment in a
 * DoubleVector, updated (Welford) and merged (Chan) with the same operations in the same order as
 * CoMoments.add / merge, so states and results equal [[CoMomentAccumulator]]'s to the bit. A single
 * argument keeps only count, meanA and m2A: add(a) touches nothing else and the variance states carry
 * nothing else. The result is the function's own `result`, read through a CoMoments loaded with the
 * group's moments. Rows with a NULL argument are skipped; an empty group has count 0, whose result
 * `result` decides. (The equal-value runs CoMoments tracks only serve retraction, which this path lacks.)
 */
final class CoMomentGroups(fn: CoMomentAggregate, pair: Boolean) extends GroupsAccumulator {
  import CoMomentGroups.Moments
  require(pair || fn.moments.forall(m => m == Moment.Count || m == Moment.MeanA || m == Moment.M2A),
    s"${fn.name}: a single-argument state holds only count, meanA and m2A")

  private val count = new LongVector
  private val meanA, m2A = new DoubleVector
  private val (meanB, m2B, c) = if (pair) (new DoubleVector, new DoubleVector, new DoubleVector) else (null, null, null)
  private val vectors: Seq[DoubleVector] = if (pair) Seq(meanA, m2A, meanB, m2B, c) else Seq(meanA, m2A)

  private def resize(totalGroups: Int): Unit = { count.resize(totalGroups); vectors.foreach(_.resize(totalGroups)) }

  /** Rows of the batch to use: kept by the filter and no argument NULL. */
  private def present(a: Column, b: Column, f: Column, i: Int): Boolean =
    GroupsAccumulator.keep(f, i) && !a.isNullAt(i) && (b == null || !b.isNullAt(i))

  def updateBatch(values: Columns, groupIndices: Array[Int], filter: Option[Column], totalGroups: Int): Unit = {
    resize(totalGroups)
    val (a, f) = (values.column(0), filter.orNull)
    val b = if (pair) values.column(1) else null
    val (n, mA, sA) = (count.array, meanA.array, m2A.array)
    var i = 0
    if (pair) {
      val (mB, sB, cAB) = (meanB.array, m2B.array, c.array)
      while (i < values.numRows) {
        if (present(a, b, f, i)) {
          val g = groupIndices(i)
          val x = a.getDouble(i)
          val y = b.getDouble(i)
          n(g) += 1
          val da = x - mA(g)
          val db = y - mB(g)
          mA(g) += da / n(g)
          mB(g) += db / n(g)
          sA(g) += da * (x - mA(g))
          sB(g) += db * (y - mB(g))
          cAB(g) += da * (y - mB(g))
        }
        i += 1
      }
    } else {
      while (i < values.numRows) {
        if (present(a, null, f, i)) {
          val g = groupIndices(i)
          val x = a.getDouble(i)
          n(g) += 1
          val da = x - mA(g)
          mA(g) += da / n(g)
          sA(g) += da * (x - mA(g))
        }
        i += 1
      }
    }
  }

  def mergeBatch(states: Columns, groupIndices: Array[Int], filter: Option[Column], totalGroups: Int): Unit = {
    resize(totalGroups)
    // A moment the state does not carry reads as 0.0, as CoMomentAccumulator.merge reads it.
    def field(m: Moment): Column = fn.moments.indexOf(m) match {
      case -1 => null
      case j => states.column(j)
    }
    def read(col: Column, i: Int): Double = if (col == null) 0.0 else col.getDouble(i)
    val (n2s, meanA2s, meanB2s, m2A2s, m2B2s, c2s) = (field(Moment.Count), field(Moment.MeanA), field(Moment.MeanB),
      field(Moment.M2A), field(Moment.M2B), field(Moment.CoMoment))
    val (n, mA, sA) = (count.array, meanA.array, m2A.array)
    val (mB, sB, cAB) = if (pair) (meanB.array, m2B.array, c.array) else (null, null, null)
    val f = filter.orNull
    var i = 0
    while (i < states.numRows) {
      val n2 = if (GroupsAccumulator.keep(f, i)) n2s.getLong(i) else 0L
      if (n2 > 0) {
        val g = groupIndices(i)
        val n1 = n(g)
        if (n1 == 0) {
          n(g) = n2; mA(g) = read(meanA2s, i); sA(g) = read(m2A2s, i)
          if (pair) { mB(g) = read(meanB2s, i); sB(g) = read(m2B2s, i); cAB(g) = read(c2s, i) }
        } else {
          val total = n1 + n2
          val da = read(meanA2s, i) - mA(g)
          val weight = n1.toDouble * n2 / total
          mA(g) += da * n2 / total
          sA(g) += read(m2A2s, i) + da * da * weight
          if (pair) {
            val db = read(meanB2s, i) - mB(g)
            mB(g) += db * n2 / total
            sB(g) += read(m2B2s, i) + db * db * weight
            cAB(g) += read(c2s, i) + da * db * weight
          }
          n(g) = total
        }
      }
      i += 1
    }
  }

  private def emitted(emit: EmitTo): Moments =
    if (pair) Moments(count.emit(emit), meanA.emit(emit), m2A.emit(emit), meanB.emit(emit), m2B.emit(emit), c.emit(emit))
    else Moments(count.emit(emit), meanA.emit(emit), m2A.emit(emit), null, null, null)

  def evaluate(emit: EmitTo): Column = {
    val ms = emitted(emit)
    val m = new CoMoments
    new ObjectColumn(Array.tabulate(ms.n.length) { g => ms.load(m, g); fn.result(m) })
  }

  def state(emit: EmitTo): Array[Column] = {
    val ms = emitted(emit)
    val rows = ms.n.length
    fn.moments.map[Column] {
      case Moment.Count => new LongColumn(ms.n, null, rows)
      case moment => new DoubleColumn(ms.of(moment), null, rows)
    }
  }

  /**
   * Each row's own state is Welford's first step from an empty group, which is not simply the value
   * (mean = 0.0 + a / 1 turns -0.0 into 0.0, m2 of an infinity is NaN): so run that step.
   */
  override def convertToState(values: Columns, filter: Option[Column]): Array[Column] = {
    val rows = values.numRows
    val own = new CoMomentGroups(fn, pair)
    own.updateBatch(values, Array.range(0, rows), filter, rows)
    own.state(EmitTo.All)
  }
  override def supportsConvertToState: Boolean = true

  def size: Long = count.size + vectors.map(_.size).sum
}

private object CoMomentGroups {
  /** Emitted groups' moments (the B side null for one argument). */
  final case class Moments(n: Array[Long], meanA: Array[Double], m2A: Array[Double], meanB: Array[Double],
      m2B: Array[Double], c: Array[Double]) {
    def of(moment: Moment): Array[Double] = moment match {
      case Moment.MeanA => meanA
      case Moment.M2A => m2A
      case Moment.MeanB => meanB
      case Moment.M2B => m2B
      case Moment.CoMoment => c
      case Moment.Count => throw new IllegalArgumentException("count is a bigint")
    }
    def load(m: CoMoments, g: Int): Unit = {
      m.n = n(g); m.meanA = meanA(g); m.m2A = m2A(g)
      if (meanB != null) { m.meanB = meanB(g); m.m2B = m2B(g); m.c = c(g) }
    }
  }
}
