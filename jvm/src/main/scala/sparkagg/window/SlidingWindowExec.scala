package sparkagg.window

import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions._
import org.apache.spark.sql.catalyst.expressions.aggregate.AggregateExpression
import org.apache.spark.sql.catalyst.plans.physical.{AllTuples, Distribution, Partitioning}
import org.apache.spark.sql.execution.{SparkPlan, UnaryExecNode}
import org.apache.spark.sql.sparkagg.{SparkInternals, WindowRows}
import org.apache.spark.sql.types._
import sparkagg.api.{Accumulator, Types}
import sparkagg.catalyst.{AccumulatorAggregate, Form, RowValues}

/**
 * Window aggregates of sparkagg functions over ROWS frames (and RANGE frames over a numeric key), each
 * row's frame derived from the previous one: rows entering are `update`d, rows leaving are `retract`ed,
 * so a partition costs O(n) whatever the frame width, where Spark's WindowExec recomputes each frame
 * (O(n x w)). A function that cannot retract slides on two stacks of states ([[FrameEvaluator]]), O(1)
 * amortised per row. Partitions are buffered like WindowExec's, spilling past Spark's window buffer
 * thresholds. Chosen by [[SlidingWindowStrategy]]; child distribution and ordering are
 * WindowExec's.
 */
case class SlidingWindowExec(
    windowExpression: Seq[NamedExpression],
    partitionSpec: Seq[Expression],
    orderSpec: Seq[SortOrder],
    child: SparkPlan)
  extends UnaryExecNode {

  override def output: Seq[Attribute] = child.output ++ windowExpression.map(_.toAttribute)

  override def requiredChildDistribution: Seq[Distribution] =
    if (partitionSpec.isEmpty) AllTuples :: Nil else SparkInternals.clusteredBy(partitionSpec) :: Nil

  override def requiredChildOrdering: Seq[Seq[SortOrder]] =
    Seq(partitionSpec.map(SortOrder(_, Ascending)) ++ orderSpec)

  override def outputOrdering: Seq[SortOrder] = child.outputOrdering
  override def outputPartitioning: Partitioning = child.outputPartitioning

  private val frames: Seq[SlidingFrame] = windowExpression.map(SlidingFrame.of)

  protected override def doExecute(): RDD[InternalRow] = {
    val newBuffer = SparkInternals.windowBuffer(conf)
    val input = child.output
    val outputSchema = output
    child.execute().mapPartitions { rows =>
      val partitionKey = UnsafeProjection.create(partitionSpec, input)
      val buffer = newBuffer()
      val evaluators = frames.map(f =>
        new FrameEvaluator(
          f, f.function.call.argumentProjection(f.function.children.map(BindReferences.bindReference(_, input))),
          new FrameBounds(f, input)))
      val results = new SpecificInternalRow(windowExpression.map(_.dataType))
      val join = new JoinedRow
      val toOutput = UnsafeProjection.create(outputSchema, outputSchema)
      val toUnsafe = UnsafeProjection.create(input, input)
      val unsafeRows = rows.map {
        case u: UnsafeRow => u
        case other => toUnsafe(other)
      }
      new PartitionIterator(unsafeRows, partitionKey, buffer, evaluators, results, join, toOutput)
    }
  }

  override protected def withNewChildInternal(newChild: SparkPlan): SlidingWindowExec = copy(child = newChild)
}

/**
 * One window expression: its function and frame. ROWS frames give offsets in rows; RANGE frames give
 * offsets in the order key's units (numbers only), over `rangeKey`. None: UNBOUNDED.
 */
private[window] case class SlidingFrame(
    function: AccumulatorAggregate,
    lower: Option[Any],
    upper: Option[Any],
    rangeKey: Option[SortOrder] = None)

private[window] object SlidingFrame {
  /** A frame bound: None for UNBOUNDED, Some(offset) otherwise (negative: PRECEDING). */
  private def bound(e: Expression, zero: Any): Option[Option[Any]] = e match {
    case UnboundedPreceding | UnboundedFollowing => Some(None)
    case CurrentRow => Some(Some(zero))
    case Literal(n, _) if n != null => Some(Some(n))
    case _ => None
  }

  /** Order keys RANGE frames run on here: integers, dates and timestamps as Long, floats as Double. */
  def rangeKeyKind(t: DataType): Option[Boolean] = t match {
    case ByteType | ShortType | IntegerType | LongType | DateType | TimestampType | TimestampNTZType => Some(true)
    case FloatType | DoubleType => Some(false)
    case _ => None
  }

  /** RANGE offsets this operator reads: numbers for numbers; day-time intervals (or days) for dates and
   *  timestamps. Year-month and calendar intervals stay with Spark. */
  private def offsetFits(key: DataType, bound: Expression): Boolean = bound match {
    case Literal(_, t) => (key, t) match {
        case (DateType | TimestampType | TimestampNTZType, _: DayTimeIntervalType) => true
        case (DateType, IntegerType) => true
        case (DateType | TimestampType | TimestampNTZType, _) => false
        case (_, t) => Types.isNumeric(t) && !t.isInstanceOf[DecimalType]
      }
    case _ => true
  }

  /** The window expressions sparkagg runs: a sparkagg aggregate over a ROWS frame, or a RANGE frame
   *  over one numeric order key, without FILTER. The state forms stay with Spark's window, which runs
   *  their host (this operator updates with rows and returns values). */
  def unapply(e: NamedExpression): Option[SlidingFrame] = e match {
    case Alias(
          WindowExpression(AggregateExpression(f: AccumulatorAggregate, _, false, None, _),
            WindowSpecDefinition(_, order, SpecifiedWindowFrame(frameType, lower, upper))),
          _
        ) if f.form == Form.Plain =>
      frameType match {
        case RowFrame => for (l <- bound(lower, 0); u <- bound(upper, 0)) yield SlidingFrame(f, l, u)
        case RangeFrame => order match {
            case Seq(key)
                if rangeKeyKind(key.dataType).isDefined && offsetFits(key.dataType, lower) &&
                  offsetFits(key.dataType, upper) =>
              for (l <- bound(lower, 0); u <- bound(upper, 0)) yield SlidingFrame(f, l, u, Some(key))
            case _ => None
          }
      }
    case _ => None
  }

  def of(e: NamedExpression): SlidingFrame = unapply(e).getOrElse(
    throw new IllegalArgumentException(s"sparkagg's window operator cannot run $e"))
}

/**
 * Where each row's frame starts and ends in a partition; both only move forward as the row does.
 * ROWS: offsets from the row. RANGE: the rows whose order key lies within the offsets of the row's
 * key, ties included; a NULL key's frame is the NULL keys (plus an unbounded side), as in Spark.
 */
private[window] final class FrameBounds(frame: SlidingFrame, input: Seq[Attribute]) {
  private val rowsLower = frame.lower.map(v => v.asInstanceOf[Number].longValue)
  private val rowsUpper = frame.upper.map(v => v.asInstanceOf[Number].longValue)
  // The key as the Long or Double it is compared as (a date stays days, turned into micros on loading).
  private val keyProjection = frame.rangeKey.map { k =>
    val key = k.dataType match {
      case ByteType | ShortType | IntegerType => Cast(k.child, LongType)
      case FloatType => Cast(k.child, DoubleType)
      case _ => k.child
    }
    UnsafeProjection.create(Seq(key), input)
  }
  private val integral = frame.rangeKey.flatMap(k => SlidingFrame.rangeKeyKind(k.dataType)).getOrElse(true)
  private val descending = frame.rangeKey.exists(_.direction == Descending)
  // Dates compare in microseconds, so that day-time interval offsets apply to them as to timestamps.
  private val isDate = frame.rangeKey.exists(_.dataType == DateType)
  private val lowerOffset = frame.lower.map(offset)
  private val upperOffset = frame.upper.map(offset)

  private def offset(v: Any): Any = v match {
    case days: Int if isDate => days * MicrosPerDay
    case other => other
  }
  private var n = 0
  private var nullKey: Array[Boolean] = Array.empty
  private var keys: Array[Double] = Array.empty
  private var longKeys: Array[Long] = Array.empty
  private var lo = 0
  private var hi = 0

  def start(rows: WindowRows): Unit = {
    n = rows.length
    lo = 0
    hi = 0
    keyProjection.foreach { project =>
      nullKey = new Array[Boolean](n)
      if (integral) longKeys = new Array[Long](n) else keys = new Array[Double](n)
      val it = rows.iterator(0)
      var j = 0
      while (j < n) {
        val k = project(it.next())
        nullKey(j) = k.isNullAt(0)
        if (!nullKey(j)) {
          if (isDate) longKeys(j) = k.getInt(0) * MicrosPerDay
          else if (integral) longKeys(j) = k.getLong(0)
          else keys(j) = k.getDouble(0)
        }
        j += 1
      }
    }
  }

  /** [begin, end) of row i's frame. */
  def apply(i: Int): (Int, Int) =
    if (keyProjection.isEmpty) {
      val end = rowsUpper.fold(n)(u => clamp(i.toLong + u + 1))
      (math.min(rowsLower.fold(0)(l => clamp(i.toLong + l)), end), end)
    } else {
      // Advance lo to the first row not before the frame, hi to the first row after it.
      if (frame.lower.isEmpty) lo = 0 else while (lo < n && before(lo, i)) lo += 1
      if (frame.upper.isEmpty) hi = n else { hi = math.max(hi, lo); while (hi < n && !after(hi, i)) hi += 1 }
      (math.min(lo, hi), hi)
    }

  /** Row j sorts before row i's frame (its key is below key_i + lower, in the sort direction). */
  private def before(j: Int, i: Int): Boolean =
    if (nullKey(i)) !nullKey(j) && !nullsFirstOf(j)
    else if (nullKey(j)) nullsFirstOf(j) else compare(j, i, lowerOffset.get) < 0

  /** Row j sorts after row i's frame. */
  private def after(j: Int, i: Int): Boolean =
    if (nullKey(i)) !nullKey(j) && nullsFirstOf(j)
    else if (nullKey(j)) !nullsFirstOf(j) else compare(j, i, upperOffset.get) > 0

  private def nullsFirstOf(j: Int): Boolean = frame.rangeKey.get.nullOrdering == NullsFirst

  /** Sign of (key_j - (key_i + offset)) in the sort direction. */
  private def compare(j: Int, i: Int, offset: Any): Int = {
    val c =
      if (integral) {
        val o = offset.asInstanceOf[Number].longValue
        val target = if (descending) saturatedSubtract(longKeys(i), o) else saturatedAdd(longKeys(i), o)
        java.lang.Long.compare(longKeys(j), target)
      } else {
        val o = offset.asInstanceOf[Number].doubleValue
        java.lang.Double.compare(keys(j), if (descending) keys(i) - o else keys(i) + o)
      }
    if (descending) -c else c
  }

  private def saturatedAdd(a: Long, b: Long): Long = {
    val r = a + b
    if (((a ^ r) & (b ^ r)) < 0) (if (b > 0) Long.MaxValue else Long.MinValue) else r
  }
  private def saturatedSubtract(a: Long, b: Long): Long =
    if (b == Long.MinValue) saturatedAdd(saturatedAdd(a, Long.MaxValue), 1) else saturatedAdd(a, -b)

  private def clamp(x: Long): Int = math.max(0L, math.min(n.toLong, x)).toInt

  private final val MicrosPerDay = 86400L * 1000 * 1000
}

/**
 * Follows one expression's frame through a partition of `n` buffered rows. Frames only move forward:
 * rows up to the frame's end are added, then rows before its start retracted (added first, so a frame
 * that starts ahead of all rows seen so far still retracts only what it added).
 *
 * A function that cannot retract slides on two stacks instead, O(1) amortised per row: new rows go
 * into a `back` accumulator; the `front` holds, for each older row still in the frame, the state of
 * that row and every older-front row after it, built from the back's rows whenever the front runs
 * empty. A frame's value is the front's top state merged with the back's.
 */
private[window] final class FrameEvaluator(frame: SlidingFrame, arguments: UnsafeProjection, bounds: FrameBounds) {
  private val view = new RowValues
  private var acc: Accumulator = _
  private var buffer: WindowRows = _
  private var entering: Iterator[UnsafeRow] = _
  private var leaving: Iterator[UnsafeRow] = _
  private var added = 0
  private var removed = 0
  // Two stacks, for functions without retract: front states of rows [removed, frontEnd), back from frontEnd.
  private var frontStates: Array[InternalRow] = Array.empty
  private var frontStart = 0
  private var frontEnd = 0

  def start(rows: WindowRows): Unit = {
    buffer = rows
    bounds.start(rows)
    acc = frame.function.call.newSlidingAccumulator()
    entering = rows.iterator(0)
    leaving = rows.iterator(0)
    added = 0
    removed = 0
    frontStates = Array.empty
    frontStart = 0
    frontEnd = 0
  }

  /** The value for row `i` of the partition. */
  def valueAt(i: Int): Any = {
    val (begin, end) = bounds(i)
    try {
      if (acc.supportsRetract) {
        while (added < end) { view.row = arguments(entering.next()); acc.update(view); added += 1 }
        while (removed < begin) { view.row = arguments(leaving.next()); acc.retract(view); removed += 1 }
        if (acc.needsRebuild) acc = accumulate(begin, end)
        frame.function.call.result(acc)
      } else slideOnTwoStacks(begin, end)
    } catch { case e: ArithmeticException => throw frame.function.overflow(e) }
  }

  private def slideOnTwoStacks(begin: Int, end: Int): Any = {
    while (added < end) { view.row = arguments(entering.next()); acc.update(view); added += 1 }
    val result = frame.function.call.newSlidingAccumulator()
    if (begin >= end) return frame.function.call.result(result)
    if (begin >= frontEnd) rebuildFront(begin)
    removed = math.max(removed, begin)
    if (removed < frontEnd) result.merge(RowValues.of(frontStates(removed - frontStart)))
    if (frontEnd < added) result.merge(RowValues.of(frame.function.call.stateRow(acc.state())))
    frame.function.call.result(result)
  }

  /** Moves rows [from, added) from the back to the front, as suffix states; the back starts empty. Each
   *  suffix takes its own row before the later rows' state, so that functions that keep arrival order
   *  (array_agg, string_agg, first_value without keys) see the frame in order. */
  private def rebuildFront(from: Int): Unit = {
    val rows = buffer.iterator(from)
    val args = Array.fill(added - from)(arguments(rows.next()).copy())
    frontStates = new Array[InternalRow](args.length)
    var k = args.length - 1
    while (k >= 0) {
      val suffix = frame.function.call.newSlidingAccumulator()
      view.row = args(k)
      suffix.update(view)
      if (k + 1 < args.length) suffix.merge(RowValues.of(frontStates(k + 1)))
      frontStates(k) = frame.function.call.stateRow(suffix.state())
      k -= 1
    }
    frontStart = from
    frontEnd = added
    acc = frame.function.call.newSlidingAccumulator()
  }

  /** A new accumulator over rows [begin, end) of the partition. */
  private def accumulate(begin: Int, end: Int): Accumulator = {
    val fresh = frame.function.call.newSlidingAccumulator()
    val rows = buffer.iterator(begin)
    var j = begin
    while (j < end) { view.row = arguments(rows.next()); fresh.update(view); j += 1 }
    fresh
  }
}

/** Reads the sorted input a partition at a time, buffers it, and yields its rows with their values. */
private[window] final class PartitionIterator(
    input: Iterator[UnsafeRow],
    partitionKey: UnsafeProjection,
    buffer: WindowRows,
    evaluators: Seq[FrameEvaluator],
    results: SpecificInternalRow,
    join: JoinedRow,
    toOutput: UnsafeProjection)
  extends Iterator[InternalRow] {

  private var pending: UnsafeRow = if (input.hasNext) input.next() else null
  private var current: Iterator[UnsafeRow] = Iterator.empty
  private var index = 0

  private def loadPartition(): Unit = {
    buffer.clear()
    val key = partitionKey(pending).copy()
    while (pending != null && partitionKey(pending) == key) {
      buffer.add(pending)
      pending = if (input.hasNext) input.next() else null
    }
    evaluators.foreach(_.start(buffer))
    current = buffer.iterator(0)
    index = 0
  }

  override def hasNext: Boolean = current.hasNext || pending != null

  override def next(): InternalRow = {
    if (!current.hasNext) loadPartition()
    val row = current.next()
    var k = 0
    while (k < evaluators.length) { results.update(k, evaluators(k).valueAt(index)); k += 1 }
    index += 1
    toOutput(join(row, results))
  }
}
