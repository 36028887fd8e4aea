package sparkagg.exec

import org.apache.spark.rdd.RDD
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.expressions.{Alias, Attribute, AttributeReference, Expression, NamedExpression}
import org.apache.spark.sql.sparkagg.SparkInternals
import org.apache.spark.sql.catalyst.expressions.aggregate.{AggregateExpression, AggregateFunction, Complete, Final, Partial, PartialMerge}
import org.apache.spark.sql.catalyst.planning.PhysicalAggregation
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.execution.{CodegenSupport, ColumnarRule, ColumnarToRowExec, SparkPlan, SparkStrategy}
import org.apache.spark.sql.execution.adaptive.QueryStageExec
import org.apache.spark.sql.execution.columnar.InMemoryTableScanExec
import org.apache.spark.sql.execution.columnar.sparkagg.CachedVectors
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.vectorized.ColumnarBatch
import sparkagg.catalyst.{AccumulatorAggregate, Form, SparkAggregates}

/**
 * Plans an aggregation of sparkagg's functions, each plainly or in a state form (`_state`, `_merge`,
 * `_merge_state`) and with a native GroupsAccumulator, as a Partial
 * [[GroupedAggregateExec]] below a shuffle by the keys and a Final one above it, as Spark plans its own hash
 * aggregation; with DISTINCT calls (plain, without FILTER), in four nodes as Spark plans those
 * (`withDistinct`). Spark's own count, sum, avg, min and max among them run there too, as the sparkagg calls
 * [[SparkAggregates]] names (the plan marks them "Spark's"); an aggregation without any sparkagg function is
 * left alone. Anything else stays with Spark's planner, where sparkagg's functions run as
 * TypedImperativeAggregates in ObjectHashAggregateExec: every function of the catalogue has its native
 * GroupsAccumulator, so that is an aggregation with another of Spark's aggregates, or with a user's own
 * function written only as an Accumulator (one live Accumulator per group on the operator was measured
 * slower than ObjectHashAggregateExec's fallback to sorting at many groups: docs/grouped-operator.md).
 *
 * Settings (read when a query runs):
 *  - `spark.sparkagg.groups.enabled` (default true): false plans every aggregation Spark's way.
 *  - `spark.sparkagg.groups.batchSize` (default 8192): rows per batch.
 *  - `spark.sparkagg.groups.skipPartialRows` (default -1: never) and `spark.sparkagg.groups.skipPartialRatio`
 *    (default 0.8): after that many rows, a Partial node with at least that ratio of groups to rows stops
 *    aggregating and passes rows on as states. Off by default, unlike DataFusion (100000 rows): in Spark
 *    the rows passed on cross a shuffle, which costs more than DataFusion's in-process repartition, and a
 *    partition's first rows rarely tell its reduction (docs/grouped-operator.md).
 *  - Spark's `spark.sql.objectHashAggregate.sortBased.fallbackThreshold` (default 128): a merging node refused
 *    memory spills its groups only when it holds more than that many, as ObjectHashAggregate sorts only past it.
 *  - `spark.sparkagg.groups.packets` (default true): the states cross each shuffle by the keys in packets,
 *    not a row per group ([[StatePackets]], placed after Spark's exchanges by `StatePackets.Rule`).
 */
case class GroupedAggregateStrategy(spark: SparkSession, sparkOwn: SparkAggregates) extends SparkStrategy {
  override def apply(plan: LogicalPlan): Seq[SparkPlan] = plan match {
    case PhysicalAggregation(keyExpressions, spelled, results, child)
        if GroupedAggregateStrategy.enabled(spark) &&
          GroupedAggregateStrategy.grouped(spelled, sparkOwn).isDefined =>
      val aggregates = GroupedAggregateStrategy.grouped(spelled, sparkOwn).get
      val grouping = keyExpressions.map(GroupedAggregateStrategy.normalized)
      val (distinct, regular) = aggregates.partition(_.isDistinct)
      if (distinct.isEmpty) GroupedAggregateStrategy.twoStages(grouping, aggregates, results, planLater(child)) :: Nil
      else GroupedAggregateStrategy.withDistinct(grouping, distinct, regular, results, planLater(child)) :: Nil
    case _ => Nil
  }
}

object GroupedAggregateStrategy {
  val EnabledConf = "spark.sparkagg.groups.enabled"
  val BatchSizeConf = "spark.sparkagg.groups.batchSize"
  val SkipPartialRowsConf = "spark.sparkagg.groups.skipPartialRows"
  val SkipPartialRatioConf = "spark.sparkagg.groups.skipPartialRatio"

  def enabled(spark: SparkSession): Boolean = spark.conf.get(EnabledConf, "true").toBoolean

  /** A key (or distinct column) as Spark's own Aggregation strategy has it: NaN and -0.0 normalized, so each
   *  is one group. */
  private def normalized(e: NamedExpression): NamedExpression = SparkInternals.normalizeFloatingKeys(e) match {
    case n: NamedExpression => n
    case other => Alias(other, e.name)(exprId = e.exprId)
  }

  /** Fresh attributes for the fields each call's states cross the exchange in. */
  private def stateAttributesOf(aggregates: Seq[AggregateExpression]): Seq[Attribute] = aggregates.flatMap { a =>
    val function = a.aggregateFunction.asInstanceOf[AccumulatorAggregate]
    function.call.exchangedFields.map(f => AttributeReference(s"${function.prettyName}_${f.name}", f.dataType)())
  }

  /** A Partial node below a shuffle by the keys and a Final one above it. */
  private def twoStages(
      grouping: Seq[NamedExpression],
      aggregates: Seq[AggregateExpression],
      results: Seq[NamedExpression],
      child: SparkPlan): SparkPlan = {
    val states = stateAttributesOf(aggregates)
    val keys = grouping.map(_.toAttribute)
    val partial = GroupedAggregateExec(GroupedMode.Partial, grouping, aggregates, states, keys ++ states, child)
    GroupedAggregateExec(GroupedMode.Final, keys, aggregates, states, results, partial)
  }

  /**
   * DISTINCT calls (every one over the same columns, which Spark's analyzer ensures; it rewrites any other
   * mix into an expand and two aggregations without DISTINCT) in four stages, as Spark plans its own:
   *  1. Partial, grouped by the keys and the distinct columns: the other calls' states;
   *  2. PartialMerge after a shuffle by those, merging them: each key's distinct values are now one row;
   *  3. Partial grouped by the keys: the other calls merge their states, the DISTINCT calls update from the
   *     distinct values;
   *  4. Final after a shuffle by the keys.
   */
  private def withDistinct(
      grouping: Seq[NamedExpression],
      distinct: Seq[AggregateExpression],
      regular: Seq[AggregateExpression],
      results: Seq[NamedExpression],
      child: SparkPlan): SparkPlan = {
    val columns = distinct.head.aggregateFunction.children.filterNot(_.foldable)
    val named = columns.map {
      case n: NamedExpression => normalized(n)
      case other => normalized(Alias(other, other.toString)())
    }
    val columnOf = columns.zip(named.map(_.toAttribute)).toMap
    val onColumns = distinct.map(a =>
      a.copy(
        aggregateFunction = a.aggregateFunction.transformDown {
          case e: Expression if columnOf.contains(e) => columnOf(e)
        }.asInstanceOf[AggregateFunction]))
    val keys = grouping.map(_.toAttribute)
    val keysAndColumns = keys ++ named.map(_.toAttribute)
    val regularStates = stateAttributesOf(regular)
    val distinctStates = stateAttributesOf(onColumns)
    val first = GroupedAggregateExec(GroupedMode.Partial, grouping ++ named, regular.map(_.copy(mode = Partial)),
      regularStates, keysAndColumns ++ regularStates, child)
    val merged = regular.map(_.copy(mode = PartialMerge))
    val second = GroupedAggregateExec(GroupedMode.PartialMerge, keysAndColumns, merged, regularStates,
      keysAndColumns ++ regularStates, first)
    val all = merged ++ onColumns.map(_.copy(mode = Partial))
    val states = regularStates ++ distinctStates
    val third = GroupedAggregateExec(GroupedMode.Partial, keys, all, states, keys ++ states, second)
    GroupedAggregateExec(GroupedMode.Final, keys, all.map(_.copy(mode = Final)), states, results, third)
  }

  /** The aggregation's calls as the grouped operator runs them (Spark's own replaced by their sparkagg
   *  equivalents, `sparkOwn`), or None when it does not: it has no sparkagg function, or a call that cannot
   *  run there. */
  def grouped(aggregates: Seq[AggregateExpression], sparkOwn: SparkAggregates): Option[Seq[AggregateExpression]] = {
    val calls = aggregates.map { a =>
      a.aggregateFunction match {
        case _: AccumulatorAggregate => Some(a)
        case f => sparkOwn.equivalent(f).map(e => a.copy(aggregateFunction = e))
      }
    }
    val sparkaggs = aggregates.exists(a => a.aggregateFunction.isInstanceOf[AccumulatorAggregate])
    if (sparkaggs && calls.forall(_.exists(runsGrouped))) Some(calls.flatten) else None
  }

  /** Whether the call runs on the grouped operator: with a native GroupsAccumulator for its argument types,
   *  and (for DISTINCT) plainly, not in a state form, and without FILTER. */
  private def runsGrouped(a: AggregateExpression): Boolean =
    a.mode == Complete && (a.aggregateFunction match {
      case f: AccumulatorAggregate =>
        Form.aggregates.contains(f.form) && f.call.hasNativeGroups &&
        !(a.isDistinct && (f.form != Form.Plain || a.filter.isDefined))
      case _ => false
    })

  def settings(conf: SQLConf): GroupedSettings = GroupedSettings(
    batchSize = conf.getConfString(BatchSizeConf, "8192").toInt,
    skipPartialRows = conf.getConfString(SkipPartialRowsConf, "-1").toLong,
    skipPartialRatio = conf.getConfString(SkipPartialRatioConf, "0.8").toDouble,
    spillOver = conf.objectAggSortBasedFallbackThreshold
  )
}

/**
 * How a Partial [[GroupedAggregateExec]] reads its input, decided after Spark's columnar transitions and
 * before its whole-stage code generation:
 *  - over a columnar child (a Parquet scan, a cached table), the child's batches itself: instead of through
 *    the ColumnarToRow transition Spark put between them, or, for a child that offers both rows and
 *    batches (a cached table's stage), instead of its rows;
 *  - over a cached table that Spark reads as rows (some column of the table, not of the query, is not a
 *    number or a boolean), the batches of the columns read, when they are numbers, booleans, dates,
 *    timestamps, strings or decimals of at most 18 digits (`CachedColumns`): decoding a row per value cost
 *    as much as the whole aggregation at 1k groups, and a quarter of an aggregation of strings at 1M groups;
 *  - over rows from generated code (a range, a projection, a join), pushed by the child's generated loop:
 *    its calls become [[StagedCall]]s, so that Spark puts the node into the child's stage (without that, a
 *    `spark.range` query hands the node each row through the stage's buffered iterator, which cost a quarter
 *    of the time at few groups). Rows from an iterator (a shuffle, a cached table's rows) are pulled as
 *    they come: in a stage they would gain nothing, and every group would leave through its buffer.
 */
object GroupedPartialInput extends ColumnarRule {
  // Without adaptive execution, the exchanges are in the plan by now (with it, a query stage preparation rule).
  override def preColumnarTransitions: Rule[SparkPlan] = StatePackets.Rule

  override def postColumnarTransitions: Rule[SparkPlan] = _.transformUp {
    case g @ GroupedAggregateExec(GroupedMode.Partial, _, _, _, _, ColumnarToRowExec(columnar), false, false, _, _) =>
      g.copy(child = columnar, columnarInput = true)
    case g @ GroupedAggregateExec(GroupedMode.Partial, _, _, _, _, child, false, false, _, _)
        if child.supportsColumnar || CachedColumns.decodable(child) =>
      g.copy(columnarInput = true)
    case g @ GroupedAggregateExec(GroupedMode.Partial, _, calls, _, _, child: CodegenSupport, false, false, _, _)
        if child.supportCodegen =>
      g.copy(
        aggregateExpressions = calls.map(a =>
          a.copy(aggregateFunction = StagedCall(a.aggregateFunction.asInstanceOf[AccumulatorAggregate]))),
        staged = true)
  }
}

/** A cached table's scan (or its query stage) whose columns `CachedVectors` decodes into batches: Spark
 *  offers a cached table's batches only when every column of the table (not of the query) is a number or
 *  a boolean, and decodes no strings; `CachedVectors` decodes just the columns the scan reads, strings,
 *  dates, timestamps and decimals of at most 18 digits too. Spark's setting for reading the cache as batches switches it off. */
private[exec] object CachedColumns {
  private def scanOf(plan: SparkPlan): Option[InMemoryTableScanExec] = plan match {
    case stage: QueryStageExec => scanOf(stage.plan)
    case scan: InMemoryTableScanExec => Some(scan)
    case _ => None
  }

  def decodable(plan: SparkPlan): Boolean =
    SQLConf.get.cacheVectorizedReaderEnabled && scanOf(plan).exists(CachedVectors.decodes)

  /** The plan's batches: decoded by `CachedVectors` for a cached table's scan it decodes, else the plan's own. */
  def batches(plan: SparkPlan): RDD[ColumnarBatch] = scanOf(plan) match {
    case Some(scan) if decodable(scan) => CachedVectors.batches(scan)
    case _ => plan.executeColumnar()
  }
}
