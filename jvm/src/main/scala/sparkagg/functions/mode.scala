package sparkagg.functions

import java.util.{Arrays, LinkedHashMap => JLinkedHashMap}

import org.apache.spark.sql.types._
import org.apache.spark.unsafe.Platform
import org.apache.spark.unsafe.types.UTF8String
import sparkagg.api._
import sparkagg.common._

/**
 * mode(x): the most frequent non-NULL value, of x's type (integers, floats, date, timestamp, string, as
 * DataFusion-extra takes them). Equal frequencies: the smallest value wins (datafusion-extra-functions
 * 0.5.5's result), floats in Spark's order (NaN greatest). Floats count by their bits, as DataFusion's
 * hash of them does: -0.0 and 0.0 are two values, every NaN one. NULL on empty input. Retractable: a
 * frame's counts go down as rows leave; over a sliding frame the values are also kept ranked by count
 * ([[SlidingModeAccumulator]]), so a row costs O(log w) where a scan of the counts costs O(w). State:
 * values, frequencies (two arrays, pair by pair, values in the order first seen). Grouped natively by
 * [[ModeGroups]].
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
    ),
    note = "NULLs skipped; equal frequencies: the smallest value; -0.0 and 0.0 counted apart",
    accepts = "integers, float, double, date, timestamp, timestamp_ntz, string",
    result = "same",
    emptyInput = "NULL",
    dataFusion = "not in DataFusion 55",
    nan = "every NaN is one value, counted like any other",
    spark = "`mode` (Spark 3.4+): between equally frequent values Spark's choice depends on the order of the " +
      "rows unless `mode(x, true)` (Spark 4.0+), which also takes the smallest"
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
    var best: AnyRef = null
    var bestCount = 0L
    counts.forEach { (value, count) =>
      if (count > bestCount || (count == bestCount && value.asInstanceOf[Comparable[AnyRef]].compareTo(best) < 0)) {
        best = value
        bestCount = count
      }
    }
    best
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

/**
 * mode for every group, with no object per group or per value: the counts in a [[GroupValueCounts]], whose
 * pairs list each group's values in the order first seen, as [[ModeAccumulator]]'s map does. Up to
 * [[ModeGroups.HoldGroups]] groups, a batch's values are held and added later, many batches' at once, group
 * after group (a group's probes then find its segment in the caches).
 */
private[sparkagg] final class ModeGroups(t: DataType) extends GroupsAccumulator {
  import GroupValueCounts._
  import ModeGroups._

  private val valueCounts = new GroupValueCounts(kindOf(t))
  import valueCounts.{arena, length, pairCount, pairGroup, pairValue, pairs, start}
  private val kind = valueCounts.kind
  private def bitsAt(column: Column, i: Int): Long = (kind: @scala.annotation.switch) match {
    case Bytes => column.getByte(i)
    case Shorts => column.getShort(i)
    case Ints => column.getInt(i)
    case Floats => java.lang.Float.floatToIntBits(column.getFloat(i))
    case Doubles => java.lang.Double.doubleToLongBits(column.getDouble(i))
    case _ => column.getLong(i)
  }

  private def bitsOf(list: ListValues, j: Int): Long = kind match {
    case Longs => list.getLong(j)
    case Doubles => java.lang.Double.doubleToLongBits(list.getDouble(j))
    case _ => list.copy(j, t) match {
        case f: java.lang.Float => java.lang.Float.floatToIntBits(f).toLong
        case n: java.lang.Number => n.longValue
      }
  }

  private def boxed(bits: Long): Any = kind match {
    case Bytes => bits.toByte
    case Shorts => bits.toShort
    case Ints => bits.toInt
    case Floats => java.lang.Float.intBitsToFloat(bits.toInt)
    case Doubles => java.lang.Double.longBitsToDouble(bits)
    case _ => bits
  }

  // Every value of a batch is read and hashed once, in a first pass that touches its slot, and added in a
  // second: the first pass's cache misses overlap, where one probe at a time waits for each. `staged(k)`
  // holds value k's bits, or where a string's bytes lie in `stagedBytes` (start << 32 | length): the
  // column's own bytes when it holds them end to end, else a copy in `scratch`.
  private var hashes = new Array[Int](0)
  private var staged = new Array[Long](0)
  private var stagedBytes: Array[Byte] = null
  private var scratch = new Array[Byte](0)
  private var scratchUsed = 0
  private var touched = 0L // what the first pass read, kept so that its reads are not optimised away

  /** Room for `count` values; the batch's strings go to `inPlace` (null: copied to `scratch`). */
  private def stage(count: Int, inPlace: Array[Byte]): Unit = {
    if (hashes.length < count) {
      hashes = new Array[Int](math.max(count, 2 * hashes.length))
      staged = new Array[Long](hashes.length)
    }
    stagedBytes = inPlace
    scratchUsed = 0
  }

  /** Value k, of `bits`: its hash. */
  private def stageBits(k: Int, bits: Long): Int = { staged(k) = bits; hashBits(bits) }

  /** Value k, a string at `start` of `stagedBytes`: its hash. */
  private def stageInPlace(k: Int, start: Int, length: Int): Int = {
    staged(k) = (start.toLong << 32) | length
    hashBytes(stagedBytes, Platform.BYTE_ARRAY_OFFSET + start, length)
  }

  /** Value k, a string copied to `scratch`: its hash. */
  private def stageCopy(k: Int, s: UTF8String): Int = {
    val n = s.numBytes
    if (scratchUsed + n > scratch.length)
      scratch = Arrays.copyOf(scratch, math.max(2 * scratch.length, scratchUsed + n))
    s.writeToMemory(scratch, Platform.BYTE_ARRAY_OFFSET + scratchUsed)
    staged(k) = (scratchUsed.toLong << 32) | n
    scratchUsed += n
    hashBytes(s.getBaseObject, s.getBaseOffset, n)
  }

  /** n more of staged value k in group g (after the first pass). */
  private def addStaged(g: Int, k: Int, n: Long): Unit =
    if (kind != Strings) valueCounts.addBits(g, staged(k), n, hashes(k))
    else {
      val at = staged(k)
      valueCounts.addBytes(g, stagedBytes, Platform.BYTE_ARRAY_OFFSET + (at >>> 32), at.toInt, n, hashes(k))
    }

  // Few groups: the values are held here, over many batches, and then added group after group (a stable
  // sort by group keeps each group's values in the order they came). A group's values then come together,
  // so its segment and pairs stay in the caches while they are probed, as in Spark's sort-based fallback;
  // a batch spreads its rows over every group (some eight rows each at 1k groups), and each probe missed.
  private var heldGroup = new Array[Int](0)
  private var heldHash = new Array[Int](0)
  private var heldValue = new Array[Long](0) // the value's bits, or a string's start << 32 | length
  private var heldBytes = new Array[Byte](0)
  private var held = 0
  private var heldUsed = 0

  private def hold(g: Int, h: Int, bits: Long): Unit = {
    if (held == heldGroup.length) {
      val n = math.max(1024, 2 * held)
      heldGroup = Arrays.copyOf(heldGroup, n)
      heldHash = Arrays.copyOf(heldHash, n)
      heldValue = Arrays.copyOf(heldValue, n)
    }
    heldGroup(held) = g
    heldHash(held) = h
    heldValue(held) = bits
    held += 1
  }

  private def holdBytes(g: Int, base: AnyRef, offset: Long, length: Int): Unit = {
    if (heldUsed > HoldBytes) addHeld()
    if (heldUsed + length > heldBytes.length)
      heldBytes = Arrays.copyOf(heldBytes, math.max(2 * heldBytes.length, heldUsed + length))
    BytesColumn.copyInto(base, offset, length, heldBytes, heldUsed)
    hold(g, hashBytes(base, offset, length), (heldUsed.toLong << 32) | length)
    heldUsed += length
  }

  /** Adds the held values, group after group. */
  private def addHeld(): Unit = if (held > 0) {
    val (order, offsets) = byGroup(heldGroup, held, valueCounts.groups)
    var j = 0
    while (j < held) {
      val k = order(j)
      val v = heldValue(k)
      if (kind != Strings) valueCounts.addBits(heldGroup(k), v, 1, heldHash(k))
      else
        valueCounts.addBytes(heldGroup(k), heldBytes, Platform.BYTE_ARRAY_OFFSET + (v >>> 32), v.toInt, 1, heldHash(k))
      j += 1
    }
    LargeArrays.release(order)
    LargeArrays.release(offsets)
    held = 0
    heldUsed = 0
  }

  def updateBatch(values: Columns, groupIndices: Array[Int], filter: Option[Column], totalGroups: Int): Unit = {
    valueCounts.resize(totalGroups)
    val column = values.column(0)
    val binary = column match {
      case b: BytesColumn => b // the bytes in place (the operator's batches, a scan's vector)
      case _ => null
    }
    val f = filter.orNull
    val rows = values.numRows
    if (totalGroups <= HoldGroups) {
      var i = 0
      while (i < rows) {
        if (GroupsAccumulator.keep(f, i) && !column.isNullAt(i)) {
          val g = groupIndices(i)
          if (kind != Strings) { val bits = bitsAt(column, i); hold(g, hashBits(bits), bits) }
          else if (binary != null)
            holdBytes(g, binary.bytes, Platform.BYTE_ARRAY_OFFSET + binary.start(i), binary.length(i))
          else { val u = column.getUTF8String(i); holdBytes(g, u.getBaseObject, u.getBaseOffset, u.numBytes) }
        }
        i += 1
      }
      if (held >= HoldRows) addHeld()
      return
    }
    addHeld()
    stage(rows, if (binary == null) null else binary.bytes)
    var sum = 0L
    var i = 0
    while (i < rows) {
      if (GroupsAccumulator.keep(f, i) && !column.isNullAt(i)) {
        val h =
          if (kind != Strings) stageBits(i, bitsAt(column, i))
          else if (binary != null) stageInPlace(i, binary.start(i), binary.length(i))
          else stageCopy(i, column.getUTF8String(i))
        hashes(i) = h
        sum += valueCounts.touch(groupIndices(i), h)
      }
      i += 1
    }
    if (stagedBytes == null) stagedBytes = scratch
    touched = sum
    i = 0
    while (i < rows) {
      if (GroupsAccumulator.keep(f, i) && !column.isNullAt(i)) addStaged(groupIndices(i), i, 1)
      i += 1
    }
  }

  def mergeBatch(states: Columns, groupIndices: Array[Int], filter: Option[Column], totalGroups: Int): Unit = {
    valueCounts.resize(totalGroups)
    addHeld()
    val (valueLists, frequencyLists) = (states.column(0), states.column(1))
    // Lists of strings that come end to end are read in place, without a list view per state.
    val endToEnd = valueLists match {
      case c: BytesListColumn => c
      case _ => null
    }
    val f = filter.orNull
    val rows = states.numRows
    val lists = if (endToEnd == null) new Array[ListValues](rows) else null
    val sizes = Array.fill(rows)(-1) // each kept state's number of values; -1: skipped
    var elements = 0
    var i = 0
    while (i < rows) {
      if (GroupsAccumulator.keep(f, i) && !valueLists.isNullAt(i)) {
        if (endToEnd != null) sizes(i) = endToEnd.rowStarts(i + 1) - endToEnd.rowStarts(i)
        else { lists(i) = valueLists.getList(i); sizes(i) = lists(i).numElements }
        elements += sizes(i)
      }
      i += 1
    }
    stage(elements, if (endToEnd == null) null else endToEnd.bytes)
    var sum = 0L
    var k = 0
    i = 0
    while (i < rows) {
      var j = 0
      while (j < sizes(i)) {
        val h =
          if (endToEnd != null) {
            val e = endToEnd.rowStarts(i) + j
            stageInPlace(k, endToEnd.starts(e), endToEnd.elementLength(e))
          } else if (kind != Strings) stageBits(k, bitsOf(lists(i), j))
          else stageCopy(k, lists(i).getUTF8String(j))
        hashes(k) = h
        sum += valueCounts.touch(groupIndices(i), h)
        k += 1
        j += 1
      }
      i += 1
    }
    if (stagedBytes == null) stagedBytes = scratch
    touched = sum
    k = 0
    i = 0
    while (i < rows) {
      if (sizes(i) >= 0) {
        val frequencies = frequencyLists.getList(i)
        var j = 0
        while (j < sizes(i)) { addStaged(groupIndices(i), k, frequencies.getLong(j)); k += 1; j += 1 }
      }
      i += 1
    }
  }

  /** One group's values, pairs `order(from until until)`: bigint, int and double lists as primitive
   *  arrays (Catalyst takes them as they are), others boxed. */
  private def valueList(order: Array[Int], from: Int, until: Int): Any = kind match {
    case Longs if t == LongType => Fill.longs(until - from)(j => pairValue(order(from + j)))
    case Ints if t == IntegerType => Array.tabulate(until - from)(j => pairValue(order(from + j)).toInt)
    case Doubles => Fill.doubles(until - from)(j => java.lang.Double.longBitsToDouble(pairValue(order(from + j))))
    case _ => Array.tabulate[Any](until - from)(j => boxed(pairValue(order(from + j))))
  }

  /** The strings of pairs `order`, group g's at [offsets(g), offsets(g + 1)), end to end, in arrays lent
   *  to the emission's loan. */
  private def stringLists(order: Array[Int], offsets: Array[Int]): Column = {
    val starts = LargeArrays.lentOffsets(order.length)
    var e = 0
    while (e < order.length) { starts(e + 1) = starts(e) + length(order(e)); e += 1 }
    val bytes = LargeArrays.lend(LargeArrays.bytes(starts(order.length)))
    e = 0
    while (e < order.length) { System.arraycopy(arena, start(order(e)), bytes, starts(e), length(order(e))); e += 1 }
    new BytesListColumn(bytes, starts, offsets, null, offsets.length - 1)
  }

  def state(emit: EmitTo): Array[Column] = {
    addHeld()
    val n = emit.count(valueCounts.groups)
    val (order, offsets) = byGroup(pairGroup, pairs, n)
    val values = if (kind == Strings) null else new Array[Any](n)
    val frequencies = new Array[Any](n)
    var g = 0
    while (g < n) {
      val (from, until) = (offsets(g), offsets(g + 1))
      if (values != null) values(g) = valueList(order, from, until)
      frequencies(g) = Array.tabulate(until - from)(j => pairCount(order(from + j)))
      g += 1
    }
    val valueColumn =
      if (values != null) { LargeArrays.release(offsets); new ObjectColumn(values) }
      else stringLists(order, LargeArrays.lend(offsets))
    LargeArrays.release(order)
    valueCounts.drop(n)
    Array(valueColumn, new ObjectColumn(frequencies))
  }

  /** Whether pair p's value orders before pair q's (strings by their unsigned bytes, floats NaN last). */
  private def before(p: Int, q: Int): Boolean = kind match {
    case Strings =>
      GroupBytes.compare(arena, Platform.BYTE_ARRAY_OFFSET + start(p), length(p), arena,
        Platform.BYTE_ARRAY_OFFSET + start(q), length(q)) < 0
    case Floats =>
      java.lang.Float.compare(java.lang.Float.intBitsToFloat(pairValue(p).toInt),
        java.lang.Float.intBitsToFloat(pairValue(q).toInt)) < 0
    case Doubles =>
      java.lang.Double.compare(java.lang.Double.longBitsToDouble(pairValue(p)),
        java.lang.Double.longBitsToDouble(pairValue(q))) < 0
    case _ => pairValue(p) < pairValue(q)
  }

  def evaluate(emit: EmitTo): Column = {
    addHeld()
    val n = emit.count(valueCounts.groups)
    val best = LargeArrays.ints(n) // each group's best pair, -1 while none
    java.util.Arrays.fill(best, -1)
    var p = 0
    while (p < pairs) {
      val g = pairGroup(p)
      if (g < n) {
        val b = best(g)
        if (b < 0 || pairCount(p) > pairCount(b) || (pairCount(p) == pairCount(b) && before(p, b))) best(g) = p
      }
      p += 1
    }
    val out = kind match {
      case Strings =>
        BinaryColumn.gathered(n, arena, g => if (best(g) < 0) -1 else start(best(g)), g => length(best(g)))
      case _ =>
        val validity = new Array[Long](Validity.words(n))
        var g = 0
        while (g < n) { if (best(g) >= 0) Validity.set(validity, g); g += 1 }
        if (kind == Floats || kind == Doubles) {
          def double(bits: Long) =
            if (kind == Floats) java.lang.Float.intBitsToFloat(bits.toInt).toDouble
            else java.lang.Double.longBitsToDouble(bits)
          new DoubleColumn(Fill.doubles(n)(g => if (best(g) < 0) 0.0 else double(pairValue(best(g)))), validity, n)
        } else new LongColumn(Fill.longs(n)(g => if (best(g) < 0) 0L else pairValue(best(g))), validity, n)
    }
    LargeArrays.release(best)
    valueCounts.drop(n)
    out
  }

  override def convertToState(values: Columns, filter: Option[Column]): Array[Column] =
    GroupsAccumulator.statesOfRows(new ModeGroups(t), values, filter)
  override def supportsConvertToState: Boolean = true

  def size: Long = valueCounts.size + 16L * heldGroup.length + heldBytes.length
}

private object ModeGroups {
  // Up to this many groups a batch's values are held, and added once this many values, or bytes of strings,
  // are held (see addHeld).
  val HoldGroups = 1 << 12
  val HoldRows = 1 << 18
  val HoldBytes = 1 << 24
}
