package sparkagg.functions

import org.apache.spark.sql.types._
import org.apache.spark.unsafe.Platform
import sparkagg.api._
import sparkagg.common.ValueKind

/**
 * approx_distinct(x): the number of distinct non-NULL values, estimated with HyperLogLog at precision
 * 14 (16384 one-byte registers, about 0.8% standard error) and Ertl's improved estimator, as DataFusion
 * uses; 0 on empty input. Integers, dates, timestamps, strings, binary, decimals and booleans (floats are
 * refused, as in DataFusion; it takes decimals and booleans from 51 on). The hash is sparkagg's own (a
 * SplitMix64 finish over the value's 64 bits, or over an FNV-1a digest of its bytes; a boolean as the
 * integer 0 or 1, a decimal as its text, which its fixed scale makes one string per value), so estimates
 * are close to DataFusion's, not equal.
 * State: hll_registers, the 16384 registers as binary; merging takes each register's maximum.
 */
object ApproxDistinct extends FunctionDef {
  val name = "approx_distinct"
  val signature = "(tinyint..bigint|date|timestamp|timestamp_ntz|string|binary|decimal|boolean) -> bigint"
  val doc = FunctionDoc(
    usage = "_FUNC_(expr) - An estimate of the number of distinct non-NULL values of expr (HyperLogLog, p = 14).",
    arguments = Seq("expr" -> "an integer type, date, timestamp, string, binary, decimal or boolean"),
    examples = Seq(
      "SELECT _FUNC_(col) FROM VALUES (1), (2), (2), (NULL), (3) AS tab(col)" -> "3",
      "SELECT _FUNC_(col) FROM VALUES ('a') AS tab(col) WHERE col > 'b'" -> "0"
    )
  )

  private val state = StructType(Seq(StructField("hll_registers", BinaryType, nullable = false)))
  private val registersCheck = StateCheck.binaryLength("hll_registers", HyperLogLogAccumulator.Registers)

  def bind(args: Seq[Arg], ctx: BindContext): Either[String, Bound] = args.map(_.dataType) match {
    case Seq(t) if Types.isIntegral(t) || t == DateType || t == TimestampType || t == TimestampNTZType =>
      Right(Bound(LongType, state, () => new HyperLogLogAccumulator(new ValueKind.LongLike(t)), nullable = false,
          stateCheck = registersCheck))
    case Seq(BooleanType) =>
      Right(Bound(LongType, state, () => new HyperLogLogAccumulator(new ValueKind.LongLike(IntegerType)),
          nullable = false, coerceTo = Seq(IntegerType), stateCheck = registersCheck))
    case Seq(t @ (_: StringType | BinaryType | _: DecimalType)) =>
      val text = t.isInstanceOf[DecimalType]
      Right(
        Bound(
          LongType,
          state,
          () => new HyperLogLogAccumulator(null, isString = t != BinaryType),
          nullable = false,
          coerceTo = if (text) Seq(StringType) else Nil,
          stateCheck = registersCheck
        ))
    case _ => Left("expects one argument of an integer type, date, timestamp, string, binary, decimal or " +
        "boolean (floats are not supported)")
  }
}

/** `integral` reads integer-like values; without it the value's bytes are hashed (a string's UTF-8). */
final class HyperLogLogAccumulator(integral: ValueKind.LongLike, isString: Boolean = false) extends Accumulator {
  import HyperLogLogAccumulator._
  private val registers = new Array[Byte](Registers)

  private def add(hash: Long): Unit = {
    val index = (hash & (Registers - 1)).toInt
    val rest = hash >>> Precision
    val rank = (if (rest == 0) Q + 1 else java.lang.Long.numberOfTrailingZeros(rest) + 1).toByte
    if (rank > registers(index)) registers(index) = rank
  }

  def update(args: Values): Unit = if (!args.isNullAt(0)) {
    add(if (integral != null) mix(integral.readLong(args, 0)) else mix(fnv(args)))
  }

  // A string is hashed where it lies (no copy per row); binary values arrive as arrays anyway.
  private def fnv(args: Values): Long =
    if (isString) {
      val s = args.getUTF8String(0)
      fnv(s.getBaseObject, s.getBaseOffset, s.numBytes)
    } else {
      val b = args.getBinary(0)
      fnv(b, Platform.BYTE_ARRAY_OFFSET, b.length)
    }

  private def fnv(base: AnyRef, offset: Long, length: Int): Long = {
    var h = 0xcbf29ce484222325L
    var i = 0
    while (i < length) { h = (h ^ (Platform.getByte(base, offset + i) & 0xff)) * 0x100000001b3L; i += 1 }
    h
  }

  def merge(state: Values): Unit = {
    val other = state.getBinary(0)
    var i = 0
    while (i < Registers) { if (other(i) > registers(i)) registers(i) = other(i); i += 1 }
  }

  def state(): Array[Any] = Array(registers.clone())

  def evaluate(): Any = {
    val histogram = new Array[Int](Q + 2)
    registers.foreach(r => histogram(r) += 1)
    val m = Registers.toDouble
    var z = m * tau(1.0 - histogram(Q + 1) / m)
    var k = Q
    while (k >= 1) { z = 0.5 * (z + histogram(k)); k -= 1 }
    z += m * sigma(histogram(0) / m)
    math.round(AlphaInfinity * m * m / z)
  }

  def size: Long = 32 + Registers
}

object HyperLogLogAccumulator {
  val Precision = 14
  val Registers: Int = 1 << Precision
  /** Hash bits left after the register index. */
  val Q: Int = 64 - Precision
  private val AlphaInfinity = 1.0 / (2.0 * math.log(2.0))

  /** SplitMix64's finishing mix: spreads every input bit over the 64 output bits. */
  def mix(v: Long): Long = {
    var z = v + 0x9e3779b97f4a7c15L
    z = (z ^ (z >>> 30)) * 0xbf58476d1ce4e5b9L
    z = (z ^ (z >>> 27)) * 0x94d049bb133111ebL
    z ^ (z >>> 31)
  }

  /** Ertl's sigma, the correction for empty registers. */
  private def sigma(x0: Double): Double =
    if (x0 == 1.0) Double.PositiveInfinity
    else {
      var x = x0
      var y = 1.0
      var z = x
      var previous = 0.0
      while ({ x *= x; previous = z; z += x * y; y += y; previous != z }) ()
      z
    }

  /** Ertl's tau, the correction for saturated registers. */
  private def tau(x0: Double): Double =
    if (x0 == 0.0 || x0 == 1.0) 0.0
    else {
      var x = x0
      var y = 1.0
      var z = 1.0 - x
      var previous = 0.0
      while ({ x = math.sqrt(x); previous = z; y *= 0.5; z -= math.pow(1.0 - x, 2) * y; previous != z }) ()
      z / 3.0
    }
}
