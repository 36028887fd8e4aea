package sparkagg.exec

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.Platform
import org.apache.spark.sql.execution.vectorized.OnHeapColumnVector
import org.apache.spark.sql.vectorized.{ColumnVector, ColumnarBatch}

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
