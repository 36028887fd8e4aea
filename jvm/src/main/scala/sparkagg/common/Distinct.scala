package sparkagg.common

import java.util.{HashMap => JHashMap}

import org.apache.spark.sql.types._
import org.apache.spark.unsafe.types.UTF8String
import sparkagg.api._

/**
 * `f(DISTINCT x)` over a sliding window frame (Spark handles DISTINCT everywhere else, and rejects it in
 * windows): a value -> multiplicity map in front of f's accumulator feeds f each value once, and
 * retracts it when its last copy leaves the frame. When f cannot retract, a value leaving for good asks
 * the window to rebuild the frame's accumulator instead (it has no state to slide on two stacks with).
 * NULLs are skipped; doubles are told apart by their bits, so +0.0 and -0.0 are two values and a NaN is one.
 */
final case class Distinct(inner: FunctionDef) extends FunctionDef {
  def name: String = inner.name
  def signature: String = inner.signature
  def doc: FunctionDoc = inner.doc

  def bind(args: Seq[Arg], ctx: BindContext): Either[String, Bound] = args match {
    case Seq(arg) => inner.bind(args, ctx).map { b =>
        val read = b.coerceTo.headOption.getOrElse(arg.dataType)
        b.copy(newAccumulator = () => new DistinctAccumulator(b.newAccumulator(), read), newSlidingAccumulator = None)
      }
    case _ => Left("with DISTINCT in a window takes exactly one argument")
  }
}

final class DistinctAccumulator(inner: Accumulator, dataType: DataType) extends Accumulator {
  private val multiplicity = new JHashMap[AnyRef, Array[Long]]()
  private var stale = false

  /** A key that stays valid after the row is gone, equal for equal values. */
  private def key(args: Values): AnyRef = dataType match {
    case DoubleType => java.lang.Long.valueOf(java.lang.Double.doubleToRawLongBits(args.getDouble(0)))
    case FloatType => java.lang.Integer.valueOf(java.lang.Float.floatToRawIntBits(args.getFloat(0)))
    case _: StringType => args.getUTF8String(0).clone()
    case BinaryType => java.nio.ByteBuffer.wrap(args.getBinary(0).clone())
    case other => args.get(0, other)
  }

  def update(args: Values): Unit = if (!args.isNullAt(0)) {
    val k = key(args)
    val count = multiplicity.get(k)
    if (count == null) { multiplicity.put(k, Array(1L)); inner.update(args) }
    else count(0) += 1
  }

  override def retract(args: Values): Unit = if (!args.isNullAt(0)) {
    val k = key(args)
    val count = multiplicity.get(k)
    if (count != null) {
      count(0) -= 1
      if (count(0) == 0) {
        multiplicity.remove(k)
        if (inner.supportsRetract) inner.retract(args) else stale = true
      }
    }
  }

  override def supportsRetract: Boolean = true
  override def needsRebuild: Boolean = stale || inner.needsRebuild

  def merge(state: Values): Unit =
    throw new UnsupportedOperationException("a DISTINCT window aggregate is never merged")
  def state(): Array[Any] =
    throw new UnsupportedOperationException("a DISTINCT window aggregate has no state to hand on")
  def evaluate(): Any = inner.evaluate()
  def size: Long = inner.size + 64L * multiplicity.size
}
