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

/**
 * Keys that arrive sorted, each key's rows together: a new group whenever the key changes, no hash
 * table. Emitting the first groups leaves the rest, so memory stays bounded by the groups not yet
 * emitted (the merge of spilled runs, and input already sorted by the group keys).
 */
private[exec] final class SortedKeyGroups(project: UnsafeProjection) extends GroupMap {
  private var keys = new Array[UnsafeRow](16)
  private var count = 0
  private var keyBytes = 0L

  def numGroups: Int = count

  def groupOf(row: InternalRow): Int = {
    val key = project(row)
    if (count > 0 && keys(count - 1) == key) count - 1
    else {
      if (count == keys.length) keys = Arrays.copyOf(keys, GroupVectors.grow(keys.length, count + 1))
      keys(count) = key.copy()
      keyBytes += key.getSizeInBytes + 32L
      count += 1
      count - 1
    }
  }

  def emit(emit: EmitTo): KeyRows = {
    val n = emit.count(count)
    val emitted = Arrays.copyOf(keys, n)
    System.arraycopy(keys, n, keys, 0, count - n)
    Arrays.fill(keys.asInstanceOf[Array[AnyRef]], count - n, count, null)
    count -= n
    keyBytes = keys.iterator.take(count).map(_.getSizeInBytes + 32L).sum
    emitted(_)
  }

  def size: Long = 8L * keys.length + keyBytes
}
