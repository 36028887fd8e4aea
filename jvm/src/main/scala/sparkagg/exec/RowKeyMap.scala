package sparkagg.exec

import java.util.Arrays

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{SpecificInternalRow, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.Platform
import org.apache.spark.unsafe.array.ByteArrayMethods
import org.apache.spark.sql.vectorized.ColumnarBatch
import org.apache.spark.unsafe.types.UTF8String
import sparkagg.api.EmitTo
import sparkagg.common.{BytesColumn, GroupVectors, LargeArrays}

/**
 * Any other key (strings, several columns, decimals...): the key projected to an UnsafeRow, hashed, and
 * looked up by open addressing. Every group's key goes end to end into one [[WordArena]] (UnsafeRows are
 * word-aligned): a header word (the key's bytes, the group) and then the key's bytes, so a key costs no
 * object. A slot holds the key's hash and where its header is, so a probe reads the slot and then one
 * place in the arena, which holds all it compares. As [[LongKeyMap]], a batch's keys are staged first
 * (copied end to end into a batch arena with their hashes) and looked up together, a chunk at a time: a
 * first pass touches every key's slot so that the cache misses of a large table overlap. Emitted keys are
 * read through one UnsafeRow pointed at each in turn (valid until the next key is asked for). Keys are
 * hashed a word at a time ([[RowKeyMap.hash]]), not by UnsafeRow's hashCode, which takes four bytes per
 * step. A key of integer-like, boolean and string fields (`fieldKeys`: their ordinals and types;
 * [[RowKeyMap.fieldKeyable]]) is written as the projection would write it, straight from the row, without a
 * projection per row: the usual keys (a string, two integers, a date and a string) and the key of Spark's
 * DISTINCT rewrite (the grouping keys and the distinct column).
 */
private[exec] final class RowKeyMap(project: UnsafeProjection, numKeyFields: Int,
    fieldKeys: Seq[(Int, DataType)] = Nil)
  extends GroupMap {
  // Slot: the key's hash in the high 32 bits, its header's word + 1 in the low (0: empty).
  private var mask = 1023
  private var slots = new Array[Long](mask + 1)
  private var arena = new WordArena
  private var headers = new Array[Int](16) // group -> its header's word, for emission
  private var count = 0

  // The batch being staged: row i's key bytes from word stagedAt(i) of `staged`, its hash.
  private var staged = new Array[Long](1024)
  private var stagedUsed = 0
  private var stagedAt = new Array[Int](1024)
  private var stagedHash = new Array[Int](1024)
  private var touched = 0L

  def numGroups: Int = count

  def groupOf(row: InternalRow): Int = {
    val key = project(row)
    groupOfKey(key.getBaseObject, key.getBaseOffset, key.getSizeInBytes, RowKeyMap.hash(key))
  }

  override def stage(row: InternalRow, i: Int, groups: Array[Int]): Unit =
    if (fieldKeyed) { holdFields(row, i, null); stageFields(i) }
    else {
      val key = project(row)
      val bytes = key.getSizeInBytes
      val at = staging(i, bytes)
      Platform.copyMemory(key.getBaseObject, key.getBaseOffset, staged, Platform.LONG_ARRAY_OFFSET + 8L * (at + 1),
        bytes)
      stagedHash(i) = RowKeyMap.hash(key)
    }

  // A scan's batch: its string key fields read where the scan put their bytes (VectorBytes).
  override def stageBatch(batch: ColumnarBatch, groups: Array[Int]): Unit =
    if (!fieldKeyed) super.stageBatch(batch, groups)
    else {
      val inPlace = fieldOrdinals.map(o =>
        VectorColumn.of(batch.column(o), batch.numRows) match {
          case b: BytesColumn => b
          case _ => null
        })
      if (oneString && inPlace(0) != null) stageStrings(inPlace(0), batch.numRows)
      else {
        var i = 0
        while (i < batch.numRows) { holdFields(batch.getRow(i), i, inPlace); stageFields(i); i += 1 }
      }
    }

  /** A batch's one string key, read where the scan put its bytes: no row per key, no loop over fields. */
  private def stageStrings(keys: BytesColumn, n: Int): Unit = {
    val bytes = keys.bytes
    var i = 0
    while (i < n) {
      if (keys.isNullAt(i)) stageOneString(i, null, 0L, -1)
      else stageOneString(i, bytes, Platform.BYTE_ARRAY_OFFSET + keys.start(i), keys.length(i))
      i += 1
    }
  }

  /** The key fields of `row` (row `i` of its batch), where `inPlace(f)`, when not null, holds field f's
   *  string bytes. An UnsafeRow's (the shuffle's) strings are read where they lie too: no UTF8String per row. */
  private def holdFields(row: InternalRow, i: Int, inPlace: Array[BytesColumn]): Unit = {
    val unsafe = row match {
      case u: UnsafeRow => u
      case _ => null
    }
    var f = 0
    while (f < fieldOrdinals.length) {
      val o = fieldOrdinals(f)
      if (row.isNullAt(o)) nulls(f) = true
      else {
        nulls(f) = false
        widths(f) match {
          case 0 if inPlace != null && inPlace(f) != null =>
            val b = inPlace(f)
            stringBases(f) = b.bytes
            stringOffsets(f) = Platform.BYTE_ARRAY_OFFSET + b.start(i)
            stringSizes(f) = b.length(i)
          case 0 if unsafe != null =>
            val offsetAndSize = unsafe.getLong(o)
            stringBases(f) = unsafe.getBaseObject
            stringOffsets(f) = unsafe.getBaseOffset + (offsetAndSize >>> 32)
            stringSizes(f) = offsetAndSize.toInt
          case 0 => holdString(f, row.getUTF8String(o))
          case 8 => words(f) = row.getLong(o)
          case 4 => words(f) = row.getInt(o)
          case 2 => words(f) = row.getShort(o)
          case 1 => words(f) = row.getByte(o)
          case _ => words(f) = if (row.getBoolean(o)) 1L else 0L
        }
      }
      f += 1
    }
  }

  // The key fields written without a projection: their ordinals and widths (RowKeyMap.wordWidth; 0: a
  // string), and the values of the row being staged.
  private val fieldOrdinals = fieldKeys.map(_._1).toArray
  // Tested per row, where `fieldOrdinals.nonEmpty` would go through Predef.intArrayOps each time.
  private val fieldKeyed = fieldOrdinals.length > 0
  private val widths = fieldKeys.map(k => RowKeyMap.wordWidth(k._2)).toArray
  private val nulls = new Array[Boolean](fieldOrdinals.length)
  private val words = new Array[Long](fieldOrdinals.length)
  private val stringBases = new Array[AnyRef](fieldOrdinals.length)
  private val stringOffsets = new Array[Long](fieldOrdinals.length)
  private val stringSizes = new Array[Int](fieldOrdinals.length)

  private def holdString(f: Int, s: UTF8String): Unit = {
    stringBases(f) = s.getBaseObject
    stringOffsets(f) = s.getBaseOffset
    stringSizes(f) = s.numBytes
  }

  /** Row `i`'s key from the staged fields' values, as its UnsafeRow: the null bits, a word per field (a
   *  value in its zeroed word as the row's writer puts it, a string's offset and size, zero for a null),
   *  then each string's bytes padded with zeros to a whole word. */
  private def stageFields(i: Int): Unit =
    if (oneString) stageOneString(i, stringBases(0), stringOffsets(0), if (nulls(0)) -1 else stringSizes(0))
    else stageAnyFields(i)

  private def stageAnyFields(i: Int): Unit = {
    val n = fieldOrdinals.length
    var bytes = 8 * (n + 1)
    var f = 0
    while (f < n) { if (widths(f) == 0 && !nulls(f)) bytes += (stringSizes(f) + 7) & ~7; f += 1 }
    val at = staging(i, bytes)
    val start = Platform.LONG_ARRAY_OFFSET + 8L * (at + 1)
    var nullBits = 0L
    var tail = 8 * (n + 1)
    f = 0
    while (f < n) {
      val word = at + 2 + f
      staged(word) = 0L
      if (nulls(f)) nullBits |= 1L << f
      else if (widths(f) != 0) {
        val address = start + 8L * (f + 1)
        widths(f) match {
          case 8 => staged(word) = words(f)
          case 4 => Platform.putInt(staged, address, words(f).toInt)
          case 2 => Platform.putShort(staged, address, words(f).toShort)
          case 1 => Platform.putByte(staged, address, words(f).toByte)
          case _ => Platform.putBoolean(staged, address, words(f) != 0L)
        }
      } else {
        val length = stringSizes(f)
        staged(word) = (tail.toLong << 32) | length
        stageBytes(stringBases(f), stringOffsets(f), length, at + 1 + tail / 8)
        tail += (length + 7) & ~7
      }
      f += 1
    }
    staged(at + 1) = nullBits
    stagedHash(i) = RowKeyMap.hash(staged, start, bytes)
  }

  // The commonest key after an integer one, written without the loops over fields above: two words (the
  // null bits; the string's offset and size) and its bytes, each word hashed as it is written.
  private val oneString = widths.length == 1 && widths(0) == 0

  /** Row `i`'s key of one string of `length` bytes at `offset` of `base` (`length` -1: NULL), as
   *  [[stageAnyFields]] would write it. */
  private def stageOneString(i: Int, base: AnyRef, offset: Long, length: Int): Unit = {
    val whole = if (length < 0) 0 else length >>> 3
    val rest = if (length < 0) 0 else length & 7
    val bytes = 16 + 8 * whole + (if (rest != 0) 8 else 0)
    val at = staging(i, bytes)
    val nullBits = if (length < 0) 1L else 0L
    val offsetAndSize = if (length < 0) 0L else (16L << 32) | length
    staged(at + 1) = nullBits
    staged(at + 2) = offsetAndSize
    var h = RowKeyMap.hashWord(RowKeyMap.hashWord(RowKeyMap.hashStart(bytes), nullBits), offsetAndSize)
    var w = 0
    while (w < whole) {
      val word = Platform.getLong(base, offset + 8L * w)
      staged(at + 3 + w) = word
      h = RowKeyMap.hashWord(h, word)
      w += 1
    }
    if (rest != 0) {
      val word = RowKeyMap.tailWord(base, offset + 8L * whole, rest)
      staged(at + 3 + whole) = word
      h = RowKeyMap.hashWord(h, word)
    }
    stagedHash(i) = RowKeyMap.hashEnd(h)
  }

  /** `length` bytes at `offset` of `base` into the staged words from word `first`, the last one's padding
   *  zeroed: whole words, then the rest byte by byte, not by Platform.copyMemory, whose checks and call cost
   *  more than the copy of a short key. */
  private def stageBytes(base: AnyRef, offset: Long, length: Int, first: Int): Unit = {
    val whole = length >>> 3
    RowCopy.copyWords(base, offset, whole, staged, first)
    if ((length & 7) != 0) {
      staged(first + whole) = 0L
      val to = Platform.LONG_ARRAY_OFFSET + 8L * (first + whole)
      var b = 0
      while (b < (length & 7)) {
        Platform.putByte(staged, to + b, Platform.getByte(base, offset + 8L * whole + b)); b += 1
      }
    }
  }

  /** Room for row `i`'s key of `bytes` in the batch's arena, after a header word holding `bytes`: the
   *  header's word. */
  private def staging(i: Int, bytes: Int): Int = {
    if (i == 0) stagedUsed = 0
    if (i >= stagedAt.length) {
      val n = GroupVectors.grow(stagedAt.length, i + 1)
      stagedAt = Arrays.copyOf(stagedAt, n)
      stagedHash = Arrays.copyOf(stagedHash, n)
    }
    val words = bytes / 8 + 1
    if (stagedUsed + words > staged.length)
      staged = Arrays.copyOf(staged, GroupVectors.grow(staged.length, stagedUsed + words))
    val at = stagedUsed
    staged(at) = bytes
    stagedAt(i) = at
    stagedUsed += words
    at
  }

  /** Row `i`'s key when it is one string field (null: NULL), given by generated code. */
  override def stageString(i: Int, key: UTF8String, groups: Array[Int]): Unit =
    if (key == null) stageOneString(i, null, 0L, -1)
    else stageOneString(i, key.getBaseObject, key.getBaseOffset, key.numBytes)

  // A chunk's slots are touched and then looked up, chunk after chunk: the lines the first pass brought in
  // are still in the nearest caches when the second reads them, which a whole batch's (8192 lines) are not.
  override def finishBatch(n: Int, groups: Array[Int]): Unit = {
    var from = 0
    while (from < n) {
      val until = math.min(n, from + RowKeyMap.TouchChunk)
      var sum = 0L
      var i = from
      while (i < until) { sum += slots(GroupMap.slot(stagedHash(i), mask)); i += 1 }
      touched = sum
      i = from
      while (i < until) {
        val at = stagedAt(i)
        groups(i) = groupOfKey(staged, Platform.LONG_ARRAY_OFFSET + 8L * (at + 1), staged(at).toInt, stagedHash(i))
        i += 1
      }
      from = until
    }
  }

  private def groupOfKey(base: AnyRef, offset: Long, bytes: Int, h: Int): Int = {
    val tag = h.toLong << 32
    var s = GroupMap.slot(h, mask)
    var slot = slots(s)
    while (slot != 0) {
      if ((slot & 0xffffffff00000000L) == tag) {
        val at = (slot & 0xffffffffL).toInt - 1
        val page = arena.page(at)
        val i = arena.indexOnPage(at)
        val header = page(i)
        if ((header >>> 32).toInt == bytes &&
          ByteArrayMethods.arrayEquals(base, offset, page, Platform.LONG_ARRAY_OFFSET + 8L * (i + 1), bytes))
          return header.toInt
      }
      s = (s + 1) & mask
      slot = slots(s)
    }
    insert(s, tag, base, offset, bytes)
  }

  private def insert(s: Int, tag: Long, base: AnyRef, offset: Long, bytes: Int): Int = {
    val g = count
    if (g == headers.length) headers = LargeArrays.copyOf(headers, GroupVectors.grow(headers.length, g + 1))
    val at = arena.allocate(bytes / 8 + 1)
    val page = arena.page(at)
    val i = arena.indexOnPage(at)
    page(i) = (bytes.toLong << 32) | g
    RowCopy.copyWords(base, offset, bytes / 8, page, i + 1) // a key is whole words, as an UnsafeRow is
    headers(g) = at
    slots(s) = tag | (at + 1L)
    count += 1
    if (count * 2 > mask) rehash()
    g
  }

  private def rehash(): Unit = {
    val old = slots
    mask = mask * 2 + 1
    slots = LargeArrays.zeroLongs(mask + 1)
    var i = 0
    while (i < old.length) {
      if (old(i) != 0) {
        var s = GroupMap.slot((old(i) >> 32).toInt, mask)
        while (slots(s) != 0) s = (s + 1) & mask
        slots(s) = old(i)
      }
      i += 1
    }
    LargeArrays.release(old)
  }

  def emit(emit: EmitTo): KeyRows = {
    GroupMap.emitAllOnly(emit, "the hash table")
    val keys = new RowKeyMap.ArenaKeys(arena, headers, numKeyFields)
    arena = new WordArena
    headers = new Array[Int](16)
    count = 0
    mask = 1023
    LargeArrays.release(slots)
    slots = new Array[Long](mask + 1)
    keys
  }

  def size: Long = 8L * (mask + 1) + 4L * headers.length + arena.size + 8L * staged.length +
    8L * stagedAt.length
}

private[exec] object RowKeyMap {
  /** The emitted keys, each copied into one row (a [[RowCopy]]). */
  final class ArenaKeys(arena: WordArena, headers: Array[Int], val numKeyFields: Int) extends KeyRows {
    private val key = new RowCopy(numKeyFields)

    def apply(g: Int): InternalRow = {
      val at = headers(g)
      val page = arena.page(at)
      val i = arena.indexOnPage(at)
      key.load(page, Platform.LONG_ARRAY_OFFSET + 8L * (i + 1), (page(i) >>> 32).toInt)
    }

    // Each key is copied out (the RowCopy), so no row handed on points into the arena.
    override def release(): Unit = { arena.release(); LargeArrays.release(headers) }
  }

  /** Keys looked up per touch pass in [[RowKeyMap.finishBatch]]: a chunk's slots are still in cache when
   *  they are read, as a pass over the whole batch's are not (any size from 32 to 256 serves alike). */
  val TouchChunk = 128

  /** Whether a key of these fields can be written without a projection ([[RowKeyMap]]'s `fieldKeys`):
   *  integer-like, boolean and string fields (UTF8_BINARY: a collated string's grouping key is its
   *  collation key, which Spark computes), at most 64 (one word of null bits). */
  def fieldKeyable(types: Seq[DataType]): Boolean =
    types.size <= 64 && types.forall(t => wordWidth(t) != 0 || t == StringType)

  /** The bytes of a field's value within its word: 0 for a type not written as a word (a string's word
   *  holds its offset and size), -1 for a boolean. */
  def wordWidth(t: DataType): Int = t match {
    case BooleanType => -1
    case ByteType => 1
    case ShortType => 2
    case IntegerType | DateType | _: YearMonthIntervalType => 4
    case LongType | TimestampType | TimestampNTZType | _: DayTimeIntervalType => 8
    case _ => 0
  }

  /** A key row's hash over its words (an UnsafeRow's size is a multiple of 8, its padding zeroed): each
   *  word multiplied in, then the bits mixed, so that keys differing in any byte land apart. */
  def hash(key: UnsafeRow): Int = hash(key.getBaseObject, key.getBaseOffset, key.getSizeInBytes)

  def hash(base: AnyRef, offset: Long, bytes: Int): Int = {
    var h = hashStart(bytes)
    var i = 0
    while (i < bytes) { h = hashWord(h, Platform.getLong(base, offset + i)); i += 8 }
    hashEnd(h)
  }

  // The hash in three steps, for a writer that hashes each word as it writes it.
  def hashStart(bytes: Int): Long = bytes * 0x9e3779b97f4a7c15L
  def hashWord(h: Long, word: Long): Long =
    java.lang.Long.rotateLeft(h ^ (word * 0xc2b2ae3d27d4eb4fL), 31) * 0x9e3779b97f4a7c15L
  def hashEnd(hash: Long): Int = {
    var h = hash ^ (hash >>> 29)
    h *= 0xbf58476d1ce4e5b9L
    (h ^ (h >>> 32)).toInt
  }

  /** The last `n` (1 to 7) bytes of a string from `offset` of `base`, as the word that holds them zero
   *  padded in memory. */
  def tailWord(base: AnyRef, offset: Long, n: Int): Long = {
    var w = 0L
    var b = n - 1
    while (b >= 0) { w = (w << 8) | (Platform.getByte(base, offset + b) & 0xffL); b -= 1 }
    if (BytesColumn.LittleEndian) w else java.lang.Long.reverseBytes(w)
  }
}
