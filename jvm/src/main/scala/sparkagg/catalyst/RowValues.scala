package sparkagg.catalyst

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.types.{DataType, Decimal}
import org.apache.spark.unsafe.types.UTF8String
import sparkagg.api.Values

/** The api's [[Values]] over a Catalyst row; one instance is re-pointed at each row. */
final class RowValues extends Values {
  var row: InternalRow = _

  def numFields: Int = row.numFields
  def isNullAt(i: Int): Boolean = row.isNullAt(i)
  def getBoolean(i: Int): Boolean = row.getBoolean(i)
  def getByte(i: Int): Byte = row.getByte(i)
  def getShort(i: Int): Short = row.getShort(i)
  def getInt(i: Int): Int = row.getInt(i)
  def getLong(i: Int): Long = row.getLong(i)
  def getFloat(i: Int): Float = row.getFloat(i)
  def getDouble(i: Int): Double = row.getDouble(i)
  def getDecimal(i: Int, precision: Int, scale: Int): Decimal = row.getDecimal(i, precision, scale)
  def getUTF8String(i: Int): UTF8String = row.getUTF8String(i)
  def getBinary(i: Int): Array[Byte] = row.getBinary(i)
  def get(i: Int, dataType: DataType): AnyRef = row.get(i, dataType)
}

object RowValues {
  def of(row: InternalRow): RowValues = { val v = new RowValues; v.row = row; v }
}
