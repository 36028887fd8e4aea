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

  private val integral = Seq(ByteType, ShortType, IntegerType, LongType)
  private val moments: Seq[FunctionDef] = Seq(VarSamp, VarPop, Stddev, StddevPop)
  private val pairMoments: Seq[FunctionDef] = Seq(CovarSamp, CovarPop, Corr, RegrSlope, RegrIntercept,
    RegrCount, RegrR2, RegrAvgx, RegrAvgy, RegrSxx, RegrSyy, RegrSxy)

  private val cases: Seq[(FunctionDef, Seq[DataType])] =
    Seq(Count -> Nil, Count -> Seq(LongType), Count -> Seq(IntegerType, StringType)) ++
      numeric.flatMap(t => Seq(Sum -> Seq(t), Avg -> Seq(t))) ++
      orderable.flatMap(t => Seq(Min -> Seq(t), Max -> Seq(t))) ++
      integral.flatMap(t => Seq(BitAnd -> Seq(t), BitOr -> Seq(t), BitXor -> Seq(t))) ++
      Seq(BoolAnd -> Seq(BooleanType), BoolOr -> Seq(BooleanType)) ++
      Seq(DoubleType, IntegerType, DecimalType(10, 2)).flatMap(t => moments.map(_ -> Seq(t))) ++
      pairMoments.map(_ -> Seq(DoubleType, IntegerType)) ++
      numeric.map(Median -> Seq(_)) ++
      Seq(IntegerType, DoubleType, StringType, DateType).map(Mode -> Seq(_)) ++
      Seq(LongType, DoubleType, StringType, DecimalType(10, 2), BinaryType).map(ArrayAgg -> Seq(_)) ++
      Seq(IntegerType, LongType, StringType, BinaryType, DateType).map(ApproxDistinct -> Seq(_))

  // Welford never recovers from a NaN or infinity it has seen (it asks to be rebuilt instead, which
  // WindowSuite covers), so retract is checked on finite data.
  private def finiteForRetract(f: FunctionDef) = f.isInstanceOf[CoMomentAggregate]

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
      assert(empty.evaluate() == (if (h.call.bound.nullable) null else 0L))
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
        val rows = Gen.rows(types, 300, rnd, finite = finiteForRetract(f))
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
    assert(lenient.merged(Seq(lenient.bytes(lenient.accumulate(over)),
        lenient.bytes(lenient.accumulate(Seq(Seq(-5L))))))
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

  test("variance and regression stay exact on data with a large common offset (1e9 + noise)") {
    val rnd = new Random(1)
    val xs = Seq.fill(10000)(1e9 + rnd.nextDouble())
    val ys = xs.map(x => 3 * x + rnd.nextDouble())
    def exact(a: Seq[Double], b: Seq[Double]): BigDecimal = {
      val (ma, mb) = (a.map(BigDecimal(_)).sum / a.size, b.map(BigDecimal(_)).sum / b.size)
      a.zip(b).map { case (u, v) => (BigDecimal(u) - ma) * (BigDecimal(v) - mb) }.sum
    }
    val n = xs.size
    val expected = Seq(
      (VarSamp, exact(xs, xs) / (n - 1)), (VarPop, exact(xs, xs) / n), (CovarSamp, exact(ys, xs) / (n - 1)),
      (RegrSlope, exact(ys, xs) / exact(xs, xs)))
    for ((f, want) <- expected) {
      val pair = f.isInstanceOf[Covariance] || f.isInstanceOf[Regression]
      val h = new Harness(f, if (pair) Seq(DoubleType, DoubleType) else Seq(DoubleType))
      val rows = if (pair) ys.zip(xs).map { case (y, x) => Seq(y, x) } else xs.map(Seq(_))
      val parts = rows.grouped(n / 17 + 1).toSeq
      for (got <- Seq(h.accumulate(rows).evaluate(), h.merged(parts.map(p => h.bytes(h.accumulate(p)))).evaluate())) {
        val g = got.asInstanceOf[Double]
        assert(math.abs(g - want.toDouble) <= 1e-6 * math.abs(want.toDouble), s"${f.name}: $g vs $want")
      }
    }
    // The naive formula the test guards against: E[x^2] - E[x]^2 loses every digit here.
    val naive = xs.map(x => x * x).sum / n - math.pow(xs.sum / n, 2)
    assert(math.abs(naive - (exact(xs, xs) / n).toDouble) > 1e-3 * (exact(xs, xs) / n).toDouble)
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
