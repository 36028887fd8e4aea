// The Spark minors sparkagg builds a JAR for, read from python/sparkagg/spark_lines.tsv (which the Makefile
// and the Python package read too). build.sbt makes a subproject of each.
import java.io.File
import scala.io.Source

/** A Spark minor, the pyspark whose jars it compiles against, and the Scala and Java it targets. */
case class SparkLine(minor: String, pyspark: String, scala: String, java: String) {
  def id: String = "spark" + minor.replace(".", "")
  def scalaBinary: String = scala.split('.').take(2).mkString(".")
  def artifact: String = s"sparkagg-spark${minor}_$scalaBinary"
  def venv: String = if (this == SparkLines.default) ".venv" else s".venvs/spark-$minor"
}

object SparkLines {
  val all: Seq[SparkLine] = {
    val source = Source.fromFile(new File("python/sparkagg/spark_lines.tsv"), "UTF-8")
    try source.getLines().filterNot(_.startsWith("#")).drop(1).map(_.split('\t')).collect {
        case Array(minor, pyspark, scala, java) => SparkLine(minor, pyspark, scala, java)
      }.toList
    finally source.close()
  }
  /** The newest minor: the `root` project, whose pyspark is the one in `.venv`. */
  val default: SparkLine = all.last

  def apply(minor: String): SparkLine = all.find(_.minor == minor).get
}
