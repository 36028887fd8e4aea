package sparkagg.common

import org.apache.spark.sql.types._
import sparkagg.api._

/**
 * The t-digest state packed for the grouped operator's exchange. A partial state mostly holds a few
 * values, each a centroid of weight 1, whose sum, min and max the centroids give again; at 1M groups
 * the six fields (about 120 bytes a row) became the shuffle's largest cost. A packed state is a flags
 * byte, then max_size, then count, sum, min and max unless a flag says they are left out, then the
 * centroid list's length and its elements: only the means when every weight is 1.
 *
 * Left out only when recomputing gives the same bits: count and the weights when every weight is
 * exactly 1.0 and count is the number of centroids; sum when adding the means as the digest's
 * compression pass adds unmerged centroids gives it; min and max when they are the first and last mean.
 */
private[sparkagg] object TDigestPacking extends StatePacking {
  private val UnitWeights = 1
  private val SumDerived = 2
  private val MinDerived = 4
  private val MaxDerived = 8
  private val One = java.lang.Double.doubleToRawLongBits(1.0)

  private def bits(d: Double): Long = java.lang.Double.doubleToRawLongBits(d)

  /** The sum the compression pass gives centroids of weight 1 it does not merge: each closes as
   *  0.0 + 1.0 * mean, added in order. The means are every other element from `from`. */
  private def unitSum(list: Array[Double], from: Int, n: Int): Double = {
    var sum = 0.0
    var i = 0
    while (i < n) { sum += 0.0 + 1.0 * list(from + 2 * i); i += 1 }
    sum
  }

  def pack(states: Array[Column], numRows: Int): Column = {
    val Array(size, sum, count, max, min, centroids) = states
    val lists = new CentroidLists(centroids)
    // Both lent to the emission's loan: at a million groups each is humongous, and new in every emission.
    val out = new ByteSink(32 * numRows + 16)
    val offsets = LargeArrays.lentOffsets(numRows)
    var r = 0
    while (r < numRows) {
      var f = 0
      while (f < states.length) {
        if (states(f).isNullAt(r)) throw new IllegalStateException("a t-digest state has no NULL fields")
        f += 1
      }
      lists.read(r)
      val values = lists.values
      val from = lists.from
      val length = lists.length
      val n = length / 2
      var unit = length % 2 == 0 && count.getDouble(r) == n
      var i = 0
      while (unit && i < n) { unit = bits(values(from + 2 * i + 1)) == One; i += 1 }
      val flags = (if (unit) UnitWeights else 0) |
        (if (unit && bits(sum.getDouble(r)) == bits(unitSum(values, from, n))) SumDerived else 0) |
        (if (n > 0 && bits(min.getDouble(r)) == bits(values(from))) MinDerived else 0) |
        (if (n > 0 && bits(max.getDouble(r)) == bits(values(from + 2 * (n - 1)))) MaxDerived else 0)
      out.byte(flags)
      out.varLong(size.getLong(r))
      if ((flags & UnitWeights) == 0) out.double(count.getDouble(r))
      if ((flags & SumDerived) == 0) out.double(sum.getDouble(r))
      if ((flags & MinDerived) == 0) out.double(min.getDouble(r))
      if ((flags & MaxDerived) == 0) out.double(max.getDouble(r))
      out.varLong(length)
      i = 0
      if (unit) while (i < n) { out.double(values(from + 2 * i)); i += 1 }
      else while (i < length) { out.double(values(from + i)); i += 1 }
      offsets(r + 1) = out.length
      r += 1
    }
    new BinaryColumn(LargeArrays.lend(out.bytes), offsets, null, numRows)
  }

  def unpack(column: Column): Array[Column] = {
    val packed = BinaryColumn.of(column)
    val n = packed.numRows
    val (sizes, sums, counts, maxs, mins) =
      (new Array[Long](n), new Array[Double](n), new Array[Double](n), new Array[Double](n), new Array[Double](n))
    val offsets = new Array[Int](n + 1)
    val summed = new Array[Long](Validity.words(n)) // rows whose sum is recomputed when asked
    // A packed element takes 8 bytes and gives at most two doubles (a mean and its weight 1).
    val flat = new Array[Double](packed.offsets(n) / 4)
    val in = new ByteSource(packed.bytes)
    var r = 0
    while (r < n) {
      in.at = packed.start(r)
      val flags = in.byte()
      sizes(r) = in.varLong()
      if ((flags & UnitWeights) == 0) counts(r) = in.double()
      if ((flags & SumDerived) == 0) sums(r) = in.double()
      if ((flags & MinDerived) == 0) mins(r) = in.double()
      if ((flags & MaxDerived) == 0) maxs(r) = in.double()
      val claimed = in.varLong()
      // Packed states are read back from shuffle files: a list length its bytes do not hold is refused
      // before it is used (the buffers above are sized by the bytes, never by a claimed length).
      val stored = if ((flags & UnitWeights) != 0) claimed / 2 else claimed
      if (claimed < 0 || claimed % 2 != 0 || stored * 8 != packed.start(r + 1) - in.at)
        throw new IllegalStateException(
          s"a packed t-digest state claims $claimed centroid values, which its ${packed.length(r)} bytes do not hold")
      val length = claimed.toInt
      val at = offsets(r)
      var i = 0
      if ((flags & UnitWeights) != 0)
        while (i < length / 2) { flat(at + 2 * i) = in.double(); flat(at + 2 * i + 1) = 1.0; i += 1 }
      else while (i < length) { flat(at + i) = in.double(); i += 1 }
      val centroids = length / 2
      if ((flags & UnitWeights) != 0) counts(r) = centroids
      if ((flags & SumDerived) != 0) Validity.set(summed, r)
      if ((flags & MinDerived) != 0) mins(r) = flat(at)
      if ((flags & MaxDerived) != 0) maxs(r) = flat(at + 2 * (centroids - 1))
      offsets(r + 1) = at + length
      r += 1
    }
    Array(
      new LongColumn(sizes, null, n),
      new UnpackedSums(sums, summed, flat, offsets, n),
      new DoubleColumn(counts, null, n),
      new DoubleColumn(maxs, null, n),
      new DoubleColumn(mins, null, n),
      new DoubleListColumn(flat, offsets, null, n)
    )
  }

  /** Unpacked sums: stored, or recomputed from the row's centroids when read. A merge never reads
   *  them (DataFusion's merge sums the centroids again), so it does not pay for them. */
  private final class UnpackedSums(stored: Array[Double], summed: Array[Long], flat: Array[Double],
      offsets: Array[Int], val numRows: Int)
    extends Column {
    def hasNulls: Boolean = false
    def isNullAt(row: Int): Boolean = false
    override def getDouble(row: Int): Double =
      if (Validity.isValid(summed, row)) unitSum(flat, offsets(row), (offsets(row + 1) - offsets(row)) / 2)
      else stored(row)
    def get(row: Int, dataType: DataType): AnyRef = java.lang.Double.valueOf(getDouble(row))
  }

  /** A growing little-endian byte array, recycled ([[LargeArrays]]); integers as zigzag LEB128. */
  private final class ByteSink(capacity: Int) {
    var bytes: Array[Byte] = LargeArrays.bytes(capacity)
    var length = 0
    private def room(n: Int): Unit =
      if (length + n > bytes.length) bytes = LargeArrays.grown(bytes, math.max(2 * bytes.length, length + n))
    def byte(b: Int): Unit = { room(1); bytes(length) = b.toByte; length += 1 }
    def varLong(v: Long): Unit = {
      room(10)
      var z = (v << 1) ^ (v >> 63)
      while ((z & ~0x7fL) != 0) { bytes(length) = ((z & 0x7f) | 0x80).toByte; length += 1; z >>>= 7 }
      bytes(length) = z.toByte
      length += 1
    }
    def double(d: Double): Unit = {
      room(8)
      var b = bits(d)
      var i = 0
      while (i < 8) { bytes(length + i) = b.toByte; b >>>= 8; i += 1 }
      length += 8
    }
  }

  private final class ByteSource(bytes: Array[Byte]) {
    var at = 0
    def byte(): Int = { at += 1; bytes(at - 1) & 0xff }
    def varLong(): Long = {
      var z = 0L
      var shift = 0
      var b = 0x80
      while ((b & 0x80) != 0) { b = byte(); z |= (b & 0x7fL) << shift; shift += 7 }
      (z >>> 1) ^ -(z & 1)
    }
    def double(): Double = {
      var b = 0L
      var i = 7
      while (i >= 0) { b = (b << 8) | (bytes(at + i) & 0xffL); i -= 1 }
      at += 8
      java.lang.Double.longBitsToDouble(b)
    }
  }
}
