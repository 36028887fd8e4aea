package sparkagg.api

import org.apache.spark.sql.types.{DoubleType, LongType, StructType}
import sparkagg.compat._

/** Why a state cannot be one any accumulator of the function made: the state field, and the reason. */
final case class StateFault(field: String, why: String)

/**
 * A check of one state given by a user (`_merge`, `_merge_state`, `_finalize`, the finalize UDFs): states
 * are read from tables anyone may write, and a forged one (a negative count, lists of different lengths)
 * would otherwise give a wrong value or NULL without a word. A function declares it on its [[Bound]] where
 * its state is defined; the host runs it on user-given states only, never in the merge of its own partial
 * states. Fields are named as in the state schema.
 */
trait StateCheck extends Serializable {
  /** The first fault of `state`, a row of `schema`; None when some accumulator could have made it. */
  def apply(schema: StructType, state: Values): Option[StateFault]
}

object StateCheck {
  /** Every state is one some input makes (min, max, bit_and, ...: a state is any value of the type). */
  val AcceptAll: StateCheck = (_, _) => None

  /** The first fault of any of `checks`. */
  def all(checks: StateCheck*): StateCheck = (schema, state) => checks.iterator.flatMap(_(schema, state)).nextOption()

  /** The error for a user-given state with `fault`, naming the SQL function it was given to. */
  def refuse(sqlName: String, fault: StateFault): SparkAggIllegalArgumentException =
    SparkAggError.illegalArgument(SparkAggError.InvalidState, s"$sqlName: invalid state, ${fault.field}: ${fault.why}")

  /** A count or a sum of squares (bigint or double): never below zero. NULL is left to other checks. */
  def nonNegative(field: String): StateCheck = (schema, state) => {
    val i = schema.fieldIndex(field)
    if (state.isNullAt(i)) None
    else schema(i).dataType match {
      case LongType if state.getLong(i) < 0 => Some(StateFault(field, s"${state.getLong(i)} is negative"))
      case DoubleType if state.getDouble(i) < 0 => Some(StateFault(field, s"${state.getDouble(i)} is negative"))
      case _ => None
    }
  }

  /** Two lists kept side by side (values and their ordering keys): as many elements in each. */
  def sameLength(field: String, other: String): StateCheck = (schema, state) => {
    val (i, j) = (schema.fieldIndex(field), schema.fieldIndex(other))
    if (state.isNullAt(i) || state.isNullAt(j)) None
    else {
      val (n, m) = (state.getList(i).numElements, state.getList(j).numElements)
      if (n == m) None else Some(StateFault(other, s"length $m, but $field has length $n"))
    }
  }

  /** A list of the non-NULL values seen: no NULL element. */
  def noNullElements(field: String): StateCheck = (schema, state) => {
    val i = schema.fieldIndex(field)
    if (state.isNullAt(i)) None
    else {
      val list = state.getList(i)
      (0 until list.numElements).find(list.isNullAt).map(j => StateFault(field, s"element $j is NULL"))
    }
  }

  /** A binary of a fixed length (registers, a bitmap). */
  def binaryLength(field: String, length: Int): StateCheck = (schema, state) => {
    val i = schema.fieldIndex(field)
    // getBinary copies the bytes (16 KiB of HLL registers): read them once.
    val got = if (state.isNullAt(i)) length else state.getBinary(i).length
    if (got == length) None else Some(StateFault(field, s"$got bytes, not $length"))
  }
}
