package sparkagg.testing

/** What the Spark under test can express, where minors differ (scala-spark-4.0+ has the other side). */
object SparkFeatures {
  /** `f(x) WITHIN GROUP (ORDER BY k)`: Spark 3.5 parses it for its own percentiles only. */
  val withinGroup = false

  /** Strings under a collation: not in Spark 3.5. */
  val collations = false

  /** A RANGE frame over a DATE ordering column: Spark 3.5 takes integer days, not day intervals. */
  val dateRangeFrame = "ORDER BY day RANGE BETWEEN 3 PRECEDING AND CURRENT ROW"
}
