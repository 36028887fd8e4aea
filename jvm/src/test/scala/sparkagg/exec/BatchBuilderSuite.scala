package sparkagg.exec

import scala.util.Random

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{BoundReference, UnsafeProjection}
import org.apache.spark.sql.types._
import org.scalatest.funsuite.AnyFunSuite
import sparkagg.common.DecimalColumn

/**
 * The operator's batches of decimal fields: each value gathered from a row comes back as the same decimal,
 * and as the same unscaled number, whether the row is a shuffled UnsafeRow (its bytes decoded in place) or
 * another row (read through getDecimal).
 */
class BatchBuilderSuite extends AnyFunSuite {
  private val types = Seq(DecimalType(38, 4), DecimalType(22, 2), DecimalType(12, 2), DecimalType(5, 0))

  /** Edge values of `t` (zero, one unit either way, the largest either way, around 2^63 and 2^64) and
   *  random ones of every digit count, NULLs among them. */
  private def values(t: DecimalType, rnd: Random): Seq[Option[Decimal]] = {
    val top = BigInt(10).pow(t.precision) - 1
    val edges = Seq(
      BigInt(0),
      BigInt(1),
      BigInt(-1),
      top,
      -top,
      BigInt(Long.MaxValue),
      BigInt(Long.MinValue),
      BigInt(Long.MaxValue) + 1,
      BigInt(Long.MinValue) - 1,
      BigInt(2).pow(64),
      -BigInt(2).pow(64),
      BigInt(2).pow(64) - 1,
      BigInt(255),
      BigInt(-256),
      BigInt(-255)
    )
    val random = Seq.fill(300)(BigInt(t.precision * 4, rnd).mod(BigInt(10).pow(1 + rnd.nextInt(t.precision))) *
      (if (rnd.nextBoolean()) 1 else -1))
    val unscaled = (edges ++ random).filter(_.abs <= top)
    unscaled.map(u => Some(Decimal(BigDecimal(u, t.scale), t.precision, t.scale))) ++ Seq(None, None)
  }

  for (t <- types) test(s"$t fields gathered from UnsafeRows and from other rows: the same values") {
    val rnd = new Random(t.precision)
    val expected = rnd.shuffle(values(t, rnd))
    val generic = expected.map(v => InternalRow(v.orNull))
    val toUnsafe = UnsafeProjection.create(Seq(BoundReference(0, t, nullable = true)))
    for ((rows, how) <- Seq(generic.map(toUnsafe(_).copy()) -> "UnsafeRow", generic -> "generic row")) {
      val builder = new BatchBuilder(Seq(0 -> t), rows.size)
      rows.zipWithIndex.foreach { case (row, i) => builder.append(row, i) }
      val column = builder.columns(rows.size).head.asInstanceOf[DecimalColumn]
      expected.zipWithIndex.foreach {
        case (None, i) => assert(column.isNullAt(i), s"$how row $i")
        case (Some(d), i) =>
          assert(!column.isNullAt(i), s"$how row $i")
          assert(column.getDecimal(i, t.precision, t.scale) == d, s"$how row $i")
          assert(column.unscaled(i) == d.toJavaBigDecimal.unscaledValue, s"$how row $i")
      }
    }
  }
}
