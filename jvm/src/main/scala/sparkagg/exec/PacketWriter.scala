package sparkagg.exec

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Attribute, Expression, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.catalyst.plans.physical.HashPartitioning
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.Platform
import org.apache.spark.unsafe.hash.Murmur3_x86_32
import sparkagg.api.Column

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
