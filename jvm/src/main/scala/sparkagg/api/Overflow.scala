package sparkagg.api

/**
 * What an accumulator does when an exact result does not fit its type. With `fail` (ANSI mode) it
 * throws `ArithmeticException`, which the host reports as Spark's ARITHMETIC_OVERFLOW error naming the
 * function; without, the accumulator remembers the overflow and evaluates to NULL.
 */
object Overflow {
  def raise(what: String): Nothing =
    throw new ArithmeticException(s"$what overflow")
}
