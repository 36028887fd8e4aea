package sparkagg

import org.apache.spark.sql.SparkSession
import org.scalatest.{BeforeAndAfterAll, Suite}

/** One local session with the extension, shared by a suite. Generated code that does not compile fails the
 *  query instead of falling back to interpreted execution, which would hide it. */
trait LocalSpark extends BeforeAndAfterAll { this: Suite =>
  @transient lazy val spark: SparkSession = SparkSession.builder()
    .master("local[2]")
    .appName(getClass.getSimpleName)
    .config("spark.sql.extensions", classOf[SparkAggExtensions].getName)
    .config("spark.ui.enabled", "false")
    .config("spark.sql.shuffle.partitions", "4")
    .config("spark.sql.codegen.fallback", "false")
    .getOrCreate()

  /** Runs `body` with the session's settings changed, then puts them back. */
  def withConf[T](settings: (String, String)*)(body: => T): T = {
    val before = settings.map { case (k, _) => k -> spark.conf.getOption(k) }
    settings.foreach { case (k, v) => spark.conf.set(k, v) }
    try body
    finally before.foreach {
        case (k, Some(v)) => spark.conf.set(k, v)
        case (k, None) => spark.conf.unset(k)
      }
  }

  /** Runs `body` with a new directory, then deletes it and all it holds: the tests write Parquet files. */
  def withTempDir[T](prefix: String)(body: String => T): T = {
    val dir = java.nio.file.Files.createTempDirectory(prefix)
    try body(dir.toString)
    finally {
      val walk = java.nio.file.Files.walk(dir)
      try walk.sorted(java.util.Comparator.reverseOrder[java.nio.file.Path]()).forEach(java.nio.file.Files.delete(_))
      finally walk.close()
    }
  }

  override def afterAll(): Unit = {
    try spark.stop()
    finally super.afterAll()
  }
}
