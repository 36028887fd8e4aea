package sparkagg.exec

import org.apache.spark.TaskContext
import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions._
import org.apache.spark.sql.catalyst.expressions.aggregate.AggregateExpression
import org.apache.spark.sql.catalyst.plans.physical._
import org.apache.spark.sql.DataFrame
import org.apache.spark.sql.execution.{SparkPlan, UnaryExecNode}
import org.apache.spark.sql.execution.adaptive.AdaptiveSparkPlanHelper
import org.apache.spark.sql.execution.metric.{SQLMetric, SQLMetrics}
import org.apache.spark.sql.sparkagg.SparkInternals
import org.apache.spark.sql.types.{BinaryType, DataType, StructField}
import org.apache.spark.sql.vectorized.ColumnarBatch
import sparkagg.api.{BinaryColumn, Bound, Column, StatePacking}
import sparkagg.catalyst.AccumulatorAggregate

/** Which half of a two-phase aggregation a [[GroupedAggregateExec]] runs. */
sealed trait GroupedMode
object GroupedMode {
  /** Rows in, one state row per group out (or per row, when partial aggregation is skipped). */
  case object Partial extends GroupedMode
  /** State rows in, clustered by the keys; the results out, through the query's result expressions. */
  case object Final extends GroupedMode
}

/**
 * A hash aggregation of sparkagg functions run through their [[sparkagg.api.GroupsAccumulator]]s
 * (DataFusion's GroupedHashAggregateStream, seeds 001 and 003): group keys map to dense indices
 * ([[GroupMap]]), rows are gathered into batches of columns, and each function updates every group of
 * a batch at once, natively in primitive arrays where it has a native accumulator. Planned by
 * [[GroupedAggregateStrategy]] as a Partial node below a shuffle and a Final node above it.
 *
 * `stateAttributes` are the state fields of every function, in order: the Partial node's output after
 * the keys and the Final node's input. Per task, [[GroupedAggregation]] does the work, including
 * memory accounting, spilling (Final) or early emission (Partial), and skipping partial aggregation.
 */
case class GroupedAggregateExec(
    mode: GroupedMode,
    groupingExpressions: Seq[NamedExpression],
    aggregateExpressions: Seq[AggregateExpression],
    stateAttributes: Seq[Attribute],
    resultExpressions: Seq[NamedExpression],
    child: SparkPlan,
    columnarInput: Boolean = false) extends UnaryExecNode {

  private def functions: Seq[AccumulatorAggregate] =
    aggregateExpressions.map(_.aggregateFunction.asInstanceOf[AccumulatorAggregate])

  override def output: Seq[Attribute] = resultExpressions.map(_.toAttribute)

  override def producedAttributes: AttributeSet = mode match {
    case GroupedMode.Partial => AttributeSet(stateAttributes)
    case GroupedMode.Final => AttributeSet(aggregateExpressions.map(_.resultAttribute))
  }

  // The Final node reads keys and states only; its aggregate expressions name the Partial's input.
  override def references: AttributeSet = mode match {
    case GroupedMode.Partial => super.references
    case GroupedMode.Final => AttributeSet(groupingExpressions.map(_.toAttribute) ++ stateAttributes)
  }

  override def requiredChildDistribution: Seq[Distribution] = mode match {
    case GroupedMode.Partial => UnspecifiedDistribution :: Nil
    case GroupedMode.Final if groupingExpressions.isEmpty => AllTuples :: Nil
    case GroupedMode.Final => ClusteredDistribution(groupingExpressions.map(_.toAttribute)) :: Nil
  }

  override def outputPartitioning: Partitioning = child.outputPartitioning match {
    case p: Expression with Partitioning if mode == GroupedMode.Final && p.references.subsetOf(outputSet) => p
    case p => UnknownPartitioning(p.numPartitions)
  }

  override lazy val metrics: Map[String, SQLMetric] = Map(
    "numOutputRows" -> SQLMetrics.createMetric(sparkContext, "number of output rows"),
    "numGroups" -> SQLMetrics.createMetric(sparkContext, "number of groups"),
    "aggTime" -> SQLMetrics.createTimingMetric(sparkContext, "time in aggregation"),
    "peakMemory" -> SQLMetrics.createSizeMetric(sparkContext, "peak memory"),
    "spillSize" -> SQLMetrics.createSizeMetric(sparkContext, "spill size"),
    "numSpills" -> SQLMetrics.createMetric(sparkContext, "number of spills"),
    "numEarlyEmits" -> SQLMetrics.createMetric(sparkContext, "number of early emits (memory)"),
    "skippedRows" -> SQLMetrics.createMetric(sparkContext, "rows passed on as states (partial aggregation skipped)"))

  /** Whether the input arrives sorted by the group keys, so groups can be emitted as the keys change. */
  private def sortedInput: Boolean = groupingExpressions.nonEmpty &&
    SortOrder.orderingSatisfies(child.outputOrdering, groupingExpressions.map(g => SortOrder(g, Ascending)))

  protected override def doExecute(): RDD[InternalRow] = {
    val settings = GroupedAggregateStrategy.settings(conf)
    val sorted = sortedInput
    val input = child.output
    val taskMetrics = metrics // created here, on the driver: the closure must not create them on an executor
    def aggregate(source: Either[Iterator[InternalRow], Iterator[ColumnarBatch]]): Iterator[InternalRow] = {
      val setup = new GroupedSetup(mode, input, groupingExpressions, functions,
        aggregateExpressions.map(_.filter), stateAttributes, resultExpressions,
        aggregateExpressions.map(_.resultAttribute), sorted)
      val task = TaskContext.get()
      val aggregation = new GroupedAggregation(setup, settings, source, SparkInternals.taskMemoryManager(task), taskMetrics)
      task.addTaskCompletionListener[Unit](_ => aggregation.close())
      aggregation
    }
    if (columnarInput) child.executeColumnar().mapPartitions(batches => aggregate(scala.util.Right(batches)))
    else child.execute().mapPartitions(rows => aggregate(scala.util.Left(rows)))
  }

  override def simpleString(maxFields: Int): String = {
    val keys = groupingExpressions.map(_.toAttribute.toString).mkString("[", ", ", "]")
    val calls = functions.map(_.toString).mkString("[", ", ", "]")
    val batches = if (columnarInput) ", columnar input" else ""
    s"SparkAggGroupedAggregate ${mode.toString.toLowerCase}$batches, keys=$keys, functions=$calls"
  }
  override def verboseString(maxFields: Int): String = simpleString(maxFields)

  override protected def withNewChildInternal(newChild: SparkPlan): GroupedAggregateExec = copy(child = newChild)
}

object GroupedAggregateExec extends AdaptiveSparkPlanHelper {
  /** The grouped operator's metrics in an executed query's plan, summed per mode, e.g.
   *  "final numSpills" -> 3: for tests, benchmarks and users checking what a query did. */
  def metricsOf(df: DataFrame): java.util.Map[String, java.lang.Long] = {
    val nodes = collect(df.queryExecution.executedPlan) { case g: GroupedAggregateExec => g }
    val sums = nodes.flatMap(n => n.metrics.map { case (k, m) => s"${n.mode.toString.toLowerCase} $k" -> m.value })
      .groupMapReduce(_._1)(_._2)(_ + _)
    val out = new java.util.TreeMap[String, java.lang.Long]()
    sums.foreach { case (k, v) => out.put(k, v) }
    out
  }
}

/**
 * The task-side description of one node: where a batch's keys, arguments and filters come from in an
 * input row, and how a group's key and values become an output row. Built on the executor from the
 * node's expressions.
 */
private[exec] final class GroupedSetup(
    val mode: GroupedMode,
    input: Seq[Attribute],
    groupingExpressions: Seq[NamedExpression],
    val functions: Seq[AccumulatorAggregate],
    filters: Seq[Option[Expression]],
    stateAttributes: Seq[Attribute],
    resultExpressions: Seq[NamedExpression],
    resultAttributes: Seq[Attribute],
    val sortedInput: Boolean) {

  private val keys: Seq[Expression] = groupingExpressions.map(BindReferences.bindReference(_: Expression, input))
  val keyTypes: Seq[DataType] = groupingExpressions.map(_.dataType)
  val hasKeys: Boolean = keys.nonEmpty
  def keyProjection(): UnsafeProjection = UnsafeProjection.create(keys)

  val bounds = functions.map(_.boundCall.bound)
  /** What each function's partial half hands its final half: the state fields, or one binary field
   *  when the function packs its states ([[sparkagg.api.StatePacking]]). */
  val stateTypes: Seq[Seq[DataType]] = bounds.map(GroupedSetup.exchangedFields(_).map(_.dataType))
  val packings: Seq[Option[StatePacking]] = bounds.map(_.packing)
  val returnTypes: Seq[DataType] = bounds.map(_.returnType)

  /** What each function reads from an input row: its (cast) arguments, or its state fields; then its
   *  filter. Plain columns of the right type are read in place, else every value is projected first. */
  private val (valueExpressions, argumentColumns, filterColumns) = {
    val perFunction: Seq[Seq[Expression]] = mode match {
      case GroupedMode.Partial => functions.map(f => f.castArguments.map(BindReferences.bindReference(_, input)))
      case GroupedMode.Final =>
        val sizes = stateTypes.map(_.size)
        val offsets = sizes.scanLeft(0)(_ + _)
        sizes.indices.map(i => stateAttributes.slice(offsets(i), offsets(i) + sizes(i))
          .map(BindReferences.bindReference(_: Expression, input)))
    }
    // FILTER applies to rows; the Final node's states passed it already.
    val boundFilters = filters.map(_.filter(_ => mode == GroupedMode.Partial).map(BindReferences.bindReference(_, input)))
    val all = perFunction.flatten ++ boundFilters.flatten
    val starts = perFunction.map(_.size).scanLeft(0)(_ + _)
    val columns = perFunction.indices.map(i => (starts(i) until starts(i + 1)).toArray)
    var next = starts.last
    val filterColumns = boundFilters.map {
      case Some(_) => next += 1; next - 1
      case None => -1
    }
    (all, columns, filterColumns)
  }

  /** Constant arguments and filters (a percentile, a separator), evaluated once instead of per row. */
  private val constants: Map[Int, Any] =
    valueExpressions.zipWithIndex.collect { case (e, i) if e.foldable => i -> e.eval() }.toMap
  private val readExpressions = valueExpressions.zipWithIndex.filterNot { case (_, i) => constants.contains(i) }.map(_._1)

  /** Whether every other argument and filter is a plain input column of the type it is read as. */
  val inPlace: Boolean = readExpressions.forall(_.isInstanceOf[BoundReference])
  /** The fields read from each row (after [[valueProjection]]): ordinal and type. */
  val valueFields: Seq[(Int, DataType)] = readExpressions.zipWithIndex.map {
    case (b: BoundReference, _) if inPlace => (b.ordinal, b.dataType)
    case (e, i) => (i, e.dataType)
  }
  def valueProjection(): InternalRow => InternalRow =
    if (inPlace) identity else UnsafeProjection.create(readExpressions)

  /** Every value column of a batch: the columns read from its rows, with the constants in their places. */
  def allColumns(read: Array[Column], numRows: Int): Array[Column] =
    if (constants.isEmpty) read
    else {
      val fromRows = read.iterator
      Array.tabulate(valueExpressions.size)(i => constants.get(i) match {
        case Some(value) => new ConstantColumn(value, numRows)
        case None => fromRows.next()
      })
    }

  /** The value columns function `j` reads, and the column of its filter (-1: none). */
  def columnsOf(j: Int): Array[Int] = argumentColumns(j)
  def filterOf(j: Int): Int = filterColumns(j)

  /** The hash table for this node's keys: none, one integer-like column read in place, or any. */
  def newGroupMap(): GroupMap = keys match {
    case Seq() => new SingleGroup
    case _ if sortedInput => new SortedKeyGroups(keyProjection())
    case Seq(b: BoundReference) if LongKeyMap.supports(b.dataType) => new LongKeyMap(b.ordinal, b.dataType)
    case _ => new RowKeyMap(keyProjection())
  }

  /** Output rows from a group's key joined with its values (states for Partial, results for Final). */
  def outputProjection(): UnsafeProjection = mode match {
    case GroupedMode.Partial => UnsafeProjection.create((keyTypes ++ stateTypes.flatten).toArray)
    case GroupedMode.Final =>
      UnsafeProjection.create(resultExpressions, groupingExpressions.map(_.toAttribute) ++ resultAttributes)
  }

  /** Function `j`'s states as its partial half hands them on: packed when the function packs. */
  def exchanged(j: Int, states: Array[Column], numRows: Int): Array[Column] =
    packings(j).fold(states)(p => Array[Column](p.pack(states, numRows)))

  /** Function `j`'s exchanged columns as its state columns again. */
  def received(j: Int, columns: Array[Column]): Array[Column] =
    packings(j).fold(columns)(_.unpack(columns(0).asInstanceOf[BinaryColumn]))
}

private[exec] object GroupedSetup {
  /** The fields a function's partial half hands on: its state fields, or one binary `packed` field when
   *  it packs them. */
  def exchangedFields(bound: Bound): Seq[StructField] =
    if (bound.packing.isDefined) Seq(StructField("packed", BinaryType)) else bound.stateSchema.fields.toSeq
}
