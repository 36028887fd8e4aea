package sparkagg.common

import scala.collection.mutable.ArrayBuffer
import scala.util.Random

import org.scalatest.funsuite.AnyFunSuite

/** OrderStatistics against a sorted copy of the same values, through a random walk of adds, removes and ranks. */
class OrderStatisticsSuite extends AnyFunSuite {
  test("the k-th smallest equals the sorted list's, with duplicates, as values come and go") {
    val rnd = new Random(7)
    val stats = new OrderStatistics[java.lang.Integer]
    val held = ArrayBuffer.empty[Int]
    for (step <- 0 until 20000) {
      if (held.isEmpty || rnd.nextInt(3) > 0 && held.size < 300) {
        val v = rnd.nextInt(40) - 20 // many duplicates
        stats.add(v); held += v
      } else {
        val v = held.remove(rnd.nextInt(held.size))
        assert(stats.remove(v))
      }
      assert(!stats.remove(1000))
      assert(stats.size == held.size)
      if (held.nonEmpty) {
        val sorted = held.sorted
        // a rank that drifts, as a frame's middle does, and one that jumps
        for (k <- Seq(held.size / 2, rnd.nextInt(held.size))) assert(stats.kth(k).intValue == sorted(k), s"step $step")
      }
    }
    val listed = ArrayBuffer.empty[Int]
    stats.foreach(v => listed += v.intValue)
    assert(listed == held.sorted)
  }
}
