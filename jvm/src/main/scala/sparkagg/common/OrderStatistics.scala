package sparkagg.common

import java.util.{TreeMap => JTreeMap}

/**
 * A multiset that finds its k-th smallest value in O(log n) when k moves little between queries, as in a
 * sliding frame, where each row adds one value and removes one: median and percentile_cont retract through
 * it instead of re-sorting the frame. Two sorted halves (value -> multiplicity): `lower` holds the k + 1
 * smallest after [[kth]]`(k)`, so the k-th is lower's greatest; a query moves values across
 * one at a time, as many as k (and the adds and removes on the wrong side) moved since the last.
 */
final class OrderStatistics[K <: AnyRef](implicit ordering: Ordering[K]) {
  private val lower = new JTreeMap[K, Array[Long]](ordering)
  private val upper = new JTreeMap[K, Array[Long]](ordering)
  private var lowerSize = 0L
  private var upperSize = 0L

  def size: Long = lowerSize + upperSize

  def add(v: K): Unit =
    if (!lower.isEmpty && ordering.lteq(v, lower.lastKey)) { put(lower, v, 1); lowerSize += 1 }
    else { put(upper, v, 1); upperSize += 1 }

  /** Takes one `v` out; false when it holds none. */
  def remove(v: K): Boolean =
    if (lower.containsKey(v)) { put(lower, v, -1); lowerSize -= 1; true }
    else if (upper.containsKey(v)) { put(upper, v, -1); upperSize -= 1; true }
    else false

  /** The k-th smallest value, from 0; k < size. */
  def kth(k: Long): K = {
    require(k >= 0 && k < size, s"rank $k of $size values")
    while (lowerSize > k + 1) {
      val v = lower.lastKey; put(lower, v, -1); lowerSize -= 1; put(upper, v, 1); upperSize += 1
    }
    while (lowerSize < k + 1) {
      val v = upper.firstKey; put(upper, v, -1); upperSize -= 1; put(lower, v, 1); lowerSize += 1
    }
    lower.lastKey
  }

  /** Every value in ascending order, each as often as it is held. */
  def foreach(f: K => Unit): Unit =
    for (half <- Seq(lower, upper)) half.forEach { (v, n) =>
      var j = 0L; while (j < n(0)) { f(v); j += 1 }
    }

  /** Entries held (distinct values), for memory accounting. */
  def entries: Int = lower.size + upper.size

  private def put(half: JTreeMap[K, Array[Long]], v: K, by: Long): Unit = {
    val n = half.get(v)
    if (n == null) half.put(v, Array(by))
    else { n(0) += by; if (n(0) == 0) half.remove(v) }
  }
}
