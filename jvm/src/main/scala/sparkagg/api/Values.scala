package sparkagg.api

import org.apache.spark.sql.types.{DataType, Decimal, StringType}
import org.apache.spark.unsafe.types.UTF8String

/**
 * A read-only view of one row of values: the arguments of one input row, or one serialized state.
 *
 * Getters return Spark's internal representations (`UTF8String`, `Decimal`, dates as days in an Int,
 * timestamps as microseconds in a Long) so that reading a primitive allocates nothing. The host reuses
 * one view for every row: an accumulator must copy what it keeps (`UTF8String.clone()`, `Decimal.clone()`).
 */
trait Values {
  def numFields: Int
  def isNullAt(i: Int): Boolean
  def getBoolean(i: Int): Boolean
  def getByte(i: Int): Byte
  def getShort(i: Int): Short
  def getInt(i: Int): Int
  def getLong(i: Int): Long
  def getFloat(i: Int): Float
  def getDouble(i: Int): Double
  def getDecimal(i: Int, precision: Int, scale: Int): Decimal
  def getUTF8String(i: Int): UTF8String
  def getBinary(i: Int): Array[Byte]
  /** Any field, boxed; for the rare paths where the type is only known at run time. */
  def get(i: Int, dataType: DataType): AnyRef
  /** A field as a copy that stays valid after the row is gone (strings, decimals, nested values). */
  def copy(i: Int, dataType: DataType): AnyRef
  /** A list field (array<T>): state lists, or array arguments. */
  def getList(i: Int): ListValues
}

/** A read-only view of a list value; elements in Spark's internal representation, as in [[Values]]. */
trait ListValues {
  def numElements: Int
  def isNullAt(j: Int): Boolean
  def getLong(j: Int): Long
  def getDouble(j: Int): Double
  /** A string element as a view, valid while the list is. */
  def getUTF8String(j: Int): UTF8String = copy(j, StringType).asInstanceOf[UTF8String]
  /** An element as a copy that stays valid after the list is gone. */
  def copy(j: Int, elementType: DataType): AnyRef
  /** A struct element (ordering keys in a state), as a view valid until the next call. */
  def getStruct(j: Int, numFields: Int): Values
}
