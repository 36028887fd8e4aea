package sparkagg.exec

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Attribute, AttributeReference, ExprId, Expression, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.catalyst.plans.QueryPlan
import org.apache.spark.sql.catalyst.plans.physical.{CoalescedHashPartitioning, HashPartitioning, Partitioning, UnknownPartitioning}
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.execution.exchange.{ENSURE_REQUIREMENTS, ShuffleExchangeExec}
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.Platform
import org.apache.spark.unsafe.hash.Murmur3_x86_32
import org.apache.spark.sql.execution.vectorized.OnHeapColumnVector
import org.apache.spark.sql.vectorized.{ColumnVector, ColumnarBatch}
import sparkagg.api.Column
import sparkagg.common.{BinaryColumn, BooleanColumn, Validity}

/**
 * The states a Partial (or PartialMerge) node hands a merging node across the shuffle by the keys, in packets:
 * instead of one shuffled row per group, the producer appends each group's row (keys and states, an UnsafeRow)
 * to a packet for the shuffle partition Spark would send the row to, and the shuffle moves packets, a row of
 * `(route, packed_states)` each, where `route` is an integer that Spark's hash partitioning of `route` sends to
 * that same partition. The merging node reads each packet's rows in place. (Not to be confused with
 * [[sparkagg.api.StatePacking]], one function's state fields packed into one value.)
 *
 * Why: Spark's shuffle costs per row (serialization, a checksum, a length read through a locked stream), and
 * at a million groups it was half the time of an aggregation (docs/grouped-operator.md), none of it
 * DataFusion's. A packet row costs that once per up to a megabyte of states.
 *
 * The merging node's rows are partitioned as the plain exchange's would be, by the same keys into the same
 * partitions (the producer computes the partition with Spark's own partition expression): the node claims
 * that hash partitioning, so an operator above it that needs its keys clustered gets no second shuffle.
 *
 * `keys` are the exchange's hash expressions over `unpacked`, the producer's rows before packing. Setting
 * `spark.sparkagg.groups.packets=false` keeps a row per group.
 */
final case class StatePackets(keys: Seq[Expression], numPartitions: Int, unpacked: Seq[Attribute], route: Attribute,
    states: Attribute) {
  def output: Seq[Attribute] = Seq(route, states)

  /** The merging node's partitioning from its child's (the packets' hash partitioning by `route`, maybe
   *  coalesced by adaptive execution): the same partitions, by the keys. */
  def byKeys(packets: Partitioning): Partitioning = packets match {
    case h: HashPartitioning if byRoute(h) => HashPartitioning(keys, h.numPartitions)
    case c: CoalescedHashPartitioning if byRoute(c.from) =>
      c.copy(from = HashPartitioning(keys, c.from.numPartitions))
    case other => UnknownPartitioning(other.numPartitions)
  }

  /** The packing with its attributes numbered by position, as Spark canonicalizes a plan's own: two plans
   *  that pack alike then compare alike, and an exchange of one is reused by the other. */
  def canonical: StatePackets = {
    def numbered(a: Attribute, i: Int): Attribute = AttributeReference("none", a.dataType, a.nullable)(ExprId(i))
    StatePackets(
      keys.map(QueryPlan.normalizeExpressions(_, unpacked)),
      numPartitions,
      unpacked.zipWithIndex.map { case (a, i) => numbered(a, i) },
      numbered(route, 0),
      numbered(states, 1)
    )
  }

  private def byRoute(h: HashPartitioning): Boolean = h.expressions match {
    case Seq(a: Attribute) => a.exprId == route.exprId
    case _ => false
  }
}

object StatePackets {
  val EnabledConf = "spark.sparkagg.groups.packets"

  /** Header of a packet row: its null bits, `route`, and the offset and size of `states`. */
  private[exec] val Header = 24
  /** A packet leaves when it holds this much, or less with many partitions: a producer holds at most one
   *  packet per partition, about 16 MiB in all. At most 1 MiB less 1 KiB: under half a G1 region of 2 MiB
   *  (the region of heaps from 4 GB), so that a packet is not a humongous object, which takes a region of
   *  its own and is allocated outside the young generation. */
  private[exec] def packetBytes(numPartitions: Int): Int =
    math.max(8 << 10, math.min((1 << 20) - (1 << 10), (16 << 20) / numPartitions))

  /** The seed of Spark's Murmur3Hash, which its hash partitioning uses. */
  private[exec] val HashSeed = 42

  /** For each partition p of n, an integer that Spark's hash partitioning into n partitions sends to p:
   *  pmod(murmur3(v, seed 42), n) == p, as `HashPartitioning.partitionIdExpression` computes it. */
  def routes(n: Int): Array[Int] = {
    val routes = Array.fill(n)(-1)
    var found = 0
    var v = 0
    while (found < n) {
      val p = Math.floorMod(Murmur3_x86_32.hashInt(v, HashSeed), n)
      if (routes(p) < 0) { routes(p) = v; found += 1 }
      v += 1
    }
    routes
  }

  /**
   * After Spark inserts its exchanges (EnsureRequirements): every merging node over a shuffle of a
   * producer's rows by the keys gets packets instead. Run as a query stage preparation rule under adaptive
   * execution and before the columnar transitions without it; a plan with packets does not match again.
   */
  object Rule extends Rule[SparkPlan] {
    override def apply(plan: SparkPlan): SparkPlan =
      if (!SQLConf.get.getConfString(EnabledConf, "true").toBoolean) plan
      else plan.transformUp {
        case merging: GroupedAggregateExec if merging.mode != GroupedMode.Partial && merging.unpacks.isEmpty =>
          merging.child match {
            case shuffle: ShuffleExchangeExec if shuffle.shuffleOrigin == ENSURE_REQUIREMENTS =>
              (shuffle.outputPartitioning, shuffle.child) match {
                case (h: HashPartitioning, producer: GroupedAggregateExec)
                    if producer.mode != GroupedMode.Final && producer.packs.isEmpty &&
                      h.references.subsetOf(producer.outputSet) =>
                  val packing = StatePackets(
                    h.expressions,
                    h.numPartitions,
                    producer.output,
                    AttributeReference("route", IntegerType, nullable = false)(),
                    AttributeReference("packed_states", BinaryType, nullable = false)()
                  )
                  val packer = producer.copy(packs = Some(packing))
                  packer.copyTagsFrom(producer)
                  val packets =
                    shuffle.copy(
                      outputPartitioning = HashPartitioning(Seq(packing.route), h.numPartitions), child = packer)
                  packets.copyTagsFrom(shuffle)
                  merging.copy(child = packets, unpacks = Some(packing))
                case _ => merging
              }
            case _ => merging
          }
      }
  }
}

/**
 * A producer task's packets ([[StatePackets]]): each output row (an UnsafeRow of keys and states) is appended,
 * as its size and its bytes, to the packet of its partition; a full packet leaves as a row at once, the others
 * after the task's last rows. A packet is its row's own byte array: the header is written when it leaves.
 *
 * The bytes of a packet that left are written over once the next one leaves: by then its reader has asked for
 * another row, and a row an iterator handed out is valid only until then (Spark's projections reuse theirs
 * alike, so a reader that keeps rows copies them). A fresh array costs more than its zeroing: a heap that grew
 * again after a collection has pages never touched since, and the first touch of each faults in the kernel
 * (docs/grouped-operator.md, "What profiles showed").
 */
private[exec] final class PacketWriter(packing: StatePackets) {
  private val n = packing.numPartitions
  private val modulus = new Modulus(n)
  private val partitionOf = PacketWriter.partitioner(packing.keys, packing.unpacked, n)
  private val keyWidth = PacketWriter.hashedKey(packing.keys, packing.unpacked) match {
    case Some((0, width)) => width
    case _ => 0
  }
  private val routes = StatePackets.routes(n)
  private val limit = StatePackets.packetBytes(n)
  private val packets = new Array[Array[Byte]](n)
  private val used = new Array[Int](n)
  /** The bytes of the packet that left last, and of the one before it, free for the next packet. */
  private var leftLast: Array[Byte] = null
  private var spare: Array[Byte] = null

  /** The rows' packets that fill up; after the last rows (`last`), every packet left. */
  def pack(rows: Iterator[InternalRow], last: Boolean): Iterator[InternalRow] = new Packing(last) {
    protected def more: Boolean = rows.hasNext
    protected def addNext(): InternalRow = add(rows.next().asInstanceOf[UnsafeRow])
  }

  /**
   * What [[pack]] makes of the rows of `groups` groups whose keys are `keys` and whose states are `columns`,
   * written from the arrays into the packets by a [[ColumnRows]]: no row made and then copied. `done` once the
   * last group is written. None where the rows are not of that form ([[ColumnRows.writes]]), or the packets
   * are hashed by more than the keys a [[RowKeyMap]] kept, or not by the one key a [[LongKeyMap]] kept, or not
   * by exactly the keys a [[PackedKeyMap]] packed, in their order.
   */
  def pack(keys: KeyRows, columns: Array[Column], types: Seq[DataType], groups: Int, last: Boolean)(
      done: () => Unit): Option[Iterator[InternalRow]] = {
    val keyFields = packing.unpacked.take(packing.unpacked.size - columns.length)
    val keyTypes = keyFields.map(_.dataType)
    val packed = keys match {
      case k: PackedKeyMap.Keys => k
      case _ => null
    }
    val partitioned = keys match {
      case _: LongKeyMap.Keys => keyWidth != 0
      case _: PackedKeyMap.Keys =>
        packing.keys.map { case a: Attribute => a.exprId; case _ => null } == keyFields.map(_.exprId)
      case _ => packing.keys.flatMap(_.references).forall(r => keyFields.exists(_.exprId == r.exprId))
    }
    keys match {
      case k: LongKeyMap.Keys if keyWidth != 0 && PacketColumns.writes(columns, types) =>
        return Some(new ColumnPackets(k, columns, groups, last, done))
      case _ =>
    }
    if (!partitioned || !ColumnRows.writes(keys, keyTypes, columns, types)) None
    else Some(
      new Packing(last) {
        private val rows = new ColumnRows(keys, keyTypes, columns)
        private var g = 0
        protected def more: Boolean = g < groups || {
          if (g == groups) { done(); g += 1 }
          false
        }
        protected def addNext(): InternalRow = {
          rows.load(g)
          g += 1
          val p =
            if (packed != null) PacketWriter.partitionOfPacked(packed, rows.group, modulus)
            else if (rows.keyRow == null) PacketWriter.partitionOfKey(rows.nullKey, rows.longKey, keyWidth, modulus)
            else partitionOf(rows.keyRow)
          val full = reserve(p, rows.size)
          rows.write(packets(p), Platform.BYTE_ARRAY_OFFSET + used(p) - rows.size)
          full
        }
      })
  }

  /** Packets as rows are added; after the last row (`last`), every packet left. */
  private abstract class Packing(last: Boolean) extends Iterator[InternalRow] {
    /** Whether a row is left to add. */
    protected def more: Boolean
    /** Adds the next row (or group of rows); the packet that left for it, or null. */
    protected def addNext(): InternalRow

    private var ready: InternalRow = null
    private var flushed = 0

    def hasNext: Boolean = {
      while (ready == null && more) ready = addNext()
      while (last && ready == null && flushed < n) { ready = leave(flushed); flushed += 1 }
      ready != null
    }

    def next(): InternalRow = {
      if (!hasNext) throw new NoSuchElementException("no more packets")
      val packet = ready
      ready = null
      packet
    }
  }

  /** Appends a row to its partition's packet; the packet if it was full before the row. */
  private def add(row: UnsafeRow): InternalRow = {
    val p = partitionOf(row)
    val full = reserve(p, row.getSizeInBytes)
    row.writeToMemory(packets(p), Platform.BYTE_ARRAY_OFFSET + used(p) - row.getSizeInBytes)
    full
  }

  /** Room for a row of `size` bytes at the end of partition p's packet (`used(p)` is then past it, its size
   *  written before it); the packet if it was full before the row. */
  private def reserve(p: Int, size: Int): InternalRow = {
    val entry = 8 + size
    val full = if (packets(p) != null && used(p) + entry > limit) leave(p) else null
    if (packets(p) == null) {
      // A sixteenth of the limit to start: a packet doubles at most four times, and a partition that gets few
      // rows (of many partitions) holds little. Once one of its packets has filled up, the next starts whole.
      packets(p) = room(math.max(StatePackets.Header + entry, if (full != null) limit else limit / 16))
      used(p) = StatePackets.Header
    } else if (used(p) + entry > packets(p).length) {
      val grown = room(math.max(used(p) + entry, math.min(2 * packets(p).length, limit)))
      System.arraycopy(packets(p), 0, grown, 0, used(p))
      packets(p) = grown
    }
    Platform.putLong(packets(p), Platform.BYTE_ARRAY_OFFSET + used(p), size.toLong)
    used(p) += entry
    full
  }

  /** An array of at least `size` bytes: the spare one if it is large enough. Its old bytes are left as they
   *  are: a packet's rows, their sizes and its header are all written before it leaves. */
  private def room(size: Int): Array[Byte] =
    if (spare != null && spare.length >= size) { val bytes = spare; spare = null; bytes }
    else new Array[Byte](size)

  /** Partition p's packet as a row `(route, states)`, or null if it holds nothing. */
  private def leave(p: Int): InternalRow = {
    val bytes = packets(p)
    if (bytes == null) return null
    packets(p) = null
    sent(bytes, p, used(p))
  }

  /** The first `size` bytes of `bytes`, a packet for partition p, as a row `(route, states)`, its header written. */
  private def sent(bytes: Array[Byte], p: Int, size: Int): InternalRow = {
    spare = leftLast
    leftLast = bytes
    val at = Platform.BYTE_ARRAY_OFFSET
    Platform.putLong(bytes, at, 0L)
    Platform.putLong(bytes, at + 8, routes(p) & 0xffffffffL)
    Platform.putLong(bytes, at + 16, (StatePackets.Header.toLong << 32) | (size - StatePackets.Header))
    val packet = new UnsafeRow(2)
    packet.pointTo(bytes, at, size)
    packet
  }

  /** `body(from, until)` over 0 until `total` in steps. */
  private def forSteps(total: Int)(body: (Int, Int) => Unit): Unit = {
    var from = 0
    while (from < total) { val until = math.min(total, from + 4096); body(from, until); from = until }
  }

  /** The partitions of groups `from until until` into `partitionOf`, each counted at `counts(p + 1)`. */
  private def partitions(keys: LongKeyMap.Keys, partitionOf: Array[Int], counts: Array[Int], from: Int,
      until: Int): Unit = {
    var g = from
    while (g < until) {
      val p = PacketWriter.partitionOfKey(g == keys.nullGroup, keys.values(g), keyWidth, modulus)
      partitionOf(g) = p
      counts(p + 1) += 1
      g += 1
    }
  }

  /** Groups `from until until` at their places in `order`: group g at `next(partition)`, which moves on. */
  private def place(partitionOf: Array[Int], next: Array[Int], order: Array[Int], from: Int, until: Int): Unit = {
    var g = from
    while (g < until) {
      val p = partitionOf(g)
      order(next(p)) = g
      next(p) += 1
      g += 1
    }
  }

  /**
   * The packets of `groups` groups of a [[LongKeyMap]] with the states in `columns`, in columns
   * ([[PacketColumns]]): the groups are ordered by partition, and each partition's are cut into packets of at
   * most `limit` bytes, written column by column. After the last group, `done`; after the last rows (`last`),
   * the row packets still held leave too.
   */
  private final class ColumnPackets(keys: LongKeyMap.Keys, columns: Array[Column], groups: Int, last: Boolean,
      done: () => Unit)
    extends Packing(last) {
    private val layout = new PacketColumns(columns)
    // The groups in partition order: partition p's are order(ends(p - 1) until ends(p)).
    private val order = new Array[Int](groups)
    private val ends = new Array[Int](n)
    locally {
      val partitionOf = new Array[Int](groups)
      val counts = new Array[Int](n + 1)
      // In steps of a few thousand groups: a loop of a method (or constructor) called once per emission ran
      // interpreted, the JIT not compiling it on the stack in time (a quarter of the samples at 1M groups).
      forSteps(groups)(partitions(keys, partitionOf, counts, _, _))
      var p = 0
      while (p < n) { counts(p + 1) += counts(p); p += 1 }
      System.arraycopy(counts, 1, ends, 0, n)
      forSteps(groups)(place(partitionOf, counts, order, _, _))
    }
    private var p = 0
    private var at = 0
    private var released = false

    protected def more: Boolean = {
      while (p < n && at == ends(p)) p += 1
      p < n || {
        if (!released) { done(); released = true }
        false
      }
    }

    /** The next packet of partition p's groups: as many as fit. */
    protected def addNext(): InternalRow = {
      val count = layout.fit(order, at, ends(p), limit - StatePackets.Header)
      val size = StatePackets.Header + layout.size(order, at, count)
      // Whole packets' arrays, whatever this one needs: the spare one then always fits.
      val bytes = room(math.max(size, limit))
      layout.write(keys, order, at, count, bytes, Platform.BYTE_ARRAY_OFFSET + StatePackets.Header)
      at += count
      sent(bytes, p, size)
    }
  }
}

/**
 * `Math.floorMod(x, n)` for one n > 0, by multiplications: a division costs tens of cycles, and the partition of
 * every emitted group is one (Lemire, Kaser and Kurz, "Faster remainder by direct computation", 2019: with
 * `m = ceil(2^64 / n)`, the remainder of an unsigned 32-bit `a` is the high word of `(m * a mod 2^64) * n`).
 */
private[exec] final class Modulus(n: Int) {
  require(n > 0, s"a modulus must be positive, not $n")
  private val m = java.lang.Long.divideUnsigned(-1L, n) + 1
  // A negative x read unsigned is x + 2^32, whose remainder is 2^32 mod n more than x's (mod n).
  private val wrap = ((1L << 32) % n).toInt

  def apply(x: Int): Int = {
    val low = m * (x & 0xffffffffL)
    // The high 64 bits of low * n (unsigned, n < 2^31), from low's two halves; neither product overflows.
    val r = (((low >>> 32) * n + (((low & 0xffffffffL) * n) >>> 32)) >>> 32).toInt
    if (x >= 0) r else if (r >= wrap) r - wrap else r - wrap + n
  }
}

/** A row's partition: a method returning an int, which a Function1 of a row would box on every row. */
private[exec] trait Partitioner { def apply(row: UnsafeRow): Int }

private[exec] object PacketWriter {
  /**
   * A row's partition among `n` as Spark's hash partitioning by `keys` computes it (pmod of the keys'
   * Murmur3 hash, seed 42, a NULL leaving the seed). One integer-like key column is hashed here directly: the
   * generated projection of the partition expression wrote a row per group to read one integer from it. So is
   * one string key (UTF8_BINARY: Murmur3Hash hashes its bytes; a collated string hashes its collation key),
   * read where it lies in the row, which costs less than the projection. Any other keys go through that
   * projection.
   */
  def partitioner(keys: Seq[Expression], input: Seq[Attribute], n: Int): Partitioner = {
    val modulus = new Modulus(n)
    (hashedKey(keys, input), keys) match {
      case (Some((key, width)), _) =>
        row => {
          val isNull = row.isNullAt(key)
          partitionOfKey(
            isNull, if (isNull) 0L else if (width == 8) row.getLong(key) else row.getInt(key), width, modulus)
        }
      case (None, Seq(a: Attribute)) if a.dataType == StringType && input.exists(_.exprId == a.exprId) =>
        val key = input.indexWhere(_.exprId == a.exprId)
        row =>
          modulus(
            if (row.isNullAt(key)) StatePackets.HashSeed
            else {
              val offsetAndSize = row.getLong(key)
              Murmur3_x86_32.hashUnsafeBytes(row.getBaseObject, row.getBaseOffset + (offsetAndSize >>> 32),
                offsetAndSize.toInt, StatePackets.HashSeed)
            })
      case _ =>
        val projection = UnsafeProjection.create(Seq(HashPartitioning(keys, n).partitionIdExpression), input)
        row => projection(row).getInt(0)
    }
  }

  /** The one key column hashed directly, its ordinal in `input` and how Murmur3Hash reads it (8: a long, 4: an
   *  int); None for any other keys. */
  def hashedKey(keys: Seq[Expression], input: Seq[Attribute]): Option[(Int, Int)] = keys match {
    case Seq(a: Attribute) =>
      val key = input.indexWhere(_.exprId == a.exprId)
      if (key < 0) None
      else if (hashesAsLong(a.dataType)) Some((key, 8))
      else if (hashesAsInt(a.dataType)) Some((key, 4))
      else None
    case _ => None
  }

  /** The partition of a key hashed directly (`width` as [[hashedKey]] gives it). */
  def partitionOfKey(isNull: Boolean, key: Long, width: Int, partitions: Modulus): Int = {
    val Seed = StatePackets.HashSeed
    partitions(
      if (isNull) Seed
      else if (width == 8) Murmur3_x86_32.hashLong(key, Seed)
      else Murmur3_x86_32.hashInt(key.toInt, Seed))
  }

  /** The partition of group g's packed key, hashed by its fields in order, as Murmur3Hash hashes them (a
   *  bigint or a timestamp as a long, the others as an int; a NULL leaves the hash as it was). */
  def partitionOfPacked(keys: PackedKeyMap.Keys, g: Int, partitions: Modulus): Int = {
    val nulls = keys.nullsOf(g)
    var hash = StatePackets.HashSeed
    var f = 0
    while (f < keys.numFields) {
      if ((nulls & (1 << f)) == 0)
        hash =
          if (keys.isLong(f)) Murmur3_x86_32.hashLong(keys.value(g, f), hash)
          else Murmur3_x86_32.hashInt(keys.value(g, f).toInt, hash)
      f += 1
    }
    partitions(hash)
  }

  // The types Murmur3Hash hashes by their long or int value, as an UnsafeRow stores them.
  private def hashesAsLong(t: DataType): Boolean = t match {
    case LongType | TimestampType | TimestampNTZType | _: DayTimeIntervalType => true
    case _ => false
  }
  private def hashesAsInt(t: DataType): Boolean = t match {
    case IntegerType | DateType | _: YearMonthIntervalType => true
    case _ => false
  }
}

/**
 * A packet of one integer-like key and bigint, double, boolean, string or binary states in columns, as
 * [[PacketWriter]] writes a [[LongKeyMap]]'s groups: 8 bytes of -1 (a packet of rows starts with a row's size,
 * never negative), the number of groups, then each field in order, key first: its validity bits (a word per 64
 * groups, a bit set for a value), then its values: the key as a long each, bigints and doubles 8 bytes each,
 * booleans a byte each, strings and binaries their lengths (4 bytes each) and then their bytes end to end;
 * each part padded to 8 bytes. The merging side decodes a packet into vectors ([[PacketReader]]) and reads them
 * as it reads a scan's batch.
 *
 * Why: a row per group spends a null word, a word per field and a padded tail on each group; for an ordered
 * first_value of short strings by a bigint key that is 56 bytes a group against 25 here, and the shuffle
 * compresses, checksums and writes every byte. The merging side then reads columns, without gathering rows.
 */
private[exec] final class PacketColumns(columns: Array[Column]) {
  private val numColumns = columns.length
  private val (longs, doubles, booleans, bytes, validity) = ColumnRows.arraysOf(columns)
  // Bytes of a group in every field but the strings' and binaries' own bytes.
  private val fixed = 8 + columns.map { case _: BooleanColumn => 1; case _: BinaryColumn => 4; case _ => 8 }.sum

  private def bound(count: Int, variable: Long): Long =
    16L + 8L * (1 + numColumns) * Validity.words(count) + count.toLong * fixed + variable + 16L * numColumns

  /** How many of the groups order(from until end), at least one, fit in `room` bytes. */
  def fit(order: Array[Int], from: Int, end: Int, room: Int): Int = {
    var count = 0
    var variable = 0L
    var fits = true
    while (fits && from + count < end) {
      val g = order(from + count)
      var more = 0L
      var c = 0
      while (c < numColumns) {
        if (bytes(c) != null && Validity.isValid(validity(c), g)) more += bytes(c).length(g)
        c += 1
      }
      if (count > 0 && bound(count + 1, variable + more) > room) fits = false
      else { count += 1; variable += more }
    }
    count
  }

  /** The bytes of the packet of the `count` groups order(from until from + count). */
  def size(order: Array[Int], from: Int, count: Int): Int = {
    val words = 8L * Validity.words(count)
    var total = 16L + words + 8L * count
    var c = 0
    while (c < numColumns) {
      total += words + (
        if (booleans(c) != null) PacketColumns.padded(count)
        else if (bytes(c) != null)
          PacketColumns.padded(4L * count) + PacketColumns.padded(columnBytes(c, order, from, count))
        else 8L * count)
      c += 1
    }
    if (total > Int.MaxValue - 64) throw new IllegalStateException(s"sparkagg: a packet of $total bytes")
    total.toInt
  }

  private def columnBytes(c: Int, order: Array[Int], from: Int, count: Int): Long = {
    var total = 0L
    var i = from
    while (i < from + count) {
      val g = order(i)
      if (Validity.isValid(validity(c), g)) total += bytes(c).length(g)
      i += 1
    }
    total
  }

  /** Writes the packet of the groups order(from until from + count) at `at` of `to`, keys from `keys`. */
  def write(keys: LongKeyMap.Keys, order: Array[Int], from: Int, count: Int, to: Array[Byte], at: Long): Unit = {
    Platform.putLong(to, at, -1L)
    Platform.putLong(to, at + 8, count.toLong)
    var pos = at + 16
    pos = writeValidity(to, pos, order, from, count, g => g != keys.nullGroup)
    var i = 0
    while (i < count) {
      val g = order(from + i)
      Platform.putLong(to, pos + 8L * i, if (g == keys.nullGroup) 0L else keys.values(g))
      i += 1
    }
    pos += 8L * count
    var c = 0
    while (c < numColumns) {
      val valid = validity(c)
      pos = writeValidity(to, pos, order, from, count, g => Validity.isValid(valid, g))
      pos = writeValues(c, to, pos, order, from, count)
      c += 1
    }
  }

  private def writeValidity(to: Array[Byte], at: Long, order: Array[Int], from: Int, count: Int,
      valid: Int => Boolean): Long = {
    var word = 0L
    var i = 0
    while (i < count) {
      if (valid(order(from + i))) word |= 1L << i
      if ((i & 63) == 63 || i == count - 1) {
        Platform.putLong(to, at + 8L * (i >> 6), word)
        word = 0L
      }
      i += 1
    }
    at + 8L * Validity.words(count)
  }

  private def writeValues(c: Int, to: Array[Byte], at: Long, order: Array[Int], from: Int, count: Int): Long = {
    val valid = validity(c)
    var i = 0
    if (longs(c) != null || doubles(c) != null) {
      val (bigints, floats) = (longs(c), doubles(c))
      while (i < count) {
        val g = order(from + i)
        val word =
          if (!Validity.isValid(valid, g)) 0L
          else if (bigints != null) bigints(g)
          else java.lang.Double.doubleToRawLongBits(floats(g))
        Platform.putLong(to, at + 8L * i, word)
        i += 1
      }
      at + 8L * count
    } else if (booleans(c) != null) {
      val values = booleans(c)
      while (i < count) {
        val g = order(from + i)
        Platform.putBoolean(to, at + i, Validity.isValid(valid, g) && values(g))
        i += 1
      }
      at + PacketColumns.padded(count)
    } else {
      val column = bytes(c)
      var tail = at + PacketColumns.padded(4L * count)
      while (i < count) {
        val g = order(from + i)
        val length = if (Validity.isValid(valid, g)) column.length(g) else 0
        Platform.putInt(to, at + 4L * i, length)
        Platform.copyMemory(column.bytes, Platform.BYTE_ARRAY_OFFSET + column.start(g), to, tail, length)
        tail += length
        i += 1
      }
      at + PacketColumns.padded(tail - at)
    }
  }
}

private[exec] object PacketColumns {
  /** The first long of a packet of columns. */
  val Marker = -1L

  def padded(n: Long): Long = (n + 7) & ~7L

  /** Whether the states `columns` of `types` go into a packet of columns: as into a row ([[ColumnRows]]). */
  def writes(columns: Array[Column], types: Seq[DataType]): Boolean = ColumnRows.columnsWritten(columns, types)

  /** Whether a packet's states, from `at` of `base`, are in columns. */
  def inColumns(base: AnyRef, at: Long): Boolean = Platform.getLong(base, at) == Marker

  /**
   * A packet of columns, from `at` of `base`, into `vectors` (one per field, of the fields' types; reset
   * first); the number of groups. The key, written as a long, is put as the vector's type holds it.
   */
  def read(base: AnyRef, at: Long, vectors: Array[OnHeapColumnVector]): Int = {
    val count = Platform.getLong(base, at + 8).toInt
    val words = 8L * Validity.words(count)
    var pos = at + 16
    var f = 0
    while (f < vectors.length) {
      val vector = vectors(f)
      val validity = pos
      pos += words
      def isNull(i: Int): Boolean = (Platform.getLong(base, validity + 8L * (i >> 6)) & (1L << i)) == 0
      var i = 0
      vector.dataType match {
        case BooleanType =>
          while (i < count) {
            if (isNull(i)) vector.putNull(i) else vector.putBoolean(i, Platform.getBoolean(base, pos + i))
            i += 1
          }
          pos += padded(count)
        case _: StringType | BinaryType =>
          val bytes = base match {
            case b: Array[Byte] => b
            case other => throw new IllegalStateException(s"sparkagg: a packet in a ${other.getClass}")
          }
          var tail = pos + padded(4L * count)
          while (i < count) {
            val length = Platform.getInt(base, pos + 4L * i)
            if (isNull(i)) vector.putNull(i)
            else {
              val start = vector.arrayData().appendBytes(length, bytes, (tail - Platform.BYTE_ARRAY_OFFSET).toInt)
              vector.putArray(i, start, length)
            }
            tail += length
            i += 1
          }
          pos += padded(tail - pos)
        case DoubleType =>
          while (i < count) {
            if (isNull(i)) vector.putNull(i) else vector.putDouble(i, Platform.getDouble(base, pos + 8L * i))
            i += 1
          }
          pos += 8L * count
        case t if t.defaultSize == 8 =>
          while (i < count) {
            if (isNull(i)) vector.putNull(i) else vector.putLong(i, Platform.getLong(base, pos + 8L * i))
            i += 1
          }
          pos += 8L * count
        case _ =>
          while (i < count) {
            if (isNull(i)) vector.putNull(i) else vector.putInt(i, Platform.getLong(base, pos + 8L * i).toInt)
            i += 1
          }
          pos += 8L * count
      }
      f += 1
    }
    count
  }
}

/**
 * A merging task's packets ([[StatePackets]]) as its input: the rows of packets of rows, read in place (one row
 * object, pointed at each in turn), and the batches of packets of columns ([[PacketColumns]]), decoded into
 * vectors that are reused from one packet to the next. The two are read in turn, packet by packet: `rows` has
 * none left once the next packet is one of columns, which `batches` then gives, and the other way round.
 */
private[exec] final class PacketReader(packets: Iterator[InternalRow], types: Seq[DataType]) {
  private val row = new UnsafeRow(types.size)
  private var base: AnyRef = _
  private var at = 0L
  private var end = 0L
  private var columns: UnsafeRow = null
  private var vectors: Array[OnHeapColumnVector] = Array.empty
  private var capacity = 0

  /** Pulls packets while the last one is read and no packet of columns waits. */
  private def advance(): Unit =
    while (at == end && columns == null && packets.hasNext) {
      val packet = packets.next().asInstanceOf[UnsafeRow]
      val offsetAndSize = packet.getLong(1)
      val start = packet.getBaseOffset + (offsetAndSize >>> 32)
      if (PacketColumns.inColumns(packet.getBaseObject, start)) columns = packet
      else {
        base = packet.getBaseObject
        at = start
        end = at + offsetAndSize.toInt
      }
    }

  val rows: Iterator[InternalRow] = new Iterator[InternalRow] {
    def hasNext: Boolean = { advance(); at < end }

    def next(): InternalRow = {
      if (!hasNext) throw new NoSuchElementException("no more rows in the packets")
      val size = Platform.getLong(base, at).toInt
      row.pointTo(base, at + 8, size)
      at += 8 + size
      row
    }
  }

  val batches: Iterator[ColumnarBatch] = new Iterator[ColumnarBatch] {
    def hasNext: Boolean = { advance(); columns != null }

    def next(): ColumnarBatch = {
      if (!hasNext) throw new NoSuchElementException("no more packets of columns")
      val start = columns.getBaseOffset + (columns.getLong(1) >>> 32)
      val count = Platform.getLong(columns.getBaseObject, start + 8).toInt
      if (count > capacity) {
        vectors.foreach(_.close())
        capacity = math.max(count, 2 * capacity)
        vectors = types.map(new OnHeapColumnVector(capacity, _)).toArray
      } else vectors.foreach(_.reset())
      PacketColumns.read(columns.getBaseObject, start, vectors)
      columns = null
      new ColumnarBatch(vectors.toArray[ColumnVector], count)
    }
  }

  /** Every packet's rows, those of packets of columns too: for a task that reads no batch. */
  def allRows: Iterator[InternalRow] = new Iterator[InternalRow] {
    private var batchRows: java.util.Iterator[InternalRow] = java.util.Collections.emptyIterator()
    def hasNext: Boolean = batchRows.hasNext || rows.hasNext || (batches.hasNext && {
      batchRows = batches.next().rowIterator()
      hasNext
    })
    def next(): InternalRow = {
      if (!hasNext) throw new NoSuchElementException("no more rows in the packets")
      if (batchRows.hasNext) batchRows.next() else rows.next()
    }
  }
}
