package sparkagg.exec

import org.apache.spark.TaskContext
import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions._
import org.apache.spark.sql.catalyst.expressions.aggregate.{AggregateExpression, AggregateFunction, PartialMerge}
import org.apache.spark.sql.catalyst.expressions.codegen.{CodegenContext, CodeGenerator, ExprCode, GenerateUnsafeProjection}
import org.apache.spark.sql.catalyst.plans.physical._
import org.apache.spark.sql.DataFrame
import org.apache.spark.sql.execution.{CodegenSupport, SparkPlan, UnaryExecNode}
import org.apache.spark.sql.execution.adaptive.AdaptiveSparkPlanHelper
import org.apache.spark.sql.execution.metric.{SQLMetric, SQLMetrics}
import org.apache.spark.sql.sparkagg.SparkInternals
import org.apache.spark.sql.types.{DataType, StringType, StructType}
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
 *
 * A `staged` Partial node over rows (its calls made [[StagedCall]]s by [[GroupedPartialInput]]) joins the
 * whole-stage generated code of its child: the child's loop pushes each row into the aggregation, and the
 * groups leave through the stage's output, one row per step (see `doProduce`). Anywhere else, and when
 * Spark does not generate code, the node pulls its input in `doExecute`.
 *
 * `packs` and `unpacks` are set by `StatePackets.Rule` on the two sides of a shuffle by the keys: the
 * producer's groups leave in packets ([[StatePackets]]) and the merging node reads them from the packets.
 */
case class GroupedAggregateExec(
    mode: GroupedMode,
    groupingExpressions: Seq[NamedExpression],
    aggregateExpressions: Seq[AggregateExpression],
    stateAttributes: Seq[Attribute],
    resultExpressions: Seq[NamedExpression],
    child: SparkPlan,
    columnarInput: Boolean = false,
    staged: Boolean = false,
    packs: Option[StatePackets] = None,
    unpacks: Option[StatePackets] = None)
  extends UnaryExecNode with CodegenSupport {

  private def functions: Seq[AccumulatorAggregate] = aggregateExpressions.map(
    _.aggregateFunction match {
      case StagedCall(f) => f
      case f => f.asInstanceOf[AccumulatorAggregate]
    })

  override def output: Seq[Attribute] = packs.fold(resultExpressions.map(_.toAttribute))(_.output)

  override def producedAttributes: AttributeSet =
    (mode match {
      case GroupedMode.Final => AttributeSet(aggregateExpressions.map(_.resultAttribute))
      case _ => AttributeSet(stateAttributes) -- AttributeSet(merging.flatten)
    }) ++ packs.fold(AttributeSet.empty)(p => AttributeSet(p.output))

  /** The rows the node aggregates: its child's, or those of the packets it unpacks. */
  private def inputAttributes: Seq[Attribute] = unpacks.fold(child.output)(_.unpacked)

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
  override lazy val references: AttributeSet = if (unpacks.isDefined) child.outputSet
  else AttributeSet.fromAttributeSets(
    groupingExpressions.map(_.references) ++ aggregateExpressions.zip(merging).map {
      case (a, Seq()) => a.references
      case (_, states) => AttributeSet(states)
    })

  override def requiredChildDistribution: Seq[Distribution] = mode match {
    case GroupedMode.Partial => UnspecifiedDistribution :: Nil
    case _ if unpacks.isDefined => SparkInternals.clusteredBy(unpacks.get.route :: Nil) :: Nil
    case _ if groupingExpressions.isEmpty => AllTuples :: Nil
    case _ => SparkInternals.clusteredBy(groupingExpressions.map(_.toAttribute)) :: Nil
  }

  override def outputPartitioning: Partitioning =
    unpacks.fold(child.outputPartitioning)(_.byKeys(child.outputPartitioning)) match {
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
    "skippedRows" -> SQLMetrics.createMetric(sparkContext, "rows passed on as states (partial aggregation skipped)"),
    "columnPackets" -> SQLMetrics.createMetric(sparkContext, "packets of states in columns read")
  )

  /** Whether the input arrives sorted by the group keys, so groups can be emitted as the keys change. */
  private def sortedInput: Boolean = groupingExpressions.nonEmpty &&
    SortOrder.orderingSatisfies(child.outputOrdering, groupingExpressions.map(g => SortOrder(g, Ascending)))

  /** The task-side description of this node over rows of `input`. */
  private def setupOver(input: Seq[Attribute], sorted: Boolean): GroupedSetup = new GroupedSetup(
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

  /** A task's aggregation of its input: made on the driver, called in each task. */
  private def taskAggregation(): GroupedInput => GroupedAggregation = {
    val settings = GroupedAggregateStrategy.settings(conf)
    val sorted = sortedInput
    val input = inputAttributes
    val taskMetrics = metrics // created here, on the driver: the closure must not create them on an executor
    source => {
      val setup = setupOver(input, sorted)
      val task = TaskContext.get()
      val packer = packs.map(new PacketWriter(_))
      val aggregation =
        new GroupedAggregation(setup, settings, source, SparkInternals.taskMemoryManager(task), taskMetrics, packer)
      task.addTaskCompletionListener[Unit](_ => aggregation.close())
      aggregation
    }
  }

  protected override def doExecute(): RDD[InternalRow] = {
    val aggregate = taskAggregation()
    if (columnarInput) CachedColumns.batches(child).mapPartitions(batches => aggregate(GroupedInput.Batches(batches)))
    else {
      val types = inputAttributes.map(_.dataType)
      val packed = unpacks.isDefined
      child.execute().mapPartitions(rows =>
        aggregate(if (packed) GroupedInput.Packets(new PacketReader(rows, types)) else GroupedInput.Rows(rows)))
    }
  }

  override def supportCodegen: Boolean = staged
  override def inputRDDs(): Seq[RDD[InternalRow]] = child.asInstanceOf[CodegenSupport].inputRDDs()

  /** The setup the generated code is written from (on the driver). */
  @transient private lazy val stagedSetup = setupOver(child.output, sortedInput)

  // Values pushed: every input column is evaluated first (a row that cannot be given as values is built from
  // them). Else the child's row is pushed whole, and no column is read as a variable.
  override def usedInputs: AttributeSet = if (stagedSetup.pushesValues) child.outputSet else AttributeSet.empty
  // Every output row is handed on alone (a stop check follows each), so the stage need not copy it.
  override def needCopyResult: Boolean = false

  /** The generated stage's aggregation (its field's name). */
  private var aggregationTerm: String = _
  /** Code that tells the aggregation of the rows given as values since it last heard (doConsume's), for the
   *  end of the input. */
  private var givenRows: String = _

  /**
   * The stage's step: hand on one pending output row and stop, or else run the child's loop (in a method
   * of its own, so that its own stop returns there). The child's loop pushes every row (`doConsume`); when a
   * push leaves output pending (a batch that emitted early, or passed its rows on), that push hands one on,
   * which stops the loop where it can resume. At the end of the input every group is pending.
   */
  protected override def doProduce(ctx: CodegenContext): String = {
    val aggregation = classOf[GroupedAggregation].getName
    val factory = ctx.addReferenceObj("newAggregation", { val f = taskAggregation(); () => f(GroupedInput.Pushed) },
      "scala.Function0")
    aggregationTerm =
      ctx.addMutableState(aggregation, "aggregation", v => s"$v = ($aggregation) $factory.apply();", forceInline = true)
    val inputDone = ctx.addMutableState(CodeGenerator.JAVA_BOOLEAN, "inputDone")
    val readInputName = ctx.freshName("readInput")
    givenRows = ""
    val childLoop = child.asInstanceOf[CodegenSupport].produce(ctx, this)
    val readInput = ctx.addNewFunction(
      readInputName,
      s"""
         |private void $readInputName() throws java.io.IOException {
         |  $childLoop
         |  $givenRows
         |  $inputDone = true;
         |  $aggregationTerm.endInput();
         |}
       """.stripMargin
    )
    val row = ctx.freshName("groupRow")
    s"""
       |while ($aggregationTerm.hasPending() || !$inputDone) {
       |  if ($aggregationTerm.hasPending()) {
       |    org.apache.spark.sql.catalyst.InternalRow $row = $aggregationTerm.nextPending();
       |    ${consume(ctx, null, row)}
       |  } else {
       |    $readInput();
       |  }
       |  if (shouldStop()) return;
       |}
     """.stripMargin
  }

  /**
   * One input row: its key and gathered fields given as values when the aggregation takes them (no output
   * pending, partial aggregation not skipped) and the setup allows it, else pushed as a row.
   */
  override def doConsume(ctx: CodegenContext, input: Seq[ExprCode], row: ExprCode): String = {
    val agg = aggregationTerm
    // Output left pending hands one row on (unless one is out already), which stops the child's loop.
    def handOnIf(pending: String): String = {
      val out = ctx.freshName("groupRow")
      s"""
         |if ($pending && !shouldStop()) {
         |  org.apache.spark.sql.catalyst.InternalRow $out = $agg.nextPending();
         |  ${consume(ctx, null, out)}
         |}
       """.stripMargin
    }
    def pushed(rowCode: ExprCode): String = s"${rowCode.code}\n${handOnIf(s"$agg.push(${rowCode.value})")}"
    val setup = stagedSetup
    if (!setup.pushesValues) pushed(row)
    else {
      ctx.currentVars = input
      ctx.INPUT_ROW = null
      def computed(e: Expression, call: ExprCode => String): String = {
        val ev = e.genCode(ctx); s"${ev.code}\n${call(ev)}"
      }
      val position = ctx.freshName("position")
      // The room left for rows given as values, and the next one's position (GroupedAggregation.valueRoom).
      val room = ctx.addMutableState(CodeGenerator.JAVA_INT, "valueRoom")
      val next = ctx.addMutableState(CodeGenerator.JAVA_INT, "nextPosition")
      givenRows = s"if ($room > 0) { $agg.valuesGiven($next); $room = 0; }"
      val key = setup.keys.headOption.map(k =>
        computed(
          k,
          ev =>
            if (k.dataType == StringType) s"$agg.keyString($position, ${ev.isNull} ? null : ${ev.value});"
            else {
              // Written in place, as the values are.
              val keys =
                ctx.addMutableState("long[]", "stagedKeys", v => s"$v = $agg.stagedKeys();", forceInline = true)
              val groups =
                ctx.addMutableState("int[]", "stagedGroups", v => s"$v = $agg.stagedGroups();", forceInline = true)
              s"""
                 |if (${ev.isNull}) $groups[$position] = -1;
                 |else { $keys[$position] = ${ev.value}; $groups[$position] = 0; }
               """.stripMargin
            }
        ))
      // A field written in place that is never NULL has its room's validity bits set once, where the room is
      // taken, and none per row.
      val validOnce = setup.readExpressions.indices.filter { j =>
        val e = setup.readExpressions(j)
        !e.nullable && FieldBuilder.pushOf(e.dataType).exists(_.isInstanceOf[FieldBuilder.Push.InPlace])
      }.toSet
      val fields = setup.readExpressions.zipWithIndex.map { case (e, j) =>
        computed(
          e,
          ev =>
            FieldBuilder.pushOf(e.dataType).get match {
              case FieldBuilder.Push.InPlace(javaArray, of) =>
                // The field's arrays live as long as the aggregation: fetched once, written with no call.
                val values = ctx.addMutableState(javaArray, "fieldValues",
                  v => s"$v = ($javaArray) $agg.valuesOf($j);", forceInline = true)
                if (validOnce(j)) s"$values[$position] = ${of(ev.value.toString)};"
                else {
                  val validity = ctx.addMutableState("long[]", "fieldValidity",
                    v => s"$v = $agg.validityOf($j);", forceInline = true)
                  s"""
                     |if ($position == 0) java.util.Arrays.fill($validity, 0L);
                     |if (!${ev.isNull}) {
                     |  $values[$position] = ${of(ev.value.toString)};
                     |  $validity[$position >>> 6] |= 1L << $position;
                     |}
                   """.stripMargin
                }
              case FieldBuilder.Push.Setter("putString") =>
                s"$agg.putString($j, $position, ${ev.isNull} ? null : ${ev.value});"
              case FieldBuilder.Push.Setter(setter) => s"$agg.$setter($j, $position, ${ev.isNull}, ${ev.value});"
            }
        )
      }
      // The input columns are evaluated already (usedInputs): the row only lays them out.
      val inputRow = GenerateUnsafeProjection.createCode(ctx,
        child.output.zipWithIndex.map { case (a, i) => BoundReference(i, a.dataType, a.nullable) })
      s"""
         |if ($room == 0) {
         |  $room = $agg.valueRoom();
         |  $next = $agg.position();
         |  if ($room > 0) { ${validOnce.toSeq.sorted.map(j => s"$agg.validFrom($j, $next);").mkString(" ")} }
         |}
         |if ($room > 0) {
         |  int $position = $next;
         |  ${key.getOrElse(s"$agg.keyless($position);")}
         |  ${fields.mkString("\n")}
         |  $next = $position + 1;
         |  if (--$room == 0) {
         |    ${handOnIf(s"$agg.valuesGiven($next)")}
         |  }
         |} else {
         |  ${pushed(inputRow)}
         |}
       """.stripMargin
    }
  }

  override def simpleString(maxFields: Int): String = {
    val keys = groupingExpressions.map(_.toAttribute.toString).mkString("[", ", ", "]")
    val calls = functions.zip(aggregateExpressions).map { case (f, a) =>
      (if (a.isDistinct) "distinct " else "") + f.toString + (if (f.sparkOwn) " (Spark's)" else "") +
        (if (mode == GroupedMode.Partial && a.mode == PartialMerge) " (merge)" else "")
    }.mkString("[", ", ", "]")
    val batches = if (columnarInput) ", columnar input" else ""
    val packets =
      (if (unpacks.isDefined) ", states in packets" else "") + (if (packs.isDefined) ", states out in packets" else "")
    s"SparkAggGroupedAggregate ${mode.toString.toLowerCase}$batches$packets, keys=$keys, functions=$calls"
  }
  override def verboseString(maxFields: Int): String = simpleString(maxFields)

  override protected def doCanonicalize(): SparkPlan = super.doCanonicalize() match {
    case g: GroupedAggregateExec => g.copy(packs = packs.map(_.canonical), unpacks = unpacks.map(_.canonical))
    case other => other
  }

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

/**
 * A call of a Partial node fused into its child's generated stage. Spark keeps a node out of whole-stage code
 * generation when its expressions hold a CodegenFallback, and every ImperativeAggregate is one. This wrapper
 * shows the planner the call's arguments as its children (so subqueries in them are still planned and run, and
 * plans still compare alike) but not the function, which the node runs through its GroupsAccumulator and
 * never evaluates as an expression.
 */
case class StagedCall(function: AccumulatorAggregate) extends AggregateFunction {
  override def children: Seq[Expression] = function.children
  override def dataType: DataType = function.dataType
  override def nullable: Boolean = function.nullable
  override def aggBufferSchema: StructType = function.aggBufferSchema
  override def aggBufferAttributes: Seq[AttributeReference] = function.aggBufferAttributes
  override def inputAggBufferAttributes: Seq[AttributeReference] = function.inputAggBufferAttributes
  override def prettyName: String = function.prettyName
  override def toString: String = function.toString
  override def eval(input: InternalRow): Any = throw new UnsupportedOperationException(s"$this is not evaluated")
  override protected def doGenCode(ctx: CodegenContext, ev: ExprCode): ExprCode =
    throw new UnsupportedOperationException(s"$this is not evaluated")
  override protected def withNewChildrenInternal(newChildren: IndexedSeq[Expression]): StagedCall =
    StagedCall(function.withNewChildren(newChildren).asInstanceOf[AccumulatorAggregate])
}
