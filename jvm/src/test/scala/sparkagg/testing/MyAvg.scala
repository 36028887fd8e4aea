package sparkagg.testing

import org.apache.spark.sql.types._
import sparkagg.api._
import sparkagg.common.{DoubleColumn, LongColumn, ObjectColumn}

/**
 * What a user writes in their own JAR: a function definition, its accumulator and, optionally, its
 * GroupsAccumulator (without one, a query calling it keeps Spark's aggregation, an accumulator per group).
 * Registered by the tests from Scala, from PySpark by class name, and through functions.udaf;
 * docs/own-accumulators.md shows this file.
 */
object MyAvg extends FunctionDef {
  val name = "my_avg"
  val signature = "(double) -> double"
  val doc = FunctionDoc(
    usage = "_FUNC_(x) - The mean of x, written as a user-defined accumulator.",
    arguments = Seq("x" -> "double"),
    examples = Nil)

  def bind(args: Seq[Arg], ctx: BindContext): Either[String, Bound] = args.map(_.dataType) match {
    case Seq(t) if Types.isNumeric(t) =>
      Right(
        Bound(
          DoubleType,
          StructType(Seq(StructField("n", LongType), StructField("total", DoubleType))),
          () => new MyAvgAccumulator,
          coerceTo = Seq(DoubleType),
          newGroupsAccumulator = Some(() => new MyAvgGroups)
        ))
    case _ => Left("expects one numeric argument")
  }
}

final class MyAvgAccumulator extends Accumulator {
  private var n = 0L
  private var total = 0.0
  def update(args: Values): Unit = if (!args.isNullAt(0)) { n += 1; total += args.getDouble(0) }
  def merge(state: Values): Unit = { n += state.getLong(0); total += state.getDouble(1) }
  def state(): Array[Any] = Array(n, total)
  def evaluate(): Any = if (n == 0) null else total / n
  def size: Long = 32
}

/** Every group's mean at once: group g's count and total at index g of two arrays, no object per group. A
 *  batch's rows are its columns' `numRows`; `groupIndices` may be longer (the operator reuses it). */
final class MyAvgGroups extends GroupsAccumulator {
  private var n = new Array[Long](16)
  private var total = new Array[Double](16)
  private var groups = 0

  private def grow(totalGroups: Int): Unit = {
    if (n.length < totalGroups) {
      val length = math.max(totalGroups, 2 * n.length)
      n = java.util.Arrays.copyOf(n, length)
      total = java.util.Arrays.copyOf(total, length)
    }
    groups = math.max(groups, totalGroups)
  }

  def updateBatch(values: Columns, groupIndices: Array[Int], filter: Option[Column], totalGroups: Int): Unit = {
    grow(totalGroups)
    val (x, kept) = (values.column(0), filter.orNull)
    var row = 0 // a while loop: a `for` over a Range with a guard boxes every row index
    while (row < values.numRows) {
      if (!x.isNullAt(row) && GroupsAccumulator.keep(kept, row)) {
        val g = groupIndices(row)
        n(g) += 1
        total(g) += x.getDouble(row)
      }
      row += 1
    }
  }

  def mergeBatch(states: Columns, groupIndices: Array[Int], filter: Option[Column], totalGroups: Int): Unit = {
    grow(totalGroups)
    val (counts, totals, kept) = (states.column(0), states.column(1), filter.orNull)
    var row = 0
    while (row < states.numRows) {
      if (GroupsAccumulator.keep(kept, row)) {
        val g = groupIndices(row)
        n(g) += counts.getLong(row)
        total(g) += totals.getDouble(row)
      }
      row += 1
    }
  }

  /** The emitted groups' counts and totals; the groups after them move down to index 0. */
  private def emit(to: EmitTo): (Array[Long], Array[Double]) = {
    val count = to.count(groups)
    val emitted = (java.util.Arrays.copyOf(n, count), java.util.Arrays.copyOf(total, count))
    System.arraycopy(n, count, n, 0, groups - count)
    System.arraycopy(total, count, total, 0, groups - count)
    java.util.Arrays.fill(n, groups - count, groups, 0L)
    java.util.Arrays.fill(total, groups - count, groups, 0.0)
    groups -= count
    emitted
  }

  def evaluate(to: EmitTo): Column = {
    val (counts, totals) = emit(to)
    new ObjectColumn(Array.tabulate[Any](counts.length)(g => if (counts(g) == 0) null else totals(g) / counts(g)))
  }

  def state(to: EmitTo): Array[Column] = {
    val (counts, totals) = emit(to)
    Array(new LongColumn(counts, null, counts.length), new DoubleColumn(totals, null, counts.length))
  }

  /** Each row's own state: what a partial aggregation passes on when its keys hardly repeat. */
  override def supportsConvertToState: Boolean = true
  override def convertToState(values: Columns, filter: Option[Column]): Array[Column] = {
    val (x, kept, rows) = (values.column(0), filter.orNull, values.numRows)
    val counts = Array.tabulate(rows)(row => if (!x.isNullAt(row) && GroupsAccumulator.keep(kept, row)) 1L else 0L)
    val totals = Array.tabulate(rows)(row => if (counts(row) == 1) x.getDouble(row) else 0.0)
    Array(new LongColumn(counts, null, rows), new DoubleColumn(totals, null, rows))
  }

  def size: Long = 16L * n.length
}
