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
 * Grouped, y of a primitive type (integers, boolean, date, timestamps, floats) and x of one or a string or
 * binary in arrays ([[OneKeyFirstLastGroups]]), others through first_value's ([[KeyedExtremeByGroups]]);
 * sliding frames keep a monotonic queue of their rows by y.
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
    note = "rows with a NULL y skipped; equal ys: the first row to arrive; grouped in arrays for a y of a primitive " +
      "type and an x of one, a string or a binary",
    accepts = "any, orderable",
    result = "x's type",
    emptyInput = "NULL",
    dataFusion = "not in DataFusion 55",
    nan = "NaN orders above every number, as in Spark",
    spark = s"`$name`: the same, except between rows whose keys tie: this keeps the first row read, Spark the " +
      "last (keys 1, 2, 2 over 'a', 'b', 'c': max_by 'b' here, 'c' in Spark)"
  )

  def bind(args: Seq[Arg], ctx: BindContext): Either[String, Bound] = args.map(_.dataType) match {
    case Seq(x, y) if Types.isOrderable(y) =>
      val keys = OrderKeys(Seq(y), Seq(direction))
      val state = StructType(StructField(name, x) +: keys.fields :+ StructField(isSet, BooleanType))
      Right(
        Bound(
          x,
          state,
          () => new ExtremeByAccumulator(new FirstLastAccumulator(x, keys, 1, last = false, ignoreNulls = false)),
          newSlidingAccumulator = Some(() =>
            new ExtremeByAccumulator(new SlidingFirstLastAccumulator(x, keys, 1, last = false,
                ignoreNulls = false))),
          newGroupsAccumulator = Some(() =>
            if (OneKeyFirstLastGroups.fits(x, y))
              new OneKeyFirstLastGroups(x, y, direction, 1, last = false, ignoreNulls = false, skipNullKeys = true)
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
    Some(new BooleanColumn(Fill.booleans(n)(i => GroupsAccumulator.keep(f, i) && !y.isNullAt(i)), null, n))
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
    if (floating)
      new DoubleColumn(Fill.doubles(bits.length)(i => MedianAccumulator.decode(bits(i))), validity, bits.length)
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
