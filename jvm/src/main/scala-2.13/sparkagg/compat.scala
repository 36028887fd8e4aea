package sparkagg

/** The Scala 2.13 library under the names scala-2.12/sparkagg/compat.scala gives Spark 3.5's 2.12. */
object compat {
  val CollectionConverters = scala.jdk.CollectionConverters
}
