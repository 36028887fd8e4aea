package sparkagg.common

import scala.collection.mutable.ArrayBuffer
import scala.util.Random

import org.scalatest.funsuite.AnyFunSuite
import sparkagg.api.EmitTo

/** The recycling of large arrays, as the tests run it (build.sbt: arrays of 64 bytes up, scribbled over
 *  when released). Lengths are odd primes, so that no other suite's arrays are of them. */
class LargeArraysSuite extends AnyFunSuite {

  test("the tests recycle arrays from 64 bytes up") {
    assert(LargeArrays.MinBytes == 64L)
  }

  test("a released array comes back for its own type and length only") {
    val a = new Array[Long](1009)
    LargeArrays.release(a)
    assert(!(LargeArrays.longs(1013) eq a))
    assert(!(LargeArrays.doubles(1009).asInstanceOf[AnyRef] eq a))
    assert(LargeArrays.longs(1009) eq a)
    assert(!(LargeArrays.longs(1009) eq a), "taken once, it is no longer free")
  }

  test("small arrays, null and object arrays are not kept") {
    val small = new Array[Long](7)
    LargeArrays.release(small)
    LargeArrays.release(null)
    LargeArrays.release(new Array[AnyRef](1019))
    assert(!(LargeArrays.longs(7) eq small))
  }

  test("copyOf keeps the prefix and zeroes the rest of a recycled array; the old one is released") {
    val dirty = Array.fill(1021)(-7L)
    LargeArrays.release(dirty)
    val old = Array.tabulate(509)(i => i.toLong + 1)
    val grown = LargeArrays.copyOf(old, 1021)
    assert(grown eq dirty)
    assert(grown.take(509).toSeq == (1L to 509L))
    assert(grown.drop(509).forall(_ == 0L))
    assert(LargeArrays.longs(509) eq old)
  }

  test("grown keeps the prefix and leaves a recycled array's rest uncleared; copyOf of a new array is all zero") {
    val dirty = Array.fill(1051)(-7)
    LargeArrays.release(dirty)
    val old = Array.tabulate(521)(_ + 1)
    val grown = LargeArrays.grown(old, 1051)
    assert(grown eq dirty)
    assert(grown.take(521).toSeq == (1 to 521))
    // The rest holds what the release left there (the tests scribble over a released array), not zeros.
    assert(grown.drop(521).forall(_ != 0), "grown clears nothing")
    assert(LargeArrays.ints(521) eq old)
    val fresh = LargeArrays.copyOf(Array.fill(523)(5L), 1061)
    assert(fresh.take(523).forall(_ == 5L) && fresh.drop(523).forall(_ == 0L))
  }

  test("zeroed arrays are zero even when recycled") {
    LargeArrays.release(Array.fill(1031)(3))
    assert(LargeArrays.zeroInts(1031).forall(_ == 0))
    LargeArrays.release(Array.fill(1033)(1.5))
    assert(LargeArrays.zeroDoubles(1033).forall(_ == 0.0))
  }

  test("an array lent under a loan comes back when the loan is repaid, not before; without a loan, never") {
    val loan = new LargeArrays.Loan
    val lent = LargeArrays.lending(loan)(LargeArrays.lend(new Array[Double](1039)))
    assert(!(LargeArrays.doubles(1039) eq lent), "lent, not yet free")
    loan.repay()
    assert(LargeArrays.doubles(1039) eq lent)
    val unowned = LargeArrays.lend(new Array[Double](1049))
    loan.repay()
    assert(!(LargeArrays.doubles(1049) eq unowned))
  }

  test("a group vector's emitted array is lent to the open loan") {
    val vector = new IntVector(initial = 4)
    vector.resize(1051)
    val loan = new LargeArrays.Loan
    val emitted = LargeArrays.lending(loan)(vector.emit(EmitTo.All))
    assert(emitted.length == 1051 && emitted.forall(_ == 4))
    loan.repay()
    assert(LargeArrays.ints(1051) eq emitted)
  }

  test("gathered lays the present groups' bytes end to end over recycled arrays, all lent to the loan") {
    // Scribbled arrays of the lengths it takes: offsets (n + 1), validity words and the bytes.
    Seq(new Array[Int](1063), new Array[Long](17), new Array[Byte](8 * 354)).foreach(LargeArrays.release)
    val arena = "xxabcdefgh".getBytes("UTF-8")
    // 1062 groups: group g is NULL when g % 3 == 1, else "abcdefgh" (g % 3 == 0) or "" (g % 3 == 2).
    val n = 1062
    val loan = new LargeArrays.Loan
    val column = LargeArrays.lending(loan)(
      BinaryColumn.gathered(n, arena, g => if (g % 3 == 1) -1 else 2, g => if (g % 3 == 0) 8 else 0))
    assert(column.offsets.length == 1063 && column.bytes.length == 8 * 354)
    for (g <- 0 until n) {
      assert(column.isNullAt(g) == (g % 3 == 1), s"group $g")
      if (g % 3 != 1) assert(column.getUTF8String(g).toString == (if (g % 3 == 0) "abcdefgh" else ""), s"group $g")
    }
    loan.repay()
    assert(LargeArrays.bytes(8 * 354) eq column.bytes)
    assert(LargeArrays.ints(1063) eq column.offsets)
  }

  test("an array given back twice is refused (the tests throw; it would go to two owners)") {
    val a = new Array[Byte](1061)
    LargeArrays.release(a)
    assertThrows[IllegalStateException](LargeArrays.release(a))
    assert(LargeArrays.bytes(1061) eq a)
    assert(!(LargeArrays.bytes(1061) eq a))
  }

  test("group vectors over recycled arrays hold what a plain buffer holds") {
    val random = new Random(20261128)
    val vectors = Seq.fill(3)(new LongVector(initial = 11L))
    val models = Seq.fill(3)(ArrayBuffer.empty[Long])
    for (_ <- 1 to 400) {
      val k = random.nextInt(3)
      val (vector, model) = (vectors(k), models(k))
      random.nextInt(10) match {
        case 0 if model.nonEmpty =>
          val n = 1 + random.nextInt(model.length)
          val emit = if (n == model.length) EmitTo.All else EmitTo.First(n)
          assert(vector.emit(emit).toSeq == model.take(n))
          model.remove(0, n)
        case 1 if model.nonEmpty =>
          val n = 1 + random.nextInt(model.length)
          vector.drop(if (n == model.length) EmitTo.All else EmitTo.First(n))
          model.remove(0, n)
        case _ =>
          val total = model.length + random.nextInt(300)
          vector.resize(total)
          while (model.length < total) model += 11L
          val array = vector.array
          for (_ <- 1 to 20 if total > 0) {
            val g = random.nextInt(total)
            val v = random.nextLong()
            array(g) = v
            model(g) = v
          }
      }
      assert(vector.length == model.length)
      assert(vector.array.take(model.length).toSeq == model)
    }
  }
}
