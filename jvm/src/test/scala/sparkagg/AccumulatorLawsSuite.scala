package sparkagg

import scala.util.Random

import org.apache.spark.sql.types._
import org.scalatest.funsuite.AnyFunSuite
import sparkagg.api.FunctionDef
import sparkagg.functions._

/**
 * The laws every accumulator must keep for Spark's multi-phase aggregation to be right: state survives
 * serialization, merge is commutative and associative, the result does not depend on how rows are
 * split into partitions, and retract undoes update.
 */
class AccumulatorLawsSuite extends AnyFunSuite {
  private val numeric = Seq(ByteType, IntegerType, LongType, FloatType, DoubleType,
    DecimalType(10, 2), DecimalType(30, 5))
  private val orderable = numeric ++ Seq(StringType, BinaryType, BooleanType, DateType, TimestampType)

  private val cases: Seq[(FunctionDef, Seq[DataType])] =
    Seq(Count -> Nil, Count -> Seq(LongType), Count -> Seq(IntegerType, StringType)) ++
      numeric.flatMap(t => Seq(Sum -> Seq(t), Avg -> Seq(t))) ++
      orderable.flatMap(t => Seq(Min -> Seq(t), Max -> Seq(t)))

  private def label(f: FunctionDef, ts: Seq[DataType]) = s"${f.name}${ts.map(_.simpleString).mkString("(", ", ", ")")}"

  for ((f, types) <- cases) {
    val h = new Harness(f, types)
    val rnd = new Random(label(f, types).hashCode)
    def split(rows: Seq[Seq[Any]], parts: Int): Seq[Seq[Seq[Any]]] = {
      val assigned = rows.groupBy(_ => rnd.nextInt(parts))
      (0 until parts).map(assigned.getOrElse(_, Nil))
    }

    test(s"${label(f, types)}: state round trip, empty input") {
      val rows = Gen.rows(types, 200, rnd)
      val acc = h.accumulate(rows)
      val bytes = h.bytes(acc)
      val back = h.merged(Seq(bytes))
      assert(Gen.same(back.evaluate(), h.accumulate(rows).evaluate()))
      assert(h.bytes(back).sameElements(bytes))
      val empty = h.merged(Seq(h.bytes(h.accumulate(Nil))))
      assert(empty.evaluate() == (if (f == Count) 0L else null))
    }

    test(s"${label(f, types)}: merge is commutative and associative") {
      val Seq(a, b, c) = Seq.fill(3)(h.bytes(h.accumulate(Gen.rows(types, 50, rnd))))
      assert(Gen.same(h.merged(Seq(a, b)).evaluate(), h.merged(Seq(b, a)).evaluate()))
      val left = h.merged(Seq(h.bytes(h.merged(Seq(a, b))), c)).evaluate()
      val right = h.merged(Seq(a, h.bytes(h.merged(Seq(b, c))))).evaluate()
      assert(Gen.same(left, right), s"$left vs $right")
    }

    test(s"${label(f, types)}: result independent of 1, 3 and 17 partitions") {
      val rows = Gen.rows(types, 500, rnd)
      val whole = h.accumulate(rows).evaluate()
      for (parts <- Seq(1, 3, 17)) {
        val result = h.merged(split(rows, parts).map(p => h.bytes(h.accumulate(p)))).evaluate()
        assert(Gen.same(result, whole), s"$parts partitions: $result vs $whole")
      }
    }

    if (h.call.bound.newSlidingAccumulator.isDefined || h.call.newAccumulator().supportsRetract) {
      test(s"${label(f, types)}: retracting the oldest rows leaves the result of the rest") {
        val rows = Gen.rows(types, 300, rnd)
        val (leaving, staying) = rows.splitAt(120)
        val acc = h.feed(h.sliding(rows), leaving, retract = true)
        assert(Gen.same(acc.evaluate(), h.accumulate(staying).evaluate()))
        h.feed(acc, staying, retract = true)
        assert(Gen.same(acc.evaluate(), h.accumulate(Nil).evaluate()))
      }
    }
  }

  test("bigint sum is exact: an overflow that cancels out is none; one that stays is an error or NULL") {
    val rows = Seq(Seq(Long.MaxValue), Seq(1L), Seq(-1L))
    assert(new Harness(Sum, Seq(LongType)).accumulate(rows).evaluate() == Long.MaxValue)
    val over = rows.take(2)
    intercept[ArithmeticException](new Harness(Sum, Seq(LongType)).accumulate(over).evaluate())
    val lenient = new Harness(Sum, Seq(LongType), failOnOverflow = false)
    assert(lenient.accumulate(over).evaluate() == null)
    // An overflowed partial state stays overflowed through the final merge.
    assert(lenient.merged(Seq(lenient.bytes(lenient.accumulate(over)), lenient.bytes(lenient.accumulate(Seq(Seq(-5L))))))
      .evaluate() == null)
  }

  test("a sliding double sum and avg recover once an infinity has left the frame") {
    for ((f, expected) <- Seq(Sum -> 3.0, Avg -> 1.5)) {
      val h = new Harness(f, Seq(DoubleType))
      val acc = h.sliding(Seq(Seq(Double.PositiveInfinity), Seq(1.0), Seq(2.0)))
      assert(acc.evaluate() == Double.PositiveInfinity)
      h.feed(acc, Seq(Seq(Double.PositiveInfinity)), retract = true)
      assert(acc.evaluate() == expected)
    }
  }

  test("a corrupt or foreign state is refused with a message naming the function") {
    val avg = new Harness(Avg, Seq(DoubleType))
    val good = avg.bytes(avg.accumulate(Seq(Seq(1.0), Seq(2.0))))
    def refused(bytes: Array[Byte]): String = intercept[IllegalArgumentException](avg.merged(Seq(bytes))).getMessage
    assert(refused(good.take(5)).contains("avg"))
    assert(refused(good.updated(0, 0.toByte)).contains("not a sparkagg state"))
    assert(refused(good.updated(1, 9.toByte)).contains("format version 9"))
    val sum = new Harness(Sum, Seq(DoubleType))
    assert(refused(sum.bytes(sum.accumulate(Seq(Seq(1.0))))).contains("another function"))
  }
}
