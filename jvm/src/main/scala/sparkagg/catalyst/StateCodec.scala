package sparkagg.catalyst

import java.nio.ByteBuffer

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.types.StructType
import org.apache.spark.unsafe.Platform

/**
 * The bytes a partial aggregate hands to the final one: a 6-byte header, then the state as an UnsafeRow
 * of the function's state schema (the layout Spark itself shuffles, so no second format to maintain).
 *
 * Header: magic 0xDA, format version, and a fingerprint of the function name and state schema, so a
 * state from another function, another argument type or another sparkagg version is refused with a
 * clear message instead of being misread.
 */
final class StateCodec(functionName: String, schema: StructType) {
  import StateCodec._

  private val fingerprint: Int = (functionName + ":" + schema.catalogString).hashCode
  private lazy val toUnsafe = UnsafeProjection.create(schema)
  private val fixedWidth = UnsafeRow.calculateBitSetWidthInBytes(schema.length) + 8 * schema.length
  private val variableFields = schema.fields.indices.filterNot(i => UnsafeRow.isFixedLength(schema(i).dataType))

  def encode(state: InternalRow): Array[Byte] = {
    val row = toUnsafe(state)
    val out = new Array[Byte](HeaderSize + row.getSizeInBytes)
    ByteBuffer.wrap(out).put(Magic).put(Version).putInt(fingerprint)
    row.writeToMemory(out, Platform.BYTE_ARRAY_OFFSET + HeaderSize)
    out
  }

  def decode(bytes: Array[Byte]): InternalRow = {
    if (bytes == null || bytes.length < HeaderSize + fixedWidth) corrupt(bytes, "too short")
    val header = ByteBuffer.wrap(bytes)
    if (header.get() != Magic) corrupt(bytes, "not a sparkagg state")
    val version = header.get()
    if (version != Version) corrupt(bytes, s"format version $version, this sparkagg reads $Version")
    if (header.getInt() != fingerprint) corrupt(bytes, "state of another function or argument type")
    val row = new UnsafeRow(schema.length)
    val length = bytes.length - HeaderSize
    row.pointTo(bytes, Platform.BYTE_ARRAY_OFFSET + HeaderSize, length)
    variableFields.foreach { i =>
      if (!row.isNullAt(i)) {
        val offsetAndSize = row.getLong(i)
        val offset = (offsetAndSize >>> 32).toInt
        val size = offsetAndSize.toInt
        if (offset < fixedWidth || size < 0 || offset.toLong + size > length) corrupt(bytes, s"field $i out of bounds")
      }
    }
    row
  }

  private def corrupt(bytes: Array[Byte], why: String): Nothing =
    throw new IllegalArgumentException(
      s"sparkagg: cannot read the aggregation state of $functionName ($why; " +
        s"${if (bytes == null) "null" else s"${bytes.length} bytes"}; expected ${schema.simpleString})")
}

object StateCodec {
  val Magic: Byte = 0xda.toByte
  val Version: Byte = 1
  val HeaderSize = 6
}
