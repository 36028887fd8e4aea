package sparkagg.common

import java.util.Arrays

import sparkagg.api._

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
  /** The grouped accumulator of a bound function: its native one when it has one, else this adapter. */
  def of(bound: Bound): GroupsAccumulator = bound.newGroupsAccumulator match {
    case Some(make) => make()
    case None => new AccumulatorGroups(bound.newAccumulator)
  }

  /** Rows of state fields as one column per field. */
  private def columns(states: Array[Array[Any]], newAccumulator: () => Accumulator): Array[Column] = {
    val fields = if (states.nonEmpty) states(0).length else newAccumulator().state().length
    Array.tabulate[Column](fields)(f => new ObjectColumn(states.map(_(f))))
  }
}
