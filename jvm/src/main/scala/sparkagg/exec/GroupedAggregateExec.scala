package sparkagg.exec

import org.apache.spark.TaskContext
import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions._
import org.apache.spark.sql.catalyst.expressions.aggregate.{AggregateExpression, PartialMerge}
import org.apache.spark.sql.catalyst.plans.physical._
import org.apache.spark.sql.DataFrame
import org.apache.spark.sql.execution.{SparkPlan, UnaryExecNode}
import org.apache.spark.sql.execution.adaptive.AdaptiveSparkPlanHelper
import org.apache.spark.sql.execution.metric.{SQLMetric, SQLMetrics}
import org.apache.spark.sql.sparkagg.SparkInternals
import org.apache.spark.sql.types.{BinaryType, DataType, StructField}
import org.apache.spark.sql.vectorized.ColumnarBatch
import sparkagg.catalyst.AccumulatorAggregate

/** Which stage of an aggregation a [[GroupedAggregateExec]] runs. */
sealed trait GroupedMode
object GroupedMode {
  /** Rows in, one state row per group out (or per row, when partial aggregation is skipped). A function
   *  whose aggregate expression is in mode PartialMerge reads states instead (the third stage of DISTINCT). */
  case object Partial extends GroupedMode
  /** State rows in, clustered by the keys; merged state rows out. It spills rather than emit early: its
   *  groups must leave it whole (DISTINCT's second stage, whose keys include the distinct columns). */
  case object PartialMerge extends GroupedMode
  /** State rows in, clustered by the keys; the results out, through the query's result expressions. */
  case object Final extends GroupedMode
}

/**
 * A hash aggregation of sparkagg functions run through their [[sparkagg.api.GroupsAccumulator]]s
 * (DataFusion's GroupedHashAggregateStream over GroupsAccumulators and NullState): group keys map to dense indices
 * ([[GroupMap]]), rows are gathered into batches of columns, and each function updates every group of
 * a batch at once, natively in primitive arrays where it has a native accumulator. Planned by
 * [[GroupedAggregateStrategy]] as a Partial node below a shuffle and a Final node above it.
 *
 * `stateAttributes` are the state fields of every function, in order: a Partial or PartialMerge node's
 * output after the keys, and what a merging function reads (every function of a PartialMerge or Final
 * node, a PartialMerge-mode one of a Partial node). Per task, [[GroupedAggregation]] does the work,
 * including memory accounting, spilling (PartialMerge, Final) or early emission (Partial), and skipping
 * partial aggregation.
 */
case class GroupedAggregateExec(
    mode: GroupedMode,
    groupingExpressions: Seq[NamedExpression],
    aggregateExpressions: Seq[AggregateExpression],
    stateAttributes: Seq[Attribute],
    resultExpressions: Seq[NamedExpression],
    child: SparkPlan,
    columnarInput: Boolean = false)
  extends UnaryExecNode {

  private def functions: Seq[AccumulatorAggregate] =
    aggregateExpressions.map(_.aggregateFunction.asInstanceOf[AccumulatorAggregate])

  override def output: Seq[Attribute] = resultExpressions.map(_.toAttribute)

  override def producedAttributes: AttributeSet = mode match {
    case GroupedMode.Final => AttributeSet(aggregateExpressions.map(_.resultAttribute))
    case _ => AttributeSet(stateAttributes) -- AttributeSet(merging.flatten)
  }

  /** Each function's state fields within `stateAttributes`. */
  private def stateSlices: Seq[Seq[Attribute]] = {
    val sizes = functions.map(_.call.exchangedFields.size)
    sizes.scanLeft(0)(_ + _).zip(sizes).map { case (from, n) => stateAttributes.slice(from, from + n) }
  }

  /** The states each function merges from its input: none for a function that reads its arguments. */
  private def merging: Seq[Seq[Attribute]] =
    stateSlices.zip(GroupedAggregateExec.merges(mode, aggregateExpressions)).map { case (s, m) => if (m) s else Nil }

  // A merging function reads its states, not the arguments its aggregate expression names. (A lazy val,
  // as Spark 3.5 declares it: Spark's own rule cannot be called as super.)
  override lazy val references: AttributeSet = AttributeSet.fromAttributeSets(
    groupingExpressions.map(_.references) ++ aggregateExpressions.zip(merging).map {
      case (a, Seq()) => a.references
      case (_, states) => AttributeSet(states)
    })

  override def requiredChildDistribution: Seq[Distribution] = mode match {
    case GroupedMode.Partial => UnspecifiedDistribution :: Nil
    case _ if groupingExpressions.isEmpty => AllTuples :: Nil
    case _ => SparkInternals.clusteredBy(groupingExpressions.map(_.toAttribute)) :: Nil
  }

  override def outputPartitioning: Partitioning = child.outputPartitioning match {
    case p: Expression with Partitioning if mode != GroupedMode.Partial && p.references.subsetOf(outputSet) => p
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
    "skippedRows" -> SQLMetrics.createMetric(sparkContext, "rows passed on as states (partial aggregation skipped)")
  )

  /** Whether the input arrives sorted by the group keys, so groups can be emitted as the keys change. */
  private def sortedInput: Boolean = groupingExpressions.nonEmpty &&
    SortOrder.orderingSatisfies(child.outputOrdering, groupingExpressions.map(g => SortOrder(g, Ascending)))

  protected override def doExecute(): RDD[InternalRow] = {
    val settings = GroupedAggregateStrategy.settings(conf)
    val sorted = sortedInput
    val input = child.output
    val taskMetrics = metrics // created here, on the driver: the closure must not create them on an executor
    def aggregate(source: Either[Iterator[InternalRow], Iterator[ColumnarBatch]]): Iterator[InternalRow] = {
      val setup = new GroupedSetup(
        mode,
        input,
        groupingExpressions,
        functions,
        aggregateExpressions.map(_.filter),
        stateAttributes,
        resultExpressions,
        aggregateExpressions.map(_.resultAttribute),
        GroupedAggregateExec.merges(mode, aggregateExpressions),
        sorted
      )
      val task = TaskContext.get()
      val aggregation =
        new GroupedAggregation(setup, settings, source, SparkInternals.taskMemoryManager(task), taskMetrics)
      task.addTaskCompletionListener[Unit](_ => aggregation.close())
      aggregation
    }
    if (columnarInput) child.executeColumnar().mapPartitions(batches => aggregate(scala.util.Right(batches)))
    else child.execute().mapPartitions(rows => aggregate(scala.util.Left(rows)))
  }

  override def simpleString(maxFields: Int): String = {
    val keys = groupingExpressions.map(_.toAttribute.toString).mkString("[", ", ", "]")
    val calls = functions.zip(aggregateExpressions).map { case (f, a) =>
      (if (a.isDistinct) "distinct " else "") + f.toString + (if (f.sparkOwn) " (Spark's)" else "") +
        (if (mode == GroupedMode.Partial && a.mode == PartialMerge) " (merge)" else "")
    }.mkString("[", ", ", "]")
    val batches = if (columnarInput) ", columnar input" else ""
    s"SparkAggGroupedAggregate ${mode.toString.toLowerCase}$batches, keys=$keys, functions=$calls"
  }
  override def verboseString(maxFields: Int): String = simpleString(maxFields)

  override protected def withNewChildInternal(newChild: SparkPlan): GroupedAggregateExec = copy(child = newChild)
}

object GroupedAggregateExec extends AdaptiveSparkPlanHelper {
  /** Which functions merge states rather than read their arguments: every one after the first stage,
   *  and in a Partial node those whose expression the planner put in mode PartialMerge. */
  def merges(mode: GroupedMode, aggregates: Seq[AggregateExpression]): Seq[Boolean] =
    aggregates.map(a => mode != GroupedMode.Partial || a.mode == PartialMerge)

  /** The grouped operator's metrics in an executed query's plan, summed per mode, e.g.
   *  "final numSpills" -> 3: for tests, benchmarks and users checking what a query did. */
  def metricsOf(df: DataFrame): java.util.Map[String, java.lang.Long] = {
    val nodes = collect(df.queryExecution.executedPlan) { case g: GroupedAggregateExec => g }
    val sums = nodes.flatMap(n => n.metrics.map { case (k, m) => s"${n.mode.toString.toLowerCase} $k" -> m.value })
      .groupBy(_._1).map { case (k, values) => k -> values.map(_._2).sum }
    val out = new java.util.TreeMap[String, java.lang.Long]()
    sums.foreach { case (k, v) => out.put(k, v) }
    out
  }
}
