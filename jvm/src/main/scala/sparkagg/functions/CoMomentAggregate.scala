package sparkagg.functions

import org.apache.spark.sql.types._
import sparkagg.api._
import sparkagg.common._

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
  private val schema = StructType(
    stateFields.map { case (field, moment) =>
      StructField(field, if (moment == Moment.Count) LongType else DoubleType, nullable = false)
    })
  private[sparkagg] val moments: Array[Moment] = stateFields.map(_._2).toArray
  // The count and the sums of squared deviations are never negative; a co-moment may be.
  private val stateCheck = StateCheck.all(
    stateFields.collect {
      case (field, Moment.Count | Moment.M2A | Moment.M2B) => StateCheck.nonNegative(field)
    }: _*)

  def bind(args: Seq[Arg], ctx: BindContext): Either[String, Bound] =
    if (args.size == arity && args.forall(a => Types.isNumeric(a.dataType) || Types.isUntypedNull(a.dataType)))
      Right(
        Bound(
          resultType,
          schema,
          () => new CoMomentAccumulator(this, pair),
          resultNullable,
          coerceTo = Seq.fill(arity)(DoubleType),
          newGroupsAccumulator = Some(() => new CoMomentGroups(this, pair)),
          stateCheck = stateCheck
        ))
    else Left(s"expects ${if (pair) "two arguments (y, x)" else "one argument"} of type ${Types.Numeric}")
}

final class CoMomentAccumulator(fn: CoMomentAggregate, pair: Boolean) extends Accumulator {
  private val m = CoMoments.empty(pair, 1)
  // Running Welford backwards leaves rounding residue (a frame holding one value, or one value repeated,
  // should have m2 = 0, not 1e-4). So the newest run of equal values of each argument is tracked, and
  // when a retract leaves only that run, its moments are set exactly.
  private var lastA, lastB = 0.0
  private var runA, runB = 0L
  // Welford cannot run a NaN or infinity backwards: each side counts those in the frame (NaN, +inf,
  // -inf: specials(3 * side + kind)), takes its mean from the counts after a retract, and asks for a
  // rebuild once a side that held some holds none.
  private val specials = new Array[Long](6)
  private val poisoned = Array(false, false)
  // Running Welford backwards subtracts the leaving value's share of m2; when that was nearly all of it
  // (a large value leaving small ones) the remainder keeps only the digits the subtraction left, even a
  // negative variance: then the frame is rebuilt, as Spark would recompute it.
  private var cancelled = false

  /** Counts `v` in (`by` 1) or out (-1) of `side`'s specials; false for a finite value. */
  private def countSpecial(v: Double, side: Int, by: Int): Boolean = {
    val kind = if (v.isNaN) 0 else if (v == Double.PositiveInfinity) 1 else if (v == Double.NegativeInfinity) 2 else -1
    if (kind >= 0) { specials(3 * side + kind) += by; poisoned(side) = true }
    kind >= 0
  }
  private def holdsSpecials(side: Int): Boolean =
    specials(3 * side) + specials(3 * side + 1) + specials(3 * side + 2) > 0
  /** The mean of a side holding specials: NaN with a NaN or infinities of both signs, else the infinity. */
  private def countedMean(side: Int): Double =
    if (specials(3 * side) > 0 || specials(3 * side + 1) > 0 && specials(3 * side + 2) > 0) Double.NaN
    else if (specials(3 * side + 1) > 0) Double.PositiveInfinity
    else Double.NegativeInfinity

  private def trackRuns(a: Double, b: Double): Unit = {
    if (runA > 0 && a == lastA) runA += 1 else { lastA = a; runA = 1 }
    if (pair) { if (runB > 0 && b == lastB) runB += 1 else { lastB = b; runB = 1 } }
  }

  /** After a retract: an argument whose remaining values are all its newest run is constant, and is set so
   *  (unless it holds a NaN or infinity, whose moments stay NaN), whatever the other argument holds. The
   *  co-moment of a constant argument is then 0, or NaN when the other holds a NaN or infinity, as adding
   *  the same rows gives it (0 times infinity, even for one row: its deviation from the empty mean). */
  private def settleRuns(): Unit = {
    val n = m.ns(0)
    val (specialsA, specialsB) = (holdsSpecials(0), pair && holdsSpecials(1))
    val constantA = !specialsA && n <= runA
    val constantB = pair && !specialsB && n <= runB
    if (constantA) { runA = n; m.meanAs(0) = lastA; m.m2As(0) = 0 }
    if (constantB) { runB = n; m.meanBs(0) = lastB; m.m2Bs(0) = 0 }
    if (pair && (constantA || constantB)) m.cs(0) = if (specialsA || specialsB) Double.NaN else 0
  }

  private def present(args: Values): Boolean = !args.isNullAt(0) && (!pair || !args.isNullAt(1))

  def update(args: Values): Unit = if (present(args)) {
    val a = args.getDouble(0)
    val b = if (pair) args.getDouble(1) else 0.0
    countSpecial(a, 0, 1)
    if (pair) countSpecial(b, 1, 1)
    trackRuns(a, b)
    if (pair) CoMoments.add(m, 0, a, b) else CoMoments.add(m, 0, a)
  }

  override def retract(args: Values): Unit = if (present(args)) {
    val a = args.getDouble(0)
    val b = if (pair) args.getDouble(1) else 0.0
    countSpecial(a, 0, -1)
    if (pair) countSpecial(b, 1, -1)
    val (m2ABefore, m2BBefore) = (m.m2As(0), if (pair) m.m2Bs(0) else 0.0)
    val left = if (pair) CoMoments.remove(m, 0, a, b) else CoMoments.remove(m, 0, a)
    if (left) {
      if (holdsSpecials(0)) m.meanAs(0) = countedMean(0)
      if (pair && holdsSpecials(1)) m.meanBs(0) = countedMean(1)
      val (lostA, lostB) = (lostDigits(m2ABefore, m.m2As(0)), pair && lostDigits(m2BBefore, m.m2Bs(0)))
      settleRuns() // a side left constant is set exactly: nothing lost there
      cancelled ||= lostA && m.ns(0) > runA || lostB && m.ns(0) > runB
    } else { runA = 0; runB = 0 }
  }
  /** Whether a retract left m2 with fewer than ten of its sixteen digits (or at or below 0 from above). */
  private def lostDigits(before: Double, after: Double): Boolean = after < before * 1e-6
  override def supportsRetract: Boolean = true
  override def needsRebuild: Boolean =
    cancelled || (0 until 2).exists(side => poisoned(side) && !holdsSpecials(side))

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
    if (n2 > 0) {
      runA = 0
      runB = 0
      CoMoments.merge(m, 0, n2, meanA2, m2A2, meanB2, m2B2, c2)
    }
  }

  def state(): Array[Any] = fn.moments.map(_.read(m))
  def evaluate(): Any = fn.result(m)
  def size: Long = 72
}

/**
 * Every [[CoMomentAggregate]] for every group: the count in a LongVector and each moment in a
 * DoubleVector, run through the same [[CoMoments]] functions as [[CoMomentAccumulator]]. A single
 * argument keeps only count, meanA and m2A: add(a) touches nothing else and the variance states carry
 * nothing else. Rows with a NULL argument are skipped; an empty group has count 0, whose result
 * `result` decides. (The equal-value runs the row accumulator tracks only serve retraction, which this
 * path lacks.)
 */
final class CoMomentGroups(fn: CoMomentAggregate, pair: Boolean) extends GroupsAccumulator {
  require(pair || fn.moments.forall(m => m == Moment.Count || m == Moment.MeanA || m == Moment.M2A),
    s"${fn.name}: a single-argument state holds only count, meanA and m2A")

  private val count = new LongVector
  // meanA, m2A, and for a pair meanB, m2B, c.
  private val doubles = Array.fill(if (pair) 5 else 2)(new DoubleVector)

  private def moments(n: Array[Long], d: Array[Array[Double]]): CoMoments =
    if (pair) new CoMoments(n, d(0), d(1), d(2), d(3), d(4)) else new CoMoments(n, d(0), d(1), null, null, null)

  /** The moments over the vectors' arrays, which resize and emit replace: so once per batch. */
  private def resize(totalGroups: Int): CoMoments = {
    count.resize(totalGroups)
    doubles.foreach(_.resize(totalGroups))
    moments(count.array, doubles.map(_.array))
  }

  private def emitted(emit: EmitTo): CoMoments = moments(count.emit(emit), doubles.map(_.emit(emit)))

  def updateBatch(values: Columns, groupIndices: Array[Int], filter: Option[Column], totalGroups: Int): Unit = {
    val m = resize(totalGroups)
    val a = values.column(0)
    val b = if (pair) values.column(1) else null
    val taken = GroupColumns.taken(values.numRows, filter, (if (pair) Seq(a, b) else Seq(a)): _*)
    val (arrayA, arrayB) = (GroupColumns.doubleArray(a), if (pair) GroupColumns.doubleArray(b) else null)
    var i = 0
    while (i < values.numRows) {
      if (taken == null || taken(i)) {
        val x = if (arrayA != null) arrayA(i) else a.getDouble(i)
        if (!pair) CoMoments.add(m, groupIndices(i), x)
        else CoMoments.add(m, groupIndices(i), x, if (arrayB != null) arrayB(i) else b.getDouble(i))
      }
      i += 1
    }
  }

  def mergeBatch(states: Columns, groupIndices: Array[Int], filter: Option[Column], totalGroups: Int): Unit = {
    val m = resize(totalGroups)
    // A moment the state does not carry reads as 0.0, as CoMomentAccumulator.merge reads it.
    def field(m: Moment): Column = fn.moments.indexOf(m) match {
      case -1 => null
      case j => states.column(j)
    }
    def read(col: Column, i: Int): Double = if (col == null) 0.0 else col.getDouble(i)
    val (n2s, meanA2s, meanB2s, m2A2s, m2B2s, c2s) = (field(Moment.Count), field(Moment.MeanA), field(Moment.MeanB),
      field(Moment.M2A), field(Moment.M2B), field(Moment.CoMoment))
    val f = filter.orNull
    var i = 0
    while (i < states.numRows) {
      val n2 = if (GroupsAccumulator.keep(f, i)) n2s.getLong(i) else 0L
      if (n2 > 0) CoMoments.merge(m, groupIndices(i), n2, read(meanA2s, i), read(m2A2s, i), read(meanB2s, i),
        read(m2B2s, i), read(c2s, i))
      i += 1
    }
  }

  def evaluate(emit: EmitTo): Column = {
    val m = emitted(emit)
    new ObjectColumn(Array.tabulate(m.groups) { g => m.at = g; fn.result(m) })
  }

  def state(emit: EmitTo): Array[Column] = {
    val m = emitted(emit)
    def column(values: Array[Double]) = new DoubleColumn(values, null, m.groups)
    def of(moment: Moment): Column = moment match {
      case Moment.Count => new LongColumn(m.ns, null, m.groups)
      case Moment.MeanA => column(m.meanAs)
      case Moment.M2A => column(m.m2As)
      case Moment.MeanB => column(m.meanBs)
      case Moment.M2B => column(m.m2Bs)
      case Moment.CoMoment => column(m.cs)
    }
    fn.moments.map(of)
  }

  /**
   * Each row's own state is Welford's first step from an empty group, which is not simply the value
   * (mean = 0.0 + a / 1 turns -0.0 into 0.0, m2 of an infinity is NaN): so run that step.
   */
  override def convertToState(values: Columns, filter: Option[Column]): Array[Column] =
    GroupsAccumulator.statesOfRows(new CoMomentGroups(fn, pair), values, filter)
  override def supportsConvertToState: Boolean = true

  def size: Long = count.size + doubles.map(_.size).sum
}
