package sparkagg.api

/**
 * The state of one aggregate for one group: DataFusion's `Accumulator`, row by row.
 *
 * The host calls [[update]] for each input row of a group, [[state]] when a partial aggregate hands its
 * result on, [[merge]] for each state received from another partial aggregate, and [[evaluate]] once for
 * the final value. A sliding window calls [[retract]] for rows that leave the frame when
 * [[supportsRetract]] is true.
 *
 * Contract:
 *  - `update`, `merge` and `retract` are the hot path: they must not allocate per row in the common case.
 *  - `state()` returns one value per field of the function's declared state schema, in Spark's internal
 *    representation (java.lang.Long, java.lang.Double, Decimal, UTF8String, ...; `null` for NULL), and
 *    an `Array[Any]` of such values for a list field (its elements always nullable, as DataFusion
 *    declares list states), or, for a list of bigint, int or double without NULLs, an `Array[Long]`,
 *    `Array[Int]` or `Array[Double]` (no boxing).
 *    `merge` receives exactly such a row back, possibly produced by another JVM.
 *  - `evaluate()` returns the final value in Spark's internal representation (an `Array[Any]` for an
 *    array result), or `null`.
 *  - Integer overflow throws `ArithmeticException`; the host turns it into Spark's overflow error.
 *  - `size` is the bytes held, counting capacity rather than length (it feeds memory accounting).
 */
trait Accumulator {
  def update(args: Values): Unit
  def merge(state: Values): Unit
  def state(): Array[Any]
  def evaluate(): Any
  def size: Long

  /** Undo the effect of `update(args)`; only called when [[supportsRetract]]. */
  def retract(args: Values): Unit =
    throw new UnsupportedOperationException(s"${getClass.getName} does not support retract")
  def supportsRetract: Boolean = false

  /**
   * True when retract can no longer restore an exact state, e.g. Welford's moments once a NaN has
   * entered and left the frame: a sliding window then rebuilds the accumulator from the frame's rows.
   */
  def needsRebuild: Boolean = false
}
