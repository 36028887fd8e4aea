package sparkagg.exec

import org.apache.spark.sql.{DataFrame, Row}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{AttributeReference, BindReferences, Literal, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.catalyst.plans.physical.HashPartitioning
import org.apache.spark.sql.execution.adaptive.{AQEShuffleReadExec, AdaptiveSparkPlanHelper}
import org.apache.spark.sql.execution.exchange.{ReusedExchangeExec, ShuffleExchangeExec}
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.types.UTF8String
import org.scalatest.funsuite.AnyFunSuite
import sparkagg.api.EmitTo
import sparkagg.LocalSpark
import sparkagg.compat.CollectionConverters._
import sparkagg.testing.{Slow, SparkFeatures, Sweep}

/** The states crossing the shuffle in packets ([[StatePackets]]): the same rows as a row per group, every
 *  group in the partition Spark's hash partitioning gives its key, under adaptive execution and without. */
class StatePacketsSuite extends AnyFunSuite with LocalSpark with AdaptiveSparkPlanHelper {
  import StatePacketsSuite._

  private def nodes(df: DataFrame): Seq[GroupedAggregateExec] =
    collect(df.queryExecution.executedPlan) { case g: GroupedAggregateExec => g }

  private def shuffles(df: DataFrame): Int =
    collect(df.queryExecution.executedPlan) { case s: ShuffleExchangeExec => s }.size

  /** The query's rows with packets and with a row per group; how many nodes unpacked packets in each. */
  /** `sql`'s rows with states in packets and without, and how many nodes unpack packets each way; `packedRun`
   *  sees the packed run's DataFrame once it has run. */
  private def bothWays(sql: String, packedRun: DataFrame => Unit = _ => ()): (Seq[Row], Seq[Row], Int, Int) = {
    def run(packed: Boolean) = withConf(StatePackets.EnabledConf -> packed.toString) {
      val df = spark.sql(sql)
      val rows = df.collect().toSeq
      if (packed) packedRun(df)
      (rows, nodes(df).count(_.unpacks.isDefined))
    }
    val ((packed, unpacking), (plain, plainUnpacking)) = (run(true), run(false))
    (packed, plain, unpacking, plainUnpacking)
  }

  /** Rows in one order whatever the partitions gave: the swept queries leave ORDER BY out, whose sampling job
   *  and second shuffle (of 201 partitions, past 200) cost more than the aggregation they check. */
  private def sorted(rows: Seq[Row]): Seq[Row] = rows.sortBy(_.toString)

  override def beforeAll(): Unit = {
    super.beforeAll()
    spark.range(0, 60000).selectExpr(
      "id % 7919 AS k",
      "IF(id % 13 = 0, NULL, id % 1000) AS n",
      "CONCAT('key-', id % 4001) AS s",
      "DATE_ADD(DATE'2020-01-01', CAST(id % 365 AS INT)) AS d",
      "CAST(id % 97 AS DECIMAL(20, 2)) AS m",
      "CAST(id AS DOUBLE) / 7 AS x"
    ).createOrReplaceTempView("t")
  }

  test("each partition's route is an integer Spark's hash partitioning sends there") {
    for (n <- Seq(1, 2, 3, 7, 200, 1000)) {
      val routes = StatePackets.routes(n)
      routes.zipWithIndex.foreach { case (v, p) =>
        assert(HashPartitioning(Seq(Literal(v)), n).partitionIdExpression.eval() == p, s"$n partitions, $p")
      }
    }
  }

  test("a packet's partition for one integer-like or string key is what Spark's partition expression gives") {
    val random = new scala.util.Random(20261128)
    val types = Seq(LongType, IntegerType, DateType, TimestampType, TimestampNTZType, DayTimeIntervalType(),
      YearMonthIntervalType(), StringType)
    // Every length up to 40 (Murmur3 takes 4 bytes a step and the rest one by one), ASCII and multi-byte.
    def string(): UTF8String = UTF8String.fromString(
      Seq.fill(random.nextInt(41))(
        if (random.nextInt(4) == 0) random.nextInt(0x3000).toChar else random.nextPrintableChar())
        .mkString)
    for (t <- types; n <- Seq(1, 3, 4, 200)) {
      val input = Seq(AttributeReference("other", LongType)(), AttributeReference("key", t)())
      val spark = BindReferences.bindReference(HashPartitioning(Seq(input(1)), n).partitionIdExpression, input)
      val ours = PacketWriter.partitioner(Seq(input(1)), input, n)
      val toRow = UnsafeProjection.create(input.map(_.dataType).toArray)
      for (i <- 0 until 500) {
        val key: Any =
          if (i % 50 == 0) null
          else if (t == StringType) string()
          else if (t.defaultSize == 8) random.nextLong()
          else random.nextInt(): Any
        val row = toRow(InternalRow(random.nextLong(), key))
        assert(ours(row) == spark.eval(row), s"$t, $n partitions, key $key")
      }
    }
  }

  test("adaptive execution coalesces the packets' partitions to spark.sparkagg.groups.packetPartitionBytes") {
    // 7919 groups' states, some 200 KB of packets in 40 partitions: by Spark's measure for rows (64 MB, and no
    // fewer partitions than cores) they become a few; at 4 KB a partition, every one of the 40 stays (a
    // partition's count is its coalesced read's, or the exchange's when it was left as it was).
    def run(packetBytes: String): (Seq[Row], Seq[Option[Long]], Int) =
      withConf(
        "spark.sql.adaptive.enabled" -> "true",
        "spark.sql.shuffle.partitions" -> "40",
        "spark.sql.adaptive.coalescePartitions.minPartitionSize" -> "1",
        StatePackets.PartitionBytesConf -> packetBytes
      ) {
        val df = spark.sql("SELECT k, df_avg(x), df_count(s) FROM t GROUP BY k")
        val rows = sorted(df.collect().toSeq)
        val plan = df.queryExecution.executedPlan
        val read = collect(plan) { case r: AQEShuffleReadExec => r.partitionSpecs.size }
        (rows, collect(plan) { case s: ShuffleExchangeExec => s.advisoryPartitionSize }, read.headOption.getOrElse(40))
      }
    val (small, large) = (run("4k"), run("64m"))
    assert(small._2 == Seq(Some(4096L)) && large._2 == Seq(Some(64L << 20)))
    assert(small._3 == 40 && large._3 <= 4, (small._3, large._3))
    assert(small._1 == large._1 && small._1.size == 7919)
  }

  test("Modulus is Math.floorMod, by multiplications") {
    val random = new scala.util.Random(7)
    val edges = Seq(0, 1, -1, 2, -2, Int.MaxValue, Int.MinValue, Int.MaxValue - 1, Int.MinValue + 1)
    val divisors = Seq(1, 2, 3, 4, 7, 200, 201, 1000, 65536, 65537, (1 << 30) + 3, Int.MaxValue - 1, Int.MaxValue) ++
      Seq.fill(20)(1 + random.nextInt(Int.MaxValue))
    for (n <- divisors) {
      val modulus = new Modulus(n)
      val xs =
        edges ++ edges.flatMap(e => Seq(n, -n, n - 1, 1 - n, n + 1).map(_ + e)) ++ Seq.fill(2000)(random.nextInt())
      xs.foreach(x => assert(modulus(x) == Math.floorMod(x, n), s"$x mod $n"))
    }
    assertThrows[IllegalArgumentException](new Modulus(0))
  }

  test("packets written from a long key table's keys and bigint/double columns are those of the projected rows", Slow) {
    val random = new scala.util.Random(20261128)
    val doubles = Seq(Double.NaN, -0.0, 0.0, Double.PositiveInfinity, Double.NegativeInfinity, 1.5)
    for (keyType <- Seq(LongType, IntegerType, DateType, TimestampType); numStates <- Seq(0, 2, 64);
      groups <- Seq(0, 1, 2000); n <- Seq(1, 3, 200)) {
      val label = s"$keyType key, $numStates states, $groups groups, $n partitions"
      val stateTypes = Seq.tabulate(numStates)(c => if (c % 2 == 0) DoubleType else LongType)
      val key = AttributeReference("key", keyType)()
      val unpacked = key +: stateTypes.zipWithIndex.map { case (t, c) => AttributeReference(s"s$c", t)() }
      val packing = StatePackets(Seq(key), n, unpacked, AttributeReference("route", IntegerType)(),
        AttributeReference("states", BinaryType)())
      val width = if (keyType.defaultSize == 8) 8 else 4
      val keyValues = Array.fill(groups)(if (width == 8) random.nextLong() else random.nextInt().toLong)
      val nullGroup = if (groups > 1) random.nextInt(groups) else -1
      val valid = Array.fill(numStates, groups)(random.nextInt(5) != 0)
      val longs = Array.fill(numStates, groups)(random.nextLong())
      val dbls = Array.fill(numStates, groups)(
        if (random.nextBoolean()) doubles(random.nextInt(doubles.size)) else random.nextGaussian())
      def bits(c: Int): Array[Long] = {
        val words = new Array[Long]((groups + 63) / 64)
        for (g <- 0 until groups if valid(c)(g)) words(g >> 6) |= 1L << g
        words
      }
      val columns: Array[sparkagg.api.Column] = Array.tabulate(numStates) { c =>
        if (stateTypes(c) == LongType) new sparkagg.common.LongColumn(longs(c), bits(c), groups)
        else new sparkagg.common.DoubleColumn(dbls(c), bits(c), groups)
      }
      val project = UnsafeProjection.create(unpacked.map(_.dataType).toArray)
      val rows = (0 until groups).iterator.map { g =>
        val keyValue = if (g == nullGroup) null else if (width == 8) keyValues(g): Any else keyValues(g).toInt: Any
        val states = (0 until numStates).map { c =>
          // Each branch typed Any (here and for the key): an if of two numeric types widens one to the other.
          if (!valid(c)(g)) null else if (stateTypes(c) == LongType) longs(c)(g): Any else dbls(c)(g): Any
        }
        project(InternalRow.fromSeq(keyValue +: states))
      }
      val types = unpacked.map(_.dataType)
      val projected = contents(new PacketWriter(packing).pack(rows, last = true), types)
      var done = 0
      val written = new PacketWriter(packing)
        .pack(new LongKeyMap.Keys(keyValues, nullGroup, keyType, width), columns, stateTypes, groups, last = true) {
          () => done += 1
        }
      assert(written.isDefined, label)
      // Packets of columns: each group in the partition its row went to, with the same values.
      assert(counted(contents(written.get, types)) == counted(projected), label)
      assert(done == 1, label)
      assert(projected.size == groups, label)
    }
  }

  test(
    "packets written from a row or packed key table's keys and string, binary, bigint, double, boolean columns " +
      "are those of the projected rows", Slow) {
    val random = new scala.util.Random(20261129)
    val keyShapes =
      Seq[Seq[DataType]](
        Seq(StringType),
        Seq(IntegerType, StringType),
        Seq(StringType, LongType, BooleanType, StringType),
        Seq(IntegerType, IntegerType),
        Seq(DateType, ShortType, ByteType),
        Seq(LongType, LongType),
        Seq(TimestampType, IntegerType, ShortType)
      )
    def randomString(): UTF8String = UTF8String.fromString(random.alphanumeric.take(random.nextInt(20)).mkString)
    def randomKey(t: DataType): Any =
      if (random.nextInt(8) == 0) null
      else t match {
        case StringType => randomString()
        case IntegerType | DateType => random.nextInt(50) - 25
        case ShortType => (random.nextInt(50) - 25).toShort
        case ByteType => (random.nextInt(50) - 25).toByte
        case LongType | TimestampType => if (random.nextBoolean()) random.nextLong() else random.nextInt(50) - 25L
        case BooleanType => random.nextBoolean()
      }
    val stateKinds = Seq[DataType](StringType, BinaryType, LongType, DoubleType, BooleanType)
    for (keyTypes <- keyShapes; numStates <- Seq(0, 1, 4, 63); groups <- Seq(0, 1, 500); n <- Seq(1, 3, 200)) {
      val label = s"${keyTypes.mkString(",")} key, $numStates states, $groups groups, $n partitions"
      val stateTypes = Seq.tabulate(numStates)(c => stateKinds(c % stateKinds.size))
      val keyAttributes = keyTypes.zipWithIndex.map { case (t, f) => AttributeReference(s"k$f", t)() }
      val unpacked = keyAttributes ++ stateTypes.zipWithIndex.map { case (t, c) => AttributeReference(s"s$c", t)() }
      val packing = StatePackets(keyAttributes, n, unpacked, AttributeReference("route", IntegerType)(),
        AttributeReference("states", BinaryType)())
      val keyProjection = UnsafeProjection.create(keyTypes.toArray)
      val fields = keyTypes.zipWithIndex.map { case (t, f) => (f, t) }
      val map =
        if (PackedKeyMap.layout(keyTypes).isDefined) new PackedKeyMap(fields)
        else new RowKeyMap(keyProjection, keyTypes.size, fields)
      val group = new Array[Int](1)
      val keyValues = Iterator.continually(keyTypes.map(randomKey))
        .filter { k => // staged as the operator stages a row's key fields, then looked up
          val before = map.numGroups
          map.stage(InternalRow.fromSeq(k), 0, group)
          map.finishBatch(1, group)
          map.numGroups > before
        }
        .take(groups).toIndexedSeq
      assert(map.numGroups == groups, label)
      val valid = Array.fill(numStates, groups)(random.nextInt(5) != 0)
      val values = Array.tabulate(numStates, groups) { (c, _) =>
        stateTypes(c) match {
          case StringType => randomString().getBytes
          case BinaryType => Array.fill(random.nextInt(30))(random.nextInt(256).toByte)
          case LongType => random.nextLong()
          case DoubleType => random.nextGaussian()
          case BooleanType => random.nextBoolean()
        }
      }
      def bits(c: Int): Array[Long] = {
        val words = new Array[Long]((groups + 63) / 64)
        for (g <- 0 until groups if valid(c)(g)) words(g >> 6) |= 1L << g
        words
      }
      val columns: Array[sparkagg.api.Column] = Array.tabulate(numStates) { c =>
        stateTypes(c) match {
          case LongType => new sparkagg.common.LongColumn(values(c).map(_.asInstanceOf[Long]), bits(c), groups)
          case DoubleType => new sparkagg.common.DoubleColumn(values(c).map(_.asInstanceOf[Double]), bits(c), groups)
          case BooleanType =>
            new sparkagg.common.BooleanColumn(values(c).map(_.asInstanceOf[Boolean]), bits(c), groups)
          case _ =>
            val held =
              (0 until groups).map(g => if (valid(c)(g)) values(c)(g).asInstanceOf[Array[Byte]] else Array[Byte]())
            new sparkagg.common.BinaryColumn(
              held.flatten.toArray, held.scanLeft(0)(_ + _.length).toArray, bits(c), groups)
        }
      }
      val project = UnsafeProjection.create(unpacked.map(_.dataType).toArray)
      val rows = (0 until groups).iterator.map { g =>
        val states = (0 until numStates).map { c =>
          if (!valid(c)(g)) null
          else if (stateTypes(c) == StringType) UTF8String.fromBytes(values(c)(g).asInstanceOf[Array[Byte]])
          else values(c)(g)
        }
        project(InternalRow.fromSeq(keyValues(g) ++ states))
      }
      def bytes(packets: Iterator[InternalRow]): Seq[Seq[Byte]] =
        packets.map(_.asInstanceOf[UnsafeRow].getBytes.toVector).toSeq
      val projected = bytes(new PacketWriter(packing).pack(rows, last = true))
      var done = 0
      val written = new PacketWriter(packing).pack(map.emit(EmitTo.All), columns, stateTypes, groups, last = true) {
        () => done += 1
      }
      assert(written.isDefined, label)
      assert(bytes(written.get) == projected, label)
      assert(done == 1, label)
    }
  }

  test(
    "a packet's bytes are written over once the next one has left; each packet read before then holds its rows", Slow) {
    val random = new scala.util.Random(20261203)
    val groups = 40000 // about 6 MB of rows: packets of a megabyte fill up several times in each partition
    val key = AttributeReference("key", LongType)()
    val stateTypes = Seq(StringType, LongType)
    val unpacked = key +: stateTypes.zipWithIndex.map { case (t, c) => AttributeReference(s"s$c", t)() }
    val keyValues = Array.tabulate(groups)(_ * 7919L)
    val strings = Array.fill(groups)(Array.fill(random.nextInt(200))(('a' + random.nextInt(26)).toByte))
    val longs = Array.fill(groups)(random.nextLong())
    val valid = Array.fill(stateTypes.size, groups)(random.nextInt(7) != 0)
    def bits(c: Int): Array[Long] = {
      val words = new Array[Long]((groups + 63) / 64)
      for (g <- 0 until groups if valid(c)(g)) words(g >> 6) |= 1L << g
      words
    }
    val held = strings.indices.map(g => if (valid(0)(g)) strings(g) else Array[Byte]())
    val columns: Array[sparkagg.api.Column] = Array(
      new sparkagg.common.BinaryColumn(held.flatten.toArray, held.scanLeft(0)(_ + _.length).toArray, bits(0), groups),
      new sparkagg.common.LongColumn(longs, bits(1), groups)
    )
    val project = UnsafeProjection.create(unpacked.map(_.dataType).toArray)
    def row(g: Int) = project(InternalRow(keyValues(g), if (valid(0)(g)) UTF8String.fromBytes(strings(g)) else null,
        if (valid(1)(g)) longs(g) else null))
    val expected = (0 until groups).map(g => keyValues(g) -> row(g).getBytes.toVector).toMap
    for (n <- Seq(1, 2); fromColumns <- Seq(false, true)) {
      val label = s"$n partitions, ${if (fromColumns) "from columns" else "from rows"}"
      val packing = StatePackets(Seq(key), n, unpacked, AttributeReference("route", IntegerType)(),
        AttributeReference("states", BinaryType)())
      val writer = new PacketWriter(packing)
      val packets =
        if (fromColumns)
          writer.pack(
            new LongKeyMap.Keys(keyValues, -1, LongType, 8), columns, stateTypes, groups, last = true)(() => ()).get
        else writer.pack((0 until groups).iterator.map(row), last = true)
      // Read as the shuffle reads them: a packet's rows before the next packet is asked for.
      val arrays = scala.collection.mutable.ArrayBuffer[AnyRef]()
      val read = packets.flatMap { packet =>
        arrays += packet.asInstanceOf[UnsafeRow].getBaseObject
        val reproject = UnsafeProjection.create(unpacked.map(_.dataType).toArray)
        new PacketReader(Iterator(packet), unpacked.map(_.dataType)).allRows.map { r =>
          r.getLong(0) -> reproject(r).getBytes.toVector
        }
      }.toMap
      assert(read == expected, label)
      assert(arrays.size >= 4 && arrays.toSet.size < arrays.size, s"$label: ${arrays.size} packets")
    }
  }

  test("packets of rows and of columns read in turn, rows first: every row of each, none twice") {
    val key = AttributeReference("key", LongType)()
    val unpacked = Seq(key, AttributeReference("s", StringType)(), AttributeReference("b", BooleanType)())
    val types = unpacked.map(_.dataType)
    val packing = StatePackets(Seq(key), 3, unpacked, AttributeReference("route", IntegerType)(),
      AttributeReference("states", BinaryType)())
    val project = UnsafeProjection.create(types.toArray)
    def rowOf(g: Long) = project(InternalRow(g, UTF8String.fromString(s"v$g"), g % 2 == 0))
    def columnsOf(from: Int, groups: Int): Array[sparkagg.api.Column] = {
      val held = (from until from + groups).map(g => s"v$g".getBytes)
      Array(
        new sparkagg.common.BinaryColumn(held.flatten.toArray, held.scanLeft(0)(_ + _.length).toArray, null, groups),
        new sparkagg.common.BooleanColumn(Array.tabulate(groups)(g => (from + g) % 2 == 0), null, groups)
      )
    }
    // As an emission of rows (a pass-on), then one of a LongKeyMap's columns, then rows again, by one writer.
    val writer = new PacketWriter(packing)
    def copies(packets: Iterator[InternalRow]) = packets.map(_.copy()).toList
    val packets = copies(writer.pack((0L until 500L).iterator.map(rowOf), last = false)) ++
      copies(writer.pack(new LongKeyMap.Keys(Array.tabulate(700)(500L + _), -1, LongType, 8), columnsOf(500, 700),
          types.tail, 700, last = false)(() => ()).get) ++
      copies(writer.pack((1200L until 1300L).iterator.map(rowOf), last = true))
    val reader = new PacketReader(packets.iterator, types)
    val read = scala.collection.mutable.ArrayBuffer[Seq[Any]]()
    def values(r: InternalRow) = Seq(r.getLong(0), r.getUTF8String(1).toString, r.getBoolean(2))
    var batches = 0
    var more = true
    while (more) {
      if (reader.rows.hasNext) read += values(reader.rows.next())
      else if (reader.batches.hasNext) {
        batches += 1
        reader.batches.next().rowIterator().asScala.foreach(r => read += values(r))
      } else more = false
    }
    assert(batches == 3, "the columns' groups in a packet per partition")
    assert(read.sortBy(_.head.asInstanceOf[Long]) == (0L until 1300L).map(g => Seq(g, s"v$g", g % 2 == 0)))
  }

  test("packets are not written from columns when a state's column is not of its type, or the key not first") {
    val key = AttributeReference("key", LongType)()
    val state = AttributeReference("s", StringType)()
    val route = AttributeReference("route", IntegerType)()
    val states = AttributeReference("states", BinaryType)()
    val keys = new LongKeyMap.Keys(Array(1L), -1, LongType, 8)
    val strings = Array[sparkagg.api.Column](new sparkagg.common.LongColumn(Array(1L), null, 1))
    assert(new PacketWriter(StatePackets(Seq(key), 4, Seq(key, state), route, states))
        .pack(keys, strings, Seq(StringType), 1, last = true)(() => ()).isEmpty)
    val count = AttributeReference("count", LongType)()
    assert(new PacketWriter(StatePackets(Seq(key), 4, Seq(count, key), route, states))
        .pack(keys, strings, Seq(LongType), 1, last = true)(() => ()).isEmpty)
    assert(new PacketWriter(StatePackets(Seq(key), 4, Seq(key, count), route, states))
        .pack(keys, strings, Seq(LongType), 1, last = true)(() => ()).isDefined)
  }

  private val keyShapes = Seq("k", "n", "s", "d", "m", "k, s", "n, d")

  /** Past 200 partitions only the shuffle's writer changes, not the packing of any one key type: the two
   *  keys of two types and the fifth type cover them, taking adaptive execution on and off in turn (both, in
   *  `make test-long`). */
  private def keyShapesAt(partitions: Int, adaptive: Boolean): Seq[String] =
    if (partitions <= 200) keyShapes
    else Sweep.volume(ci = if (adaptive) Seq("m", "n, d") else Seq("k, s"), long = Seq("m", "k, s", "n, d"))

  /** `make check` runs the cases without adaptive execution below 200 partitions; the others are Slow. */
  private def packedCaseTags(partitions: Int, adaptive: Boolean) = Sweep.slowIf(partitions > 200 || adaptive)

  for (adaptive <- Seq(true, false); partitions <- Sweep.shufflePartitions; keys <- keyShapesAt(partitions, adaptive)) {
    test(s"packed and plain agree, GROUP BY $keys, $partitions partitions, adaptive $adaptive",
      packedCaseTags(partitions, adaptive): _*) {
      withConf("spark.sql.adaptive.enabled" -> adaptive.toString,
        "spark.sql.shuffle.partitions" -> partitions.toString) {
        val sql = s"SELECT $keys, df_sum(x), df_count(x), df_max(s), df_median(x), df_approx_distinct(s) " +
          s"FROM t GROUP BY $keys"
        val (packed, plain, unpacking, plainUnpacking) = bothWays(sql)
        assert(packed.nonEmpty && sorted(packed) == sorted(plain))
        assert(unpacking == 1 && plainUnpacking == 0)
      }
    }
  }

  // Past 200 partitions (Spark's other shuffle writer) one integer key: the packing is the same as at 3.
  for (adaptive <- Seq(true, false); partitions <- Sweep.shufflePartitions;
    keys <- if (partitions > 200) Seq("k") else Seq("k", "n", "d")) {
    test(s"packets of columns: packed and plain agree, GROUP BY $keys, $partitions partitions, adaptive $adaptive",
      packedCaseTags(partitions, adaptive): _*) {
      withConf("spark.sql.adaptive.enabled" -> adaptive.toString,
        "spark.sql.shuffle.partitions" -> partitions.toString) {
        // States of bigints, doubles, booleans and strings only, by one integer-like key: packets of columns.
        val ordered = if (SparkFeatures.withinGroup) ", df_first_value(s) WITHIN GROUP (ORDER BY x DESC)" else ""
        val sql = s"SELECT $keys, df_sum(x), df_count(n), df_max(s), df_avg(n), df_bool_or(x > 5000), " +
          s"df_max_by(s, x)$ordered FROM t GROUP BY $keys"
        var columnPackets = 0L
        val (packed, plain, unpacking, plainUnpacking) =
          bothWays(sql, df => columnPackets = GroupedAggregateExec.metricsOf(df).get("final columnPackets"))
        assert(packed.nonEmpty && sorted(packed) == sorted(plain))
        assert(unpacking == 1 && plainUnpacking == 0)
        assert(columnPackets > 0)
      }
    }
  }

  test("a global aggregate's one partition is not packed; DISTINCT's two shuffles are") {
    val (global, globalPlain, globalUnpacking, _) = bothWays("SELECT df_sum(x), df_max(s) FROM t")
    assert(global == globalPlain && globalUnpacking == 0)
    val (distinct, distinctPlain, distinctUnpacking, _) =
      bothWays("SELECT k, df_count(DISTINCT s), df_sum(x) FROM t GROUP BY k ORDER BY k")
    assert(distinct.size == 7919 && distinct == distinctPlain && distinctUnpacking == 2)
  }

  for (adaptive <- Seq(true, false)) {
    test(s"the merging node's rows are partitioned by its keys: a join on them needs no shuffle, adaptive $adaptive") {
      withConf("spark.sql.adaptive.enabled" -> adaptive.toString, "spark.sql.autoBroadcastJoinThreshold" -> "-1",
        "spark.sql.shuffle.partitions" -> "13") {
        val df = spark.sql("SELECT a.s, a.total, b.top FROM " +
          "(SELECT s, df_sum(x) total FROM t GROUP BY s) a JOIN (SELECT s, df_max(k) top FROM t GROUP BY s) b " +
          "ON a.s = b.s")
        val expected = spark.sql("SELECT s, sum(x), max(k) FROM t GROUP BY s").collect().map(r => r.getString(0) -> r)
        val rows = df.collect()
        assert(rows.length == 4001 && rows.map(_.getString(0)).toSet == expected.map(_._1).toSet)
        assert(shuffles(df) == 2, "one shuffle per aggregation, none for the join")
        assert(nodes(df).count(_.unpacks.isDefined) == 2)
      }
    }
  }

  test("alike aggregations in packets reuse shuffles as those with a row per group do") {
    withConf("spark.sql.autoBroadcastJoinThreshold" -> "-1") {
      val sql = "SELECT a.k, b.k FROM (SELECT k, df_sum(n) total FROM t GROUP BY k) a " +
        "JOIN (SELECT k, df_sum(n) total FROM t GROUP BY k) b ON a.total = b.total"
      def run(inPackets: Boolean): (Int, Int) = withConf(StatePackets.EnabledConf -> inPackets.toString) {
        val df = spark.sql(sql)
        df.collect()
        (shuffles(df), collect(df.queryExecution.executedPlan) { case r: ReusedExchangeExec => r }.size)
      }
      val (packed, plain) = (run(inPackets = true), run(inPackets = false))
      assert(packed == plain && packed._2 >= 1, s"(shuffles, reused) $packed, a row per group $plain")
    }
  }

  test("a group's state larger than a packet is a packet of its own", Slow) {
    val sql = "SELECT k % 2 AS g, length(df_string_agg(repeat(s, 40), ',')) FROM t GROUP BY k % 2 ORDER BY g"
    val (packed, plain, unpacking, _) = bothWays(sql)
    assert(packed == plain && unpacking == 1)
    assert(packed.map(_.getInt(1)).sum > 2 * (16 << 20) / spark.conf.get("spark.sql.shuffle.partitions").toInt)
  }
}

private object StatePacketsSuite {
  /** Each packet's route with the bytes of each of its rows, read as a merging task reads them. */
  def contents(packets: Iterator[InternalRow], types: Seq[DataType]): Seq[(Int, Seq[Byte])] = {
    val project = UnsafeProjection.create(types.toArray)
    packets.flatMap { packet =>
      val route = packet.getInt(0)
      new PacketReader(Iterator(packet), types).allRows.map(r => route -> project(r).getBytes.toVector).toList
    }.toSeq
  }

  def counted[T](items: Seq[T]): Map[T, Int] = items.groupBy(identity).map { case (k, v) => k -> v.size }
}
