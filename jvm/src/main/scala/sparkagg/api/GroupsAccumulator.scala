package sparkagg.api

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
 * a native implementation keeps one primitive array per state field indexed by group (`sparkagg.common`:
 * LongVector, DoubleVector, BitVector, NullState), no object per group. Its AccumulatorGroups runs any
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

  /** Each row's own state, made by `fresh` (a new, empty accumulator) updating every row into a group of
   *  its own: convertToState for the accumulators whose first step is not simply the value. */
  def statesOfRows(fresh: GroupsAccumulator, values: Columns, filter: Option[Column]): Array[Column] = {
    val rows = values.numRows
    fresh.updateBatch(values, Array.range(0, rows), filter, rows)
    fresh.state(EmitTo.All)
  }
}
