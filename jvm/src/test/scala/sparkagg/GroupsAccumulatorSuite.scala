package sparkagg

import scala.util.Random

import org.apache.spark.sql.catalyst.expressions.{Cast, Literal}
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.types.{ByteArray, UTF8String}
import org.scalatest.funsuite.AnyFunSuite
import sparkagg.api._
import sparkagg.common._
import sparkagg.functions._
import sparkagg.testing.{Slow, Sweep}

/**
 * The grouped path (the GroupsAccumulator api): for random batches with NULLs, FILTER masks and many groups, the
 * native GroupsAccumulators, the adapter running each function's Accumulator per group, and the
 * Accumulator itself fed each group's rows give the same results and states, through update, state ->
 * merge across two partitions (and across the two implementations), EmitTo.First(n) then All, and
 * convertToState -> merge (against the Accumulator merging one-row states). Results and states must be
 * equal to the bit ([[GroupsAccumulatorSuite.exact]]): a native path does the Accumulator's operations in
 * the Accumulator's order. Hand-worked cases pin the semantics the random checks share.
 */
class GroupsAccumulatorSuite extends AnyFunSuite {
  import GroupsAccumulatorSuite._

  /** `gen`: a named generator of values instead of [[Gen.value]]'s. */
  /** `keys`: WITHIN GROUP keys, whose values the batches carry after the arguments'. */
  private final case class Case(function: FunctionDef, types: Seq[DataType], ansi: Boolean = true,
      gen: Option[(String, (DataType, Random) => Any)] = None, constants: Seq[Literal] = Nil,
      keys: Seq[(DataType, SortKey)] = Nil) {
    val label: String =
      s"${function.name}${(types.map(_.simpleString) ++ constants.map(_.sql)).mkString("(", ", ", ")")}" +
        (if (keys.isEmpty) ""
         else keys.map { case (t, k) => s"${t.simpleString} ${k.name}" }.mkString(" WITHIN GROUP (", ", ", ")")) +
        (if (ansi) "" else " ansi off") + gen.fold("")(" " + _._1)
    def harness: Harness = new Harness(function, types, failOnOverflow = ansi, constants = constants, keys = keys)
    /** The types of a batch's generated columns: the arguments', then the keys'. */
    def columnTypes: Seq[DataType] = types ++ keys.map(_._1)
  }

  private val longLike = Seq(BooleanType, ByteType, ShortType, IntegerType, LongType, DateType, TimestampType)
  private val hugeLongs = "huge values" -> ((_: DataType, rnd: Random) =>
    if (rnd.nextBoolean()) Long.MaxValue - rnd.nextInt(10) else Long.MinValue + rnd.nextInt(10): Any)
  // Few distinct values on a large common offset: groups of equal values (zero variance, the NULL rules
  // of corr and regr_*) and the cancellation Welford avoids.
  private val offsetDoubles = "few offset values" -> ((_: DataType, rnd: Random) => 1e9 + rnd.nextInt(3) * 0.5: Any)
  private val hugeDecimals = "huge values" -> ((_: DataType, rnd: Random) =>
    Decimal(BigDecimal(BigInt(10).pow(38) - 1 - rnd.nextInt(1000)) * (if (rnd.nextBoolean()) 1 else -1), 38, 0): Any)
  // Many repeats, so that counts tie and differ.
  private val fewValues = "few values" -> ((_: DataType, rnd: Random) => rnd.nextInt(5).toLong: Any)
  // The same for any type mode takes.
  private val fewOfType = "few values" -> ((t: DataType, rnd: Random) =>
    {
      val v = rnd.nextInt(5)
      t match {
        case ByteType => v.toByte
        case ShortType => v.toShort
        case IntegerType | DateType => v
        case DoubleType => v * 0.5
        case _: StringType => UTF8String.fromString("v" * v)
        case _ => v.toLong
      }
    }: Any)
  // Gen's floats are finite: these mix in NaN, the infinities and both zeros.
  private val specialFloats = "NaN, infinities, zeros" -> ((_: DataType, rnd: Random) =>
    if (rnd.nextInt(4) == 0) Seq(Float.NaN, Float.PositiveInfinity, Float.NegativeInfinity, -0.0f, 0.0f)(rnd.nextInt(5))
    else (rnd.nextGaussian() * 100).toFloat: Any)

  private val (asc, desc, descNullsFirst, ascNullsFirst) =
    (SortKey(false, false), SortKey(true, false), SortKey(true, true), SortKey(false, true))
  private val integers = Seq(ByteType, ShortType, IntegerType, LongType)
  private val moments: Seq[CoMomentAggregate] = Seq(VarSamp, VarPop, Stddev, StddevPop)
  private val pairMoments: Seq[CoMomentAggregate] = Seq(CovarSamp, CovarPop, Corr, RegrSlope, RegrIntercept,
    RegrCount, RegrR2, RegrAvgx, RegrAvgy, RegrSxx, RegrSyy, RegrSxy)

  private val nativeCases: Seq[Case] =
    Seq(
      Case(Count, Nil),
      Case(Count, Seq(LongType)),
      Case(Count, Seq(IntegerType, StringType)),
      Case(Sum, Seq(LongType)),
      Case(Sum, Seq(DoubleType)),
      Case(Avg, Seq(DoubleType)),
      Case(Sum, Seq(LongType), ansi = false, gen = Some(hugeLongs))
    ) ++
      (longLike ++ Seq(FloatType, DoubleType)).flatMap(t => Seq(Case(Min, Seq(t)), Case(Max, Seq(t)))) ++
      integers.flatMap(t => Seq(BitAnd, BitOr, BitXor).map(f => Case(f, Seq(t)))) ++
      Seq(Case(BoolAnd, Seq(BooleanType)), Case(BoolOr, Seq(BooleanType))) ++
      moments.flatMap(f => Seq(Case(f, Seq(DoubleType)), Case(f, Seq(DoubleType), gen = Some(offsetDoubles)))) ++
      pairMoments.flatMap(f =>
        Seq(Case(f, Seq(DoubleType, DoubleType)),
          Case(f, Seq(DoubleType, DoubleType), gen = Some(offsetDoubles)))) ++
      // The t-digest reads doubles (its arguments are cast to double before they reach it).
      Seq(
        Case(ApproxMedian, Seq(DoubleType)),
        Case(ApproxPercentileCont, Seq(DoubleType), constants = Seq(Literal(0.9), Literal(20))),
        Case(ApproxPercentileContWithWeight, Seq(DoubleType, DoubleType), constants = Seq(Literal(0.3))),
        Case(ApproxPercentileContWithWeight, Seq(DoubleType, DoubleType), constants = Seq(Literal(0.5), Literal(5))),
        Case(ArrayAgg, Seq(LongType)),
        Case(ArrayAgg, Seq(DoubleType)),
        Case(ArrayAgg, Seq(StringType)),
        Case(ArrayAgg, Seq(IntegerType)),
        Case(ArrayAgg, Seq(DecimalType(10, 2))),
        Case(StringAgg, Seq(StringType), constants = Seq(Literal("|"))),
        Case(StringAgg, Seq(StringType), constants = Seq(Literal(""))),
        Case(Min, Seq(StringType)),
        Case(Max, Seq(StringType)),
        Case(Max, Seq(BinaryType)),
        Case(Min, Seq(DecimalType(10, 2))),
        Case(Max, Seq(DecimalType(30, 5))),
        Case(Max, Seq(DecimalType(18, 0))),
        Case(Min, Seq(DecimalType(30, 5))),
        // Both signs at the ends of 38 digits: the high halves compared signed, the low halves unsigned.
        Case(Min, Seq(DecimalType(38, 0)), gen = Some(hugeDecimals)),
        Case(Max, Seq(DecimalType(38, 0)), gen = Some(hugeDecimals)),
        Case(Sum, Seq(DecimalType(10, 2))),
        Case(Sum, Seq(DecimalType(18, 0))),
        Case(Sum, Seq(DecimalType(18, 0)), ansi = false),
        Case(Avg, Seq(DecimalType(10, 2))),
        Case(Avg, Seq(DecimalType(18, 6))),
        Case(Sum, Seq(DecimalType(30, 5))),
        Case(Avg, Seq(DecimalType(30, 5))),
        // Sums past 2^127 that may come back: the third long of the sums; with ANSI off a sum too wide is NULL.
        Case(Sum, Seq(DecimalType(38, 0)), ansi = false, gen = Some(hugeDecimals)),
        Case(Avg, Seq(DecimalType(38, 0)), ansi = false, gen = Some(hugeDecimals)),
        Case(FirstValue, Seq(LongType)),
        Case(FirstValue, Seq(DoubleType), constants = Seq(Literal(true))),
        Case(LastValue, Seq(StringType)),
        Case(LastValue, Seq(DecimalType(10, 2)), constants = Seq(Literal(true))),
        Case(AnyValue, Seq(StringType)),
        Case(AnyValue, Seq(IntegerType)),
        Case(MaxBy, Seq(StringType, LongType)),
        Case(MinBy, Seq(LongType, StringType)),
        Case(MaxBy, Seq(DecimalType(10, 2), DecimalType(10, 2))),
        // Keys of few values tie often: ties keep arrival order.
        Case(ArrayAgg, Seq(LongType), keys = Seq(BooleanType -> asc, IntegerType -> desc)),
        Case(ArrayAgg, Seq(StringType), keys = Seq(DoubleType -> desc)),
        Case(StringAgg, Seq(StringType), constants = Seq(Literal(",")), keys = Seq(ByteType -> descNullsFirst)),
        Case(StringAgg, Seq(StringType), constants = Seq(Literal("")), keys = Seq(StringType -> asc, LongType -> asc)),
        // One key of a primitive type: OneKeyFirstLastGroups (the value a long, or bytes for strings and
        // binaries); a key of booleans ties often, a NaN sorts greatest, NULL keys go first or last.
        Case(FirstValue, Seq(LongType), keys = Seq(IntegerType -> asc)),
        Case(FirstValue, Seq(StringType), keys = Seq(DoubleType -> desc)),
        Case(FirstValue, Seq(BinaryType), constants = Seq(Literal(true)), keys = Seq(BooleanType -> descNullsFirst)),
        Case(FirstValue, Seq(DateType), keys = Seq(BooleanType -> ascNullsFirst)),
        Case(LastValue, Seq(StringType), keys = Seq(ByteType -> asc)),
        Case(LastValue, Seq(StringType), keys = Seq(BooleanType -> ascNullsFirst)),
        Case(LastValue, Seq(DoubleType), constants = Seq(Literal(true)), keys = Seq(TimestampType -> descNullsFirst)),
        Case(LastValue, Seq(FloatType), keys = Seq(FloatType -> asc), gen = Some(specialFloats)),
        Case(FirstValue, Seq(DecimalType(10, 2)), keys = Seq(LongType -> asc)),
        Case(MaxBy, Seq(StringType, DoubleType)),
        Case(MinBy, Seq(BinaryType, BooleanType)),
        Case(NthValue, Seq(LongType), constants = Seq(Literal(2))),
        Case(NthValue, Seq(StringType), constants = Seq(Literal(-1L))),
        Case(NthValue, Seq(DoubleType), constants = Seq(Literal(3)), keys = Seq(BooleanType -> descNullsFirst)),
        Case(NthValue, Seq(DecimalType(10, 2)), constants = Seq(Literal(-2)), keys = Seq(DateType -> asc)),
        Case(Median, Seq(DecimalType(10, 2))),
        Case(Median, Seq(DecimalType(30, 5))),
        // A group of many distinct values turns dense; most stay sparse.
        Case(ApproxDistinct, Seq(StringType)),
        Case(ApproxDistinct, Seq(LongType)),
        Case(ApproxDistinct, Seq(IntegerType)),
        Case(ApproxDistinct, Seq(BooleanType)),
        Case(ApproxDistinct, Seq(DateType)),
        Case(ApproxDistinct, Seq(BinaryType)),
        Case(ApproxDistinct, Seq(DecimalType(10, 2)))
      ) ++
      // median reads integers as doubles; percentile_cont reads every type as double.
      Seq(
        Case(Median, Seq(DoubleType)),
        Case(Median, Seq(DoubleType), gen = Some(offsetDoubles)),
        Case(Median, Seq(FloatType)),
        Case(Median, Seq(FloatType), gen = Some(specialFloats)),
        Case(Median, Seq(IntegerType)),
        Case(Median, Seq(LongType)),
        Case(Median, Seq(ByteType)),
        Case(PercentileCont, Seq(DoubleType), constants = Seq(Literal(0.3))),
        Case(PercentileCont, Seq(FloatType), constants = Seq(Literal(0.75), Literal(true)), gen = Some(specialFloats)),
        Case(PercentileCont, Seq(IntegerType), constants = Seq(Literal(0.5)))
      ) ++
      Seq(
        Seq(LongType, LongType),
        Seq(DoubleType, DoubleType),
        Seq(IntegerType, DoubleType),
        Seq(BooleanType, DateType),
        Seq(FloatType, TimestampType),
        Seq(DoubleType, FloatType)
      )
        .flatMap(types => Seq(Case(MaxBy, types), Case(MinBy, types))) ++
      // Few values, so that counts tie and the smallest value wins.
      Seq(ByteType, ShortType, IntegerType, LongType, DateType, TimestampType, DoubleType, StringType)
        .flatMap(t => Seq(Case(Mode, Seq(t)), Case(Mode, Seq(t), gen = Some(fewOfType)))) :+
      Case(Mode, Seq(FloatType), gen = Some(specialFloats))

  // A user's own GroupsAccumulator (testing.MyAvgGroups, which docs/own-accumulators.md shows), held to its
  // Accumulator and to the adapter as the built-in ones are.
  private val userCases: Seq[Case] = Seq(Case(sparkagg.testing.MyAvg, Seq(DoubleType)))

  test("the functions with a native grouped path offer it; a function without one falls back to the adapter") {
    for (c <- nativeCases ++ userCases) {
      val bound = c.harness.call.bound
      assert(bound.newGroupsAccumulator.isDefined, c.label)
      assert(!AccumulatorGroups.of(bound).isInstanceOf[AccumulatorGroups], c.label)
    }
    val withoutGroups = userCases.head.harness.call.bound.copy(newGroupsAccumulator = None)
    assert(AccumulatorGroups.of(withoutGroups).isInstanceOf[AccumulatorGroups])
  }

  test("ordered first/last_value by one primitive key, and max_by/min_by of strings, keep arrays, not rows") {
    def groupsOf(c: Case): GroupsAccumulator = AccumulatorGroups.of(c.harness.call.bound)
    for (c <- Seq(
        Case(FirstValue, Seq(StringType), keys = Seq(DoubleType -> desc)),
        Case(LastValue, Seq(LongType), keys = Seq(TimestampType -> asc)),
        Case(MinBy, Seq(StringType, DateType))
      ))
      assert(groupsOf(c).isInstanceOf[OneKeyFirstLastGroups], c.label)
    // Two keys, a key of strings or a decimal value: the general one, with a row of keys per group.
    for (c <- Seq(
        Case(FirstValue, Seq(LongType), keys = Seq(IntegerType -> asc, IntegerType -> desc)),
        Case(FirstValue, Seq(LongType), keys = Seq(StringType -> asc)),
        Case(FirstValue, Seq(DecimalType(10, 2)), keys = Seq(LongType -> asc))
      ))
      assert(groupsOf(c).isInstanceOf[FirstLastGroups], c.label)
  }

  for (c <- nativeCases ++ userCases) {
    val h = c.harness
    val bound = h.call.bound
    val native: () => GroupsAccumulator = () => AccumulatorGroups.of(bound)
    val adapter: () => GroupsAccumulator = () => new AccumulatorGroups(bound.newAccumulator)
    val implementations = Seq("native" -> native, "adapter" -> adapter)
    val stateTypes = bound.stateSchema.fields.map(_.dataType).toSeq
    // What the accumulators read: the arguments and keys cast to the types the function coerces them to
    // (coerceTo also lists the constants, which a batch carries as they are).
    val readAs =
      if (bound.coerceTo.isEmpty) Nil
      else bound.coerceTo.take(c.types.size) ++ bound.coerceTo.drop(c.types.size + c.constants.size)

    def batch(b: Batch): Batch = b.copy(readAs = readAs, constants = c.constants, constantsAt = c.types.size)
    def batches(rnd: Random, groups: Int, count: Int): Seq[Batch] =
      Seq.fill(count)(batch(Batch.random(c.columnTypes, groups, rnd, c.gen.map(_._2), c.types.size)))

    /** The Accumulator fed group g's kept rows, for every group below `groups`. */
    def expected(bs: Seq[Batch], groups: Int): IndexedSeq[Accumulator] = {
      val rows = Array.fill(groups)(Vector.newBuilder[Seq[Any]])
      for (b <- bs; i <- b.rows.indices if b.kept(i)) rows(b.keys(i)) += b.rows(i)
      rows.map(r => h.accumulate(r.result())).toIndexedSeq
    }

    def checkValues(what: String, got: Column, want: Seq[Accumulator]): Unit = {
      assert(got.numRows == want.size, s"$what: ${got.numRows} groups, expected ${want.size}")
      for ((acc, g) <- want.zipWithIndex) {
        val (x, y) = (norm(got.get(g, bound.returnType)), norm(acc.evaluate()))
        assert(exact(x, y), s"$what: group $g: $x, expected $y")
      }
    }

    def checkStates(what: String, got: Array[Column], want: Seq[Accumulator]): Unit = {
      assert(got.length == stateTypes.size, what)
      for ((acc, g) <- want.zipWithIndex; (field, f) <- acc.state().zipWithIndex) {
        assert(got(f).numRows == want.size, what)
        val (x, y) = (norm(got(f).get(g, stateTypes(f))), norm(field))
        assert(exact(x, y), s"$what: group $g field ${bound.stateSchema(f).name}: $x, expected $y")
      }
    }

    test(s"${c.label}: update, evaluate and state equal the Accumulator per group") {
      val rnd = new Random(c.label.hashCode)
      // The last, many groups: 5k (past every array's first growth), 20k in make test-long.
      for ((groups, count) <- Seq(1 -> 12, 7 -> 12, 300 -> 12, Sweep.volume(5000, 20000) -> 40)) {
        val bs = batches(rnd, groups, count)
        // totalGroups grows from batch to batch, as an operator's group count does.
        val totals = bs.scanLeft(0)((t, b) => math.max(t, if (b.keys.isEmpty) 0 else b.keys.max + 1)).tail
        val total = totals.lastOption.getOrElse(0)
        val want = expected(bs, total)
        for ((name, make) <- implementations) {
          val (forValues, forStates) = (make(), make())
          for ((b, t) <- bs.zip(totals); acc <- Seq(forValues, forStates))
            acc.updateBatch(b.columns(rnd), b.groupIndices(rnd), b.filterColumn(rnd), t)
          assert(forValues.size > 0)
          checkValues(s"$name, $groups groups", forValues.evaluate(EmitTo.All), want)
          checkStates(s"$name, $groups groups", forStates.state(EmitTo.All), want)
          // Emptied: the next use starts from nothing.
          assert(forValues.evaluate(EmitTo.All).numRows == 0)
          forValues.updateBatch(
            Columns.of(0, Array.tabulate(c.columnTypes.size + c.constants.size)(_ => new ObjectColumn(Array()))),
            Array(), None, 2)
          checkValues(s"$name, reused", forValues.evaluate(EmitTo.All), Seq.fill(2)(h.accumulate(Nil)))
        }
      }
    }

    test(s"${c.label}: states of two partitions merge to the whole, native and adapter states interchangeable") {
      val rnd = new Random(c.label.hashCode + 1)
      val groups = 500
      val bs = batches(rnd, groups, 16)
      val (first, second) = bs.zipWithIndex.partition(_._2 % 2 == 0)
      // The Accumulator path with the same partitioning: each group's two partial states merged (a
      // partial sum that overflows bigint is NULL in its state whatever the other partition holds).
      val want = expected(first.map(_._1), groups).zip(expected(second.map(_._1), groups))
        .map { case (a, b) => h.merged(Seq(h.bytes(a), h.bytes(b))) }
      /** One partition's accumulator: keys to local indices in order of arrival, as a hash table gives them. */
      def partial(make: () => GroupsAccumulator, part: Seq[Batch]): (Array[Column], Array[Int]) = {
        val acc = make()
        val local = scala.collection.mutable.LinkedHashMap.empty[Int, Int]
        for (b <- part) {
          val indices = b.keys.map(k => local.getOrElseUpdate(k, local.size))
          acc.updateBatch(b.columns(rnd), indices, b.filterColumn(rnd), local.size)
        }
        (acc.state(EmitTo.All), local.keys.toArray)
      }
      for ((partialName, makePartial) <- implementations; (finalName, makeFinal) <- implementations) {
        val fin = makeFinal()
        for (part <- Seq(first.map(_._1), second.map(_._1))) {
          val (states, keys) = partial(makePartial, part)
          fin.mergeBatch(Columns.of(keys.length, states), keys, None, groups)
        }
        checkValues(s"$partialName states into $finalName", fin.evaluate(EmitTo.All), want)
      }
    }

    test(s"${c.label}: EmitTo.First(n) emits the first n groups and shifts the rest down") {
      val rnd = new Random(c.label.hashCode + 2)
      val groups = 200
      for (n <- Seq(0, 1, 63, 64, 65, 130, groups)) {
        val early = batches(rnd, groups, 6)
        // After the early emit only groups n.. still exist, now numbered from 0.
        val late = batches(rnd, groups, 6).map(_.onlyKeysFrom(n))
        val wantFirst = expected(early, groups).take(n)
        val wantRest = expected(early ++ late.map(b => b.copy(keys = b.keys.map(_ + n))), groups).drop(n)
        for ((name, make) <- implementations) {
          val (forValues, forStates) = (make(), make())
          for (b <- early; acc <- Seq(forValues, forStates))
            acc.updateBatch(b.columns(rnd), b.groupIndices(rnd), b.filterColumn(rnd), groups)
          checkValues(s"$name, First($n)", forValues.evaluate(EmitTo.First(n)), wantFirst)
          checkStates(s"$name, First($n)", forStates.state(EmitTo.First(n)), wantFirst)
          for (b <- late; acc <- Seq(forValues, forStates))
            acc.updateBatch(b.columns(rnd), b.groupIndices(rnd), b.filterColumn(rnd), groups - n)
          checkValues(s"$name, All after First($n)", forValues.evaluate(EmitTo.All), wantRest)
          checkStates(s"$name, All after First($n)", forStates.state(EmitTo.All), wantRest)
        }
      }
    }

    test(s"${c.label}: convertToState then merge equals the Accumulator merging each row's own state") {
      val rnd = new Random(c.label.hashCode + 3)
      val groups = 300
      val bs = batches(rnd, groups, 10)
      // The reference merges each kept row's own state in row order, as the operator does after skipping
      // partial aggregation: merging one-row states is not adding the rows (Chan's formula is not
      // Welford's step), so update would be a reference only to rounding, or not at all with infinities.
      val want = {
        val states = Array.fill(groups)(Vector.newBuilder[Array[Byte]])
        for (b <- bs; i <- b.rows.indices if b.kept(i)) states(b.keys(i)) += h.bytes(h.accumulate(Seq(b.rows(i))))
        states.map(s => h.merged(s.result())).toIndexedSeq
      }
      for ((name, make) <- implementations) {
        assert(make().supportsConvertToState, name)
        // The filter applied when the states are made, or when they are merged: the same groups.
        val filterFirst, filterLater = make()
        for (b <- bs) {
          val filter = b.filterColumn(rnd)
          val states = make().convertToState(b.columns(rnd), filter)
          assert(states.forall(_.numRows == b.rows.size), name)
          filterFirst.mergeBatch(Columns.of(b.rows.size, states), b.groupIndices(rnd), None, groups)
          val unfiltered = make().convertToState(b.columns(rnd), None)
          filterLater.mergeBatch(Columns.of(b.rows.size, unfiltered), b.groupIndices(rnd), filter, groups)
        }
        checkValues(s"$name, filter at convertToState", filterFirst.evaluate(EmitTo.All), want)
        checkValues(s"$name, filter at merge", filterLater.evaluate(EmitTo.All), want)
      }
    }

    for (packing <- bound.packing) test(s"${c.label}: packed states unpack to the same bits", Slow) {
      val rnd = new Random(c.label.hashCode + 4)
      def roundTrip(what: String, states: Array[Column]): Unit = {
        val n = states.head.numRows
        val back = packing.unpack(packing.pack(states, n))
        assert(back.length == states.length && back.forall(_.numRows == n), what)
        for (f <- states.indices; g <- 0 until n) {
          val (x, y) = (norm(back(f).get(g, stateTypes(f))), norm(states(f).get(g, stateTypes(f))))
          assert(exact(x, y), s"$what: group $g field ${bound.stateSchema(f).name}: $x, expected $y")
        }
      }
      val groups = 300
      // Group 0 also gets 20,000 rows, so that its centroids merge (weights above 1).
      val many =
        batch(Batch(c.columnTypes, Gen.rows(c.columnTypes, 20000, rnd).toIndexedSeq, Array.fill(20000)(0), None))
      val bs = batches(rnd, groups, 12) :+ many
      for ((name, make) <- implementations) {
        val acc = make()
        bs.foreach(b => acc.updateBatch(b.columns(rnd), b.groupIndices(rnd), b.filterColumn(rnd), groups))
        val states = acc.state(EmitTo.All)
        roundTrip(s"$name states", states)
        val merged = make()
        for (_ <- 1 to 2) merged.mergeBatch(Columns.of(groups, states), Array.range(0, groups), None, groups)
        roundTrip(s"$name merged states", merged.state(EmitTo.All))
        roundTrip(s"$name row states", make().convertToState(bs.head.columns(rnd), bs.head.filterColumn(rnd)))
      }
    }
  }

  // --- hand-worked cases ------------------------------------------------------------------------

  test("hand-worked: t-digest states pack to what cannot be recomputed, and unpack to the same fields") {
    val median = bound(ApproxMedian, DoubleType)
    val packing = median.packing.get
    // Weight-1 centroids 1.0 and 2.0; the same means with weights 1 and 3; an empty digest.
    val states = Array[Column](
      longs(100, 100, 100),
      doubles(3.0, 7.0, 0.0),
      doubles(2.0, 4.0, 0.0),
      doubles(2.0, 2.0, Double.NaN),
      doubles(1.0, 1.0, Double.NaN),
      new ObjectColumn(Array(Array(1.0, 1.0, 2.0, 1.0), Array(1.0, 1.0, 2.0, 3.0), Array.emptyDoubleArray))
    )
    val packed = packing.pack(states, 3)
    // flags, max_size (2 bytes), length, two means: 20; with weights: flags, max_size, count (a double),
    // sum, length, four elements (min and max are the end means): 52; empty: flags, max_size, sum
    // derived, min, max, length: 20.
    assert(BinaryColumn.of(packed).offsets.toSeq == Seq(0, 20, 72, 92))
    val back = packing.unpack(packed)
    val types = median.stateSchema.fields.map(_.dataType)
    for (f <- states.indices; g <- 0 until 3)
      assert(exact(norm(back(f).get(g, types(f))), norm(states(f).get(g, types(f)))), s"group $g field $f")
  }

  test("BinaryColumn.of a column of bytes: over its array where the values lie end to end, else copied") {
    // Rows "ab", NULL, "cde", "" at the given starts of one array; a NULL row's start is whatever it was.
    def bytesAt(array: String, starts: Seq[Int], lengths: Seq[Int], nulls: Set[Int]): BytesColumn = new BytesColumn {
      val bytes: Array[Byte] = array.getBytes
      val numRows: Int = starts.size
      def hasNulls: Boolean = nulls.nonEmpty
      def isNullAt(row: Int): Boolean = nulls(row)
      def start(row: Int): Int = starts(row)
      def length(row: Int): Int = lengths(row)
    }
    def values(c: BinaryColumn) =
      (0 until c.numRows).map(r => if (c.isNullAt(r)) None else Some(new String(c.getBinary(r))))
    val expected = Seq(Some("ab"), None, Some("cde"), Some(""))
    val endToEnd = bytesAt("abcde", Seq(0, 99, 2, 5), Seq(2, 7, 3, 0), Set(1))
    val inPlace = BinaryColumn.of(endToEnd)
    assert(values(inPlace) == expected && (inPlace.bytes eq endToEnd.bytes))
    assert(inPlace.offsets.toSeq == Seq(0, 2, 2, 5, 5))
    val apart = bytesAt("xcdeyab", Seq(5, 0, 1, 0), Seq(2, 1, 3, 0), Set(1))
    val copied = BinaryColumn.of(apart)
    assert(values(copied) == expected && !(copied.bytes eq apart.bytes))
    assert(copied.offsets.toSeq == Seq(0, 2, 2, 5, 5) && copied.bytes.length == 5)
  }

  test("hand-worked: a packed t-digest state whose list length its bytes do not hold is refused") {
    val packing = bound(ApproxMedian, DoubleType).packing.get
    // Weight-1 centroids 1.0 and 2.0: flags, max_size 100 (2 bytes), length 4 (zigzag 8, byte 3), two
    // means (16 bytes). Claiming 6 values asks for three means, 24 bytes; -1 (zigzag 1) is no length.
    val states = Array[Column](longs(100), doubles(3.0), doubles(2.0), doubles(2.0), doubles(1.0),
      new ObjectColumn(Array(Array(1.0, 1.0, 2.0, 1.0))))
    val bytes = BinaryColumn.of(packing.pack(states, 1)).getBinary(0)
    assert(bytes.length == 20 && bytes(3) == 8)
    for ((zigzag, claimed) <- Seq(12 -> 6, 1 -> -1)) {
      val forged = bytes.clone()
      forged(3) = zigzag.toByte
      val e = intercept[IllegalStateException](packing.unpack(new BinaryColumn(forged, Array(0, 20), null, 1)))
      assert(e.getMessage == s"a packed t-digest state claims $claimed centroid values, which its 20 bytes do not hold")
    }
  }

  private def bound(f: FunctionDef, types: DataType*) = new Harness(f, types).call.bound
  private def longs(values: Any*): Column = new ObjectColumn(
    values.map {
      case i: Int => i.toLong
      case other => other
    }.toArray)
  private def doubles(values: Any*): Column = new ObjectColumn(values.toArray)
  private def mask(values: Any*): Option[Column] = Some(new ObjectColumn(values.toArray))
  private def out(c: Column, t: DataType): Seq[Any] = (0 until c.numRows).map(c.get(_, t))
  private def utf8(vs: String*): Column =
    new ObjectColumn(vs.map(v => if (v == null) null else UTF8String.fromString(v)).toArray)

  test("mode holds few groups' values over batches, adds them group by group in the order they came, then stops") {
    // 40 batches of 8192 rows over 1000 groups, then 5000 (past ModeGroups.HoldGroups: the held values are
    // added first); the 2^18 values held fill the hold once before that.
    for (t <- Seq(StringType, LongType)) {
      val (forState, forValue) = (AccumulatorGroups.of(bound(Mode, t)), AccumulatorGroups.of(bound(Mode, t)))
      val rnd = new Random(7)
      val seen = Array.fill(5000)(scala.collection.mutable.LinkedHashMap.empty[Int, Long])
      var total = 0
      for (b <- 0 until 40) {
        val keys = Array.fill(8192)(rnd.nextInt(if (b < 34) 1000 else 5000))
        val raw = Array.fill(8192)(rnd.nextInt(60))
        for (i <- keys.indices) seen(keys(i))(raw(i)) = seen(keys(i)).getOrElse(raw(i), 0L) + 1
        total = math.max(total, keys.max + 1)
        val column = if (t == StringType) utf8(raw.map(v => s"v$v").toIndexedSeq: _*) else longs(raw.toIndexedSeq: _*)
        for (acc <- Seq(forState, forValue)) acc.updateBatch(Columns(8192, column), keys, None, total)
      }
      def value(v: Int): Any = if (t == StringType) s"v$v" else v.toLong
      val state = forState.state(EmitTo.All)
      val modes = out(forValue.evaluate(EmitTo.All), t).map(v => if (v == null) null else v.toString)
      for (g <- 0 until total) {
        val (values, counts) = (state(0).getList(g), state(1).getList(g))
        val want = seen(g).toSeq
        val got = (0 until values.numElements).map(j =>
          (if (t == StringType) values.getUTF8String(j).toString else values.getLong(j), counts.getLong(j)))
        assert(got == want.map { case (v, n) => (value(v), n) }, s"$t, group $g")
        // The most frequent value, the least of those that tie (strings by their bytes: v10 before v9).
        val most = want.map(_._2).max
        val ties = want.collect { case (v, n) if n == most => value(v) }
        val least = if (t == StringType) ties.map(_.toString).min else ties.map(_.asInstanceOf[Long]).min
        assert(modes(g) == least.toString, s"$t, group $g")
      }
    }
  }

  test("hand-worked: approx_distinct keeps a group of few values in bytes, not 16 KB, and turns dense past 2048") {
    val acc = AccumulatorGroups.of(bound(ApproxDistinct, LongType))
    // 1000 groups of 10 distinct values: each a sparse table of 16 slots (the 8 first fill half of 8).
    acc.updateBatch(Columns(10000, longs((0 until 10000).map(_.toLong): _*)), Array.tabulate(10000)(_ % 1000),
      None, 1000)
    assert(acc.size < 1000L * 200, acc.size)
    val copy = AccumulatorGroups.of(bound(ApproxDistinct, LongType))
    copy.updateBatch(Columns(10000, longs((0 until 10000).map(_.toLong): _*)), Array.tabulate(10000)(_ % 1000),
      None, 1000)
    // Packed for the exchange: 3 bytes a non-zero register, not 16 KB a group.
    val packed = BinaryColumn.of(bound(ApproxDistinct, LongType).packing.get.pack(copy.state(EmitTo.All), 1000))
    assert(packed.offsets(1000) <= 1000 * 30, packed.offsets(1000))
    val estimates = out(acc.evaluate(EmitTo.All), LongType).map(_.asInstanceOf[Long])
    assert(estimates.forall(e => math.abs(e - 10) <= 1), estimates.distinct)
    // One group of 5000 distinct values: dense, 16 KB, estimated within HyperLogLog's error.
    acc.updateBatch(Columns(5000, longs((0 until 5000).map(_.toLong): _*)), new Array[Int](5000), None, 1)
    assert(acc.size >= HyperLogLogAccumulator.Registers && acc.size < 2 * HyperLogLogAccumulator.Registers, acc.size)
    assert(math.abs(out(acc.evaluate(EmitTo.All), LongType).head.asInstanceOf[Long] - 5000) < 150)
  }

  test("hand-worked: sum, count, avg of bigint in three groups, with and without a filter") {
    val values = Columns(5, longs(1, null, 5, 2, null))
    val groups = Array(0, 0, 1, 0, 2)
    val filter = mask(true, true, false, null, true)
    for (make <- Seq(() => AccumulatorGroups.of(bound(Sum, LongType)),
        () => new AccumulatorGroups(bound(Sum, LongType).newAccumulator))) {
      val acc = make()
      acc.updateBatch(values, groups, None, 3)
      assert(out(acc.evaluate(EmitTo.All), LongType) == Seq(3L, 5L, null))
      acc.updateBatch(values, groups, filter, 3)
      assert(out(acc.evaluate(EmitTo.All), LongType) == Seq(1L, null, null))
    }
    val count = AccumulatorGroups.of(bound(Count, LongType))
    count.updateBatch(values, groups, None, 4)
    assert(out(count.evaluate(EmitTo.All), LongType) == Seq(2L, 1L, 0L, 0L))
    count.updateBatch(values, groups, filter, 3)
    assert(out(count.evaluate(EmitTo.All), LongType) == Seq(1L, 0L, 0L))
    val star = AccumulatorGroups.of(bound(Count))
    star.updateBatch(Columns(5), groups, filter, 3)
    assert(out(star.evaluate(EmitTo.All), LongType) == Seq(2L, 0L, 1L))
  }

  test("hand-worked: convertToState gives each row's own state; a row filtered out or NULL is an empty group") {
    val values = Columns(3, longs(1L, null, 3L))
    val filter = mask(true, true, false)
    for (make <- Seq(() => AccumulatorGroups.of(bound(Sum, LongType)),
        () => new AccumulatorGroups(bound(Sum, LongType).newAccumulator))) {
      val Array(sum, count) = make().convertToState(values, filter)
      assert(out(sum, LongType) == Seq(1L, null, null) && out(count, LongType) == Seq(1L, 0L, 0L))
    }
    val Array(min) = AccumulatorGroups.of(bound(Min, IntegerType)).convertToState(
      Columns(3, new ObjectColumn(Array(4, null, -2))), None)
    assert(out(min, IntegerType) == Seq(4, null, -2))
    val Array(n) = AccumulatorGroups.of(bound(Count)).convertToState(Columns(3), filter)
    assert(out(n, LongType) == Seq(1L, 1L, 0L))
  }

  test("hand-worked: EmitTo.First(1) of avg, then a row for the old group 1, now group 0") {
    val acc = AccumulatorGroups.of(bound(Avg, DoubleType))
    acc.updateBatch(Columns(3, doubles(1.0, 3.0, 10.0)), Array(0, 0, 1), None, 3)
    assert(out(acc.evaluate(EmitTo.First(1)), DoubleType) == Seq(2.0))
    acc.updateBatch(Columns(1, doubles(4.0)), Array(0), None, 2)
    assert(out(acc.evaluate(EmitTo.All), DoubleType) == Seq(7.0, null))
    intercept[IllegalArgumentException](acc.evaluate(EmitTo.First(1)))
  }

  test("hand-worked: min and max of doubles in the total order (NaN greatest, -inf kept, -0.0 < 0.0)") {
    val values = Columns(7, doubles(1.0, Double.NaN, Double.NegativeInfinity, Double.NaN, 0.0, -0.0, null))
    val groups = Array(0, 0, 1, 2, 3, 3, 4)
    def run(f: FunctionDef) = {
      val acc = AccumulatorGroups.of(bound(f, DoubleType))
      acc.updateBatch(values, groups, None, 6)
      out(acc.evaluate(EmitTo.All), DoubleType).map(v => if (v == null) "NULL" else v.toString)
    }
    assert(run(Max) == Seq("NaN", "-Infinity", "NaN", "0.0", "NULL", "NULL"))
    assert(run(Min) == Seq("1.0", "-Infinity", "NaN", "-0.0", "NULL", "NULL"))
  }

  test("hand-worked: min and max of strings and binaries by unsigned bytes, through compaction and EmitTo.First") {
    val values = Columns(8, utf8("b", "a", "abcdefgh1", "abcdEfgh0", "z", "\u00e9", "ab", null))
    val groups = Array(0, 0, 1, 1, 2, 2, 3, 4)
    def run(f: FunctionDef, t: DataType, column: Column) = {
      val acc = AccumulatorGroups.of(bound(f, t))
      acc.updateBatch(Columns(8, column), groups, None, 5)
      out(acc.evaluate(EmitTo.All), t).map(v => if (v == null) "NULL" else v.toString)
    }
    // U+00E9 is two bytes from 0xC3: above every ASCII byte, as Spark orders strings. 'E' sorts before 'e'
    // within the first eight bytes; a prefix sorts first.
    assert(run(Min, StringType, values.column(0)) == Seq("a", "abcdEfgh0", "z", "ab", "NULL"))
    assert(run(Max, StringType, values.column(0)) == Seq("b", "abcdefgh1", "\u00e9", "ab", "NULL"))
    val binaries = new ObjectColumn(Array[Any](Array[Byte](1), Array[Byte](-1), Array[Byte](0, 0), Array[Byte](0),
        Array[Byte](127), Array[Byte](-128), Array[Byte](5), null))
    val hex = (v: Any) => v.asInstanceOf[Array[Byte]].map(b => f"${b & 0xff}%02x").mkString
    def runBinary(f: FunctionDef) = {
      val acc = AccumulatorGroups.of(bound(f, BinaryType))
      acc.updateBatch(Columns(8, binaries), groups, None, 5)
      out(acc.evaluate(EmitTo.All), BinaryType).map(v => if (v == null) "NULL" else hex(v))
    }
    assert(runBinary(Min) == Seq("01", "00", "7f", "05", "NULL"))
    assert(runBinary(Max) == Seq("ff", "0000", "80", "05", "NULL"))
    // 300 groups whose max grows one byte a row for 40 rows: each new best outgrows its place, so the
    // arena compacts; then the first 100 groups are emitted and the rest keep their values.
    val acc = AccumulatorGroups.of(bound(Max, StringType))
    for (len <- 1 to 40) {
      val strs = (0 until 300).map(g => s"$g:" + "x" * len)
      acc.updateBatch(Columns(300, utf8(strs: _*)), Array.tabulate(300)(identity), None, 300)
    }
    val first = out(acc.evaluate(EmitTo.First(100)), StringType).map(_.toString)
    assert(first == (0 until 100).map(g => s"$g:" + "x" * 40))
    acc.updateBatch(Columns(1, utf8("199:y")), Array(99), None, 200)
    val rest = out(acc.evaluate(EmitTo.All), StringType).map(_.toString)
    assert(rest == (100 until 300).map(g => if (g == 199) "199:y" else s"$g:" + "x" * 40))
  }

  test("hand-worked: min and max of bytes that tie in their first eight, end in zero bytes, or are empty") {
    // Per group: a prefix against a longer string that continues with a zero byte; two strings of the same
    // first eight bytes that differ after them; the empty string against a zero byte; a long best replaced
    // by a short one and the short by another long one.
    val values = utf8("ab", "ab\u0000", "abcdefgh-zz", "abcdefgh-aa", "abcdefgh", "", "\u0000", "long-string-1",
      "a", "long-string-0")
    val groups = Array(0, 0, 1, 1, 1, 2, 2, 3, 3, 3)
    def run(f: FunctionDef) = {
      val acc = AccumulatorGroups.of(bound(f, StringType))
      acc.updateBatch(Columns(10, values), groups, None, 4)
      out(acc.evaluate(EmitTo.All), StringType).map(_.toString)
    }
    assert(run(Min) == Seq("ab", "abcdefgh", "", "a"))
    assert(run(Max) == Seq("ab\u0000", "abcdefgh-zz", "\u0000", "long-string-1"))
  }

  test("min and max of binaries over a three-byte alphabet equal the unsigned byte order, batch by batch") {
    // Bytes 0, 1 and 255 in values of 0 to 12 bytes tie often in their first eight bytes (the compare's
    // first word) and end in zero bytes; the expected values come from Spark's own binary order, per group.
    val random = new Random(20)
    val alphabet = Array[Byte](0, 1, -1)
    val groupCount = 50
    for (f <- Seq(Min, Max)) {
      val acc = AccumulatorGroups.of(bound(f, BinaryType))
      val expected = new Array[Array[Byte]](groupCount)
      for (_ <- 1 to 20) {
        val values = Array.fill[Any](64)(Array.fill(random.nextInt(13))(alphabet(random.nextInt(3))))
        val groups = Array.fill(64)(random.nextInt(groupCount))
        acc.updateBatch(Columns(64, new ObjectColumn(values)), groups, None, groupCount)
        for ((v, g) <- values.zip(groups)) {
          val b = v.asInstanceOf[Array[Byte]]
          if (expected(g) == null || {
              val c = ByteArray.compareBinary(b, expected(g))
              if (f == Max) c > 0 else c < 0
            }) expected(g) = b
        }
      }
      val got = out(acc.evaluate(EmitTo.All), BinaryType)
      for (g <- 0 until groupCount)
        assert(Option(got(g)).map(_.asInstanceOf[Array[Byte]].toSeq) == Option(expected(g)).map(_.toSeq), s"$f $g")
    }
  }

  private def run(f: FunctionDef, types: Seq[DataType], values: Columns, groups: Array[Int], filter: Option[Column],
      total: Int): Seq[Any] = {
    val b = bound(f, types: _*)
    val acc = AccumulatorGroups.of(b)
    acc.updateBatch(values, groups, filter, total)
    out(acc.evaluate(EmitTo.All), b.returnType)
  }

  test("hand-worked: bit_and, bit_or, bit_xor of tinyint (sign-extended, narrowed back), NULL when empty") {
    val values = Columns(4, new ObjectColumn(Array[Any](3.toByte, (-2).toByte, null, 5.toByte)))
    val groups = Array(0, 0, 1, 2)
    val filter = mask(true, true, true, false)
    def bits(f: FunctionDef) = run(f, Seq(ByteType), values, groups, filter, 4)
    assert(bits(BitAnd) == Seq(2.toByte, null, null, null))
    assert(bits(BitOr) == Seq((-1).toByte, null, null, null))
    assert(bits(BitXor) == Seq((-3).toByte, null, null, null))
    val Array(state) = AccumulatorGroups.of(bound(BitOr, ByteType)).convertToState(values, filter)
    assert(out(state, ByteType) == Seq(3.toByte, (-2).toByte, null, null))
  }

  test("hand-worked: bool_and and bool_or skip NULLs, are NULL on empty groups, honour the filter") {
    val values = Columns(5, new ObjectColumn(Array[Any](true, false, null, true, null)))
    val groups = Array(0, 0, 1, 2, 3)
    assert(run(BoolAnd, Seq(BooleanType), values, groups, None, 5) == Seq(false, null, true, null, null))
    assert(run(BoolOr, Seq(BooleanType), values, groups, None, 5) == Seq(true, null, true, null, null))
    val noFalse = mask(true, false, true, true, true)
    assert(run(BoolAnd, Seq(BooleanType), values, groups, noFalse, 5) == Seq(true, null, true, null, null))
    val Array(state) = AccumulatorGroups.of(bound(BoolAnd, BooleanType)).convertToState(values, noFalse)
    assert(out(state, BooleanType) == Seq(true, null, null, true, null))
  }

  test("hand-worked: variance family and pair moments, with one-value and empty groups") {
    val one = Columns(4, doubles(1.0, 2.0, 4.0, null))
    val groups = Array(0, 0, 1, 1)
    def single(f: FunctionDef) = run(f, Seq(DoubleType), one, groups, None, 3)
    assert(single(VarSamp) == Seq(0.5, null, null))
    assert(single(VarPop) == Seq(0.25, 0.0, null))
    assert(single(Stddev) == Seq(math.sqrt(0.5), null, null))
    assert(single(StddevPop) == Seq(0.5, 0.0, null))
    // Pairs with a NULL are skipped: group 0 has (1, 5), (2, 5) (x constant), group 1 one pair, group 2 none.
    val pairs = Columns(4, doubles(1.0, 2.0, 3.0, 7.0), doubles(5.0, 5.0, null, 1.0))
    def pair(f: FunctionDef) = run(f, Seq(DoubleType, DoubleType), pairs, Array(0, 0, 0, 1), None, 3)
    assert(pair(Corr) == Seq(null, null, null))
    assert(pair(RegrSlope) == Seq(null, null, null))
    assert(pair(RegrCount) == Seq(2L, 1L, 0L))
    assert(pair(CovarPop) == Seq(0.0, 0.0, null))
    assert(pair(CovarSamp) == Seq(0.0, null, null))
    assert(pair(RegrAvgy) == Seq(1.5, 7.0, null))
    // A row's own state is Welford's first step: -0.0's mean is 0.0, an infinity's m2 NaN; NULL: empty.
    val states = AccumulatorGroups.of(bound(VarSamp, DoubleType))
      .convertToState(Columns(3, doubles(-0.0, Double.PositiveInfinity, null)), None)
    assert(states.toSeq.zip(Seq(LongType, DoubleType, DoubleType)).map { case (c, t) =>
      out(c, t).map(String.valueOf)
    } ==
      Seq(Seq("1", "1", "0"), Seq("0.0", "Infinity", "0.0"), Seq("0.0", "NaN", "0.0")))
  }

  test("hand-worked: bigint sum is exact; an overflow that stays raises in ANSI mode, else is NULL") {
    def sum(ansi: Boolean) = AccumulatorGroups.of(new Harness(Sum, Seq(LongType), failOnOverflow = ansi).call.bound)
    val cancels = sum(ansi = true)
    cancels.updateBatch(Columns(3, longs(Long.MaxValue, 1L, -1L)), Array(0, 0, 0), None, 1)
    assert(out(cancels.evaluate(EmitTo.All), LongType) == Seq(Long.MaxValue))
    val stays = sum(ansi = true)
    stays.updateBatch(Columns(2, longs(Long.MaxValue, 1L)), Array(0, 0), None, 1)
    intercept[ArithmeticException](stays.evaluate(EmitTo.All))
    val lenient = sum(ansi = false)
    lenient.updateBatch(Columns(3, longs(Long.MaxValue, 1L, 7L)), Array(0, 0, 1), None, 2)
    val states = lenient.state(EmitTo.All)
    assert(out(states(0), LongType) == Seq(null, 7L) && out(states(1), LongType) == Seq(2L, 1L))
    // An overflowed partial state stays overflowed through the merge, even if the rest would cancel it.
    val merged = sum(ansi = false)
    merged.mergeBatch(Columns(2, states: _*), Array(0, 0), None, 1)
    merged.mergeBatch(Columns(1, longs(-5L), longs(1L)), Array(0), None, 1)
    assert(out(merged.evaluate(EmitTo.All), LongType) == Seq(null))
  }

  test("hand-worked: array_agg keeps each group's arrival order, NULLs included, across merges and EmitTo.First") {
    for (t <- Seq(LongType, DoubleType, StringType)) {
      def v(x: Long): Any = t match {
        case LongType => x
        case DoubleType => x.toDouble
        case _ => UTF8String.fromString(x.toString)
      }
      def col(xs: Any*): Column =
        new ObjectColumn(xs.map(x => if (x == null) null else v(x.asInstanceOf[Int].toLong)).toArray)
      def lists(c: Column) = out(c, ArrayType(t)).map(l =>
        if (l == null) null else GroupsAccumulatorSuite.norm(l).asInstanceOf[Array[Any]].toSeq)
      val acc = AccumulatorGroups.of(bound(ArrayAgg, t))
      acc.updateBatch(Columns(5, col(1, 2, null, 3, 4)), Array(0, 1, 0, 0, 2), mask(true, true, true, true, false), 4)
      acc.updateBatch(Columns(2, col(5, 6)), Array(1, 0), None, 4)
      val Array(states) = acc.state(EmitTo.First(2))
      assert(lists(states) == Seq(Seq(v(1L), null, v(3L), v(6L)), Seq(v(2L), v(5L))), t)
      // Old group 2 (filtered out, no elements) and 3 (never fed) are now 0 and 1.
      acc.mergeBatch(Columns(2, states), Array(1, 0), None, 2)
      acc.updateBatch(Columns(1, col(7)), Array(1), None, 2)
      assert(lists(acc.evaluate(EmitTo.All)) == Seq(Seq(v(2L), v(5L)), Seq(v(1L), null, v(3L), v(6L), v(7L))), t)
    }
    assert(out(AccumulatorGroups.of(bound(ArrayAgg, LongType)).evaluate(EmitTo.All), ArrayType(LongType)).isEmpty)
  }

  test("a value pool doubles up to 2^20 slots, then grows by half; 1.2 million values of one group come out in order") {
    assert(GroupPool.grownCapacity(1024) == 2048)
    assert(GroupPool.grownCapacity(1 << 19) == (1 << 20))
    assert(GroupPool.grownCapacity(1 << 20) == 1572864)
    assert(GroupPool.grownCapacity(1572864) == 2359296)
    // Past 2^20 values the pool grows once by half; all emitted at once, the owners go before the values.
    val acc = AccumulatorGroups.of(bound(ArrayAgg, LongType))
    val n = 1200000
    acc.updateBatch(Columns(n, longs((0L until n.toLong).map(x => x: Any): _*)), new Array[Int](n), None, 1)
    val Seq(list) = out(acc.evaluate(EmitTo.All), ArrayType(LongType))
    assert(GroupsAccumulatorSuite.norm(list).asInstanceOf[Array[Any]].toSeq == (0L until n.toLong))
  }

  test("array_agg's emitted lists hold while their loan is open, the next emission taking recycled arrays") {
    // 3,000 doubles (every 7th NULL) in 1,000 groups, in arrival order: the lists a plain filter gives. The
    // second emission, of other values in groups of other sizes (so other offsets), would take any array the
    // first let go of too early and write over it.
    val rows = 0 until 3000
    def value(offset: Double, i: Int): Any = if (i % 7 == 0) null else offset + i
    def emitted(loan: LargeArrays.Loan, offset: Double, group: Int => Int): Column = {
      val acc = AccumulatorGroups.of(bound(ArrayAgg, DoubleType))
      acc.updateBatch(Columns(rows.size, doubles(rows.map(value(offset, _)): _*)), rows.map(group).toArray, None, 1000)
      LargeArrays.lending(loan)(acc.state(EmitTo.All))(0)
    }
    def expected(offset: Double, group: Int => Int) =
      (0 until 1000).map(g => rows.filter(group(_) == g).map(value(offset, _)))
    def lists(c: Column) = out(c, ArrayType(DoubleType)).map(l => norm(l).asInstanceOf[Array[Any]].toSeq)
    val (threeEach, uneven) = ((i: Int) => i % 1000, (i: Int) => if (i < 1000) i else i % 500)
    val (first, second) = (new LargeArrays.Loan, new LargeArrays.Loan)
    val firstLists = emitted(first, 0.0, threeEach)
    val secondLists = emitted(second, 0.5, uneven)
    assert(lists(firstLists) == expected(0.0, threeEach))
    assert(lists(secondLists) == expected(0.5, uneven))
    first.repay()
    second.repay()
  }

  test("hand-worked: median and percentile_cont of each group's sorted values, states sorted, NULL when empty") {
    // Group 0: {3, 1, 2}; 1: {1, 2} (a NULL skipped, 9 filtered out); 2: none; 3: {-0.0, 0.0};
    // 4: {NaN, 5, inf} (NaN sorts greatest); 5: {-inf, inf}.
    val values = Columns(14,
      doubles(3.0, 1.0, 1.0, null, 2.0, 2.0, 9.0, -0.0, 0.0, Double.NaN, 5.0,
        Double.PositiveInfinity, Double.NegativeInfinity, Double.PositiveInfinity))
    val groups = Array(0, 1, 0, 1, 0, 1, 1, 3, 3, 4, 4, 4, 5, 5)
    val filter = mask(true, true, true, true, true, true, false, true, true, true, true, true, true, true)
    def strings(vs: Seq[Any]) = vs.map(v => if (v == null) "NULL" else String.valueOf(v))
    def lists(c: Column, t: DataType) =
      out(c, ArrayType(t)).map(l => strings(norm(l).asInstanceOf[Array[Any]].toSeq))
    def fed(b: Bound) = { val acc = AccumulatorGroups.of(b); acc.updateBatch(values, groups, filter, 6); acc }
    val median = bound(Median, DoubleType)
    // 2, the middle of 1 2 3; (1 + 2) / 2; NULL; (-0.0 + 0.0) / 2 = 0.0; the middle of 5 inf NaN; inf - inf.
    assert(strings(out(fed(median).evaluate(EmitTo.All), DoubleType)) ==
      Seq("2.0", "1.5", "NULL", "0.0", "Infinity", "NaN"))
    val Array(states) = fed(median).state(EmitTo.All)
    val sortedLists = Seq(Seq("1.0", "2.0", "3.0"), Seq("1.0", "2.0"), Seq(), Seq("-0.0", "0.0"),
      Seq("5.0", "Infinity", "NaN"), Seq("-Infinity", "Infinity"))
    assert(lists(states, DoubleType) == sortedLists)
    // After EmitTo.First(2), old group 2 (empty) is 0 and gets 4.0; old group 3 is 1 and merges {1, 2, 3}:
    // {-0.0, 0.0, 1, 2, 3}, median 1.0.
    val acc = fed(median)
    assert(out(acc.evaluate(EmitTo.First(2)), DoubleType) == Seq(2.0, 1.5))
    acc.updateBatch(Columns(1, doubles(4.0)), Array(0), None, 4)
    acc.mergeBatch(Columns(1, new ObjectColumn(Array[Any](Array(3.0, 1.0, 2.0)))), Array(1), None, 4)
    assert(strings(out(acc.evaluate(EmitTo.All), DoubleType)) == Seq("4.0", "1.0", "Infinity", "NaN"))
    // Emitted values that lie first in the pool, in group order, are sorted where they are; the rest stay.
    val inPlace = AccumulatorGroups.of(median)
    inPlace.updateBatch(Columns(4, doubles(3.0, 1.0, 7.0, 4.0)), Array(0, 0, 1, 1), None, 2)
    assert(out(inPlace.evaluate(EmitTo.First(1)), DoubleType) == Seq(2.0))
    assert(out(inPlace.state(EmitTo.All)(0), ArrayType(DoubleType)).map(l => norm(l).asInstanceOf[Array[Any]].toSeq) ==
      Seq(Seq(4.0, 7.0)))
    // percentile_cont reads the same sorted values: 0.25 of {1, 2, 3} at index 0.5 is 1.5; of {1, 2} at
    // 0.25, 1.25; from the top (0.75) 2.5 and 1.75.
    def percentile(p: Double, descending: Boolean, t: DataType = DoubleType) = new Harness(PercentileCont, Seq(t),
      constants = Seq(Literal(p)) ++ (if (descending) Seq(Literal(true)) else Nil)).call.bound
    assert(out(fed(percentile(0.25, descending = false)).evaluate(EmitTo.All), DoubleType).take(3) ==
      Seq(1.5, 1.25, null))
    assert(out(fed(percentile(0.25, descending = true)).evaluate(EmitTo.All), DoubleType).take(3) ==
      Seq(2.5, 1.75, null))
    assert(lists(fed(percentile(0.25, descending = false)).state(EmitTo.All)(0), DoubleType) == sortedLists)
    val asFloat = fed(percentile(0.25, descending = false, FloatType)).evaluate(EmitTo.All)
    assert(out(asFloat, FloatType).take(3) == Seq(1.5f, 1.25f, null))
    // Floats: results and state elements are floats, as the Accumulator's: {1, 2} -> 1.5, {1, 2, 4, 8} -> 3.
    val floats = Columns(7, new ObjectColumn(Array[Any](2.0f, 1.0f, 8.0f, 1.0f, 4.0f, 2.0f, null)))
    val floatMedian = bound(Median, FloatType)
    def floatsFed = {
      val a = AccumulatorGroups.of(floatMedian); a.updateBatch(floats, Array(0, 0, 1, 1, 1, 1, 2), None, 3); a
    }
    assert(out(floatsFed.evaluate(EmitTo.All), FloatType) == Seq(1.5f, 3.0f, null))
    val floatStates = out(floatsFed.state(EmitTo.All)(0), ArrayType(FloatType)).map(_.asInstanceOf[Array[Any]].toSeq)
    assert(floatStates == Seq(Seq(1.0f, 2.0f), Seq(1.0f, 2.0f, 4.0f, 8.0f), Seq()))
    assert(floatStates.flatten.forall(_.isInstanceOf[java.lang.Float]))
  }

  test("the t-digest's native path merges a group's values every 8192 rows, as the Accumulator does") {
    for ((f, types, constants) <- Seq((ApproxMedian, Seq(DoubleType), Nil),
        (ApproxPercentileContWithWeight, Seq(DoubleType, DoubleType), Seq(Literal(0.25), Literal(10))))) {
      val h = new Harness(f, types, constants = constants)
      val rnd = new Random(11)
      // 30,000 rows for group 0 (NULLs counted towards the 8192), a few for group 1, in uneven batches.
      val rows =
        IndexedSeq.fill(30100)(types.map(_ => if (rnd.nextInt(20) == 0) null else rnd.nextGaussian() * 1e3: Any))
      val keys = Array.tabulate(rows.size)(i => if (i % 300 == 7) 1 else 0)
      val native = AccumulatorGroups.of(h.call.bound)
      var from = 0
      while (from < rows.size) {
        val until = math.min(rows.size, from + 500 + rnd.nextInt(3000))
        val batch = Batch(types, rows.slice(from, until), keys.slice(from, until), None)
        native.updateBatch(batch.columns(rnd), batch.keys, None, 2)
        from = until
      }
      val want = (0 to 1).map(g => h.accumulate(rows.indices.filter(keys(_) == g).map(rows)))
      val states = native.state(EmitTo.All)
      for (g <- 0 to 1; (field, i) <- want(g).state().zipWithIndex)
        assert(exact(norm(states(i).get(g, h.call.bound.stateSchema(i).dataType)), norm(field)),
          s"${f.name} group $g field $i")
      // count: the values, or for the weighted form the total of the positive weights (DataFusion 55).
      val kept = rows.indices.filter(i => keys(i) == 0 && rows(i).forall(_ != null)).map(rows)
      val count = if (types.size == 1) kept.size.toDouble else kept.map(_(1).asInstanceOf[Double]).filter(_ > 0).sum
      assert(math.abs(states(2).getDouble(0) - count) <= 1e-9 * count, f.name)
    }
  }

  test(
    "NullState, on each of its four loops (filter or not, NULLs or not), visits the kept non-NULL rows in order and marks their groups") {
    // Rows (group, value): (0, 1), (1, 2 or NULL), (0, 3); group 2 gets no row. Hand-worked visits.
    val cases = Seq(
      ("no filter, no NULLs", longs(1, 2, 3), None, Seq(0 -> 1L, 1 -> 2L, 0 -> 3L), Seq(true, true, false)),
      ("no filter, NULLs", longs(1, null, 3), None, Seq(0 -> 1L, 0 -> 3L), Seq(true, false, false)),
      ("filter, no NULLs", longs(1, 2, 3), mask(false, true, null), Seq(1 -> 2L), Seq(false, true, false)),
      ("filter, NULLs", longs(1, null, 3), mask(true, true, false), Seq(0 -> 1L), Seq(true, false, false))
    )
    for ((label, values, filter, visits, seen) <- cases) {
      val state = new NullState
      val visited = Seq.newBuilder[(Int, Long)]
      state.accumulateLong(Array(0, 1, 0), values, 3, filter, 3, (g, v) => visited += g -> v)
      assert(visited.result() == visits, label)
      assert((0 until 3).map(state.isSeen) == seen, label)
      val validity = state.build(EmitTo.All)
      assert((0 until 3).map(Validity.isValid(validity, _)) == seen, label)
    }
  }

  test("GroupColumns.nonZero: a bit for each count but 0, the extremes included, across word boundaries") {
    val rnd = new Random(11)
    for (n <- Seq(0, 1, 63, 64, 65, 130)) {
      val counts = Array.fill(n)(
        rnd.nextInt(4) match {
          case 0 => 0L
          case 1 => Long.MinValue
          case 2 => -1L
          case _ => rnd.nextLong()
        })
      val bits = GroupColumns.nonZero(counts)
      assert(bits.length == (n + 63) / 64)
      assert((0 until n).map(Validity.isValid(bits, _)) == counts.toSeq.map(_ != 0), s"$n counts")
      // No bit past the last group: a column's NULL count reads whole words.
      if (n % 64 != 0) assert(bits.last >>> (n % 64) == 0L, s"$n counts")
    }
  }

  test("Validity.setFrom sets every bit from a row on and keeps the ones below it") {
    val rnd = new Random(5)
    for (words <- Seq(1, 2, 3); row <- Seq(0, 1, 63, 64, 65, 127, 128, 150).filter(_ <= 64 * words)) {
      val before = Array.fill(words)(rnd.nextLong())
      val bits = before.clone()
      Validity.setFrom(bits, row)
      val expected = (0 until 64 * words).map(i => i >= row || Validity.isValid(before, i))
      assert((0 until 64 * words).map(Validity.isValid(bits, _)) == expected, s"$words words from $row")
    }
  }

  test("BitVector and LongVector: EmitTo.First(n) shifts the rest down across word boundaries") {
    val rnd = new Random(7)
    for (total <- Seq(1, 63, 64, 65, 200, 1000); n <- Seq(0, 1, 63, 64, 65, 128, total).filter(_ <= total)) {
      val bits = Seq.fill(total)(rnd.nextBoolean())
      val v = new BitVector
      val l = new LongVector(-1L)
      v.resize(total); l.resize(total)
      bits.zipWithIndex.foreach { case (b, g) => if (b) v.set(g); l.array(g) = g.toLong }
      val first = v.emit(EmitTo.First(n))
      assert((0 until n).map(Validity.isValid(first, _)) == bits.take(n))
      assert(l.emit(EmitTo.First(n)).toSeq == (0 until n).map(_.toLong))
      assert(v.length == total - n && l.length == total - n)
      v.resize(total - n + 70); l.resize(total - n + 70)
      assert((0 until total - n + 70).map(v.get) == bits.drop(n) ++ Seq.fill(70)(false))
      assert((0 until total - n + 70).map(l(_)) == (n until total).map(_.toLong) ++ Seq.fill(70)(-1L))
    }
  }

  test("size follows the number of groups, for native and adapter alike") {
    for (make <- Seq(() => AccumulatorGroups.of(bound(Sum, LongType)),
        () => new AccumulatorGroups(bound(Sum, LongType).newAccumulator))) {
      val small, large = make()
      small.updateBatch(Columns(1, longs(1L)), Array(0), None, 10)
      large.updateBatch(Columns(1, longs(1L)), Array(0), None, 100000)
      assert(large.size > small.size * 100)
      large.evaluate(EmitTo.All)
      assert(large.size < 10000)
    }
  }
}

object GroupsAccumulatorSuite {
  /** Equal to the bit: doubles by their bits (any NaN equals any NaN; -0.0 is not 0.0), lists element
   *  by element in order, the rest as [[Gen.same]] (binaries by content). */
  def exact(a: Any, b: Any): Boolean = (norm(a), norm(b)) match {
    case (x: Double, y: Double) => java.lang.Double.doubleToLongBits(x) == java.lang.Double.doubleToLongBits(y)
    case (x: Float, y: Float) => java.lang.Float.floatToIntBits(x) == java.lang.Float.floatToIntBits(y)
    // Lists in order, element by element (an ordered state's key rows are lists too).
    case (x: Array[Any], y: Array[Any]) => x.length == y.length && x.indices.forall(i => exact(x(i), y(i)))
    case (x, y) => Gen.same(x, y)
  }

  /** Lists (states of median, array_agg) compared by content whatever their array type. */
  def norm(v: Any): Any = v match {
    case a: Array[Long] => a.map(x => x: Any)
    case a: Array[Int] => a.map(x => x: Any)
    case a: Array[Double] => a.map(x => x: Any)
    case other => other
  }

  /** One batch of rows in Spark's internal representation, their group keys and FILTER values; `readAs`
   *  (when given) the types its columns are cast to, as an operator casts arguments to `Bound.coerceTo`. */
  /** Rows of generated values of `types`; the `constants` are columns of their own after the first
   *  `constantsAt` (the function's arguments, before its WITHIN GROUP keys), as the operator passes them. */
  final case class Batch(types: Seq[DataType], rows: IndexedSeq[Seq[Any]], keys: Array[Int],
      filter: Option[IndexedSeq[Any]], readAs: Seq[DataType] = Nil, constants: Seq[Literal] = Nil,
      constantsAt: Int = 0) {
    def kept(i: Int): Boolean = filter.forall(_(i) == true)

    /** The rows whose key is at least n, keyed from 0 (what is left after EmitTo.First(n)). */
    def onlyKeysFrom(n: Int): Batch = {
      val keep = keys.indices.filter(keys(_) >= n)
      copy(rows = keep.map(rows), keys = keep.map(keys(_) - n).toArray, filter = filter.map(f => keep.map(f)))
    }

    /** The batch as columns: primitive columns or boxed ones, chosen at random. */
    def columns(rnd: Random): Columns = {
      val read = if (readAs.isEmpty) types else readAs
      def cast(v: Any, j: Int): Any =
        if (v == null || read(j) == types(j)) v else Cast(Literal(v, types(j)), read(j), Some("UTC")).eval()
      val generated = types.indices.map(j => column(read(j), rows.map(r => cast(r(j), j)), rnd))
      val fixed = constants.map(c => new ObjectColumn(Array.fill[Any](rows.size)(c.value)))
      val (arguments, orderKeys) = generated.splitAt(constantsAt)
      Columns.of(rows.size, (arguments ++ fixed ++ orderKeys).toArray)
    }

    /** The keys as the operator passes them: half the time in a longer array it reuses, whose entries past the
     *  batch's rows are not groups. */
    def groupIndices(rnd: Random): Array[Int] =
      if (rnd.nextBoolean()) keys else keys ++ Array.fill(1 + rnd.nextInt(8))(-1)

    def filterColumn(rnd: Random): Option[Column] = filter.map { f =>
      if (rnd.nextBoolean()) new ObjectColumn(f.toArray)
      else new BooleanColumn(f.map(_ == true).toArray, validity(f, rnd), f.size)
    }
  }

  object Batch {
    /** `arguments`: how many of `types` are the function's arguments, which `gen` makes (the rest are keys). */
    def random(types: Seq[DataType], groups: Int, rnd: Random, gen: Option[(DataType, Random) => Any],
        arguments: Int): Batch = {
      val n = rnd.nextInt(5) match {
        case 0 => 0
        case 1 => 1 + rnd.nextInt(3)
        case _ => rnd.nextInt(400)
      }
      // Half the batches have no NULLs and half no filter, so that every NullState loop runs.
      val nulls = rnd.nextBoolean()
      def value(t: DataType, generated: Boolean): Any =
        if (nulls && rnd.nextInt(6) == 0) null
        else gen.filter(_ => generated).fold(Gen.value(t, rnd, finite = false))(_(t, rnd))
      val rows = IndexedSeq.fill(n)(types.zipWithIndex.map { case (t, j) => value(t, j < arguments) })
      // Skewed keys: a few hot groups and a long tail.
      val keys = Array.fill(n)(if (rnd.nextInt(3) == 0) rnd.nextInt(math.min(groups, 4)) else rnd.nextInt(groups))
      val filter = if (rnd.nextBoolean()) None
      else Some(
        IndexedSeq.fill(n)(
          rnd.nextInt(5) match {
            case 0 => null
            case 1 => false
            case _ => true
          }))
      Batch(types, rows, keys, filter)
    }
  }

  private def validity(values: Seq[Any], rnd: Random): Array[Long] =
    if (!values.contains(null) && rnd.nextBoolean()) null
    else {
      val bits = new Array[Long](Validity.words(values.size))
      values.zipWithIndex.foreach { case (v, i) => if (v != null) Validity.set(bits, i) }
      bits
    }

  def column(t: DataType, values: IndexedSeq[Any], rnd: Random): Column =
    if (rnd.nextInt(3) == 0) new ObjectColumn(values.toArray)
    else t match {
      case FloatType | DoubleType =>
        new DoubleColumn(values.map {
            case null => 0.0
            case f: Float => f.toDouble
            case d: Double => d
          }.toArray, validity(values, rnd), values.size)
      case BooleanType | ByteType | ShortType | IntegerType | LongType | DateType | TimestampType =>
        new LongColumn(
          values.map {
            case null => 0L
            case b: Boolean => if (b) 1L else 0L
            case b: Byte => b.toLong
            case s: Short => s.toLong
            case i: Int => i.toLong
            case l: Long => l
          }.toArray,
          validity(values, rnd),
          values.size
        )
      case _ => new ObjectColumn(values.toArray)
    }
}
