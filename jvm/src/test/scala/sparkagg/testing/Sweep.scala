package sparkagg.testing

import org.scalatest.Tag

/**
 * What the Spark-facing suites sweep and how large they make their inputs: on the default Spark minor the
 * full sweeps (partition counts 1, 3 and 17), on the others (build.sbt sets sparkagg.test.sweep=short
 * there) one count and smaller volumes, so the long sweeps run once per `make test`.
 */
object Sweep {
  private val short = sys.props.get("sparkagg.test.sweep").contains("short")

  /** `default` on the default Spark minor, `others` elsewhere: for what a test sweeps or sizes for volume,
   *  which the minor does not change. */
  def scaled[A](default: A, others: A): A = if (short) others else default

  val partitions: Seq[Int] = scaled(Seq(1, 3, 17), Seq(3))

  /** For the exchange of state packets also 201: past 200 partitions Spark's shuffle writes in another way. */
  val shufflePartitions: Seq[Int] = scaled(Seq(1, 3, 201), Seq(3))

  /** The tags of one case of a parametrised test: none if it runs on every minor, else [[DefaultLineOnly]]. */
  def onEveryLineIf(everyLine: Boolean): Seq[Tag] = if (everyLine) Nil else Seq(DefaultLineOnly)
}

/**
 * A test that runs on the default Spark minor alone (build.sbt excludes the tag elsewhere): what it checks
 * does not depend on the Spark version, and the other minors' suites cover the same code paths.
 */
object DefaultLineOnly extends Tag("sparkagg.DefaultLineOnly")
