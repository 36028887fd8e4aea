package sparkagg.api

import org.apache.spark.sql.types._
import org.apache.spark.unsafe.types.UTF8String

/**
 * A batch of columns, the input of a [[GroupsAccumulator]]: the arguments of `numRows` rows (cast to the
 * types of [[Bound.coerceTo]]), or the state fields of `numRows` states. `count(*)` has no columns but
 * still a row count. The api knows nothing of Catalyst: an operator wraps Spark's ColumnVectors (or rows
 * it has buffered) as [[Column]]s, and the accumulators' outputs are columns of this file's kinds.
 */
trait Columns {
  def numRows: Int
  def numColumns: Int
  def column(i: Int): Column
}

object Columns {
  def apply(numRows: Int, columns: Column*): Columns = new ColumnArray(numRows, columns.toArray)
  def of(numRows: Int, columns: Array[Column]): Columns = new ColumnArray(numRows, columns)
}

final class ColumnArray(val numRows: Int, columns: Array[Column]) extends Columns {
  def numColumns: Int = columns.length
  def column(i: Int): Column = columns(i)
  override def toString: String = s"Columns($numRows rows, ${columns.mkString(", ")})"
}

/**
 * One column of a batch, read by row position; values in Spark's internal representation, as in
 * [[Values]] (dates as days in an Int, timestamps as microseconds in a Long, UTF8String, Decimal). Getters
 * read primitives without allocating, so a native accumulator loops over a column as over an array.
 * `hasNulls` false promises that no row is NULL (it picks NullState's faster paths); true only says
 * there may be some. Only the getters of the column's own type need to work.
 */
abstract class Column {
  def numRows: Int
  def hasNulls: Boolean
  def isNullAt(row: Int): Boolean
  def getBoolean(row: Int): Boolean = unsupported("boolean")
  def getByte(row: Int): Byte = unsupported("tinyint")
  def getShort(row: Int): Short = unsupported("smallint")
  def getInt(row: Int): Int = unsupported("int")
  def getLong(row: Int): Long = unsupported("bigint")
  def getFloat(row: Int): Float = unsupported("float")
  def getDouble(row: Int): Double = unsupported("double")
  def getDecimal(row: Int, precision: Int, scale: Int): Decimal = unsupported("decimal")
  def getUTF8String(row: Int): UTF8String = unsupported("string")
  def getBinary(row: Int): Array[Byte] = unsupported("binary")
  def getList(row: Int): ListValues = unsupported("array")
  /** A value boxed, as Spark's internal representation of `dataType`; null for NULL. */
  def get(row: Int, dataType: DataType): AnyRef
  /** A value as a copy that stays valid after the batch is gone. */
  def copy(row: Int, dataType: DataType): AnyRef = get(row, dataType)

  protected def unsupported(what: String): Nothing =
    throw new UnsupportedOperationException(s"${getClass.getSimpleName} cannot be read as $what")
}
