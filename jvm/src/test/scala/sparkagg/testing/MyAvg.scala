package sparkagg.testing

import org.apache.spark.sql.types._
import sparkagg.api._

/**
 * What a user writes in their own JAR: a function definition and its accumulator, nothing else.
 * Registered by the tests from Scala, from PySpark by class name, and through functions.udaf.
 */
object MyAvg extends FunctionDef {
  val name = "my_avg"
  val signature = "(double) -> double"
  val doc = FunctionDoc(
    usage = "_FUNC_(x) - The mean of x, written as a user-defined accumulator.",
    arguments = Seq("x" -> "double"),
    examples = Nil)

  def bind(args: Seq[Arg], ctx: BindContext): Either[String, Bound] = args.map(_.dataType) match {
    case Seq(t) if Types.isNumeric(t) =>
      Right(Bound(DoubleType,
          StructType(Seq(StructField("n", LongType), StructField("total", DoubleType))),
          () => new MyAvgAccumulator, coerceTo = Seq(DoubleType)))
    case _ => Left("expects one numeric argument")
  }
}

final class MyAvgAccumulator extends Accumulator {
  private var n = 0L
  private var total = 0.0
  def update(args: Values): Unit = if (!args.isNullAt(0)) { n += 1; total += args.getDouble(0) }
  def merge(state: Values): Unit = { n += state.getLong(0); total += state.getDouble(1) }
  def state(): Array[Any] = Array(n, total)
  def evaluate(): Any = if (n == 0) null else total / n
  def size: Long = 32
}
