package sparkagg.testing

/** What the Spark under test can express, where minors differ (scala-spark-3.5 has the other side). */
object SparkFeatures {
  /** `f(x) WITHIN GROUP (ORDER BY k)`, for any aggregate that supports ordering (Spark 4.0 on). */
  val withinGroup = true

  /** Strings under a collation: `s COLLATE UTF8_LCASE` (Spark 4.0 on). */
  val collations = true

  /** A RANGE frame over a DATE ordering column, with a day interval. */
  val dateRangeFrame = "ORDER BY day RANGE BETWEEN INTERVAL 3 DAYS PRECEDING AND CURRENT ROW"
}
