package sparkagg.testing

import org.scalatest.Tag

/**
 * What the Spark-facing suites sweep and how large they make their inputs. The partition sweeps: on the default
 * Spark minor the full ones (partition counts 1, 3 and 17), on the others (build.sbt sets sparkagg.test.sweep=short
 * there) one count, so each runs once per `make test`. The volumes: the size that proves the point (a spill that
 * spills, a table that grows) everywhere, larger under `make test-long` (sparkagg.test.sweep=long).
 */
object Sweep {
  private val mode = sys.props.getOrElse("sparkagg.test.sweep", "")
  private val short = mode == "short"
  private val long = mode == "long"

  /** `default` on the default Spark minor, `others` elsewhere: for what a test sweeps, which the minor does not
   *  change. */
  def scaled[A](default: A, others: A): A = if (short) others else default

  /** `ci` in `make test` and `make check`, `long` in `make test-long`: for how large a test makes its input. */
  def volume[A](ci: A, long: A): A = if (this.long) long else ci

  val partitions: Seq[Int] = scaled(Seq(1, 3, 17), Seq(3))

  /** The partition counts the `i`-th case of a sweep across cases and partition counts runs at. Every count if
   *  `everyCount` or in `make test-long`; otherwise the cases take the counts in turn, so that every case and
   *  every count run, though not every pair of them: what a case varies (its keys, its functions) and what the
   *  count varies (how many partial states meet) are checked apart. */
  def partitionsOf(i: Int, everyCount: Boolean): Seq[Int] =
    if (everyCount) partitions else volume(ci = Seq(partitions(i % partitions.size)), long = partitions)

  /** For the exchange of state packets also 201: past 200 partitions Spark's shuffle writes in another way. */
  val shufflePartitions: Seq[Int] = scaled(Seq(1, 3, 201), Seq(3))

  /** The tags of one case of a parametrised test: none if it runs on every minor, else [[DefaultLineOnly]]. */
  def onEveryLineIf(everyLine: Boolean): Seq[Tag] = if (everyLine) Nil else Seq(DefaultLineOnly)

  /** The tags of a case that runs for seconds if `slow`: [[Slow]]. */
  def slowIf(slow: Boolean): Seq[Tag] = if (slow) Seq(Slow) else Nil
}

/**
 * A test that runs on the default Spark minor alone (build.sbt excludes the tag elsewhere): what it checks
 * does not depend on the Spark version, and the other minors' suites cover the same code paths.
 */
object DefaultLineOnly extends Tag("sparkagg.DefaultLineOnly")

/**
 * A test that runs for seconds (every function through a whole plan, hundreds of partitions, a spill): `make
 * check` leaves it to `make test` (the Makefile's SBT_TEST_SHORT passes ScalaTest `-l sparkagg.Slow`), which
 * runs it on every minor it would otherwise run on.
 */
object Slow extends Tag("sparkagg.Slow")
