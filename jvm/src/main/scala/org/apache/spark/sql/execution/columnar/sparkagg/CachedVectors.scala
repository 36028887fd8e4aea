package org.apache.spark.sql.execution.columnar.sparkagg

import java.nio.{ByteBuffer, ByteOrder}

import org.apache.spark.rdd.RDD
import org.apache.spark.sql.execution.columnar.{ColumnAccessor, DefaultCachedBatch, DefaultCachedBatchSerializer, InMemoryTableScanExec}
import org.apache.spark.sql.execution.columnar.compression.{DictionaryEncoding, PassThrough, RunLengthEncoding}
import org.apache.spark.sql.execution.vectorized.OnHeapColumnVector
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.types._
import org.apache.spark.sql.vectorized.{ColumnVector, ColumnarBatch}

/**
 * A cached table's batches (Spark's default cache format) as column vectors, strings included, for sparkagg's
 * grouped operator. Spark itself decodes a cached table into vectors only when every column of the table is
 * a number or a boolean, and even then cannot decode a string column (`ColumnAccessor.decompress`): any other
 * table is read by building an UnsafeRow per row, which cost a quarter of an aggregation of strings at 1M
 * groups. Here the columns the scan reads are decoded one by one: numbers, booleans, dates and timestamps by
 * Spark's own decoders; strings and decimals of at most 18 digits by this file's, which read the encodings
 * Spark's cache gives them (strings: plain, run-length, dictionary; such decimals: plain unscaled longs).
 * Wider decimals (stored as their unscaled bytes) keep the row path. This file lives in Spark's `columnar`
 * package for its decoders and formats.
 */
object CachedVectors {

  /** Whether [[batches]] reads `scan`'s columns: the default cache format, each column of a type decoded here. */
  def decodes(scan: InMemoryTableScanExec): Boolean =
    scan.relation.cacheBuilder.serializer.isInstanceOf[DefaultCachedBatchSerializer] &&
      scan.attributes.forall(a => decodable(a.dataType))

  private def decodable(t: DataType): Boolean = t match {
    case BooleanType | ByteType | ShortType | IntegerType | LongType | FloatType | DoubleType => true
    case DateType | TimestampType | TimestampNTZType => true
    case _: StringType => true
    case t: DecimalType => t.precision <= Decimal.MAX_LONG_DIGITS
    case _ => false
  }

  /**
   * The batches of `scan`'s columns, as the scan would offer them: the cached batches its predicates do not
   * rule out (when Spark prunes them), its output rows counted in its metric. A partition's vectors are
   * reused from one batch to the next, as a Parquet scan's are.
   */
  def batches(scan: InMemoryTableScanExec): RDD[ColumnarBatch] = {
    val relation = scan.relation
    val cached = relation.cacheBuilder.cachedColumnBuffers
    val kept =
      if (!SQLConf.get.inMemoryPartitionPruning) cached
      else cached.mapPartitionsWithIndex(relation.cacheBuilder.serializer.buildFilter(scan.predicates, relation.output))
    val ordinals = scan.attributes.map(a => relation.output.indexWhere(_.exprId == a.exprId)).toArray
    val types = scan.attributes.map(_.dataType).toArray
    val numOutputRows = scan.longMetric("numOutputRows")
    kept.mapPartitions { batches =>
      var vectors: Array[OnHeapColumnVector] = null
      var capacity = 0
      batches.map { cachedBatch =>
        val batch = cachedBatch.asInstanceOf[DefaultCachedBatch]
        val n = batch.numRows
        if (n > capacity) {
          vectors = types.map(new OnHeapColumnVector(n, _))
          capacity = n
        }
        var c = 0
        while (c < types.length) {
          vectors(c).reset()
          val buffer = batch.buffers(ordinals(c))
          types(c) match {
            case _: StringType => decodeStrings(buffer, vectors(c), n)
            case t: DecimalType => decodeDecimals(buffer, vectors(c), t, n)
            case t => ColumnAccessor.decompress(buffer, vectors(c), t, n)
          }
          c += 1
        }
        numOutputRows += n
        new ColumnarBatch(vectors.toArray[ColumnVector], n)
      }
    }
  }

  /**
   * A cached column's bytes (native byte order): its NULL count, the NULL rows' ordinals, its encoding's id,
   * then the values of the other rows as the encoding lays them out. `in` is at the values once built.
   */
  private final class CachedColumn(bytes: Array[Byte], n: Int) {
    val in: ByteBuffer = ByteBuffer.wrap(bytes).order(ByteOrder.nativeOrder)
    private val nulls = in.getInt()
    private var nullsRead = 0
    private var nullRow = nextNull
    in.position(4 + 4 * nulls)
    val encoding: Int = in.getInt()

    private def nextNull: Int = if (nullsRead < nulls) in.getInt(4 + 4 * nullsRead) else n

    /** Whether `row` is NULL; asked of every row in turn, from the first. */
    def isNull(row: Int): Boolean =
      if (row != nullRow) false
      else {
        nullsRead += 1
        nullRow = nextNull
        true
      }
  }

  /**
   * One cached string column's `n` rows into `to`. Each non-NULL value is a length and its bytes: one after
   * another (plain); each followed by how many rows repeat it (run-length); or a dictionary (its size, then its
   * values) followed by each row's index into it.
   */
  private def decodeStrings(bytes: Array[Byte], to: OnHeapColumnVector, n: Int): Unit = {
    val column = new CachedColumn(bytes, n)
    val values = column.encoding match {
      case PassThrough.typeId => new PlainValues(column.in)
      case RunLengthEncoding.typeId => new RunValues(column.in)
      case DictionaryEncoding.typeId => new DictionaryValues(column.in)
      case other => throw new IllegalStateException(s"sparkagg: a cached string column in encoding $other")
    }
    var row = 0
    while (row < n) {
      if (column.isNull(row)) to.putNull(row)
      else {
        values.next()
        to.putByteArray(row, bytes, values.start, values.length)
      }
      row += 1
    }
  }

  /**
   * One cached column of decimals of type `t` (at most 18 digits) into `to`: the cache keeps each non-NULL
   * value as its unscaled long, always plain (no other encoding takes such decimals); a vector keeps one of at
   * most 9 digits as an int.
   */
  private def decodeDecimals(bytes: Array[Byte], to: OnHeapColumnVector, t: DecimalType, n: Int): Unit = {
    val column = new CachedColumn(bytes, n)
    if (column.encoding != PassThrough.typeId)
      throw new IllegalStateException(s"sparkagg: a cached decimal column in encoding ${column.encoding}")
    val asInt = t.precision <= Decimal.MAX_INT_DIGITS
    var row = 0
    while (row < n) {
      if (column.isNull(row)) to.putNull(row)
      else {
        val unscaled = column.in.getLong()
        if (asInt) to.putInt(row, unscaled.toInt) else to.putLong(row, unscaled)
      }
      row += 1
    }
  }

  /** The values of a string column's non-NULL rows in order: after `next()`, where the row's bytes are. */
  private abstract class StringValues(in: ByteBuffer) {
    var start = 0
    var length = 0
    def next(): Unit
    /** The length-prefixed value at the buffer's position into start and length; the position past it. */
    protected def read(): Unit = {
      length = in.getInt()
      start = in.position()
      in.position(start + length)
    }
  }

  private final class PlainValues(in: ByteBuffer) extends StringValues(in) {
    def next(): Unit = read()
  }

  private final class RunValues(in: ByteBuffer) extends StringValues(in) {
    private var left = 0
    def next(): Unit = {
      if (left == 0) { read(); left = in.getInt() }
      left -= 1
    }
  }

  private final class DictionaryValues(in: ByteBuffer) extends StringValues(in) {
    private val size = in.getInt()
    private val starts = new Array[Int](size)
    private val lengths = new Array[Int](size)
    for (i <- 0 until size) { read(); starts(i) = start; lengths(i) = length }
    def next(): Unit = {
      val i = in.getShort()
      start = starts(i)
      length = lengths(i)
    }
  }
}
