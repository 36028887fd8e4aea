package sparkagg.common

import java.util.Comparator

import org.apache.spark.sql.sparkagg.SparkInternals
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.types.{ByteArray, UTF8String}
import sparkagg.api.{Column, Values}

/** How values of one Spark type are read, boxed and ordered; chosen once per call, not per row. */
private[sparkagg] sealed trait ValueKind {
  def dataType: DataType
  def read(v: Values, i: Int): AnyRef
  def ordering: Comparator[AnyRef]
}

private[sparkagg] object ValueKind {
  /** Types whose values fit a Long with the same order: integers, boolean, date, timestamps. */
  final class LongLike(val dataType: DataType) extends ValueKind {
    // The physical read, chosen once: a switch on an int per row, not a match on the DataType.
    private val physical = dataType match {
      case BooleanType => 0
      case ByteType => 1
      case ShortType => 2
      case IntegerType | DateType => 3
      case _ => 4
    }
    def readLong(v: Values, i: Int): Long = (physical: @scala.annotation.switch) match {
      case 0 => if (v.getBoolean(i)) 1L else 0L
      case 1 => v.getByte(i)
      case 2 => v.getShort(i)
      case 3 => v.getInt(i)
      case _ => v.getLong(i)
    }
    def box(x: Long): AnyRef = (physical: @scala.annotation.switch) match {
      case 0 => java.lang.Boolean.valueOf(x != 0)
      case 1 => java.lang.Byte.valueOf(x.toByte)
      case 2 => java.lang.Short.valueOf(x.toShort)
      case 3 => java.lang.Integer.valueOf(x.toInt)
      case _ => java.lang.Long.valueOf(x)
    }
    def readLong(c: Column, row: Int): Long = (physical: @scala.annotation.switch) match {
      case 0 => if (c.getBoolean(row)) 1L else 0L
      case 1 => c.getByte(row)
      case 2 => c.getShort(row)
      case 3 => c.getInt(row)
      case _ => c.getLong(row)
    }
    def read(v: Values, i: Int): AnyRef = java.lang.Long.valueOf(readLong(v, i))
    val ordering: Comparator[AnyRef] = (a, b) => java.lang.Long.compare(a.asInstanceOf[Long], b.asInstanceOf[Long])
  }

  /** float and double, in the total order of `java.lang.Double.compare` (NaN greatest). */
  final class DoubleLike(val dataType: DataType) extends ValueKind {
    private val isFloat = dataType == FloatType
    def readDouble(v: Values, i: Int): Double = if (isFloat) v.getFloat(i).toDouble else v.getDouble(i)
    def readDouble(c: Column, row: Int): Double = if (isFloat) c.getFloat(row).toDouble else c.getDouble(row)
    def box(x: Double): AnyRef = if (isFloat) java.lang.Float.valueOf(x.toFloat) else java.lang.Double.valueOf(x)
    def read(v: Values, i: Int): AnyRef = java.lang.Double.valueOf(readDouble(v, i))
    val ordering: Comparator[AnyRef] =
      (a, b) => java.lang.Double.compare(a.asInstanceOf[Double], b.asInstanceOf[Double])
  }

  /** decimal, string and binary: kept as copies of Spark's own objects. */
  final class ObjectLike(val dataType: DataType) extends ValueKind {
    def read(v: Values, i: Int): AnyRef = dataType match {
      case t: DecimalType => v.getDecimal(i, t.precision, t.scale).clone()
      case BinaryType => v.getBinary(i).clone()
      case _ => v.getUTF8String(i).clone()
    }
    val ordering: Comparator[AnyRef] = dataType match {
      case _: DecimalType => (a, b) => a.asInstanceOf[Decimal].compare(b.asInstanceOf[Decimal])
      case BinaryType => (a, b) => ByteArray.compareBinary(a.asInstanceOf[Array[Byte]], b.asInstanceOf[Array[Byte]])
      case _ => (a, b) => SparkInternals.compareUtf8(a.asInstanceOf[UTF8String], b.asInstanceOf[UTF8String])
    }
  }

  /** Bytes held by a kept object value. */
  def sizeOf(x: AnyRef): Long = x match {
    case null => 0
    case s: UTF8String => 24 + s.numBytes
    case b: Array[Byte] => 16 + b.length
    case _ => 48
  }

  def of(t: DataType): ValueKind = t match {
    case FloatType | DoubleType => new DoubleLike(t)
    case _: DecimalType | BinaryType | _: StringType => new ObjectLike(t)
    case _ => new LongLike(t)
  }
}
