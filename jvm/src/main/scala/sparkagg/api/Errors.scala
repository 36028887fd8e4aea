package sparkagg.api

import org.apache.spark.SparkThrowable

/**
 * A sparkagg error as Spark reports its own: an error class and an SQLSTATE (`SparkThrowable`), so that
 * PySpark and Spark Connect raise it as `[SPARKAGG_INVALID_STATE] df_avg_merge: ...` with the class and the
 * state readable from the exception, and Spark 4 fails a job with the task's own error rather than wrapping
 * it. Spark's catalogue of error classes does not know sparkagg's, so the message is made here and the
 * catalogue is never asked for it.
 */
trait SparkAggError extends SparkThrowable {
  def errorClass: String
  def sqlState: String

  // Spark 4 names the class getCondition (and keeps getErrorClass as a default calling it); 3.5 has only
  // getErrorClass. Both are given, so one class serves every minor.
  def getCondition: String = errorClass
  override def getErrorClass: String = errorClass
  override def getSqlState: String = sqlState
}

object SparkAggError {
  /** A state given to a state form that no accumulator of the function can make. */
  final val InvalidState = "SPARKAGG_INVALID_STATE"

  /** A query form sparkagg cannot run (yet), refused when the query is planned. */
  final val Unsupported = "SPARKAGG_UNSUPPORTED"

  /** SQLSTATE of each class: 22023, an invalid parameter value; 0A000, a feature not supported. */
  private val sqlStates = Map(InvalidState -> "22023", Unsupported -> "0A000")

  /** The error of class `errorClass` saying `text`, as Spark words its own (class first, SQLSTATE last). */
  def illegalArgument(errorClass: String, text: String): SparkAggIllegalArgumentException =
    new SparkAggIllegalArgumentException(errorClass, sqlStates(errorClass), text)

  /** A query sparkagg refuses to plan, saying what to do instead. */
  def unsupported(text: String): SparkAggUnsupportedOperationException =
    new SparkAggUnsupportedOperationException(Unsupported, sqlStates(Unsupported), text)
}

/** An argument (a state, a parameter) that sparkagg refuses at run time; PySpark's IllegalArgumentException. */
final class SparkAggIllegalArgumentException(val errorClass: String, val sqlState: String, text: String)
  extends IllegalArgumentException(s"[$errorClass] $text SQLSTATE: $sqlState") with SparkAggError

/** A query form sparkagg does not run; PySpark's UnsupportedOperationException (4.x). */
final class SparkAggUnsupportedOperationException(val errorClass: String, val sqlState: String, text: String)
  extends UnsupportedOperationException(s"[$errorClass] $text SQLSTATE: $sqlState") with SparkAggError
