package sparkagg.testing

/** Spark's in-memory streaming source, which moved to org.apache.spark.sql.execution.streaming.runtime in 4.1. */
object Streams {
  val MemoryStream = org.apache.spark.sql.execution.streaming.runtime.MemoryStream
}
