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
 * Spark's own decoders, strings by this file's, which read the three encodings Spark's cache gives strings
 * (plain, run-length, dictionary). This file lives in Spark's `columnar` package for its decoders and formats.
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
          if (types(c).isInstanceOf[StringType]) decodeStrings(buffer, vectors(c), n)
          else ColumnAccessor.decompress(buffer, vectors(c), types(c), n)
          c += 1
        }
        numOutputRows += n
        new ColumnarBatch(vectors.toArray[ColumnVector], n)
      }
    }
  }

  /**
   * One cached string column's `n` rows into `to`. The column's bytes (native byte order): its NULL count, the
   * NULL rows' ordinals, its encoding's id, then the values of the other rows, each a length and its bytes,
   * as the encoding lays them out: one after another (plain); each followed by how many rows repeat it
   * (run-length); or a dictionary (its size, then its values) followed by each row's index into it.
   */
  private def decodeStrings(bytes: Array[Byte], to: OnHeapColumnVector, n: Int): Unit = {
    val in = ByteBuffer.wrap(bytes).order(ByteOrder.nativeOrder)
    val nulls = in.getInt()
    var nullsRead = 0
    def nextNull: Int = if (nullsRead < nulls) in.getInt(4 + 4 * nullsRead) else n
    var nullRow = nextNull
    in.position(4 + 4 * nulls)
    val values = in.getInt() match {
      case PassThrough.typeId => new PlainValues(in)
      case RunLengthEncoding.typeId => new RunValues(in)
      case DictionaryEncoding.typeId => new DictionaryValues(in)
      case other => throw new IllegalStateException(s"sparkagg: a cached string column in encoding $other")
    }
    var row = 0
    while (row < n) {
      if (row == nullRow) {
        to.putNull(row)
        nullsRead += 1
        nullRow = nextNull
      } else {
        values.next()
        to.putByteArray(row, bytes, values.start, values.length)
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
