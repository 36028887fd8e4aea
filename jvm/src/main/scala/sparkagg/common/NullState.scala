package sparkagg.common

import sparkagg.api.{Column, EmitTo, GroupsAccumulator}

/**
 * Which groups have seen a value (DataFusion's NullState): the validity of a native
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
      while (i < numRows) {
        val g = groupIndices(i)
        bits(g >> 6) |= 1L << g
        fn(g, i)
        i += 1
      }
    } else if (f == null) {
      while (i < numRows) {
        if (!values.isNullAt(i)) {
          val g = groupIndices(i)
          bits(g >> 6) |= 1L << g
          fn(g, i)
        }
        i += 1
      }
    } else if (!values.hasNulls) {
      while (i < numRows) {
        if (GroupsAccumulator.keep(f, i)) {
          val g = groupIndices(i)
          bits(g >> 6) |= 1L << g
          fn(g, i)
        }
        i += 1
      }
    } else {
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
