package sparkagg.exec

import scala.collection.mutable
import scala.util.Random

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{BoundReference, UnsafeProjection}
import org.apache.spark.sql.execution.vectorized.OnHeapColumnVector
import org.apache.spark.sql.types._
import org.apache.spark.sql.vectorized.{ColumnVector, ColumnarBatch}
import org.apache.spark.unsafe.hash.Murmur3_x86_32
import org.apache.spark.unsafe.types.UTF8String
import org.scalatest.funsuite.AnyFunSuite
import sparkagg.api.EmitTo

/**
 * The one-integer key table: groups numbered in order of first sight (NULL a group of its own), the same
 * whether keys stay in its dense array, widen it either way, or move it to the hash table; keys handed back by
 * group on emit, after which numbering starts again. The table of other keys (a string and an integer here) the
 * same, looked up one at a time or staged in batches, and keys of strings, integers and booleans written
 * without a projection as the projection writes them. Keys of integer-like fields packed in two words the same,
 * from rows, UnsafeRows and vectors, NULL in any of their fields. Expected groups are worked by hand, or, for
 * the random cases, by a map that numbers keys in order of first sight. The arena those keys live in keeps
 * every run of words where it was put, on one page.
 */
class GroupMapSuite extends AnyFunSuite {
  /** The groups of `keys` (None: NULL) staged and finished in batches of `batch` rows. */
  private def groupsOf(map: LongKeyMap, keys: Seq[Option[Long]], batch: Int = 4): Seq[Int] =
    keys.grouped(batch).flatMap { chunk =>
      val groups = new Array[Int](chunk.size)
      chunk.zipWithIndex.foreach { case (k, i) => map.stage(InternalRow(k.orNull), i, groups) }
      map.finishBatch(chunk.size, groups)
      groups.toSeq
    }.toSeq

  private def emitted(map: LongKeyMap): Seq[Option[Long]] = {
    val n = map.numGroups
    val key = map.emit(EmitTo.All)
    (0 until n).map { g =>
      val row = key(g); if (row.isNullAt(0)) None else Some(row.getLong(0))
    }
  }

  test("keys in a dense range: numbered in order of first sight, NULL a group of its own, no hashing") {
    val map = new LongKeyMap(0, LongType)
    val keys = Seq(Some(5L), Some(6L), Some(5L), Some(7L), None, Some(6L), None, Some(4L))
    assert(groupsOf(map, keys) == Seq(0, 1, 0, 2, 3, 1, 3, 4))
    assert(!map.hashed)
    assert(emitted(map) == Seq(Some(5L), Some(6L), Some(7L), None, Some(4L)))
  }

  test("the dense range widens below and above its first key") {
    val map = new LongKeyMap(0, LongType)
    val keys = Seq(1000L, 10L, 5000L, 1000L, -3000L, 10L, 5000L).map(Some(_))
    assert(groupsOf(map, keys, batch = 3) == Seq(0, 1, 2, 0, 3, 1, 2))
    assert(!map.hashed)
    assert(emitted(map) == Seq(1000L, 10L, 5000L, -3000L).map(Some(_)))
  }

  test("keys too far apart for the dense array move to the hash table with their groups") {
    val map = new LongKeyMap(0, LongType)
    val dense = (0L until 3000L).map(Some(_))
    assert(groupsOf(map, dense, batch = 1000) == (0 until 3000))
    assert(!map.hashed)
    val far = Seq(Some(1L << 40), Some(7L), None, Some(Long.MinValue), Some(Long.MaxValue), Some(1L << 40), Some(2999L))
    assert(groupsOf(map, far) == Seq(3000, 7, 3001, 3002, 3003, 3000, 2999))
    assert(map.hashed)
    assert(emitted(map) == dense ++ Seq(Some(1L << 40), None, Some(Long.MinValue), Some(Long.MaxValue)))
  }

  test("a shuffle partition's keys (every 4th of a range, in two runs, the second from below the first) stay dense") {
    val map = new LongKeyMap(0, LongType)
    val upper = (500000L until 1000000L by 4).map(Some(_))
    val whole = (0L until 1000000L by 4).map(Some(_))
    val groups = groupsOf(map, upper ++ whole, batch = 8192)
    assert(!map.hashed)
    assert(
      groups == (0 until upper.size) ++ ((0 until whole.size - upper.size).map(_ + upper.size) ++ (0 until upper.size)))
    assert(emitted(map) == whole.drop(whole.size - upper.size) ++ whole.take(whole.size - upper.size))
  }

  test("after an emit, numbering starts again in a fresh dense array") {
    val map = new LongKeyMap(0, LongType)
    groupsOf(map, Seq(Some(0L), Some(1L << 50)))
    assert(map.hashed)
    emitted(map)
    assert(map.numGroups == 0 && !map.hashed)
    assert(groupsOf(map, Seq(Some(-7L), None, Some(-7L), Some(-6L))) == Seq(0, 1, 0, 2))
    assert(emitted(map) == Seq(Some(-7L), None, Some(-6L)))
  }

  test("int keys read from a column vector, with NULLs") {
    val map = new LongKeyMap(1, IntegerType)
    val other = new OnHeapColumnVector(6, StringType)
    val ints = new OnHeapColumnVector(6, IntegerType)
    Seq(Some(3), None, Some(-2), Some(3), None, Some(Int.MinValue)).zipWithIndex.foreach {
      case (Some(v), i) => ints.putInt(i, v)
      case (None, i) => ints.putNull(i)
    }
    val batch = new ColumnarBatch(Array[ColumnVector](other, ints), 6)
    val groups = new Array[Int](6)
    map.stageBatch(batch, groups)
    map.finishBatch(6, groups)
    assert(groups.toSeq == Seq(0, 1, 2, 0, 1, 3))
    val key = map.emit(EmitTo.All)
    assert((0 until 4).map(g => if (key(g).isNullAt(0)) None else Some(key(g).getInt(0))) ==
      Seq(Some(3), None, Some(-2), Some(Int.MinValue)))
  }

  test("random keys, dense and sparse mixed, in batches: every key keeps the group of its first sight") {
    val rnd = new Random(7)
    for (round <- 0 until 20) {
      val map = new LongKeyMap(0, LongType)
      val base = rnd.nextLong() >> rnd.nextInt(64)
      val spread = 1 + rnd.nextInt(100000)
      val keys = Seq.fill(20000) {
        rnd.nextInt(100) match {
          case 0 => None
          case r if r < 100 - round => Some(base + rnd.nextInt(spread))
          case _ => Some(rnd.nextLong())
        }
      }
      val expected = mutable.LinkedHashMap.empty[Option[Long], Int]
      val want = keys.map(k => expected.getOrElseUpdate(k, expected.size))
      assert(groupsOf(map, keys, batch = 1 + rnd.nextInt(5000)) == want, s"round $round")
      assert(emitted(map) == expected.keys.toSeq, s"round $round")
    }
  }

  test("keys of integer-like fields packed in two words: groups and keys from rows, UnsafeRows and vectors " +
    "alike, through rehashes, NULL in any fields, negative values") {
    val rnd = new Random(11)
    val shapes = Seq[Seq[DataType]](
      Seq(IntegerType, IntegerType),
      Seq(DateType, ShortType, ByteType),
      Seq(LongType, LongType),
      Seq(TimestampType, IntegerType, ShortType),
      Seq(ByteType, LongType)
    )
    assert(PackedKeyMap.layout(Seq(IntegerType, LongType, IntegerType)).isEmpty, "three words")
    assert(PackedKeyMap.layout(Seq(IntegerType, StringType)).isEmpty && PackedKeyMap.layout(Seq(LongType)).isEmpty)
    for (types <- shapes; round <- 0 until 6) {
      val label = s"${types.mkString(", ")}, round $round"
      def value(t: DataType): Any = {
        val v = if (round % 2 == 0) rnd.nextInt(7) - 3L else rnd.nextLong()
        if (rnd.nextInt(6) == 0) null
        else t match {
          case ByteType => v.toByte
          case ShortType => v.toShort
          case IntegerType | DateType => v.toInt
          case _ => v
        }
      }
      val keys = Seq.fill(3000)(types.map(value))
      val expected = mutable.LinkedHashMap.empty[Seq[Any], Int]
      val want = keys.map(k => expected.getOrElseUpdate(k, expected.size))
      val map = new PackedKeyMap(types.indices.map(f => (f + 1, types(f))))
      val project = UnsafeProjection.create((StringType +: types).toArray)
      val batch = 1 + rnd.nextInt(700)
      val groups = keys.grouped(batch).zipWithIndex.flatMap { case (chunk, c) =>
        val out = new Array[Int](chunk.size)
        (c + round) % 3 match {
          case 0 => chunk.zipWithIndex.foreach { case (k, i) => map.stage(InternalRow.fromSeq(null +: k), i, out) }
          case 1 => chunk.zipWithIndex.foreach { case (k, i) =>
              map.stage(project(InternalRow.fromSeq(null +: k)), i, out)
            }
          case _ =>
            val vectors = (StringType +: types).map(t => new OnHeapColumnVector(chunk.size, t))
            for ((k, i) <- chunk.zipWithIndex; f <- types.indices) (k(f), types(f)) match {
              case (null, _) => vectors(f + 1).putNull(i)
              case (v: Byte, _) => vectors(f + 1).putByte(i, v)
              case (v: Short, _) => vectors(f + 1).putShort(i, v)
              case (v: Int, _) => vectors(f + 1).putInt(i, v)
              case (v: Long, _) => vectors(f + 1).putLong(i, v)
            }
            map.stageBatch(new ColumnarBatch(vectors.toArray[ColumnVector], chunk.size), out)
        }
        map.finishBatch(chunk.size, out)
        out.toSeq
      }.toSeq
      assert(groups == want, label)
      val n = map.numGroups
      val emitted = map.emit(EmitTo.All)
      val read = (0 until n).map { g =>
        val row = emitted(g)
        types.indices.map(f => if (row.isNullAt(f)) null else row.get(f, types(f)))
      }
      assert(read == expected.keys.toSeq, label)
    }
  }

  /** The groups of two-field keys (null: NULL) staged as rows and finished in batches of `batch`. */
  private def packedGroupsOf(map: PackedKeyMap, keys: Seq[(Any, Any)], batch: Int): Seq[Int] =
    keys.grouped(batch).flatMap { chunk =>
      val groups = new Array[Int](chunk.size)
      chunk.zipWithIndex.foreach { case ((a, b), i) => map.stage(InternalRow(a, b), i, groups) }
      map.finishBatch(chunk.size, groups)
      groups.toSeq
    }.toSeq

  private def packedEmitted(map: PackedKeyMap, types: (DataType, DataType)): Seq[(Any, Any)] = {
    val n = map.numGroups
    val key = map.emit(EmitTo.All)
    (0 until n).map { g =>
      val row = key(g)
      (if (row.isNullAt(0)) null else row.get(0, types._1), if (row.isNullAt(1)) null else row.get(1, types._2))
    }
  }

  /** Numbers keys in order of first sight: the groups a table must give, and its keys by group. */
  private def firstSight[K](keys: Seq[K]): (Seq[Int], Seq[K]) = {
    val seen = mutable.LinkedHashMap.empty[K, Int]
    (keys.map(k => seen.getOrElseUpdate(k, seen.size)), seen.keys.toSeq)
  }

  test("packed keys in a grid (two moduli of an id, in id order, as a shuffle partition's every 4th) stay dense") {
    for (every <- Seq(1, 4)) {
      val map = new PackedKeyMap(Seq((0, LongType), (1, LongType)))
      val keys = (0 until 120000 by every).map(id => (id % 300L, id / 300L)) // 300 by 400
      val (want, byGroup) = firstSight(keys)
      assert(packedGroupsOf(map, keys ++ keys.reverse, batch = 8192) == want ++ want.reverse, s"every $every")
      assert(!map.hashed, s"every $every")
      assert(packedEmitted(map, (LongType, LongType)) == byGroup, s"every $every")
    }
  }

  test("a merging task's packed keys stay dense: a quarter of a 200 by 500 grid by Spark's hash partitioning, as " +
    "two producers, each over 250,000 ids from its own start, emit them in order of first sight") {
    def firstSeen(from: Long): Seq[Long] = (from until from + 250000L).map(_ % 100000L).distinct
    val ids = (firstSeen(0L) ++ firstSeen(50000L)).filter { id =>
      val hash = Murmur3_x86_32.hashLong(id / 200, Murmur3_x86_32.hashLong(id % 200, 42))
      Math.floorMod(hash, 4) == 1
    }
    val keys = ids.map(id => (id % 200, id / 200))
    val map = new PackedKeyMap(Seq((0, LongType), (1, LongType)))
    val (want, byGroup) = firstSight(keys)
    assert(packedGroupsOf(map, keys, batch = 8192) == want)
    assert(!map.hashed)
    assert(packedEmitted(map, (LongType, LongType)) == byGroup)
  }

  test("packed keys' ranges widen below and above, NULL in either field, and the groups keep their numbers") {
    val map = new PackedKeyMap(Seq((0, IntegerType), (1, ShortType)))
    val keys = Seq[(Any, Any)](
      (10, 5.toShort),
      (10, null),
      (-7, 5.toShort),
      (null, null),
      (60, -30.toShort),
      (10, 5.toShort),
      (null, 5.toShort),
      (-7, 5.toShort),
      (60, -30.toShort),
      (Int.MaxValue, Short.MinValue)
    )
    val (want, byGroup) = firstSight(keys)
    assert(want == Seq(0, 1, 2, 3, 4, 0, 5, 2, 4, 6))
    assert(packedGroupsOf(map, keys.take(9), batch = 2) == want.take(9))
    assert(!map.hashed)
    // Int.MaxValue is too far from the rest (seven groups) for a dense array: every group moves to the hash table.
    assert(packedGroupsOf(map, keys, batch = 3) == want)
    assert(map.hashed)
    assert(packedEmitted(map, (IntegerType, ShortType)) == byGroup)
  }

  test("packed keys at a bigint's ends move to the hash table; after an emit, numbering starts again densely") {
    val map = new PackedKeyMap(Seq((0, LongType), (1, ByteType)))
    val far = Seq[(Any, Any)]((Long.MaxValue, 1.toByte), (Long.MinValue, 1.toByte), (Long.MaxValue, -128.toByte))
    assert(packedGroupsOf(map, far ++ far, batch = 4) == Seq(0, 1, 2, 0, 1, 2))
    assert(map.hashed)
    assert(packedEmitted(map, (LongType, ByteType)) == far)
    assert(map.numGroups == 0 && !map.hashed)
    val bytes = (-128 to 127).map(b => (Long.MaxValue, b.toByte))
    assert(packedGroupsOf(map, bytes ++ bytes, batch = 100) == (0 until 256) ++ (0 until 256))
    assert(!map.hashed)
    assert(packedEmitted(map, (LongType, ByteType)) == bytes)
  }

  test("one string key from a column vector, generated code's values, UnsafeRows or any mix: the groups and keys " +
    "of the projection's rows") {
    val rnd = new Random(5)
    val project = UnsafeProjection.create(Seq(BoundReference(1, StringType, true)))
    val fromRows = new RowKeyMap(project, 1)
    val fromVectors = new RowKeyMap(project, 1, Seq((1, StringType)))
    val fromValues = new RowKeyMap(project, 1, Seq((1, StringType)))
    val fromUnsafe = new RowKeyMap(project, 1, Seq((1, StringType)))
    val mixed = new RowKeyMap(project, 1, Seq((1, StringType)))
    val whole = UnsafeProjection.create(Seq(BoundReference(0, IntegerType, true), BoundReference(1, StringType, true)))
    // Empty strings, lengths on and off a word boundary, NULLs; the first batch staged as rows in both.
    def key(): Option[String] = if (rnd.nextInt(30) == 0) None else Some("s" * rnd.nextInt(20) + rnd.nextInt(500))
    for (batch <- 0 until 40) {
      val n = 1 + rnd.nextInt(700)
      val keys = Seq.fill(n)(key()) ++ (if (batch == 0) Seq(Some("")) else Nil)
      val vector = new OnHeapColumnVector(keys.size, StringType)
      keys.zipWithIndex.foreach {
        case (Some(k), i) => vector.putByteArray(i, k.getBytes("UTF-8"))
        case (None, i) => vector.putNull(i)
      }
      val columns = new ColumnarBatch(Array[ColumnVector](new OnHeapColumnVector(keys.size, IntegerType), vector),
        keys.size)
      val want = new Array[Int](keys.size)
      keys.zipWithIndex.foreach { case (k, i) =>
        fromRows.stage(InternalRow(0, k.map(UTF8String.fromString).orNull), i, want)
      }
      fromRows.finishBatch(keys.size, want)
      val got = new Array[Int](keys.size)
      if (batch == 0) keys.zipWithIndex.foreach { case (k, i) =>
        fromVectors.stage(InternalRow(0, k.map(UTF8String.fromString).orNull), i, got)
      }
      else fromVectors.stageBatch(columns, got)
      fromVectors.finishBatch(keys.size, got)
      assert(got.toSeq == want.toSeq, s"batch $batch")
      for (map <- Seq(fromValues, fromUnsafe, mixed)) {
        val groups = new Array[Int](keys.size)
        keys.zipWithIndex.foreach { case (k, i) =>
          val row = InternalRow(0, k.map(UTF8String.fromString).orNull)
          val asValue = if (map eq mixed) rnd.nextBoolean() else map eq fromValues
          if (asValue) map.stageString(i, row.getUTF8String(1), groups)
          else map.stage(if (map eq fromUnsafe) whole(row) else row, i, groups)
        }
        map.finishBatch(keys.size, groups)
        assert(groups.toSeq == want.toSeq, s"batch $batch")
      }
    }
    val n = fromRows.numGroups
    val a = fromRows.emit(EmitTo.All)
    val others = Seq(fromVectors, fromValues, fromUnsafe, mixed).map(_.emit(EmitTo.All))
    for (g <- 0 until n; b <- others) assert(a(g).copy() == b(g).copy(), s"group $g")
  }

  test("a vector of strings or binaries without a dictionary is read in place; with one, or of ints, it is not") {
    val values = Seq(Some("a"), None, Some(""), Some("longer than a word"), None, Some("é"))
    def vector(t: DataType) = {
      val v = new OnHeapColumnVector(values.size, t)
      values.zipWithIndex.foreach {
        case (Some(s), i) => v.putByteArray(i, s.getBytes("UTF-8"))
        case (None, i) => v.putNull(i)
      }
      v
    }
    for (t <- Seq(StringType, BinaryType)) {
      val column = VectorColumn.of(vector(t), values.size)
      assert(column.isInstanceOf[VectorBytes], t)
      values.zipWithIndex.foreach {
        case (Some(s), i) =>
          assert(!column.isNullAt(i) && column.getUTF8String(i).toString == s && column.getBinary(i).toSeq ==
            s.getBytes("UTF-8").toSeq)
        case (None, i) => assert(column.isNullAt(i))
      }
    }
    val words = Array("x", "yy", "zzz")
    val coded = new OnHeapColumnVector(4, StringType)
    coded.setDictionary(
      new org.apache.spark.sql.execution.vectorized.Dictionary {
        def decodeToInt(id: Int): Int = throw new UnsupportedOperationException
        def decodeToLong(id: Int): Long = throw new UnsupportedOperationException
        def decodeToFloat(id: Int): Float = throw new UnsupportedOperationException
        def decodeToDouble(id: Int): Double = throw new UnsupportedOperationException
        def decodeToBinary(id: Int): Array[Byte] = words(id).getBytes("UTF-8")
      })
    val ids = coded.reserveDictionaryIds(4)
    Seq(2, 0, 1, 2).zipWithIndex.foreach { case (id, i) => ids.putInt(i, id) }
    val decoded = VectorColumn.of(coded, 4)
    assert(!decoded.isInstanceOf[VectorBytes])
    assert((0 until 4).map(decoded.getUTF8String(_).toString) == Seq("zzz", "x", "yy", "zzz"))
    assert(!VectorColumn.of(new OnHeapColumnVector(4, IntegerType), 4).isInstanceOf[VectorBytes])
  }

  test("string and integer keys, one at a time and in batches, through rehashes and an emit") {
    val rnd = new Random(11)
    val project =
      UnsafeProjection.create(Seq(BoundReference(0, StringType, true), BoundReference(1, IntegerType, true)))
    val map = new RowKeyMap(project, 2)
    def key(): (Option[String], Option[Int]) = (
      if (rnd.nextInt(50) == 0) None else Some("k" * rnd.nextInt(3) + rnd.nextInt(3000) + "x" * rnd.nextInt(20)),
      if (rnd.nextInt(50) == 0) None else Some(rnd.nextInt(5)))
    def row(k: (Option[String], Option[Int])): InternalRow =
      InternalRow(k._1.map(UTF8String.fromString).orNull, k._2.getOrElse(null))
    for (round <- 0 until 3) {
      val keys = Seq.fill(30000)(key())
      val expected = mutable.LinkedHashMap.empty[(Option[String], Option[Int]), Int]
      val want = keys.map(k => expected.getOrElseUpdate(k, expected.size))
      val got = keys.grouped(1 + rnd.nextInt(3000)).flatMap { chunk =>
        if (rnd.nextBoolean()) chunk.map(k => map.groupOf(row(k)))
        else {
          val groups = new Array[Int](chunk.size)
          chunk.zipWithIndex.foreach { case (k, i) => map.stage(row(k), i, groups) }
          map.finishBatch(chunk.size, groups)
          groups.toSeq
        }
      }.toSeq
      assert(got == want, s"round $round")
      assert(map.numGroups == expected.size)
      val emittedKey = map.emit(EmitTo.All)
      val back = (0 until expected.size).map { g =>
        val r = emittedKey(g)
        (if (r.isNullAt(0)) None else Some(r.getUTF8String(0).toString), if (r.isNullAt(1)) None else Some(r.getInt(1)))
      }
      assert(back == expected.keys.toSeq, s"round $round")
      assert(map.numGroups == 0)
    }
  }

  test("keys of strings, integers, booleans and dates written without a projection, from any row or an UnsafeRow: " +
    "the projection's rows") {
    val rnd = new Random(13)
    val types = Seq(IntegerType, StringType, LongType, BooleanType, ShortType, ByteType, DateType, StringType)
    // Ordinal 0 is a value column the key skips; the key's fields are ordinals 1 to 8.
    val fields = types.zipWithIndex.map { case (t, i) => (i + 1, t) }
    val project = UnsafeProjection.create(fields.map { case (o, t) => BoundReference(o, t, true) })
    val projected = new RowKeyMap(project, types.size)
    val written = new RowKeyMap(project, types.size, fields)
    // The same rows as UnsafeRows (the shuffle's), whose strings are read in place.
    val fromUnsafe = new RowKeyMap(project, types.size, fields)
    val whole =
      UnsafeProjection.create((DoubleType +: types).zipWithIndex.map { case (t, o) => BoundReference(o, t, true) })
    def value(t: DataType): Any = if (rnd.nextInt(12) == 0) null
    else t match {
      case IntegerType | DateType => rnd.nextInt(3) - 1 + (if (rnd.nextBoolean()) 0 else Int.MinValue)
      case StringType => UTF8String.fromString("é" * rnd.nextInt(3) + rnd.nextInt(4) + "x" * rnd.nextInt(9))
      case LongType => rnd.nextInt(3) - 1L
      case BooleanType => rnd.nextBoolean()
      case ShortType => (rnd.nextInt(3) - 1).toShort
      case ByteType => (rnd.nextInt(3) - 1).toByte
    }
    // Half the rows repeat an earlier key, its strings in objects of their own.
    val seen = mutable.ArrayBuffer.empty[Seq[Any]]
    def key(): Seq[Any] =
      if (seen.nonEmpty && rnd.nextBoolean())
        seen(rnd.nextInt(seen.size)).map { case s: UTF8String => UTF8String.fromString(s.toString); case v => v }
      else { val k = types.map(value); seen += k; k }
    for (batch <- 0 until 30) {
      val rows = Seq.fill(1 + rnd.nextInt(400))(InternalRow.fromSeq(2.5 +: key()))
      val (want, got, gotUnsafe) = (new Array[Int](rows.size), new Array[Int](rows.size), new Array[Int](rows.size))
      for ((map, groups, unsafe) <-
          Seq((projected, want, false), (written, got, false), (fromUnsafe, gotUnsafe, true))) {
        rows.zipWithIndex.foreach { case (r, i) => map.stage(if (unsafe) whole(r) else r, i, groups) }
        map.finishBatch(rows.size, groups)
      }
      assert(got.toSeq == want.toSeq, s"batch $batch")
      assert(gotUnsafe.toSeq == want.toSeq, s"batch $batch, UnsafeRows")
    }
    assert(written.numGroups == projected.numGroups && fromUnsafe.numGroups == projected.numGroups &&
      written.numGroups > 1000)
    val n = projected.numGroups
    val (a, b, c) = (projected.emit(EmitTo.All), written.emit(EmitTo.All), fromUnsafe.emit(EmitTo.All))
    for (g <- 0 until n) {
      val want = a(g).copy()
      assert(want == b(g).copy(), s"group $g")
      assert(want == c(g).copy(), s"group $g, UnsafeRows")
    }
  }

  test("the key arena: each run on one page, where it stays as pages are added; a run longer than a page") {
    val rnd = new Random(3)
    val arena = new WordArena
    // Mostly short runs, some longer than the first pages (1024 words, 2048, ...).
    val runs = Seq.fill(3000)(if (rnd.nextInt(100) == 0) 1 + rnd.nextInt(20000) else 1 + rnd.nextInt(8))
    val placed = runs.zipWithIndex.map { case (words, r) =>
      val at = arena.allocate(words)
      val page = arena.page(at)
      assert(arena.page(at + words - 1) eq page, s"run $r straddles two pages")
      assert(arena.indexOnPage(at + words - 1) == arena.indexOnPage(at) + words - 1)
      for (w <- 0 until words) page(arena.indexOnPage(at + w)) = r.toLong << 32 | w
      (at, words)
    }
    placed.zipWithIndex.foreach { case ((at, words), r) =>
      for (w <- 0 until words) assert(arena.page(at + w)(arena.indexOnPage(at + w)) == (r.toLong << 32 | w))
    }
    assert(placed.map(_._1).distinct.size == runs.size)
    assert(arena.size >= 8L * runs.sum && arena.size <= 8L * 4 * runs.sum)
  }

  test("string keys longer than the key arena's first pages, among short ones") {
    val rnd = new Random(9)
    val project = UnsafeProjection.create(Seq(BoundReference(0, StringType, true)))
    val map = new RowKeyMap(project, 1, Seq((0, StringType)))
    val long = Seq.tabulate(6)(i => ("abcdefgh" * (400 + rnd.nextInt(3000))) + i)
    val keys = Seq.fill(5000)(if (rnd.nextInt(20) == 0) long(rnd.nextInt(long.size)) else rnd.nextInt(2000).toString)
    val expected = mutable.LinkedHashMap.empty[String, Int]
    val want = keys.map(k => expected.getOrElseUpdate(k, expected.size))
    val got = keys.grouped(700).flatMap { chunk =>
      val groups = new Array[Int](chunk.size)
      chunk.zipWithIndex.foreach { case (k, i) => map.stage(InternalRow(UTF8String.fromString(k)), i, groups) }
      map.finishBatch(chunk.size, groups)
      groups.toSeq
    }.toSeq
    assert(got == want)
    val emittedKey = map.emit(EmitTo.All)
    assert((0 until expected.size).map(g => emittedKey(g).getUTF8String(0).toString) == expected.keys.toSeq)
  }
}
