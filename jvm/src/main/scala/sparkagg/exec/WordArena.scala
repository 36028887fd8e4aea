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
 * Words appended in runs, each run found by the index of its first word, kept in pages that double in size
 * (page p holds `First << p` words). Growing copies nothing and leaves nothing for the collector, where one
 * array doubled would copy every word it holds each time. A run never straddles two pages: one that does
 * not fit in the rest of a page starts the next page that holds it, so its words are read from one array.
 */
private[exec] final class WordArena {
  import WordArena._
  private val pages = new Array[Array[Long]](MaxPages)
  private var used = 0 // the index of the next word
  private var held = 0L // words of the pages made

  /** The index of a new run of `words` words. */
  def allocate(words: Int): Int = {
    var p = pageOf(used)
    var at = used.toLong
    while (at + words > start(p + 1)) { p += 1; at = start(p) }
    if (at + words > Limit) throw new IllegalStateException("group keys past 16 GB")
    if (pages(p) == null) { pages(p) = LargeArrays.longs(First << p); held += First.toLong << p }
    used = (at + words).toInt
    at.toInt
  }

  /** The page holding the word at `index`, and the word's place in it. */
  def page(index: Int): Array[Long] = pages(pageOf(index))
  def indexOnPage(index: Int): Int = (index - start(pageOf(index))).toInt

  /** Bytes of the pages made. */
  def size: Long = 8L * held

  /** Gives the pages to [[LargeArrays]]; the arena is empty and unusable after. */
  def release(): Unit = for (p <- pages.indices) { LargeArrays.release(pages(p)); pages(p) = null }
}

private[exec] object WordArena {
  private val FirstBits = 10
  private val First = 1 << FirstBits
  /** Page p starts at word First * (2^p - 1): the index's page is the top bit of index / First + 1. */
  private def pageOf(index: Int): Int = 31 - Integer.numberOfLeadingZeros((index >>> FirstBits) + 1)
  private def start(p: Int): Long = First.toLong * ((1L << p) - 1)
  // 21 pages end just below 2^31 words, the indices an Int holds.
  private val MaxPages = 21
  private val Limit = start(MaxPages)
}
