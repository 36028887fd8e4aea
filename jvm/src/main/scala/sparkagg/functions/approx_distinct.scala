package sparkagg.functions

import org.apache.spark.sql.types._
import org.apache.spark.unsafe.Platform
import sparkagg.api._
import sparkagg.common.{BinaryColumn, ColumnsRow, Fill, LongColumn, ObjectVector, ValueKind}

/**
 * approx_distinct(x): the number of distinct non-NULL values, estimated with HyperLogLog at precision
 * 14 (16384 one-byte registers, about 0.8% standard error) and Ertl's improved estimator, as DataFusion
 * uses; 0 on empty input. Integers, dates, timestamps, strings, binary, decimals and booleans (floats are
 * refused, as in DataFusion; it takes decimals and booleans from 51 on). The hash is sparkagg's own (a
 * SplitMix64 finish over the value's 64 bits, or over an FNV-1a digest of its bytes; a boolean as the
 * integer 0 or 1, a decimal as its text, which its fixed scale makes one string per value), so estimates
 * are close to DataFusion's, not equal.
 * State: hll_registers, the 16384 registers as binary; merging takes each register's maximum.
 */
object ApproxDistinct extends FunctionDef {
  val name = "approx_distinct"
  val signature = "(tinyint..bigint|date|timestamp|timestamp_ntz|string|binary|decimal|boolean) -> bigint"
  val doc = FunctionDoc(
    usage = "_FUNC_(expr) - An estimate of the number of distinct non-NULL values of expr (HyperLogLog, p = 14).",
    arguments = Seq("expr" -> "an integer type, date, timestamp, string, binary, decimal or boolean"),
    examples = Seq(
      "SELECT _FUNC_(col) FROM VALUES (1), (2), (2), (NULL), (3) AS tab(col)" -> "3",
      "SELECT _FUNC_(col) FROM VALUES ('a') AS tab(col) WHERE col > 'b'" -> "0"
    ),
    note = "HyperLogLog p = 14",
    accepts = "integers, date, timestamp, string, binary, decimal, boolean",
    result = "bigint",
    emptyInput = "0",
    dataFusion = "deviation: own hash",
    nan = "does not apply: floats are refused (DataFusion does not hash them)",
    spark = "`approx_count_distinct`: HyperLogLog++ at a relative standard deviation of 5% by default (its second " +
      "argument), where this keeps 16,384 registers (about 0.8%); it also takes floats. The two estimates differ."
  )

  private val state = StructType(Seq(StructField("hll_registers", BinaryType, nullable = false)))
  private val registersCheck = StateCheck.binaryLength("hll_registers", HyperLogLogAccumulator.Registers)

  /** The bound function over values hashed by `hash`, read as `coerceTo`. */
  private def bound(hash: HllHash, coerceTo: Seq[DataType] = Nil): Either[String, Bound] = Right(
    Bound(
      LongType,
      state,
      () => new HyperLogLogAccumulator(hash),
      nullable = false,
      coerceTo = coerceTo,
      newGroupsAccumulator = Some(() => new HyperLogLogGroups(hash)),
      packing = Some(HyperLogLogPacking),
      stateCheck = registersCheck
    ))

  def bind(args: Seq[Arg], ctx: BindContext): Either[String, Bound] = args.map(_.dataType) match {
    case Seq(t) if Types.isIntegral(t) || t == DateType || t == TimestampType || t == TimestampNTZType =>
      bound(new HllHash(new ValueKind.LongLike(t)))
    case Seq(BooleanType) => bound(new HllHash(new ValueKind.LongLike(IntegerType)), Seq(IntegerType))
    case Seq(t @ (_: StringType | BinaryType | _: DecimalType)) =>
      bound(new HllHash(null, isString = t != BinaryType), if (t.isInstanceOf[DecimalType]) Seq(StringType) else Nil)
    case _ => Left("expects one argument of an integer type, date, timestamp, string, binary, decimal or " +
        "boolean (floats are not supported)")
  }
}

/** The 64-bit hash of a value: `integral` reads integer-like values; without it the value's bytes are
 *  hashed (a string's UTF-8). Serializable: bound functions travel with query plans. */
final class HllHash(integral: ValueKind.LongLike, isString: Boolean = false) extends Serializable {
  import HyperLogLogAccumulator.mix

  /** The hash of value 0 of `args`, not NULL. */
  def of(args: Values): Long = if (integral != null) mix(integral.readLong(args, 0)) else mix(fnv(args))

  // A string is hashed where it lies (no copy per row); binary values arrive as arrays anyway.
  private def fnv(args: Values): Long =
    if (isString) {
      val s = args.getUTF8String(0)
      fnv(s.getBaseObject, s.getBaseOffset, s.numBytes)
    } else {
      val b = args.getBinary(0)
      fnv(b, Platform.BYTE_ARRAY_OFFSET, b.length)
    }

  private def fnv(base: AnyRef, offset: Long, length: Int): Long = {
    var h = 0xcbf29ce484222325L
    var i = 0
    while (i < length) { h = (h ^ (Platform.getByte(base, offset + i) & 0xff)) * 0x100000001b3L; i += 1 }
    h
  }
}

final class HyperLogLogAccumulator(hash: HllHash) extends Accumulator {
  import HyperLogLogAccumulator._
  private val registers = new Array[Byte](Registers)

  private def add(h: Long): Unit = {
    val (index, r) = (indexOf(h), rankOf(h))
    if (r > registers(index)) registers(index) = r
  }

  def update(args: Values): Unit = if (!args.isNullAt(0)) add(hash.of(args))

  def merge(state: Values): Unit = {
    val other = state.getBinary(0)
    var i = 0
    while (i < Registers) { if (other(i) > registers(i)) registers(i) = other(i); i += 1 }
  }

  def state(): Array[Any] = Array(registers.clone())

  def evaluate(): Any = {
    val histogram = new Array[Int](Q + 2)
    registers.foreach(r => histogram(r) += 1)
    estimate(histogram)
  }

  def size: Long = 32 + Registers
}

object HyperLogLogAccumulator {
  val Precision = 14
  val Registers: Int = 1 << Precision
  /** Hash bits left after the register index. */
  val Q: Int = 64 - Precision
  private val AlphaInfinity = 1.0 / (2.0 * math.log(2.0))

  /** The register a hash goes to: its low bits. */
  @inline def indexOf(hash: Long): Int = (hash & (Registers - 1)).toInt
  /** The rank a hash sets: one more than the trailing zeros of the bits above the index (Q + 1 if none). */
  @inline def rankOf(hash: Long): Byte = {
    val rest = hash >>> Precision
    (if (rest == 0) Q + 1 else java.lang.Long.numberOfTrailingZeros(rest) + 1).toByte
  }

  /** Ertl's improved estimate from the histogram of register values (histogram(r): registers holding r). */
  def estimate(histogram: Array[Int]): Long = {
    val m = Registers.toDouble
    var z = m * tau(1.0 - histogram(Q + 1) / m)
    var k = Q
    while (k >= 1) { z = 0.5 * (z + histogram(k)); k -= 1 }
    z += m * sigma(histogram(0) / m)
    math.round(AlphaInfinity * m * m / z)
  }

  /** SplitMix64's finishing mix: spreads every input bit over the 64 output bits. */
  def mix(v: Long): Long = {
    var z = v + 0x9e3779b97f4a7c15L
    z = (z ^ (z >>> 30)) * 0xbf58476d1ce4e5b9L
    z = (z ^ (z >>> 27)) * 0x94d049bb133111ebL
    z ^ (z >>> 31)
  }

  /** Ertl's sigma, the correction for empty registers. */
  private def sigma(x0: Double): Double =
    if (x0 == 1.0) Double.PositiveInfinity
    else {
      var x = x0
      var y = 1.0
      var z = x
      var previous = 0.0
      while ({ x *= x; previous = z; z += x * y; y += y; previous != z }) ()
      z
    }

  /** Ertl's tau, the correction for saturated registers. */
  private def tau(x0: Double): Double =
    if (x0 == 0.0 || x0 == 1.0) 0.0
    else {
      var x = x0
      var y = 1.0
      var z = 1.0 - x
      var previous = 0.0
      while ({ x = math.sqrt(x); previous = z; y *= 0.5; z -= math.pow(1.0 - x, 2) * y; previous != z }) ()
      z / 3.0
    }
}

/**
 * approx_distinct for every group ([[HyperLogLogAccumulator]]'s registers, results and states to the bit),
 * without 16 KB per group: a group starts sparse, its non-zero registers as (index << 8 | rank) in a small
 * open-addressing table of ints, and turns to the 16384 registers of a dense array once the table would
 * hold more than a dense array weighs. Most groups of a query with many groups see few distinct values,
 * and stay a few dozen bytes. The state is the dense registers, as the row accumulator's.
 */
private[sparkagg] final class HyperLogLogGroups(hash: HllHash) extends GroupsAccumulator {
  import HyperLogLogAccumulator._
  import HyperLogLogGroups._

  private val sketches = new ObjectVector // per group: null (nothing yet), Array[Int] sparse, Array[Byte] dense
  private var held = 0L

  private def weigh(sketch: Any): Long = sketch match {
    case null => 0L
    case sparse: Array[Int] => 16L + 4L * sparse.length
    case _ => 16L + Registers
  }

  /** Group g's register `index` raised to `rank` at least. */
  private def raise(g: Int, index: Int, rank: Byte): Unit = {
    val all = sketches.array
    all(g) match {
      case dense: Array[Byte] => if (rank > dense(index)) dense(index) = rank
      case sparse: Array[Int] =>
        val grown = insert(sparse, index, rank)
        if (!(grown eq sparse)) { held += weigh(grown) - weigh(sparse); all(g) = grown }
      case _ =>
        val fresh = insert(emptySparse, index, rank)
        held += weigh(fresh)
        all(g) = fresh
    }
  }

  def updateBatch(values: Columns, groupIndices: Array[Int], filter: Option[Column], totalGroups: Int): Unit = {
    sketches.resize(totalGroups)
    val row = new ColumnsRow(values)
    val f = filter.orNull
    var i = 0
    while (i < values.numRows) {
      row.row = i
      if (GroupsAccumulator.keep(f, i) && !row.isNullAt(0)) {
        val h = hash.of(row)
        raise(groupIndices(i), indexOf(h), rankOf(h))
      }
      i += 1
    }
  }

  def mergeBatch(states: Columns, groupIndices: Array[Int], filter: Option[Column], totalGroups: Int): Unit = {
    sketches.resize(totalGroups)
    val column = states.column(0)
    val f = filter.orNull
    var i = 0
    while (i < states.numRows) {
      if (GroupsAccumulator.keep(f, i)) {
        val g = groupIndices(i)
        column match {
          case packed: PackedRegisters => packed.foreachRegister(i)((index, rank) => raise(g, index, rank))
          case _ =>
            val registers = column.getBinary(i)
            var index = 0
            while (index < Registers) {
              if (registers(index) != 0) raise(g, index, registers(index))
              index += 1
            }
        }
      }
      i += 1
    }
  }

  /** The emitted groups' sketches, no longer held. */
  private def emitted(emit: EmitTo): Array[Any] = {
    val out = sketches.emit(emit)
    out.foreach(s => held -= weigh(s))
    out
  }

  def evaluate(emit: EmitTo): Column = {
    val out = emitted(emit)
    new LongColumn(Fill.longs(out.length)(g => estimate(histogram(out(g)))), null, out.length)
  }

  def state(emit: EmitTo): Array[Column] = Array(new SketchColumn(emitted(emit)))

  override def convertToState(values: Columns, filter: Option[Column]): Array[Column] =
    GroupsAccumulator.statesOfRows(new HyperLogLogGroups(hash), values, filter)
  override def supportsConvertToState: Boolean = true

  def size: Long = sketches.size + held
}

private object HyperLogLogGroups {
  import HyperLogLogAccumulator._

  // A sparse table: `capacity` (a power of 2) slots of (index << 8 | rank), 0 when free, then the number of
  // slots in use.
  val InitialSlots = 8
  /** A sparse table past this many slots (half full, 4 bytes a slot) weighs more than the dense registers. */
  private val MaxSlots = Registers / 4

  def emptySparse: Array[Int] = new Array[Int](InitialSlots + 1)

  /** The sparse table with register `index` at `rank` at least: the same array, a larger one, or the
   *  dense registers when a larger one would outweigh them. */
  def insert(table: Array[Int], index: Int, rank: Byte): AnyRef = {
    val capacity = table.length - 1
    var slot = (index * 0x9e3779b9 >>> 16) & (capacity - 1)
    while (table(slot) != 0 && (table(slot) >>> 8) != index) slot = (slot + 1) & (capacity - 1)
    if (table(slot) != 0) {
      if (rank > (table(slot) & 0xff)) table(slot) = index << 8 | rank
      table
    } else {
      table(slot) = index << 8 | rank
      table(capacity) += 1
      if (2 * table(capacity) <= capacity) table
      else if (2 * capacity > MaxSlots) dense(table)
      else rehash(table, 2 * capacity)
    }
  }

  def foreachEntry(table: Array[Int])(f: Int => Unit): Unit = {
    var slot = 0
    while (slot < table.length - 1) { if (table(slot) != 0) f(table(slot)); slot += 1 }
  }

  private def rehash(table: Array[Int], capacity: Int): Array[Int] = {
    val out = new Array[Int](capacity + 1)
    foreachEntry(table)(e => insert(out, e >>> 8, (e & 0xff).toByte))
    out
  }

  private def dense(table: Array[Int]): Array[Byte] = {
    val registers = new Array[Byte](Registers)
    foreachEntry(table)(e => registers(e >>> 8) = (e & 0xff).toByte)
    registers
  }

  def registersOf(sketch: Any): Array[Byte] = sketch match {
    case dense: Array[Byte] => dense.clone()
    case sparse: Array[Int] => dense(sparse)
    case _ => new Array[Byte](Registers)
  }

  def histogram(sketch: Any): Array[Int] = {
    val h = new Array[Int](Q + 2)
    sketch match {
      case dense: Array[Byte] => dense.foreach(r => h(r) += 1)
      case sparse: Array[Int] =>
        foreachEntry(sparse)(e => h(e & 0xff) += 1)
        h(0) += Registers - sparse(sparse.length - 1)
      case _ => h(0) = Registers
    }
    h
  }
}

/** Emitted sketches as the state column of registers, each group's 16 KB made only when it is read (written
 *  into a row), not for every group at once; [[HyperLogLogPacking]] reads the sketches themselves. */
private final class SketchColumn(val sketches: Array[Any]) extends Column {
  def numRows: Int = sketches.length
  def hasNulls: Boolean = false
  def isNullAt(row: Int): Boolean = false
  override def getBinary(row: Int): Array[Byte] = HyperLogLogGroups.registersOf(sketches(row))
  def get(row: Int, dataType: DataType): AnyRef = getBinary(row)

  /** f(index, rank) for each non-zero register of row `row`'s sketch. */
  def foreachRegister(row: Int)(f: (Int, Byte) => Unit): Unit = sketches(row) match {
    case sparse: Array[Int] => HyperLogLogGroups.foreachEntry(sparse)(e => f(e >>> 8, (e & 0xff).toByte))
    case dense: Array[Byte] => HyperLogLogPacking.foreachNonZero(dense)(f)
    case _ => ()
  }
}

/**
 * approx_distinct's state packed for the grouped operator's exchange: a state is 16 KB of registers, most of
 * them 0 in a group of few values. A packed state lists its non-zero registers, 3 bytes each (the index in
 * two, the rank), when that is shorter, else the 16,384 registers as they are; 16,384 is no multiple of 3,
 * so the length tells which.
 */
private[sparkagg] object HyperLogLogPacking extends StatePacking {
  import HyperLogLogAccumulator.Registers

  def foreachNonZero(registers: Array[Byte])(f: (Int, Byte) => Unit): Unit = {
    var index = 0
    while (index < Registers) { if (registers(index) != 0) f(index, registers(index)); index += 1 }
  }

  def pack(states: Array[Column], numRows: Int): Column = {
    val column = states(0)
    val out = new java.io.ByteArrayOutputStream(16 * numRows)
    val offsets = new Array[Int](numRows + 1)
    val entry = (index: Int, rank: Byte) => { out.write(index >>> 8); out.write(index); out.write(rank) }
    var r = 0
    while (r < numRows) {
      if (column.isNullAt(r)) throw new IllegalStateException("an approx_distinct state has no NULL")
      column match {
        case sketches: SketchColumn if sketches.sketches(r).isInstanceOf[Array[Int]] =>
          sketches.foreachRegister(r)(entry)
        case _ =>
          val registers = column.getBinary(r)
          var set = 0
          foreachNonZero(registers)((_, _) => set += 1)
          if (3 * set < Registers) foreachNonZero(registers)(entry) else out.write(registers)
      }
      offsets(r + 1) = out.size
      r += 1
    }
    new BinaryColumn(out.toByteArray, offsets, null, numRows)
  }

  def unpack(packed: Column): Array[Column] = Array(new PackedRegisters(BinaryColumn.of(packed)))
}

/** Packed approx_distinct states, read in place: a merge takes their registers without 16 KB a row. */
private final class PackedRegisters(packed: BinaryColumn) extends Column {
  import HyperLogLogAccumulator.{Q, Registers}
  def numRows: Int = packed.numRows
  def hasNulls: Boolean = false
  def isNullAt(row: Int): Boolean = false

  /** f(index, rank) for each non-zero register of row `row`. */
  def foreachRegister(row: Int)(f: (Int, Byte) => Unit): Unit = {
    val (bytes, from, length) = (packed.bytes, packed.start(row), packed.length(row))
    if (length == Registers)
      HyperLogLogPacking.foreachNonZero(java.util.Arrays.copyOfRange(bytes, from, from + length))(f)
    else {
      // Read back from shuffle files: what no packing made is refused before it is used.
      if (length % 3 != 0) throw new IllegalStateException(s"a packed approx_distinct state of $length bytes")
      var at = from
      while (at < from + length) {
        val (index, rank) = (((bytes(at) & 0xff) << 8) | (bytes(at + 1) & 0xff), bytes(at + 2))
        if (index >= Registers || rank < 1 || rank > Q + 1)
          throw new IllegalStateException(s"a packed approx_distinct state sets register $index to $rank")
        f(index, rank)
        at += 3
      }
    }
  }

  override def getBinary(row: Int): Array[Byte] = {
    val registers = new Array[Byte](Registers)
    foreachRegister(row)((index, rank) => registers(index) = rank)
    registers
  }
  def get(row: Int, dataType: DataType): AnyRef = getBinary(row)
}
