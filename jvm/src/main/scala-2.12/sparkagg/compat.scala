package sparkagg

/** What Scala 2.13's library has and 2.12's (Spark 3.5's) lacks, for the sources both compile;
 *  scala-2.13/sparkagg/compat.scala names the same things over the 2.13 library. */
object compat {
  val CollectionConverters = scala.collection.JavaConverters

  implicit class IteratorCompat[A](private val it: Iterator[A]) extends AnyVal {
    def nextOption(): Option[A] = if (it.hasNext) Some(it.next()) else None
  }
}
