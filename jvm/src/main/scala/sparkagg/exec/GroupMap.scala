package sparkagg.exec

import java.util.Arrays

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{SpecificInternalRow, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.Platform
import org.apache.spark.unsafe.array.ByteArrayMethods
import org.apache.spark.sql.vectorized.ColumnarBatch
import org.apache.spark.unsafe.types.UTF8String
import sparkagg.api.EmitTo
import sparkagg.common.{BytesColumn, GroupVectors, LargeArrays}

/** The emitted groups' keys, by group index. Not an `Int => InternalRow`: a call of that boxes its index,
 *  and those boxes were a tenth of the executor's samples when emitting 1M groups. */
private[exec] trait KeyRows {
  def apply(group: Int): InternalRow
  /** Called once when no key will be asked for again: the arrays behind the keys may be recycled. */
  def release(): Unit = ()
}

/**
 * One UnsafeRow that is each of many rows in turn, their bytes copied into its own words, rather than a
 * reused row pointed at each row where it lies: pointing stores a reference per row, which costs more than
 * copying the words (docs/grouped-operator.md, "What profiles showed").
 */
private[exec] final class RowCopy(numFields: Int) {
  private val row = new UnsafeRow(numFields)
  private var words = new Array[Long](8)
  row.pointTo(words, Platform.LONG_ARRAY_OFFSET, 0)

  /** The row of `bytes` bytes at `offset` of `base`: valid until the next load. */
  def load(base: AnyRef, offset: Long, bytes: Int): UnsafeRow = {
    if (bytes > 8 * words.length) {
      words = new Array[Long](GroupVectors.grow(words.length, (bytes + 7) / 8))
      row.pointTo(words, Platform.LONG_ARRAY_OFFSET, bytes)
    }
    RowCopy.copyWords(base, offset, bytes / 8, words, 0)
    row.setTotalSize(bytes)
    row
  }
}

private[exec] object RowCopy {
  /** `n` words at `offset` of `base` into `to` from `first`, one by one: a row or key is a few words, and
   *  Platform.copyMemory's checks and call cost more than that. */
  def copyWords(base: AnyRef, offset: Long, n: Int, to: Array[Long], first: Int): Unit = {
    var w = 0
    while (w < n) { to(first + w) = Platform.getLong(base, offset + 8L * w); w += 1 }
  }
}

/**
 * Group keys to dense group indices 0, 1, 2, ...: the first new key of a batch gets the next index.
 * `emit` hands over the emitted groups' keys (a [[KeyRows]], valid as long as the caller holds it)
 * and forgets them, as the accumulators forget their groups on [[EmitTo]].
 */
private[exec] abstract class GroupMap {
  def numGroups: Int
  /** The group of the key of `row`, a new one if the key was not seen. */
  def groupOf(row: InternalRow): Int
  /** Row `i` of a batch: `groups(i)` is its group once [[finishBatch]] has run. Here at once; a table
   *  may instead read the key now and look the batch's keys up together. */
  def stage(row: InternalRow, i: Int, groups: Array[Int]): Unit = groups(i) = groupOf(row)
  /** Every row of a columnar batch staged; a table may read its key vector directly. */
  def stageBatch(batch: ColumnarBatch, groups: Array[Int]): Unit = {
    var i = 0
    while (i < batch.numRows) { stage(batch.getRow(i), i, groups); i += 1 }
  }
  /** Row `i`'s key given as a value by generated code: tables of one integer-like key ([[LongKeyMap]]) or one
   *  string key ([[RowKeyMap]] with that field as its `fieldKeys`; null: NULL) take it. */
  def stageLong(i: Int, isNull: Boolean, key: Long, groups: Array[Int]): Unit =
    throw new UnsupportedOperationException(s"${getClass.getSimpleName} takes keys in rows")
  def stageString(i: Int, key: UTF8String, groups: Array[Int]): Unit =
    throw new UnsupportedOperationException(s"${getClass.getSimpleName} takes keys in rows")
  /** Where [[stageLong]] keeps row i's key, for generated code to write it there itself (with `groups(i)` 0,
   *  or -1 for NULL), as `stageLong` would: the array stays the table's for the rows below `capacity`. */
  def stagedLongs(capacity: Int): Array[Long] =
    throw new UnsupportedOperationException(s"${getClass.getSimpleName} takes keys in rows")
  /** Completes `groups` for the batch's `n` staged rows, giving new keys groups in row order. */
  def finishBatch(n: Int, groups: Array[Int]): Unit = ()
  def emit(emit: EmitTo): KeyRows
  /** Bytes held, capacity rather than length. */
  def size: Long
}

private[exec] object GroupMap {
  /** Fibonacci hashing: spreads keys that differ in their high bits (and sequential ones) over the slots. */
  @inline def slot(hash: Long, mask: Int): Int = ((hash * 0x9e3779b97f4a7c15L) >>> 32).toInt & mask

  def emitAllOnly(emit: EmitTo, what: String): Unit =
    if (emit != EmitTo.All) throw new UnsupportedOperationException(s"$what emits all its groups at once")
}

/** No grouping keys: one group, which exists even before any row (a global aggregate of no rows). */
private[exec] final class SingleGroup extends GroupMap {
  private val empty = new SpecificInternalRow(Nil)
  def numGroups: Int = 1
  def groupOf(row: InternalRow): Int = 0
  def emit(emit: EmitTo): KeyRows = { GroupMap.emitAllOnly(emit, "a global aggregate"); _ => empty }
  def size: Long = 0L
}
