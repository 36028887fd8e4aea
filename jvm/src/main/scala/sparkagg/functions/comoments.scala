package sparkagg.functions

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
  private[functions] val moments: Array[Moment] = stateFields.map(_._2).toArray

  def bind(args: Seq[Arg], ctx: BindContext): Either[String, Bound] =
    if (args.size == arity && args.forall(a => Types.isNumeric(a.dataType) || Types.isUntypedNull(a.dataType)))
      Right(Bound(resultType, schema, () => new CoMomentAccumulator(this, pair), resultNullable,
        coerceTo = Seq.fill(arity)(DoubleType)))
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
