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

/** Every row a group of its own: the keys of rows passed on as states when partial aggregation is skipped. */
private[exec] final class RowPerGroup(project: UnsafeProjection) extends GroupMap {
  private var keys = new Array[UnsafeRow](16)
  private var count = 0

  def numGroups: Int = count

  def groupOf(row: InternalRow): Int = {
    if (count == keys.length) keys = Arrays.copyOf(keys, GroupVectors.grow(keys.length, count + 1))
    keys(count) = project(row).copy()
    count += 1
    count - 1
  }

  def emit(emit: EmitTo): KeyRows = {
    GroupMap.emitAllOnly(emit, "a batch of rows")
    val emitted = keys
    keys = new Array[UnsafeRow](16)
    count = 0
    emitted(_)
  }

  def size: Long = 8L * keys.length
}
