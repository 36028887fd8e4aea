package sparkagg.functions

import java.util.{LinkedHashMap => JLinkedHashMap}

import org.apache.spark.sql.types._
import sparkagg.api._
import sparkagg.common.{GroupPool, ObjectColumn}

/**
 * mode(x): the most frequent non-NULL value, of x's type (integers, floats, date, timestamp, string, as
 * DataFusion-extra takes them). Equal frequencies: the smallest value wins (datafusion-extra-functions
 * 0.5.5's result), floats in Spark's order (NaN greatest). Floats count by their bits, as DataFusion's
 * hash of them does: -0.0 and 0.0 are two values, every NaN one. NULL on empty input. Retractable: a
 * frame's counts go down as rows leave; over a sliding frame the values are also kept ranked by count
 * ([[SlidingModeAccumulator]]), so a row costs O(log w) where a scan of the counts costs O(w). On the
 * grouped operator every group's counts share one table ([[ModeGroups]]). State: values, frequencies (two
 * arrays, pair by pair, values in the order they were first seen).
 */
object Mode extends FunctionDef {
  val name = "mode"
  private val accepted = "tinyint, smallint, int, bigint, float, double, date, timestamp, timestamp_ntz, string"
  val signature = s"($accepted) -> same type"
  val doc = FunctionDoc(
    usage = "_FUNC_(expr) - The most frequent non-NULL value of expr; of equally frequent ones, the smallest.",
    arguments = Seq("expr" -> accepted),
    examples = Seq(
      "SELECT _FUNC_(col) FROM VALUES (1), (2), (2), (3), (3), (NULL) AS tab(col)" -> "2",
      "SELECT _FUNC_(col) FROM VALUES ('b'), ('a'), ('b') AS tab(col)" -> "b"
    )
  )

  private def acceptsType(t: DataType): Boolean = t match {
    case ByteType | ShortType | IntegerType | LongType | FloatType | DoubleType | DateType | TimestampType |
        StringType =>
      true
    case other => other.typeName == "timestamp_ntz"
  }

  /** A forged state: a NULL value, or frequencies that are not one positive count per value. */
  private val stateCheck = StateCheck.all(
    StateCheck.noNullElements("values"),
    (_, state) => {
      val values = if (state.isNullAt(0)) 0 else state.getList(0).numElements
      val frequencies = if (state.isNullAt(1)) null else state.getList(1)
      val counted = if (frequencies == null) 0 else frequencies.numElements
      if (counted != values) Some(StateFault("frequencies", s"$counted frequencies for $values values"))
      else (0 until counted).find(j => frequencies.isNullAt(j) || frequencies.getLong(j) <= 0)
        .map(j => StateFault("frequencies", s"element $j is not a positive count"))
    }
  )

  def bind(args: Seq[Arg], ctx: BindContext): Either[String, Bound] = args.map(_.dataType) match {
    case Seq(t) if acceptsType(t) =>
      val state = StructType(
        Seq(StructField("values", ArrayType(t, containsNull = false)),
          StructField("frequencies", ArrayType(LongType, containsNull = false))))
      Right(
        Bound(
          t,
          state,
          () => new ModeAccumulator(t),
          newSlidingAccumulator = Some(() => new SlidingModeAccumulator(t)),
          newGroupsAccumulator = Some(() => new ModeGroups(t)),
          stateCheck = stateCheck
        ))
    case _ => Left(s"expects one argument of type $accepted")
  }
}

/** Counts per distinct value in a hash map (boxed floats compare by their bits there, as in DataFusion),
 *  kept in the order values were first seen, so that a state does not depend on hash codes. */
class ModeAccumulator(t: DataType) extends Accumulator {
  private val counts = new JLinkedHashMap[AnyRef, java.lang.Long]()

  private def add(value: AnyRef, n: Long): Unit = {
    val before = counts.getOrDefault(value, 0L)
    val now = before + n
    if (now == 0) counts.remove(value) else counts.put(value, now)
    counted(value, before, now)
  }

  /** Told each change of a value's count (0: absent). */
  protected def counted(value: AnyRef, before: Long, now: Long): Unit = ()

  def update(args: Values): Unit = if (!args.isNullAt(0)) add(args.copy(0, t), 1)
  // A copy: the sliding variant ranks the value it is given, and the row it came from is reused.
  override def retract(args: Values): Unit = if (!args.isNullAt(0)) add(args.copy(0, t), -1)
  override def supportsRetract: Boolean = true

  def merge(state: Values): Unit = if (!state.isNullAt(0)) {
    val (values, frequencies) = (state.getList(0), state.getList(1))
    var j = 0
    while (j < values.numElements) { add(values.copy(j, t), frequencies.getLong(j)); j += 1 }
  }

  def state(): Array[Any] = {
    val entries = counts.entrySet.toArray(new Array[java.util.Map.Entry[AnyRef, java.lang.Long]](0))
    Array(entries.map(_.getKey: Any), entries.map(e => e.getValue.longValue: Any))
  }

  def evaluate(): Any = {
    val best = new ModeChoice
    counts.forEach((value, count) => best.offer(value, count))
    best.value
  }

  def size: Long = 64L + 48L * counts.size
}

/** mode over a sliding frame: the counts, and the values ranked by count (highest first, then smallest),
 *  so the mode is the first of the ranking. */
final class SlidingModeAccumulator(t: DataType) extends ModeAccumulator(t) {
  private final class Ranked(val count: Long, val value: AnyRef)
  private val ranking = new java.util.TreeSet[Ranked]((a: Ranked, b: Ranked) =>
    if (a.count != b.count) java.lang.Long.compare(b.count, a.count)
    else a.value.asInstanceOf[Comparable[AnyRef]].compareTo(b.value))

  override protected def counted(value: AnyRef, before: Long, now: Long): Unit = {
    if (before > 0) ranking.remove(new Ranked(before, value))
    if (now > 0) ranking.add(new Ranked(now, value))
  }
  override def evaluate(): Any = if (ranking.isEmpty) null else ranking.first.value
  override def size: Long = super.size + 48L * ranking.size
}

/** The mode among values offered with their counts: the most frequent, of equally frequent ones the smallest. */
private final class ModeChoice {
  var value: AnyRef = null
  private var count = 0L
  def offer(v: AnyRef, n: Long): Unit =
    if (n > count || (n == count && v.asInstanceOf[Comparable[AnyRef]].compareTo(value) < 0)) { value = v; count = n }
}

/**
 * mode for every group ([[ModeAccumulator]]'s semantics, states included): each distinct (group, value) is
 * a slot of one [[GroupPool]] shared by all groups, in the order first seen, with its count; one
 * open-addressing table over all groups finds a row's slot (values compare as boxed values do in the row
 * accumulator's map: floats by their bits). No map per group. Emitting picks each group's mode among its
 * slots, or hands them over as the state, then rebuilds the table over the slots kept.
 */
private[sparkagg] final class ModeGroups(t: DataType) extends GroupPool with GroupsAccumulator {
  private var values = new Array[AnyRef](GroupPool.Initial)
  private var counts = new Array[Long](GroupPool.Initial)
  private var table = ModeGroups.emptyTable(2 * GroupPool.Initial) // slot + 1 per cell; 0: empty
  private var held = 0L // bytes of the values

  protected def growSlots(capacity: Int): Unit = {
    values = java.util.Arrays.copyOf(values, capacity)
    counts = java.util.Arrays.copyOf(counts, capacity)
    table = ModeGroups.emptyTable(2 * capacity)
    var slot = 0
    while (slot < slotsInUse) { place(slot); slot += 1 }
  }
  protected def moveSlot(from: Int, to: Int): Unit = { values(to) = values(from); counts(to) = counts(from) }
  /** The kept slots [0, from) moved down: the table is built again over them. */
  protected def dropSlots(from: Int, until: Int): Unit = {
    java.util.Arrays.fill(values, from, until, null)
    java.util.Arrays.fill(table, 0)
    var slot = 0
    while (slot < from) { place(slot); slot += 1 }
  }
  protected def resetSlots(capacity: Int): Unit = {
    values = new Array[AnyRef](capacity)
    counts = new Array[Long](capacity)
    table = ModeGroups.emptyTable(2 * capacity)
    held = 0L
  }

  private def cellOf(g: Int, value: AnyRef): Int = ModeGroups.mix(value.hashCode * 31 + g) & (table.length - 1)

  /** Enters a slot in use into the table (its cell is free: every slot's (group, value) is distinct). */
  private def place(slot: Int): Unit = {
    var cell = cellOf(groupOf(slot), values(slot))
    while (table(cell) != 0) cell = (cell + 1) & (table.length - 1)
    table(cell) = slot + 1
  }

  /** Adds n to group g's count of `value` (a copy the table may keep). */
  private def add(g: Int, value: AnyRef, n: Long): Unit = {
    var cell = cellOf(g, value)
    // equals, not ==: Scala's == on boxed numbers compares their values (0.0 == -0.0), the map compares bits.
    while (table(cell) != 0 && !(groupOf(table(cell) - 1) == g && values(table(cell) - 1).equals(value)))
      cell = (cell + 1) & (table.length - 1)
    if (table(cell) != 0) counts(table(cell) - 1) += n
    else {
      val slot = slotFor(g) // may grow the arrays and rebuild the table
      values(slot) = value
      counts(slot) = n
      held += ModeGroups.bytesOf(value)
      place(slot)
    }
  }

  def updateBatch(columns: Columns, groupIndices: Array[Int], filter: Option[Column], totalGroups: Int): Unit = {
    resizeGroups(totalGroups)
    val c = columns.column(0)
    val f = filter.orNull
    var i = 0
    while (i < columns.numRows) {
      if (GroupsAccumulator.keep(f, i) && !c.isNullAt(i)) add(groupIndices(i), c.copy(i, t), 1L)
      i += 1
    }
  }

  def mergeBatch(states: Columns, groupIndices: Array[Int], filter: Option[Column], totalGroups: Int): Unit = {
    resizeGroups(totalGroups)
    val (valueLists, countLists) = (states.column(0), states.column(1))
    val f = filter.orNull
    var i = 0
    while (i < states.numRows) {
      if (GroupsAccumulator.keep(f, i) && !valueLists.isNullAt(i)) {
        val (vs, ns) = (valueLists.getList(i), countLists.getList(i))
        var j = 0
        while (j < vs.numElements) { add(groupIndices(i), vs.copy(j, t), ns.getLong(j)); j += 1 }
      }
      i += 1
    }
  }

  /** `use` of the emitted groups' slots, whose values are then no longer held. */
  private def emitted[A](emit: EmitTo)(use: GroupPool.Emitted => A): A = emitSlots(emit) { e =>
    e.slots.foreach(slot => held -= ModeGroups.bytesOf(values(slot)))
    use(e)
  }

  def evaluate(emit: EmitTo): Column = emitted(emit) { e =>
    new ObjectColumn(
      Array.tabulate[Any](e.groups) { g =>
        val best = new ModeChoice
        var k = e.offsets(g)
        while (k < e.offsets(g + 1)) { best.offer(values(e.slots(k)), counts(e.slots(k))); k += 1 }
        best.value
      })
  }

  def state(emit: EmitTo): Array[Column] = emitted(emit) { e =>
    def field(of: Int => Any): Column = new ObjectColumn(
      Array.tabulate[Any](e.groups)(g =>
        Array.tabulate[Any](e.counts(g))(j => of(e.slots(e.offsets(g) + j)))))
    Array(field(values(_)), field(counts(_)))
  }

  override def convertToState(columns: Columns, filter: Option[Column]): Array[Column] =
    GroupsAccumulator.statesOfRows(new ModeGroups(t), columns, filter)
  override def supportsConvertToState: Boolean = true

  def size: Long = poolSize + 16L * values.length + 4L * table.length + held
}

private object ModeGroups {
  def emptyTable(capacity: Int): Array[Int] = new Array[Int](Integer.highestOneBit(capacity - 1) << 1)
  def mix(h: Int): Int = { val x = h * 0x9e3779b9; x ^ (x >>> 16) }
  def bytesOf(v: AnyRef): Long = v match {
    case s: org.apache.spark.unsafe.types.UTF8String => 40 + s.numBytes
    case _ => 24
  }
}
