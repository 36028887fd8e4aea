package sparkagg.catalyst

// Values between Catalyst and the api, both ways, in one place: the api's views (Values, ListValues) over
// Catalyst rows and arrays, and the api's values (boxed, Array[Any] lists and structs, primitive arrays)
// as Catalyst holds them.

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{GenericInternalRow, UnsafeArrayData}
import org.apache.spark.sql.catalyst.util.{ArrayData, GenericArrayData}
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.types.UTF8String
import sparkagg.api.{ListValues, Values}

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
  def copy(i: Int, dataType: DataType): AnyRef = InternalRow.copyValue(row.get(i, dataType)).asInstanceOf[AnyRef]
  def getList(i: Int): ListValues = new ArrayValues(row.getArray(i))
}

/** The api's [[ListValues]] over Catalyst's ArrayData. */
final class ArrayValues(array: ArrayData) extends ListValues {
  def numElements: Int = array.numElements()
  def isNullAt(j: Int): Boolean = array.isNullAt(j)
  def getLong(j: Int): Long = array.getLong(j)
  def getDouble(j: Int): Double = array.getDouble(j)
  override def getUTF8String(j: Int): UTF8String = array.getUTF8String(j)
  def copy(j: Int, elementType: DataType): AnyRef =
    InternalRow.copyValue(array.get(j, elementType)).asInstanceOf[AnyRef]
  private lazy val struct = new RowValues
  def getStruct(j: Int, numFields: Int): Values = { struct.row = array.getStruct(j, numFields); struct }
}

object RowValues {
  def of(row: InternalRow): RowValues = { val v = new RowValues; v.row = row; v }
}

/** From the api's values to Catalyst's: what every host and operator hands to Spark goes through here. */
object CatalystValues {
  /** The api's values for `dataType` as Catalyst holds them: an `Array[Any]` list becomes ArrayData, an
   *  `Array[Any]` struct (ordering keys) a row. */
  def toCatalyst(value: Any, dataType: DataType): Any = (value, dataType) match {
    // Primitive lists (a median's values) go to Catalyst without boxing; flat lists without a copy.
    case (longs: Array[Long], ArrayType(LongType, _)) => UnsafeArrayData.fromPrimitiveArray(longs)
    case (ints: Array[Int], ArrayType(IntegerType, _)) => UnsafeArrayData.fromPrimitiveArray(ints)
    case (doubles: Array[Double], ArrayType(DoubleType, _)) => UnsafeArrayData.fromPrimitiveArray(doubles)
    case (elements: Array[Any], ArrayType(_: ArrayType | _: StructType | _: MapType, _)) =>
      new GenericArrayData(elements.map(toCatalyst(_, dataType.asInstanceOf[ArrayType].elementType)))
    case (elements: Array[Any], ArrayType(_, _)) => new GenericArrayData(elements)
    case (fields: Array[Any], struct: StructType) =>
      new GenericInternalRow(Array.tabulate[Any](fields.length)(i => toCatalyst(fields(i), struct.fields(i).dataType)))
    case _ => value
  }
}

/**
 * The api's [[Values]] over chosen columns of a Catalyst row, in argument order: when every argument is
 * a plain column of the type the accumulator reads, the host reads the input row in place instead of
 * projecting it into a new one.
 */
final class ColumnValues(ordinals: Array[Int]) extends Values {
  var row: InternalRow = _

  def numFields: Int = ordinals.length
  def isNullAt(i: Int): Boolean = row.isNullAt(ordinals(i))
  def getBoolean(i: Int): Boolean = row.getBoolean(ordinals(i))
  def getByte(i: Int): Byte = row.getByte(ordinals(i))
  def getShort(i: Int): Short = row.getShort(ordinals(i))
  def getInt(i: Int): Int = row.getInt(ordinals(i))
  def getLong(i: Int): Long = row.getLong(ordinals(i))
  def getFloat(i: Int): Float = row.getFloat(ordinals(i))
  def getDouble(i: Int): Double = row.getDouble(ordinals(i))
  def getDecimal(i: Int, precision: Int, scale: Int): Decimal = row.getDecimal(ordinals(i), precision, scale)
  def getUTF8String(i: Int): UTF8String = row.getUTF8String(ordinals(i))
  def getBinary(i: Int): Array[Byte] = row.getBinary(ordinals(i))
  def get(i: Int, dataType: DataType): AnyRef = row.get(ordinals(i), dataType)
  def copy(i: Int, dataType: DataType): AnyRef =
    InternalRow.copyValue(row.get(ordinals(i), dataType)).asInstanceOf[AnyRef]
  def getList(i: Int): ListValues = new ArrayValues(row.getArray(ordinals(i)))
}
