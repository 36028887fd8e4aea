package sparkagg.functions

import org.apache.spark.sql.types._
import sparkagg.api._
import sparkagg.common.{BitVector, BooleanColumn, ColumnsRow, Fill, GroupBytes, LongVector, ObjectColumn, ObjectVector, OrderKeys, OrderedValues, Validity}

/**
 * first_value(x [, ignore_nulls]) and last_value(x [, ignore_nulls]) [WITHIN GROUP (ORDER BY key
 * [DESC], ...)]: the value of x on the first (last) row in the order of the keys; without keys, on the
 * first (last) row seen, which partitioning may change. NULL values count unless `ignore_nulls` is true
 * (DataFusion's IGNORE NULLS; Spark's parser keeps that clause for its own first/last, and takes the
 * same boolean for them). NULL on empty input. Equal keys: the first (last) to arrive wins. Over a
 * sliding frame, a monotonic queue of the frame's rows by key ([[SlidingFirstLastAccumulator]], O(1) a row).
 * State: the value, its keys (field names carry their directions), <name>_is_set (DataFusion 55's names).
 */
sealed abstract class FirstLast(val name: String, last: Boolean, examples: Seq[(String, String)]) extends FunctionDef {
  private val isSet = s"${name}_is_set"
  private val which = if (last) "last" else "first"
  val signature = "(any [, ignore_nulls: constant boolean]) [WITHIN GROUP (ORDER BY any orderable, ...)] -> same type"
  override val withinGroup: WithinGroup = WithinGroup.OrderedBy
  val doc = FunctionDoc(
    usage = s"_FUNC_(expr [, ignore_nulls]) [WITHIN GROUP (ORDER BY key [DESC], ...)] - The value of expr on " +
      s"the $which row in the order of the keys (without keys: the $which row seen); NULL values skipped " +
      "when ignore_nulls is true.",
    arguments = Seq("expr" -> "any type", "ignore_nulls" -> "a constant boolean, false by default",
      "key" -> Types.Orderable),
    examples = examples,
    note = s"DataFusion's IGNORE NULLS is the boolean; without keys, the $which row seen",
    accepts = "any, constant boolean",
    result = "same",
    emptyInput = "NULL",
    dataFusion = "yes",
    nan = "a value like any other",
    spark = s"`${if (last) "last" else "first"}` (`${which}_value`): the same without keys, NULLs respected unless " +
      "asked; Spark's takes no ordering, so the row it gives is the one the plan reads " + which +
      "; `min_by` / `max_by` pick by one key"
  )

  def bind(args: Seq[Arg], ctx: BindContext): Either[String, Bound] = OrderKeys.of(args).flatMap { keys =>
    val ignoreNulls = args.filter(_.sortKey.isEmpty) match {
      case Seq(_) => Right(false)
      case Seq(_, flag) => flag.constant match {
          case Some(b: Boolean) if flag.dataType == BooleanType => Right(b)
          case _ => Left("expects a constant boolean ignore_nulls as its second argument")
        }
      case _ => Left("expects one argument and an optional constant boolean ignore_nulls")
    }
    ignoreNulls.map { ignore =>
      val t = args.head.dataType
      val state = StructType(StructField(name, t) +: keys.fields :+ StructField(isSet, BooleanType))
      val keyOffset = args.size - keys.size
      Bound(
        t,
        state,
        () => new FirstLastAccumulator(t, keys, keyOffset, last, ignore),
        newSlidingAccumulator = Some(() => new SlidingFirstLastAccumulator(t, keys, keyOffset, last, ignore)),
        newGroupsAccumulator = Some(() =>
          if (keys.size == 1 && OneKeyFirstLastGroups.fits(t, keys.types.head))
            new OneKeyFirstLastGroups(t, keys.types.head, keys.directions.head, keyOffset, last, ignore,
              skipNullKeys = false)
          else new FirstLastGroups(t, keys, keyOffset, last, ignore))
      )
    }
  }

  override def argumentsOf(state: StructType, parameters: Seq[Arg]): Option[Seq[Arg]] =
    state.fields.toSeq match {
      case StructField(`name`, t, _, _) +: keys :+ StructField(`isSet`, BooleanType, _, _) =>
        OrderKeys.fromState(keys).map(k => (Arg(t, nullable = true) +: parameters) ++ k)
      case _ => None
    }
}

object FirstValue extends FirstLast(
    "first_value",
    last = false,
    Seq(
      "SELECT _FUNC_(col) WITHIN GROUP (ORDER BY t) FROM VALUES (10, 3), (NULL, 1), (30, 2) AS tab(col, t)" -> "NULL",
      "SELECT _FUNC_(col, true) WITHIN GROUP (ORDER BY t) FROM VALUES (10, 3), (NULL, 1), (30, 2) AS tab(col, t)" -> "30",
      "SELECT _FUNC_(col) WITHIN GROUP (ORDER BY t DESC) FROM VALUES (10, 3), (NULL, 1), (30, 2) AS tab(col, t)" -> "10"
    )
  )

object LastValue extends FirstLast(
    "last_value",
    last = true,
    Seq(
      "SELECT _FUNC_(col) WITHIN GROUP (ORDER BY t) FROM VALUES (10, 3), (NULL, 1), (30, 2) AS tab(col, t)" -> "10",
      "SELECT _FUNC_(col) WITHIN GROUP (ORDER BY t DESC) FROM VALUES (10, 3), (NULL, 1), (30, 2) AS tab(col, t)" -> "NULL",
      "SELECT _FUNC_(col, true) WITHIN GROUP (ORDER BY t DESC) FROM VALUES (10, 3), (NULL, 1), (30, 2) AS tab(col, t)" -> "30"
    )
  )

/**
 * any_value(x): some non-NULL value of x, NULL when there is none (DataFusion 55's). sparkagg's is the first
 * non-NULL value to arrive: first_value(x, true) without keys. State: the value, any_value_is_set.
 */
object AnyValue extends FunctionDef {
  val name = "any_value"
  private val isSet = s"${name}_is_set"
  val signature = "(any) -> same type"
  val doc = FunctionDoc(
    usage = "_FUNC_(expr) - Some non-NULL value of expr (the first to arrive), NULL if there is none.",
    arguments = Seq("expr" -> "any type"),
    examples = Seq("SELECT _FUNC_(col) FROM VALUES (NULL), (5), (NULL) AS tab(col)" -> "5"),
    note = "the first non-NULL value to arrive (DataFusion's: some non-NULL value)",
    accepts = "any",
    result = "same",
    emptyInput = "NULL",
    dataFusion = "yes",
    nan = "a value like any other",
    spark = "`any_value`: the first row's value even when it is NULL (NULL, 2 gives NULL), where this skips " +
      "NULLs unless every value is NULL (NULL, 2 gives 2)"
  )
  def bind(args: Seq[Arg], ctx: BindContext): Either[String, Bound] = args.map(_.dataType) match {
    case Seq(t) =>
      val state = StructType(Seq(StructField(name, t), StructField(isSet, BooleanType)))
      // Made here, not held by this object: plans carry the object, and an OrderKeys' comparator does not
      // serialize on Scala 2.12.
      val noKeys = OrderKeys(Nil, Nil)
      Right(
        Bound(
          t,
          state,
          () => new FirstLastAccumulator(t, noKeys, 1, last = false, ignoreNulls = true),
          newSlidingAccumulator = Some(() =>
            new SlidingFirstLastAccumulator(t, noKeys, 1, last = false,
              ignoreNulls = true)),
          newGroupsAccumulator = Some(() => new FirstLastGroups(t, noKeys, 1, last = false, ignoreNulls = true))
        ))
    case _ => Left("expects one argument")
  }

  override def argumentsOf(state: StructType, parameters: Seq[Arg]): Option[Seq[Arg]] = state.fields.toSeq match {
    case Seq(StructField(`name`, t, _, _), StructField(`isSet`, BooleanType, _, _)) =>
      Some(Seq(Arg(t, nullable = true)))
    case _ => None
  }
}

/** The chosen value, its keys and whether one was chosen; `keyOffset` is where the keys start in a row. */
final class FirstLastAccumulator(valueType: DataType, keys: OrderKeys, keyOffset: Int, last: Boolean,
    ignoreNulls: Boolean)
  extends Accumulator {
  private var value: Any = null
  private var keyRow: Array[Any] = null
  private var set = false

  /** Whether the row `v`, with keys from `keysAt` (arriving after the chosen one), replaces it. */
  private def replaces(v: Values, keysAt: Int): Boolean =
    !set || (if (keys.isEmpty) last
             else {
               val c = keys.compareRow(v, keysAt, keyRow)
               if (last) c >= 0 else c < 0
             })

  private def offer(v: Values, valueAt: Int, keysAt: Int): Unit = if (replaces(v, keysAt)) {
    value = if (v.isNullAt(valueAt)) null else v.copy(valueAt, valueType)
    keyRow = if (keys.isEmpty) null else keys.read(v, keysAt)
    set = true
  }

  def update(args: Values): Unit = if (!(ignoreNulls && args.isNullAt(0))) offer(args, 0, keyOffset)

  def merge(state: Values): Unit = if (state.getBoolean(keys.size + 1)) offer(state, 0, 1)

  def state(): Array[Any] =
    (value +: (if (keyRow == null) Array.fill[Any](keys.size)(null) else keyRow)) :+ set

  def evaluate(): Any = value
  def size: Long = 48 + OrderedValues.sizeOf(value) + (if (keyRow == null) 0 else keyRow.map(OrderedValues.sizeOf).sum)
}

/**
 * first_value / last_value (and any_value, max_by, min_by) over a sliding frame: a monotonic queue of the
 * frame's rows, as min/max's, O(1) amortised a row. A row stays while no later row would be chosen over
 * it: for first_value while no later row has a smaller key (an equal key does not displace it, the older
 * wins), for last_value while no later row has a key as great. The front is the chosen row. Rows leave in
 * the order they arrived, so a leaving row is the front or already displaced.
 */
final class SlidingFirstLastAccumulator(valueType: DataType, keys: OrderKeys, keyOffset: Int, last: Boolean,
    ignoreNulls: Boolean)
  extends Accumulator {
  private final class Held(val arrival: Long, val value: Any, val keyRow: Array[Any])
  private val queue = new java.util.ArrayDeque[Held]()
  private val noKeys = Array.empty[Any]
  private var arrived = 0L
  private var left = 0L
  private def counts(args: Values): Boolean = !(ignoreNulls && args.isNullAt(0))

  private def displaces(v: Values, keysAt: Int, held: Held): Boolean = {
    val c = keys.compareRow(v, keysAt, held.keyRow)
    if (last) c >= 0 else c < 0
  }

  private def arrive(v: Values, valueAt: Int, keysAt: Int): Unit = {
    while (!queue.isEmpty && displaces(v, keysAt, queue.peekLast)) queue.pollLast()
    val value = if (v.isNullAt(valueAt)) null else v.copy(valueAt, valueType)
    queue.addLast(new Held(arrived, value, if (keys.isEmpty) noKeys else keys.read(v, keysAt)))
    arrived += 1
  }

  def update(args: Values): Unit = if (counts(args)) arrive(args, 0, keyOffset)
  override def retract(args: Values): Unit = if (counts(args)) {
    if (!queue.isEmpty && queue.peekFirst.arrival == left) queue.pollFirst()
    left += 1
  }
  override def supportsRetract: Boolean = true
  def merge(state: Values): Unit = if (state.getBoolean(keys.size + 1)) arrive(state, 0, 1)
  def state(): Array[Any] =
    if (queue.isEmpty) (null +: Array.fill[Any](keys.size)(null)) :+ false
    else (queue.peekFirst.value +: queue.peekFirst.keyRow) :+ true
  def evaluate(): Any = if (queue.isEmpty) null else queue.peekFirst.value
  def size: Long = 48 + 64L * queue.size
}

/**
 * first_value / last_value / any_value for every group ([[FirstLastAccumulator]]'s semantics: the same choice
 * among the same rows in the same order): each group's chosen value and its keys in arrays of references,
 * and a bit for the groups that chose. Rows are read in place through a [[ColumnsRow]] view; a value and
 * its keys are copied out of the batch only when chosen (first_value without keys: once a group).
 */
private[sparkagg] final class FirstLastGroups(valueType: DataType, keys: OrderKeys, keyOffset: Int, last: Boolean,
    ignoreNulls: Boolean)
  extends GroupsAccumulator {
  private val values = new ObjectVector
  private val keyRows = new ObjectVector
  private val set = new BitVector
  private var held = 0L // bytes of the chosen values and keys

  private def resize(totalGroups: Int): Unit = {
    values.resize(totalGroups); keyRows.resize(totalGroups); set.resize(totalGroups)
  }

  private def keySize(row: Any): Long =
    if (row == null) 0 else row.asInstanceOf[Array[Any]].map(OrderedValues.sizeOf).sum

  /** Group g's next row `v` (value at `valueAt`, keys from `keysAt`): chosen as the row accumulator would. */
  private def offer(g: Int, v: Values, valueAt: Int, keysAt: Int): Unit = {
    val replaces = !set.get(g) || (if (keys.isEmpty) last
                                   else {
                                     val c = keys.compareRow(v, keysAt, keyRows.array(g).asInstanceOf[Array[Any]])
                                     if (last) c >= 0 else c < 0
                                   })
    if (replaces) {
      val (value, keyRow) = (values.array, keyRows.array)
      held -= OrderedValues.sizeOf(value(g)) + keySize(keyRow(g))
      value(g) = if (v.isNullAt(valueAt)) null else v.copy(valueAt, valueType)
      if (!keys.isEmpty) keyRow(g) = keys.read(v, keysAt)
      held += OrderedValues.sizeOf(value(g)) + keySize(keyRow(g))
      set.set(g)
    }
  }

  def updateBatch(columns: Columns, groupIndices: Array[Int], filter: Option[Column], totalGroups: Int): Unit = {
    resize(totalGroups)
    val row = new ColumnsRow(columns)
    val f = filter.orNull
    var i = 0
    while (i < columns.numRows) {
      row.row = i
      if (GroupsAccumulator.keep(f, i) && !(ignoreNulls && row.isNullAt(0))) offer(groupIndices(i), row, 0, keyOffset)
      i += 1
    }
  }

  def mergeBatch(states: Columns, groupIndices: Array[Int], filter: Option[Column], totalGroups: Int): Unit = {
    resize(totalGroups)
    val row = new ColumnsRow(states)
    val f = filter.orNull
    var i = 0
    while (i < states.numRows) {
      row.row = i
      if (GroupsAccumulator.keep(f, i) && row.getBoolean(keys.size + 1)) offer(groupIndices(i), row, 0, 1)
      i += 1
    }
  }

  def evaluate(emit: EmitTo): Column = state(emit)(0)

  /** The value, each key, whether set: the row accumulator's state fields. */
  def state(emit: EmitTo): Array[Column] = {
    val value = values.emit(emit)
    val keyRow = keyRows.emit(emit)
    val chosen = set.emit(emit)
    val n = value.length
    held -= value.map(OrderedValues.sizeOf).sum + keyRow.map(keySize).sum
    val keyColumns = Array.tabulate[Column](keys.size)(k =>
      new ObjectColumn(keyRow.map(r => if (r == null) null else r.asInstanceOf[Array[Any]](k))))
    val isSet = new BooleanColumn(Fill.booleans(n)(Validity.isValid(chosen, _)), null, n)
    (new ObjectColumn(value) +: keyColumns) :+ isSet
  }

  override def convertToState(columns: Columns, filter: Option[Column]): Array[Column] =
    GroupsAccumulator.statesOfRows(new FirstLastGroups(valueType, keys, keyOffset, last, ignoreNulls), columns, filter)
  override def supportsConvertToState: Boolean = true

  def size: Long = values.size + keyRows.size + set.size + held
}

/**
 * first_value / last_value ordered by one key of a primitive type, and max_by / min_by (first_value over
 * their y, rows with a NULL y skipped), for every group with no object per group: each group's key as a
 * long ([[PrimitiveBits]]: one comparison orders every primitive type as Spark sorts it) and a bit for a
 * NULL key; its value as a long too, or, for strings and binaries, its bytes in an arena shared by the
 * groups ([[GroupBytes]]). The same choice among the same rows as [[FirstLastGroups]]; the same state.
 */
private[sparkagg] final class OneKeyFirstLastGroups(valueType: DataType, keyType: DataType, direction: SortKey,
    keyOffset: Int, last: Boolean, ignoreNulls: Boolean, skipNullKeys: Boolean)
  extends GroupsAccumulator {
  private val keyBits = new PrimitiveBits(keyType)
  private val keys = new LongVector
  private val nullKey = new BitVector
  private val chosen = new BitVector
  // The values: primitives as longs with a validity bit, strings and binaries as bytes.
  private val primitive = PrimitiveBits.fits(valueType)
  private val valueBits = if (primitive) new PrimitiveBits(valueType) else null
  private val values = if (primitive) new LongVector else null
  private val valueValid = if (primitive) new BitVector else null
  private val bytes = if (primitive) null else new GroupBytes
  private val strings = valueType.isInstanceOf[StringType]

  private def resize(totalGroups: Int): Unit = {
    keys.resize(totalGroups); nullKey.resize(totalGroups); chosen.resize(totalGroups)
    if (bytes == null) { values.resize(totalGroups); valueValid.resize(totalGroups) }
    else bytes.resize(totalGroups)
  }

  /** Row i (value in `xc`, key in `kc`) offered to group g, chosen as the row accumulator would. */
  private def offer(g: Int, xc: Column, kc: Column, i: Int): Unit = {
    val rowNull = kc.isNullAt(i)
    val key = if (rowNull) 0L else keyBits.read(kc, i)
    val replaces = !chosen.get(g) || {
      val c =
        if (rowNull) { if (nullKey.get(g)) 0 else if (direction.nullsFirst) -1 else 1 }
        else if (nullKey.get(g)) { if (direction.nullsFirst) 1 else -1 }
        else {
          val ascending = java.lang.Long.compare(key, keys.array(g))
          if (direction.descending) -ascending else ascending
        }
      if (last) c >= 0 else c < 0
    }
    if (replaces) {
      chosen.set(g)
      if (rowNull) nullKey.set(g) else { nullKey.clear(g); keys.array(g) = key }
      if (bytes != null) bytes.putRow(g, xc, i, strings)
      else if (xc.isNullAt(i)) valueValid.clear(g)
      else { values.array(g) = valueBits.read(xc, i); valueValid.set(g) }
    }
  }

  def updateBatch(columns: Columns, groupIndices: Array[Int], filter: Option[Column], totalGroups: Int): Unit = {
    resize(totalGroups)
    val (xc, kc, f) = (columns.column(0), columns.column(keyOffset), filter.orNull)
    var i = 0
    while (i < columns.numRows) {
      if (GroupsAccumulator.keep(f, i) && !(ignoreNulls && xc.isNullAt(i)) && !(skipNullKeys && kc.isNullAt(i)))
        offer(groupIndices(i), xc, kc, i)
      i += 1
    }
  }

  def mergeBatch(states: Columns, groupIndices: Array[Int], filter: Option[Column], totalGroups: Int): Unit = {
    resize(totalGroups)
    val (xc, kc, set, f) = (states.column(0), states.column(1), states.column(2), filter.orNull)
    var i = 0
    while (i < states.numRows) {
      if (GroupsAccumulator.keep(f, i) && set.getBoolean(i)) offer(groupIndices(i), xc, kc, i)
      i += 1
    }
  }

  private def emitValues(emit: EmitTo): Column =
    if (bytes != null) bytes.emit(emit) else valueBits.column(values.emit(emit), valueValid.emit(emit))

  def evaluate(emit: EmitTo): Column = {
    keys.drop(emit); nullKey.emit(emit); chosen.emit(emit)
    emitValues(emit)
  }

  /** The value, the key and whether one was chosen: the row accumulator's state fields. */
  def state(emit: EmitTo): Array[Column] = {
    val n = emit.count(keys.length)
    val value = emitValues(emit)
    val (set, nulls) = (chosen.emit(emit), nullKey.emit(emit))
    val keyValid = Fill.longs(Validity.words(n))(w => set(w) & ~nulls(w))
    Array(value, keyBits.column(keys.emit(emit), keyValid),
      new BooleanColumn(Fill.booleans(n)(Validity.isValid(set, _)), null, n))
  }

  override def convertToState(columns: Columns, filter: Option[Column]): Array[Column] =
    GroupsAccumulator.statesOfRows(
      new OneKeyFirstLastGroups(valueType, keyType, direction, keyOffset, last, ignoreNulls, skipNullKeys),
      columns, filter)
  override def supportsConvertToState: Boolean = true

  def size: Long =
    keys.size + nullKey.size + chosen.size + (if (bytes == null) values.size + valueValid.size else bytes.size)
}

private[functions] object OneKeyFirstLastGroups {
  /** Whether a value of type `value` chosen by one key of type `key` can be held in [[OneKeyFirstLastGroups]]. */
  def fits(value: DataType, key: DataType): Boolean =
    PrimitiveBits.fits(key) && (PrimitiveBits.fits(value) || value.isInstanceOf[StringType] || value == BinaryType)
}
