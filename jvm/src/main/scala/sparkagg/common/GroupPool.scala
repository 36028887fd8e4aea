package sparkagg.common

import sparkagg.api.{Column, Columns, EmitTo, GroupsAccumulator, ListValues}

/**
 * The slots of a grouped accumulator that keeps every value of every group in one pool shared by all
 * groups (array_agg's elements, median's values): each slot tagged with its group, in arrival order; no
 * object per group. A subclass keeps the values in arrays of its own, slot by slot, and says how to grow,
 * move and drop them. [[emitSlots]] hands over the emitted groups' slots ordered by group (a stable
 * counting sort: each group's in arrival order), then drops them, moving the rest down and renumbering
 * their groups (EmitTo.First(n): group n becomes group 0). [[OneValuePool]] adds the update of a function
 * of one argument, [[ListStatePool]] the merge of states that are lists of values.
 */
abstract class GroupPool {
  /** Makes room for `capacity` slots, keeping the values of the slots in use. */
  protected def growSlots(capacity: Int): Unit
  /** Moves slot `from`'s value to slot `to`, at or below it (a slot emitted or already moved). */
  protected def moveSlot(from: Int, to: Int): Unit
  /** Forgets the slots [from, until), out of use after the kept ones moved down. */
  protected def dropSlots(from: Int, until: Int): Unit
  /** Starts again with `capacity` empty slots. */
  protected def resetSlots(capacity: Int): Unit

  private val perGroup = new IntVector
  private var owner = new Array[Int](GroupPool.Initial)
  private var pooled = 0

  /** Groups 0 until `totalGroups` exist: called before a batch is updated or merged. */
  protected final def resizeGroups(totalGroups: Int): Unit = perGroup.resize(totalGroups)

  /** A slot for the next value of group g (the values' arrays grown first when the pool is full). */
  protected final def slotFor(g: Int): Int = {
    if (pooled == owner.length) {
      val capacity = GroupPool.grownCapacity(pooled)
      owner = LargeArrays.grown(owner, capacity)
      growSlots(capacity)
    }
    owner(pooled) = g
    perGroup.array(g) += 1
    pooled += 1
    pooled - 1
  }

  /** `use` of the emitted groups' slots, which are then dropped and the rest of the pool renumbered. */
  protected final def emitSlots[A](emit: EmitTo)(use: GroupPool.Emitted => A): A = {
    val counts = perGroup.emit(emit)
    val n = counts.length
    // At a million groups these arrays are megabytes each: recycled, not left to the collector. The
    // offsets may be kept by the emitted column, so they go with the emission's loan.
    val offsets = LargeArrays.lentOffsets(n)
    var g = 0
    while (g < n) { offsets(g + 1) = offsets(g) + counts(g); g += 1 }
    val slots = GroupVectors.orderByGroup(owner, pooled, offsets, n)
    // Every group emitted: the owners are done with before the values are copied out (a 10-million-value
    // group's are 40 MB, beside the values and their copy).
    if (perGroup.length == 0) {
      LargeArrays.release(owner)
      owner = new Array[Int](GroupPool.Initial)
    }
    val out = use(new GroupPool.Emitted(slots, offsets, counts))
    LargeArrays.release(slots)
    if (perGroup.length == 0) {
      resetSlots(GroupPool.Initial)
      pooled = 0
    } else keepFrom(n)
    out
  }

  /** Drops the slots of groups below n (emitted), moving the others down and renumbering their groups. */
  private def keepFrom(n: Int): Unit = {
    var kept = 0
    var slot = 0
    while (slot < pooled) {
      if (owner(slot) >= n) {
        owner(kept) = owner(slot) - n
        moveSlot(slot, kept)
        kept += 1
      }
      slot += 1
    }
    dropSlots(kept, pooled)
    pooled = kept
  }

  /** Bytes of the bookkeeping (the values' arrays are the subclass's to count). */
  protected final def poolSize: Long = perGroup.size + 4L * owner.length
}

/** A [[GroupPool]] of a function of one argument (string_agg's delimiter is a constant, not a column). */
abstract class OneValuePool extends GroupPool {
  /** Group g's next row of an update: row i of the argument `column`. */
  protected def updateRow(g: Int, column: Column, i: Int): Unit

  /** Each row the filter keeps, in order, to its group. */
  final def updateBatch(values: Columns, groupIndices: Array[Int], filter: Option[Column], totalGroups: Int): Unit = {
    resizeGroups(totalGroups)
    val column = values.column(0)
    val f = filter.orNull
    var i = 0
    while (i < values.numRows) {
      if (GroupsAccumulator.keep(f, i)) updateRow(groupIndices(i), column, i)
      i += 1
    }
  }
}

/** A [[OneValuePool]] whose state is one list of values per group (array_agg's elements, median's values). */
abstract class ListStatePool extends OneValuePool {
  /** Group g's next element of a merged state list of doubles laid end to end (read in place). */
  protected def mergeDouble(g: Int, value: Double, isNull: Boolean): Unit
  /** Group g's next element of any other merged state list: element j of `list`. */
  protected def mergeElement(g: Int, list: ListValues, j: Int): Unit

  /** mergeBatch of states whose one field is a list of values: each element, in order, to its group. */
  final def mergeBatch(states: Columns, groupIndices: Array[Int], filter: Option[Column], totalGroups: Int): Unit = {
    resizeGroups(totalGroups)
    val column = states.column(0)
    // Lists of doubles that come end to end are read in place, without a list view per state.
    val endToEnd = column match {
      case c: DoubleListColumn => c
      case _ => null
    }
    val f = filter.orNull
    var i = 0
    while (i < states.numRows) {
      if (GroupsAccumulator.keep(f, i) && !column.isNullAt(i)) {
        val g = groupIndices(i)
        if (endToEnd != null) {
          var at = endToEnd.start(i)
          val until = at + endToEnd.length(i)
          while (at < until) { mergeDouble(g, endToEnd.values(at), endToEnd.isElementNull(at)); at += 1 }
        } else {
          val list = column.getList(i)
          var j = 0
          while (j < list.numElements) { mergeElement(g, list, j); j += 1 }
        }
      }
      i += 1
    }
  }
}

object GroupPool {
  val Initial = 1024

  /** The capacity after `capacity` slots: doubled up to 2^20, then grown by half, so that a pool of one huge
   *  group, whose old and new arrays live together while it grows, needs 2.5 times its values, not 3. */
  def grownCapacity(capacity: Int): Int =
    if (capacity < (1 << 20)) 2 * capacity else math.min(Int.MaxValue - 8L, capacity + (capacity >> 1)).toInt

  /** The emitted groups' slots: group g's are `slots` at [offsets(g), offsets(g + 1)), in arrival order,
   *  counts(g) of them. */
  final class Emitted(val slots: Array[Int], val offsets: Array[Int], val counts: Array[Int]) {
    def groups: Int = counts.length
  }
}
