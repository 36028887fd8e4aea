package sparkagg.exec

import sparkagg.compat.CollectionConverters._

import org.apache.spark.memory.{MemoryConsumer, MemoryMode, TaskMemoryManager}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{JoinedRow, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.execution.UnsafeKVExternalSorter
import org.apache.spark.sql.execution.metric.SQLMetric
import org.apache.spark.sql.sparkagg.SparkInternals
import org.apache.spark.sql.types._
import org.apache.spark.sql.vectorized.ColumnarBatch
import org.apache.spark.unsafe.Platform
import org.apache.spark.unsafe.types.UTF8String
import sparkagg.api._
import sparkagg.common.{LargeArrays, Validity}

/** The settings of the grouped path, read from the session when a query runs (see [[GroupedAggregateStrategy]]). */
final case class GroupedSettings(batchSize: Int, skipPartialRows: Long, skipPartialRatio: Double, spillOver: Int)

/** Where a task's input comes from. */
private[exec] sealed trait GroupedInput
private[exec] object GroupedInput {
  final case class Rows(rows: Iterator[InternalRow]) extends GroupedInput
  final case class Batches(batches: Iterator[ColumnarBatch]) extends GroupedInput
  /** A merging node's packets: rows and batches in turn. */
  final case class Packets(packets: PacketReader) extends GroupedInput
  /** Rows pushed one at a time by the generated code of a whole stage ([[GroupedAggregation.push]]). */
  case object Pushed extends GroupedInput
}

/**
 * One task of a [[GroupedAggregateExec]]: reads its input in batches, maps each row's key to a group,
 * hands each function the batch's columns with the group indices, and returns the emitted groups' rows.
 *
 * Memory: after each batch twice the groups' bytes (the key table's and every accumulator's `size`)
 * are asked of Spark's memory manager. When it refuses, a Partial node emits every group's state early (the
 * Final node merges them again; the memory stays held until the emitted rows are read), and a PartialMerge or
 * Final node spills: its groups' keys and states, sorted by key, go to an UnsafeKVExternalSorter (on disk as soon as
 * another spill follows or memory is needed); at the end every run is merged by key, each key's states are merged into
 * a fresh set of accumulators, and groups are emitted with `EmitTo.First` as their keys are passed, so merging holds a
 * batch of groups. Input already sorted by the keys is aggregated the same way from the start.
 *
 * Skipping partial aggregation (DataFusion's skip_partial_aggregation_probe_*): once a Partial node has
 * read `skipPartialRows` rows, if its groups number at least `skipPartialRatio` of them, aggregation does
 * not reduce the rows; it emits what it has and passes every further row on as a state of its own
 * (`convertToState`), when every function can.
 *
 * Input is pulled (rows or columnar batches: the output rows are then read as an Iterator) or, inside a
 * generated stage, pushed a row at a time (`push`, `endInput`; the output rows are read with `hasPending`
 * and `nextPending`). A pushed row that arrives while output rows are pending waits, copied, until they
 * are read: the pending rows may still read the arrays the next batch would be gathered into. While none
 * are pending, generated code may give a row's key and gathered fields as values instead of a row
 * (`valueRoom`, then per row the key (`stagedKeys` or `keyString`) and the fields, then `valuesGiven`).
 *
 * A `packer` turns the output rows into packets for the shuffle ([[StatePackets]]); the last emission, at the
 * end of the input, sends every packet left.
 */
private[exec] final class GroupedAggregation(
    setup: GroupedSetup,
    settings: GroupedSettings,
    source: GroupedInput,
    memory: TaskMemoryManager,
    metrics: Map[String, SQLMetric],
    packer: Option[PacketWriter])
  extends MemoryConsumer(memory, MemoryMode.ON_HEAP) with Iterator[InternalRow] {

  private val partial = setup.mode == GroupedMode.Partial
  private val functions = setup.functions.indices
  private val batchSize = settings.batchSize
  private val batch = new BatchBuilder(setup.valueFields, batchSize)
  private val values = setup.valueProjection()
  private val valueOrdinals = setup.valueFields.map(_._1).toArray
  private var groupIndices = new Array[Int](batchSize)
  // Bytes of the rows gathered into the batch so far: a batch also ends at BatchBytes, since its columns copy
  // what the rows hold, and four merged states of an array_agg of 10 million values are 80 MB.
  private var batchBytes = 0L
  // Made when first asked: rows written from the arrays or packed need none, and generating it in every task
  // is a cost a short task feels (docs/grouped-operator.md, "What profiles showed").
  private lazy val output = setup.outputProjection()
  private lazy val empty = setup.allColumns(batch.columns(0), 0) // zero rows, for catchUp

  // A columnar child's batches are read in place when every argument is a plain column; else as rows.
  private var batches: Iterator[ColumnarBatch] = source match {
    case GroupedInput.Batches(columnar) if setup.inPlace => columnar
    case GroupedInput.Packets(packets) if setup.inPlace => packets.batches
    case _ => null
  }
  private var input: Iterator[InternalRow] = source match {
    case GroupedInput.Rows(rows) => rows
    case GroupedInput.Batches(columnar) if batches == null => columnar.flatMap(_.rowIterator().asScala)
    case GroupedInput.Packets(packets) => if (batches == null) packets.allRows else packets.rows
    case _ => Iterator.empty
  }
  private val packets = source.isInstanceOf[GroupedInput.Packets]
  private var groups = setup.newGroupMap()
  private var accumulators = newAccumulators()
  private var sorted = setup.sortedInput
  private var reserved = 0L
  private var rowsRead = 0L
  // Rows passed on as states are arguments turned into states; a state form's input is states already.
  private var probed = !partial || !setup.hasKeys || !setup.functions.indices.forall(setup.updates) ||
    !accumulators.forall(_.supportsConvertToState) || settings.skipPartialRows < 0
  private var skipping = false
  private var spilled: UnsafeKVExternalSorter = null
  private var merging: UnsafeKVExternalSorter = null
  private var pending: Iterator[InternalRow] = Iterator.empty
  private var finished = false
  private var releaseOnNextStep = false

  private def newAccumulators(): Array[GroupsAccumulator] = setup.calls.map(_.newGroupsAccumulator()).toArray

  override def hasNext: Boolean = {
    while (!pending.hasNext && !finished) pending = step()
    pending.hasNext
  }

  override def next(): InternalRow = {
    if (!hasNext) throw new NoSuchElementException("no more groups")
    metrics("numOutputRows") += 1
    pending.next()
  }

  /** Reads one batch and returns what it lets go of; at the end of the input, the rest. */
  private def step(): Iterator[InternalRow] = timed {
    // Rows first: packets give rows and batches in turn, and rows end where a batch is next.
    if (input.hasNext) consumeBatch(readRows())
    else if (batches != null && batches.hasNext) consumeBatch(readColumnar(batches.next()))
    else if (spilled != null) { mergeSpilled(); Iterator.empty }
    else { finished = true; emit(EmitTo.All) }
  }

  private def timed(work: => Iterator[InternalRow]): Iterator[InternalRow] = {
    val start = System.nanoTime()
    if (releaseOnNextStep) release()
    try work
    finally metrics("aggTime") += (System.nanoTime() - start) / 1000000
  }

  /** Up to a batch of rows: their groups, and their values gathered into columns. */
  private def readRows(): (Array[Column], Int) = {
    var n = 0
    while (n < batchSize && batchBytes < GroupedAggregation.BatchBytes && input.hasNext) {
      gather(input.next(), n)
      n += 1
    }
    gathered(n)
  }

  /** Row `i` of the batch being gathered: its group staged, its values appended to the columns. */
  private def gather(row: InternalRow, i: Int): Unit = {
    groups.stage(row, i, groupIndices)
    batch.append(values(row), i)
    row match {
      case u: UnsafeRow => batchBytes += u.getSizeInBytes
      case _ =>
    }
  }

  /** The first `n` gathered rows as a batch: their groups looked up, their columns. */
  private def gathered(n: Int): (Array[Column], Int) = {
    batchBytes = 0L
    groups.finishBatch(n, groupIndices)
    (setup.allColumns(batch.columns(n), n), n)
  }

  // Pushed input: the rows gathered so far, the rows waiting for the pending ones to be read, the end.
  private var pushed = 0
  private val waiting = new java.util.ArrayDeque[InternalRow]()
  private var inputEnded = false

  /** One input row from generated code (the row is the caller's again when this returns); whether output
   *  rows are now pending, to be read before more input is worth pushing. */
  def push(row: InternalRow): Boolean =
    if (pendingRows || !waiting.isEmpty) { waiting.add(row.copy()); hasPending }
    else admit(row)

  private def admit(row: InternalRow): Boolean = { gather(row, pushed); valuesGiven(pushed + 1) }

  // Iterator.empty is what a batch that lets nothing go returns: no interface call per row then.
  private def pendingRows: Boolean = (pending ne Iterator.empty) && pending.hasNext

  /** How many rows generated code may now give as values rather than push as rows, at positions from
   *  `position` on: the rest of the batch, or none while output is pending, rows wait or rows are passed on
   *  (which reads keys from rows). It then tells [[valuesGiven]] once the room is used up or the input
   *  ends, not after each row: the row-by-row checks were a tenth of the task's CPU time at 1k groups. */
  def valueRoom: Int = if (!skipping && waiting.isEmpty && !pendingRows) batchSize - pushed else 0
  // The row's key: none (a global aggregate's one group), an integer-like or a string key (null: NULL).
  def keyless(position: Int): Unit = groupIndices(position) = 0
  // An integer-like key is written by the generated code itself, as GroupMap.stageLong would: the key at the
  // row's position of stagedKeys, 0 (-1: NULL) at that of stagedGroups. A pushed aggregation keeps both
  // arrays: its table is replaced only once it stops taking values, and only columnar input reallocates
  // groupIndices.
  def stagedKeys: Array[Long] = groups.stagedLongs(batchSize)
  def stagedGroups: Array[Int] = groupIndices
  def keyString(position: Int, key: UTF8String): Unit = groups.stageString(position, key, groupIndices)
  // Gathered field j of the row (j indexes the setup's valueFields): written by the generated code into
  // field j's arrays at the row's position, or given to a setter (FieldBuilder.pushOf).
  def position: Int = pushed
  def valuesOf(j: Int): AnyRef = batch.valuesOf(j)
  def validityOf(j: Int): Array[Long] = batch.validityOf(j)
  /** Field j, never NULL, is valid at every position of the room from `position` on (valueRoom). */
  def validFrom(j: Int, position: Int): Unit = Validity.setFrom(batch.validityOf(j), position)
  def putBoolean(j: Int, position: Int, isNull: Boolean, v: Boolean): Unit = batch.putBoolean(j, position, isNull, v)
  def putString(j: Int, position: Int, v: UTF8String): Unit = batch.putString(j, position, v)

  /** The rows before position `end` are given (pushed or as values); whether output rows are now pending. */
  def valuesGiven(end: Int): Boolean = {
    pushed = end
    if (pushed == batchSize || batchBytes >= GroupedAggregation.BatchBytes) {
      val n = pushed
      pushed = 0
      pending = timed(consumeBatch(gathered(n)))
    }
    pendingRows
  }

  /** The pushed input is over: what is still held is emitted. */
  def endInput(): Unit = inputEnded = true

  /** Whether an output row is ready for `nextPending`: first the waiting rows are let in, in order; at the
   *  end of the input, the last batch and then every group. */
  def hasPending: Boolean = {
    while (!pending.hasNext && (!waiting.isEmpty || (inputEnded && !finished))) {
      if (!waiting.isEmpty) admit(waiting.poll())
      else if (pushed > 0) { val n = pushed; pushed = 0; pending = timed(consumeBatch(gathered(n))) }
      else pending = timed { finished = true; emit(EmitTo.All) }
    }
    pending.hasNext
  }

  def nextPending(): InternalRow = {
    if (!hasPending) throw new NoSuchElementException("no pending group")
    metrics("numOutputRows") += 1
    pending.next()
  }

  /** A columnar batch: its rows' groups; its vectors are the columns. */
  private def readColumnar(b: ColumnarBatch): (Array[Column], Int) = {
    if (packets) metrics("columnPackets") += 1
    val n = b.numRows
    if (groupIndices.length < n) groupIndices = new Array[Int](n)
    groups.stageBatch(b, groupIndices)
    groups.finishBatch(n, groupIndices)
    val read = new Array[Column](valueOrdinals.length)
    var i = 0
    while (i < read.length) { read(i) = VectorColumn.of(b.column(valueOrdinals(i)), n); i += 1 }
    (setup.allColumns(read, n), n)
  }

  private def consumeBatch(batchRead: (Array[Column], Int)): Iterator[InternalRow] = {
    val (columns, n) = batchRead
    rowsRead += n
    if (skipping) return passOn(columns, n)
    feed(columns, n)
    if (sorted) {
      if (groups.numGroups > 1) emit(EmitTo.First(groups.numGroups - 1)) else Iterator.empty
    } else if (!probed && rowsRead >= settings.skipPartialRows) {
      probed = true
      if (groups.numGroups >= settings.skipPartialRatio * rowsRead) {
        skipping = true
        val emitted = emit(EmitTo.All)
        groups = new RowPerGroup(setup.keyProjection())
        emitted
      } else Iterator.empty
    } else if (!reserve()) {
      if (partial) { metrics("numEarlyEmits") += 1; emit(EmitTo.All) }
      else {
        // A spill pays when groups are many: its runs come back one group at a time. A few large states come
        // back whole, with copies on the way (an array_agg of 10 million values spilled held its row, the
        // run's record and the batch's copy at once): up to Spark's own threshold, they stay, as they do in
        // ObjectHashAggregate, which sorts only past it.
        if (groups.numGroups > settings.spillOver) spillGroups()
        Iterator.empty
      }
    } else Iterator.empty
  }

  /** Updates every function with the batch, or merges the states it holds (exchanged or given). */
  private def feed(columns: Array[Column], n: Int): Unit = {
    val total = groups.numGroups
    for (j <- functions) guard(j) {
      val own = setup.columnsOf(j).map(columns)
      val filter = if (setup.filterOf(j) < 0) None else Some(columns(setup.filterOf(j)))
      if (setup.merges(j))
        accumulators(j).mergeBatch(Columns.of(n, setup.calls(j).received(own)), groupIndices, filter, total)
      else if (setup.statesIn(j)) {
        val given = Columns.of(n, own)
        setup.calls(j).checkGiven(given, filter)
        accumulators(j).mergeBatch(given, groupIndices, filter, total)
      } else accumulators(j).updateBatch(Columns.of(n, own), groupIndices, filter, total)
    }
  }

  private def guard[T](j: Int)(body: => T): T =
    try body
    catch { case e: ArithmeticException => throw setup.functions(j).overflow(e) }

  /** Asks the memory manager for twice the groups' current bytes, false when it refuses: the key table
   *  and the accumulators' arrays grow by doubling in the middle of a batch, and the old array lives
   *  until the new one is filled, so the heap must have that room before the next batch starts. */
  private def reserve(): Boolean = {
    val used = groups.size + accumulators.map(_.size).sum
    metrics("peakMemory").set(math.max(metrics("peakMemory").value, used))
    if (2 * used > reserved) reserved += acquireMemory(2 * used - reserved)
    2 * used <= reserved
  }

  private def release(): Unit = { freeMemory(reserved); reserved = 0L; releaseOnNextStep = false }

  /** The emitted groups' output rows: key and states, or (Final) the result expressions. */
  private def emit(emitTo: EmitTo): Iterator[InternalRow] = {
    catchUp()
    val n = emitTo.count(groups.numGroups)
    metrics("numGroups") += n
    val loan = new LargeArrays.Loan
    val (keys, columns) = LargeArrays.lending(loan) {
      val columns: Array[Column] =
        if (setup.emitsStates) emittedStates(emitTo, n)
        else
          functions.map { j =>
            if (setup.stateOut(j)) setup.calls(j).stateColumn(guard(j)(accumulators(j).state(emitTo)), n)
            else guard(j)(accumulators(j).evaluate(emitTo))
          }.toArray
      (groups.emit(emitTo), columns)
    }
    // The emitted columns hold the groups' bytes until their rows are read: the memory is given back when
    // the next batch starts (step), not now, or the other tasks could take it while both are alive.
    if (emitTo == EmitTo.All) releaseOnNextStep = true
    rowsOf(keys, loan, n, columns, if (setup.emitsStates) setup.stateTypes.flatten else setup.returnTypes)
  }

  /** Every function's exchanged state columns of the emitted groups. */
  private def emittedStates(emitTo: EmitTo, n: Int): Array[Column] =
    functions.flatMap(j => setup.calls(j).exchanged(guard(j)(accumulators(j).state(emitTo)), n)).toArray

  /** Rows passed on as states of their own (partial aggregation skipped). */
  private def passOn(columns: Array[Column], n: Int): Iterator[InternalRow] = {
    metrics("skippedRows") += n
    val states = functions.flatMap { j =>
      val filter = if (setup.filterOf(j) < 0) None else Some(columns(setup.filterOf(j)))
      setup.calls(j).exchanged(
        guard(j)(accumulators(j).convertToState(Columns.of(n, setup.columnsOf(j).map(columns)), filter)), n)
    }.toArray
    rowsOf(groups.emit(EmitTo.All), new LargeArrays.Loan, n, states, setup.stateTypes.flatten)
  }

  /** The output rows of groups 0 until n: each group's key and columns ([[projected]]). Every row is a copy:
   *  once the last is made, the keys' and columns' arrays (`loan`) are given back. Packed, the groups of an
   *  integer key or of a key of integer and string fields with bigint, double, string and binary states are
   *  written into the packets from the arrays ([[PacketWriter]]), without rows. */
  private def rowsOf(keys: KeyRows, loan: LargeArrays.Loan, n: Int, columns: Array[Column], types: Seq[DataType])
      : Iterator[InternalRow] = {
    def release(): Unit = { keys.release(); loan.repay() }
    packer.flatMap(_.pack(keys, columns, types, n, last = finished)(release))
      .getOrElse(projected(keys, n, columns, types, release))
  }

  /** The output rows: written from the keys and columns ([[ColumnRows]]) when they are those rows as they
   *  are, else projected from a [[GroupRow]] over them. A node that passes on keys alone (the first two of
   *  Spark's DISTINCT rewrite) hands on a key kept as an UnsafeRow as it is: the projection would copy it
   *  byte for byte. */
  private def projected(keys: KeyRows, n: Int, columns: Array[Column], types: Seq[DataType], release: () => Unit)
      : Iterator[InternalRow] = {
    val keysOnly = setup.emitsStates && columns.isEmpty
    val rows =
      if (!keysOnly && setup.rowsAsEmitted && ColumnRows.writes(keys, setup.keyTypes, columns, types))
        new GroupRows(n, release) {
          private val write = new ColumnRows(keys, setup.keyTypes, columns)
          private val row = new UnsafeRow(setup.keyTypes.size + columns.length)
          private var buffer = new Array[Byte](64)
          protected def rowOf(g: Int): InternalRow = {
            write.load(g)
            if (write.size > buffer.length) buffer = new Array[Byte](math.max(2 * buffer.length, write.size))
            write.write(buffer, Platform.BYTE_ARRAY_OFFSET)
            row.pointTo(buffer, write.size)
            row
          }
        }
      else
        new GroupRows(n, release) {
          private val group = new GroupRow(setup.keyTypes, columns, types)
          protected def rowOf(g: Int): InternalRow = {
            group.key = keys(g)
            group.group = g
            group.key match {
              case unsafe: UnsafeRow if keysOnly => unsafe
              case _ => output(group)
            }
          }
        }
    packer.fold[Iterator[InternalRow]](rows)(_.pack(rows, last = finished))
  }

  /** Groups 0 until n's rows, each valid until the next; `release` once the last is read. */
  private abstract class GroupRows(n: Int, release: () => Unit) extends Iterator[InternalRow] {
    protected def rowOf(g: Int): InternalRow
    private var g = 0
    private var released = false
    def hasNext: Boolean = g < n || {
      if (!released) { release(); released = true }
      false
    }
    def next(): InternalRow = { g += 1; rowOf(g - 1) }
  }

  /** Sizes every accumulator to the current groups (a global aggregate's one group exists without rows). */
  private def catchUp(): Unit = {
    for (j <- functions) {
      val own = setup.columnsOf(j).map(empty)
      if (setup.updates(j))
        accumulators(j).updateBatch(Columns.of(0, own), groupIndices, None, groups.numGroups)
      else {
        val states = if (setup.merges(j)) setup.calls(j).received(own) else own
        accumulators(j).mergeBatch(Columns.of(0, states), groupIndices, None, groups.numGroups)
      }
    }
  }

  private lazy val keySchema = StructType(setup.keyTypes.zipWithIndex.map { case (t, i) => StructField(s"k$i", t) })
  private lazy val stateSchema =
    StructType(setup.stateTypes.flatten.zipWithIndex.map { case (t, i) => StructField(s"s$i", t) })
  private lazy val keyToUnsafe = UnsafeProjection.create(setup.keyTypes.toArray)

  private def newSorter() = SparkInternals.newKVSorter(keySchema, stateSchema, memory.pageSizeBytes)

  /** A PartialMerge or Final node out of memory: its groups' keys and states go to a sorted run; memory is
   *  released. */
  private def spillGroups(): Unit = {
    catchUp()
    val n = groups.numGroups
    val loan = new LargeArrays.Loan
    val (keys, states) = LargeArrays.lending(loan)((groups.emit(EmitTo.All), emittedStates(EmitTo.All, n)))
    release()
    val run = newSorter()
    // A projection of this spill's own: its buffer grows to the largest state and would stay that size.
    val stateToUnsafe = UnsafeProjection.create(setup.stateTypes.flatten.toArray)
    val group = new GroupRow(Nil, states, setup.stateTypes.flatten)
    var g = 0
    while (g < n) {
      group.group = g
      run.insertKV(keyToUnsafe(keys(g)), stateToUnsafe(group))
      g += 1
    }
    keys.release()
    loan.repay()
    // Merging moves the run to disk (the first run too, into an empty sorter), so spilled groups leave
    // the memory to the groups still to come: fewer, larger runs, each read back through its own buffers.
    if (spilled == null) spilled = newSorter()
    spilled.merge(run)
    metrics("numSpills") += 1
    metrics("spillSize").set(spilled.getSpillSize)
  }

  /** After the input: the groups still held join the spilled runs, which are then read back merged by
   *  key, as sorted input into fresh accumulators. */
  private def mergeSpilled(): Unit = {
    if (groups.numGroups > 0) spillGroups()
    val runs = spilled.sortedIterator()
    val pair = new JoinedRow
    input = new Iterator[InternalRow] {
      private var ready = false
      def hasNext: Boolean = { if (!ready) ready = runs.next(); ready }
      def next(): InternalRow = {
        if (!hasNext) throw new NoSuchElementException; ready = false; pair(runs.getKey, runs.getValue)
      }
    }
    groups = new SortedKeyGroups(setup.keyProjection())
    batches = null
    accumulators = newAccumulators()
    sorted = true
    merging = spilled
    spilled = null
  }

  /** Another consumer's request: the groups live in Java objects mid-batch, so they spill only between
   *  batches, when their own request is refused. */
  override def spill(size: Long, trigger: MemoryConsumer): Long = 0L

  def close(): Unit = {
    release()
    Seq(spilled, merging).filter(_ != null).foreach(_.cleanupResources())
    spilled = null
    merging = null
  }
}

private[exec] object GroupedAggregation {
  /** A batch of rows ends once its rows hold this many bytes, before `batchSize` rows if they are large. */
  val BatchBytes: Long = 16L << 20
}
