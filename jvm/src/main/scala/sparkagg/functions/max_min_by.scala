package sparkagg.functions

import org.apache.spark.sql.types._
import sparkagg.api._
import sparkagg.common._

/**
 * max_by(x, y) and min_by(x, y): the x of the row with the largest (smallest) y, as DataFusion-extra gives
 * them (it rewrites them to first/last_value ordered by y, and so does sparkagg: first_value's accumulator
 * over y descending or ascending). Rows whose y is NULL are skipped; NULL when no row has a y (x itself
 * may be NULL). Equal ys: the first row to arrive wins, so across partitions any of them. y sorts as Spark
 * sorts (NaN greatest). State: the value, y (its field named with the direction), <name>_is_set.
 * Grouped, x and y of primitive types (integers, boolean, date, timestamps, floats) in primitive arrays
 * ([[ExtremeByGroups]]), others through first_value's ([[KeyedExtremeByGroups]]); sliding frames keep a
 * monotonic queue of their rows by y.
 */
sealed abstract class ExtremeBy(val name: String, largest: Boolean, example: (String, String)) extends FunctionDef {
  private val isSet = s"${name}_is_set"
  private val direction = SortKey(descending = largest, nullsFirst = false)
  val signature = s"(any, ${Types.Orderable}) -> type of the first"
  val doc = FunctionDoc(
    usage = s"_FUNC_(x, y) - The value of x on the row with the ${if (largest) "largest" else "smallest"} y " +
      "(rows where y is NULL skipped).",
    arguments = Seq("x" -> "any type", "y" -> Types.Orderable),
    examples = Seq(example),
    note = "Of rows with equal y, the first to arrive: which one may change with partitioning."
  )

  def bind(args: Seq[Arg], ctx: BindContext): Either[String, Bound] = args.map(_.dataType) match {
    case Seq(x, y) if Types.isOrderable(y) =>
      val keys = OrderKeys(Seq(y), Seq(direction))
      val state = StructType(StructField(name, x) +: keys.fields :+ StructField(isSet, BooleanType))
      val native = Seq(x, y).forall(PrimitiveBits.fits)
      Right(
        Bound(
          x,
          state,
          () => new ExtremeByAccumulator(new FirstLastAccumulator(x, keys, 1, last = false, ignoreNulls = false)),
          newSlidingAccumulator = Some(() =>
            new ExtremeByAccumulator(new SlidingFirstLastAccumulator(x, keys, 1, last = false,
                ignoreNulls = false))),
          newGroupsAccumulator = Some(() =>
            if (native) new ExtremeByGroups(new PrimitiveBits(x), new PrimitiveBits(y), largest)
            else new KeyedExtremeByGroups(new FirstLastGroups(x, keys, 1, last = false, ignoreNulls = false)))
        ))
    case Seq(_, y) => Left(s"cannot choose by a value of type ${y.simpleString} (accepted: ${Types.Orderable})")
    case _ => Left("expects two arguments: the value and the key it is chosen by")
  }

  override def argumentsOf(state: StructType, parameters: Seq[Arg]): Option[Seq[Arg]] =
    state.fields.toSeq match {
      case Seq(StructField(`name`, x, _, _), StructField(_, y, _, _), StructField(`isSet`, BooleanType, _, _)) =>
        Some(Seq(Arg(x, nullable = true), Arg(y, nullable = true)))
      case _ => None
    }
}

object MaxBy extends ExtremeBy("max_by", largest = true,
    "SELECT _FUNC_(x, y) FROM VALUES ('a', 5), ('b', NULL), ('c', 7) AS tab(x, y)" -> "c")
object MinBy extends ExtremeBy("min_by", largest = false,
    "SELECT _FUNC_(x, y) FROM VALUES ('a', 5), ('b', NULL), ('c', 7) AS tab(x, y)" -> "a")

/** first_value's accumulator (or its sliding variant) over the rows whose key y (the second argument) is
 *  not NULL. */
final class ExtremeByAccumulator(chosen: Accumulator) extends Accumulator {
  def update(args: Values): Unit = if (!args.isNullAt(1)) chosen.update(args)
  override def retract(args: Values): Unit = if (!args.isNullAt(1)) chosen.retract(args)
  override def supportsRetract: Boolean = chosen.supportsRetract
  def merge(state: Values): Unit = chosen.merge(state)
  def state(): Array[Any] = chosen.state()
  def evaluate(): Any = chosen.evaluate()
  def size: Long = chosen.size
}

/** first_value's GroupsAccumulator over the rows whose key y (the second argument) is not NULL, as
 *  [[ExtremeByAccumulator]] is its accumulator's: those rows are filtered out before it sees them. */
private[sparkagg] final class KeyedExtremeByGroups(chosen: FirstLastGroups) extends GroupsAccumulator {
  private def withKey(values: Columns, filter: Option[Column]): Option[Column] = {
    val (y, f, n) = (values.column(1), filter.orNull, values.numRows)
    Some(new BooleanColumn(Array.tabulate(n)(i => GroupsAccumulator.keep(f, i) && !y.isNullAt(i)), null, n))
  }
  def updateBatch(values: Columns, groupIndices: Array[Int], filter: Option[Column], totalGroups: Int): Unit =
    chosen.updateBatch(values, groupIndices, withKey(values, filter), totalGroups)
  def mergeBatch(states: Columns, groupIndices: Array[Int], filter: Option[Column], totalGroups: Int): Unit =
    chosen.mergeBatch(states, groupIndices, filter, totalGroups)
  def evaluate(emit: EmitTo): Column = chosen.evaluate(emit)
  def state(emit: EmitTo): Array[Column] = chosen.state(emit)
  override def convertToState(values: Columns, filter: Option[Column]): Array[Column] =
    chosen.convertToState(values, withKey(values, filter))
  override def supportsConvertToState: Boolean = true
  def size: Long = chosen.size
}

/**
 * A value of a primitive type in a Long, and back: integers, boolean, date and timestamps as their value,
 * floats and doubles as bits that sort as Spark sorts them (NaN greatest, -0.0 before 0.0) and map back
 * exactly, so one long comparison orders any of them.
 */
private[functions] final class PrimitiveBits(t: DataType) {
  private val floating = t == FloatType || t == DoubleType
  private val integral = if (floating) null else new ValueKind.LongLike(t)
  private val doubles = if (floating) new ValueKind.DoubleLike(t) else null

  def read(c: Column, row: Int): Long =
    if (floating) MedianAccumulator.encode(doubles.readDouble(c, row)) else integral.readLong(c, row)

  /** Rows of `bits` as a column of the type (NULL where `validity`'s bit is clear). */
  def column(bits: Array[Long], validity: Array[Long]): Column =
    if (floating) new DoubleColumn(bits.map(MedianAccumulator.decode), validity, bits.length)
    else new LongColumn(bits, validity, bits.length)
}

private[functions] object PrimitiveBits {
  def fits(t: DataType): Boolean = t match {
    case BooleanType | ByteType | ShortType | IntegerType | LongType | FloatType | DoubleType | DateType |
        TimestampType =>
      true
    case other => other.typeName == "timestamp_ntz"
  }
}

/**
 * max_by / min_by for every group: the chosen x and its y as longs ([[PrimitiveBits]]), whether x is
 * non-NULL and whether a row was chosen as bits. A row or state replaces a group's only with a strictly
 * larger (smaller) y, so ties keep the first to arrive, as the row accumulator does.
 */
final class ExtremeByGroups(x: PrimitiveBits, y: PrimitiveBits, largest: Boolean) extends GroupsAccumulator {
  private val xs = new LongVector
  private val ys = new LongVector
  private val xValid = new BitVector
  private val chosen = new BitVector

  private def resize(totalGroups: Int): Unit = {
    xs.resize(totalGroups); ys.resize(totalGroups); xValid.resize(totalGroups); chosen.resize(totalGroups)
  }

  /** Offers row `i` of (xc, yc) to group g; yc's row is non-NULL. */
  @inline private def offer(g: Int, xc: Column, yc: Column, i: Int): Unit = {
    val key = y.read(yc, i)
    if (!chosen.get(g) || (if (largest) key > ys.array(g) else key < ys.array(g))) {
      ys.array(g) = key
      chosen.set(g)
      if (xc.isNullAt(i)) xValid.clear(g) else { xs.array(g) = x.read(xc, i); xValid.set(g) }
    }
  }

  def updateBatch(values: Columns, groupIndices: Array[Int], filter: Option[Column], totalGroups: Int): Unit = {
    resize(totalGroups)
    val (xc, yc, f) = (values.column(0), values.column(1), filter.orNull)
    var i = 0
    while (i < values.numRows) {
      if (GroupsAccumulator.keep(f, i) && !yc.isNullAt(i)) offer(groupIndices(i), xc, yc, i)
      i += 1
    }
  }

  def mergeBatch(states: Columns, groupIndices: Array[Int], filter: Option[Column], totalGroups: Int): Unit = {
    resize(totalGroups)
    val (xc, yc, set, f) = (states.column(0), states.column(1), states.column(2), filter.orNull)
    var i = 0
    while (i < states.numRows) {
      if (GroupsAccumulator.keep(f, i) && set.getBoolean(i)) offer(groupIndices(i), xc, yc, i)
      i += 1
    }
  }

  def evaluate(emit: EmitTo): Column = { chosen.emit(emit); ys.drop(emit); x.column(xs.emit(emit), xValid.emit(emit)) }

  def state(emit: EmitTo): Array[Column] = {
    val set = chosen.emit(emit)
    val n = emit.count(xs.length)
    Array(x.column(xs.emit(emit), xValid.emit(emit)), y.column(ys.emit(emit), set),
      new BooleanColumn(Array.tabulate(n)(Validity.isValid(set, _)), null, n))
  }

  override def convertToState(values: Columns, filter: Option[Column]): Array[Column] =
    GroupsAccumulator.statesOfRows(new ExtremeByGroups(x, y, largest), values, filter)
  override def supportsConvertToState: Boolean = true

  def size: Long = xs.size + ys.size + xValid.size + chosen.size
}
