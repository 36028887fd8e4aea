package sparkagg.api

import java.util.Arrays

/**
 * Which groups [[GroupsAccumulator.evaluate]] and [[GroupsAccumulator.state]] emit (DataFusion's EmitTo).
 * `All`: every group; the accumulator is left as new. `First(n)`: groups 0 until n; the rest stay, their
 * indices shifted down by n (the group that was n is 0 in every later call).
 */
sealed trait EmitTo {
  /** How many of `totalGroups` groups are emitted. */
  def count(totalGroups: Int): Int
}

object EmitTo {
  case object All extends EmitTo {
    def count(totalGroups: Int): Int = totalGroups
  }
  final case class First(n: Int) extends EmitTo {
    require(n >= 0, s"EmitTo.First needs n >= 0, got $n")
    def count(totalGroups: Int): Int = {
      if (n > totalGroups) throw new IllegalArgumentException(s"EmitTo.First($n) of only $totalGroups groups")
      n
    }
  }
}

/**
 * The state of one aggregate function for every group of a hash aggregation at once: DataFusion's
 * `GroupsAccumulator`. Groups are dense indices 0, 1, 2, ... that the operator assigns to its keys;
 * a native implementation keeps one primitive array per state field indexed by group ([[LongVector]],
 * [[DoubleVector]], [[BitVector]], [[NullState]]), no object per group. [[AccumulatorGroups]] runs any
 * row-at-a-time [[Accumulator]] this way, one per group.
 *
 * Contract:
 *  - `updateBatch(values, groupIndices, filter, totalGroups)`: row `i` (of `values.numRows`) belongs to
 *    group `groupIndices(i)` (the array may be longer than the batch); a row whose `filter` entry is not
 *    true (false or NULL: SQL's FILTER clause) is skipped. `totalGroups` is the number of groups so far;
 *    it only grows between emits, and a group that never received a row still exists and evaluates to
 *    the function's empty value. `values` are the arguments cast to [[Bound.coerceTo]], valid only
 *    during the call: an operator reuses its batch arrays, so an accumulator copies what it keeps.
 *  - `mergeBatch(states, ...)`: the same with state rows (one column per field of the state schema), as
 *    `state` emitted them here or in another partition, or as `convertToState` made them.
 *  - `evaluate(emit)` / `state(emit)`: the results / state fields of the emitted groups, in group order,
 *    as columns of `emit.count(totalGroups)` rows; the emitted groups are dropped (see [[EmitTo]]).
 *    Overflow raises `ArithmeticException` as [[Accumulator]] does.
 *  - `convertToState(values, filter)`: the state of every row as if it were a group of its own (a row
 *    filtered out: an empty group), for a partial aggregation that does not reduce its input; only
 *    called when `supportsConvertToState`.
 *  - `size`: bytes held, capacity rather than length (memory accounting).
 */
trait GroupsAccumulator {
  def updateBatch(values: Columns, groupIndices: Array[Int], filter: Option[Column], totalGroups: Int): Unit
  def mergeBatch(states: Columns, groupIndices: Array[Int], filter: Option[Column], totalGroups: Int): Unit
  def evaluate(emit: EmitTo): Column
  def state(emit: EmitTo): Array[Column]
  def convertToState(values: Columns, filter: Option[Column]): Array[Column] =
    throw new UnsupportedOperationException(s"${getClass.getName} does not support convertToState")
  def supportsConvertToState: Boolean = false
  def size: Long
}

object GroupsAccumulator {
  /** Whether row `row` passes the filter: no filter, or a non-NULL true. */
  @inline def keep(filter: Column, row: Int): Boolean =
    filter == null || (!filter.isNullAt(row) && filter.getBoolean(row))

  /** The filter as the mask of kept rows, or null when there is no filter. */
  def mask(filter: Option[Column], numRows: Int): Array[Boolean] = filter match {
    case None => null
    case Some(f) => Array.tabulate(numRows)(keep(f, _))
  }
}

/**
 * Which groups have seen a value (DataFusion's NullState, seed 003): the validity of a native
 * accumulator's result, for functions whose empty group is NULL (sum, min, max, ...).
 *
 * `accumulateLong` / `accumulateDouble` / `accumulateRows` call `fn(group, value)` (or `fn(group, row)`)
 * for every row that is non-NULL and passes the filter, in row order, and mark its group as seen. As in
 * DataFusion's accumulate.rs, each takes one of four loops, so that the common input pays for no check
 * it does not need: no NULLs and no filter, NULLs and no filter, no NULLs and a filter, NULLs and a
 * filter. `build(emit)` returns the emitted groups' validity (set: seen) and drops them.
 *
 * Every group's bit is kept (DataFusion 52's shortcut of one count while no group lacks a value assumes
 * every group index received a row, which a caller of this api need not promise).
 */
final class NullState {
  private val seen = new BitVector

  /** The loop the last call took, for tests: one of [[NullState.Paths]]. */
  var lastPath: String = ""

  def isSeen(group: Int): Boolean = seen.get(group)
  def size: Long = seen.size

  def accumulateLong(groupIndices: Array[Int], values: Column, numRows: Int, filter: Option[Column],
      totalGroups: Int, fn: (Int, Long) => Unit): Unit =
    accumulateRows(groupIndices, values, numRows, filter, totalGroups, (g, i) => fn(g, values.getLong(i)))

  def accumulateDouble(groupIndices: Array[Int], values: Column, numRows: Int, filter: Option[Column],
      totalGroups: Int, fn: (Int, Double) => Unit): Unit =
    accumulateRows(groupIndices, values, numRows, filter, totalGroups, (g, i) => fn(g, values.getDouble(i)))

  /** For values of any type: `fn(group, row)` reads the row itself (a float, a narrow integer, ...). */
  def accumulateRows(groupIndices: Array[Int], values: Column, numRows: Int, filter: Option[Column],
      totalGroups: Int, fn: (Int, Int) => Unit): Unit = {
    seen.resize(totalGroups)
    val bits = seen.bits
    val f = filter.orNull
    var i = 0
    if (f == null && !values.hasNulls) {
      lastPath = NullState.NoFilterNoNulls
      while (i < numRows) {
        val g = groupIndices(i)
        bits(g >> 6) |= 1L << g
        fn(g, i)
        i += 1
      }
    } else if (f == null) {
      lastPath = NullState.NoFilterNulls
      while (i < numRows) {
        if (!values.isNullAt(i)) {
          val g = groupIndices(i)
          bits(g >> 6) |= 1L << g
          fn(g, i)
        }
        i += 1
      }
    } else if (!values.hasNulls) {
      lastPath = NullState.FilterNoNulls
      while (i < numRows) {
        if (GroupsAccumulator.keep(f, i)) {
          val g = groupIndices(i)
          bits(g >> 6) |= 1L << g
          fn(g, i)
        }
        i += 1
      }
    } else {
      lastPath = NullState.FilterNulls
      while (i < numRows) {
        if (GroupsAccumulator.keep(f, i) && !values.isNullAt(i)) {
          val g = groupIndices(i)
          bits(g >> 6) |= 1L << g
          fn(g, i)
        }
        i += 1
      }
    }
  }

  /** Grows to `totalGroups` without accumulating (a batch whose rows all went elsewhere). */
  def resize(totalGroups: Int): Unit = seen.resize(totalGroups)

  /** The emitted groups' validity as [[Validity]] words (set: seen), dropping them. */
  def build(emit: EmitTo): Array[Long] = seen.emit(emit)
}

object NullState {
  val NoFilterNoNulls = "no_filter_no_nulls"
  val NoFilterNulls = "no_filter_nulls"
  val FilterNoNulls = "filter_no_nulls"
  val FilterNulls = "filter_nulls"
  val Paths: Seq[String] = Seq(NoFilterNoNulls, NoFilterNulls, FilterNoNulls, FilterNulls)
}

/**
 * Any [[Accumulator]] run as a [[GroupsAccumulator]] (DataFusion's GroupsAccumulatorAdapter): one
 * accumulator per group, made as groups appear, fed its group's rows in arrival order through a [[Values]]
 * view of the batch. Results and states come out as [[ObjectColumn]]s of what the accumulators return.
 * The path for every function without a native implementation; `size` follows each accumulator's
 * `size` as it changes.
 */
final class AccumulatorGroups(newAccumulator: () => Accumulator) extends GroupsAccumulator {
  private var accumulators = new Array[Accumulator](16)
  private var len = 0
  private var held = 0L

  private def resize(totalGroups: Int): Unit = if (totalGroups > len) {
    if (totalGroups > accumulators.length)
      accumulators = Arrays.copyOf(accumulators, GroupVectors.grow(accumulators.length, totalGroups))
    while (len < totalGroups) {
      val a = newAccumulator()
      held += a.size
      accumulators(len) = a
      len += 1
    }
  }

  private def feed(batch: Columns, groupIndices: Array[Int], filter: Option[Column], totalGroups: Int,
      merge: Boolean): Unit = {
    resize(totalGroups)
    val view = new ColumnsRow(batch)
    val f = filter.orNull
    val n = batch.numRows
    var i = 0
    while (i < n) {
      if (GroupsAccumulator.keep(f, i)) {
        val a = accumulators(groupIndices(i))
        val before = a.size
        view.row = i
        if (merge) a.merge(view) else a.update(view)
        held += a.size - before
      }
      i += 1
    }
  }

  def updateBatch(values: Columns, groupIndices: Array[Int], filter: Option[Column], totalGroups: Int): Unit =
    feed(values, groupIndices, filter, totalGroups, merge = false)

  def mergeBatch(states: Columns, groupIndices: Array[Int], filter: Option[Column], totalGroups: Int): Unit =
    feed(states, groupIndices, filter, totalGroups, merge = true)

  /** Removes the emitted accumulators, shifting the rest down. */
  private def take(emit: EmitTo): Array[Accumulator] = {
    val n = emit.count(len)
    val out = Arrays.copyOf(accumulators, n)
    if (n == len) accumulators = new Array[Accumulator](16)
    else {
      System.arraycopy(accumulators, n, accumulators, 0, len - n)
      Arrays.fill(accumulators.asInstanceOf[Array[AnyRef]], len - n, len, null)
    }
    len -= n
    out.foreach(a => held -= a.size)
    out
  }

  def evaluate(emit: EmitTo): Column = new ObjectColumn(take(emit).map(_.evaluate()))

  def state(emit: EmitTo): Array[Column] = AccumulatorGroups.columns(take(emit).map(_.state()), newAccumulator)

  override def convertToState(values: Columns, filter: Option[Column]): Array[Column] = {
    val view = new ColumnsRow(values)
    val f = filter.orNull
    val states = Array.tabulate(values.numRows) { i =>
      val a = newAccumulator()
      if (GroupsAccumulator.keep(f, i)) { view.row = i; a.update(view) }
      a.state()
    }
    AccumulatorGroups.columns(states, newAccumulator)
  }
  override def supportsConvertToState: Boolean = true

  def size: Long = 16L + 8L * accumulators.length + held
}

object AccumulatorGroups {
  /** Rows of state fields as one column per field. */
  private def columns(states: Array[Array[Any]], newAccumulator: () => Accumulator): Array[Column] = {
    val fields = if (states.nonEmpty) states(0).length else newAccumulator().state().length
    Array.tabulate[Column](fields)(f => new ObjectColumn(states.map(_(f))))
  }
}
