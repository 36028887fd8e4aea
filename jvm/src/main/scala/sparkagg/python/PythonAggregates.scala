package sparkagg.python

import java.io.ByteArrayOutputStream
import java.nio.charset.StandardCharsets.UTF_8

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions._
import org.apache.spark.sql.catalyst.expressions.aggregate.AggregateExpression
import org.apache.spark.sql.catalyst.plans.Inner
import org.apache.spark.sql.catalyst.plans.logical._
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.sparkagg.SparkInternals
import org.apache.spark.sql.types._
import sparkagg.api.SparkAggError

/**
 * The optimizer rule that runs Python aggregates ([[PythonUdafCall]]) in two phases, as
 * `sparkagg.udaf.aggregate` does, inside the plan of any query that calls them:
 *
 * {{{
 *   Project [the query's outputs, each Python call replaced by its result column]
 *   +- Join Inner, keys <=> python keys           (only when the query also has JVM aggregates)
 *      :- Aggregate [keys], [keys, JVM aggregates]
 *      +- MapInArrow final: states merged, evaluated -> (keys, results)
 *         +- RepartitionByExpression [target]   (one partition for a global aggregate)
 *            +- MapInArrow partial: rows -> (target, Arrow IPC stream of keys and states)
 *               +- Project [keys, arguments, FILTER masks, bucket]
 * }}}
 *
 * The Python side (sparkagg/udaf/runner.py) is named in each MapInArrow's command, a pickle this rule
 * writes: `(sparkagg.udaf.runner.<phase>(spec), output schema)`, where the spec (JSON) lists the calls'
 * pickled udafs and the column layout. The rest of the function (the Python to run, its environment) is
 * the session's, as the udaf's registration found it ([[PythonWorkers]]).
 * Over a window (a ROWS frame), the calls slide in the workers as `sparkagg.udaf.window` slides them.
 */
object PythonAggregates extends Rule[LogicalPlan] {
  private val Prefix = "__sparkagg_"
  val PartialGroupsConf = "spark.sparkagg.udaf.partialGroups"

  override def apply(plan: LogicalPlan): LogicalPlan = plan.transformUp {
    case a: Aggregate if a.aggregateExpressions.exists(calls(_).nonEmpty) => rewrite(a)
    case w: Window if w.windowExpressions.exists(calls(_).nonEmpty) => slide(w)
  }

  private def calls(e: Expression): Seq[AggregateExpression] =
    e.collect { case ae @ AggregateExpression(_: PythonUdafCall, _, _, _, _) => ae }

  private def rewrite(a: Aggregate): LogicalPlan = {
    val conf = SQLConf.get
    // Keys as attributes of the child: a grouping expression that is not one is computed below, once.
    val computed = a.groupingExpressions.zipWithIndex.collect {
      case (e, i) if !e.isInstanceOf[Attribute] => i -> Alias(e, s"${Prefix}group$i")()
    }.toMap
    val child = if (computed.isEmpty) a.child else Project(a.child.output ++ computed.values, a.child)
    val keys = a.groupingExpressions.indices.map(i =>
      computed.get(i).map(_.toAttribute).getOrElse(
        a.groupingExpressions(i).asInstanceOf[Attribute]))
    def keyed(e: Expression): Expression = e.transformDown {
      case g if computed.nonEmpty && a.groupingExpressions.exists(_.semanticEquals(g)) =>
        keys(a.groupingExpressions.indexWhere(_.semanticEquals(g)))
    }
    val outputs = a.aggregateExpressions.map(keyed(_).asInstanceOf[NamedExpression])

    val python = outputs.flatMap(calls).foldLeft(Seq.empty[AggregateExpression]) { (seen, ae) =>
      if (seen.exists(_.semanticEquals(ae))) seen else seen :+ ae
    }
    val jvm = outputs.flatMap(
      _.collect {
        case ae: AggregateExpression if !ae.aggregateFunction.isInstanceOf[PythonUdafCall] => ae
      }).foldLeft(Seq.empty[AggregateExpression]) { (seen, ae) =>
      if (seen.exists(_.semanticEquals(ae))) seen else seen :+ ae
    }

    // The calls without DISTINCT in one pair of phases; each DISTINCT call in its own, over its rows
    // deduplicated by Spark first; the pairs' results joined by key.
    val (distinct, plain) = python.partition(_.isDistinct)
    val branches = (if (plain.isEmpty) Nil else Seq(plain -> twoPhases(plain, keys, child, conf))) ++
      distinct.map(ae => Seq(ae) -> deduplicated(ae, keys, child, conf))
    val results = branches.flatMap { case (aes, plan) =>
      aes.zip(plan.output.drop(keys.length)).map { case (ae, r) => ae -> (r: Expression) }
    }
    val pythonKeys = branches.head._2.output.take(keys.length)
    val finals = branches.map(_._2).reduce { (left, right) =>
      val on = pythonKeys.zip(right.output.take(keys.length)).map { case (l, r) => EqualNullSafe(l, r): Expression }
      Join(left, right, Inner, on.reduceOption(And), JoinHint.NONE)
    }
    val (below, keyOf, jvmResults) =
      if (jvm.isEmpty) (finals, keys.zip(pythonKeys).toMap[Expression, Expression], Nil)
      else {
        val named = jvm.zipWithIndex.map { case (ae, i) => Alias(ae, s"${Prefix}jvm$i")() }
        val grouped = a.copy(groupingExpressions = keys, aggregateExpressions = keys ++ named, child = child)
        val on = keys.zip(pythonKeys).map { case (k, p) => EqualNullSafe(normal(k), p): Expression }
        (Join(grouped, finals, Inner, on.reduceOption(And), JoinHint.NONE), Map.empty[Expression, Expression],
          jvm.zip(named.map(_.toAttribute)))
      }
    def replaced(e: Expression): Expression = e.transformDown {
      case ae: AggregateExpression if results.exists(_._1.semanticEquals(ae)) =>
        results.find(_._1.semanticEquals(ae)).get._2
      case ae: AggregateExpression if jvmResults.exists(_._1.semanticEquals(ae)) =>
        jvmResults.find(_._1.semanticEquals(ae)).get._2
      case k: Attribute if keyOf.contains(k) => keyOf(k)
    }
    Project(
      outputs.map {
        case k: Attribute if keyOf.contains(k) => Alias(keyOf(k), k.name)(exprId = k.exprId, qualifier = k.qualifier)
        case ne => replaced(ne).asInstanceOf[NamedExpression]
      },
      below
    )
  }

  /** A DISTINCT call's phases over the distinct (keys, arguments) of the rows its FILTER keeps. */
  private def deduplicated(ae: AggregateExpression, keys: Seq[Attribute], child: LogicalPlan,
      conf: SQLConf): LogicalPlan = {
    val call = ae.aggregateFunction.asInstanceOf[PythonUdafCall]
    val arguments = call.children.zipWithIndex.map { case (arg, j) => Alias(arg, s"${Prefix}distinct$j")() }
    val kept = ae.filter.map(Filter(_, child)).getOrElse(child)
    val rows = Aggregate(keys ++ arguments.map(_.child), keys ++ arguments, kept)
    val once = ae.copy(aggregateFunction = call.copy(children = arguments.map(_.toAttribute)), isDistinct = false,
      filter = None)
    twoPhases(Seq(once), keys, rows, conf)
  }

  /** -0.0 as 0.0: the Python workers group and bucket keys by their bits. */
  private def normal(key: Expression): Expression = key.dataType match {
    case FloatType | DoubleType => Add(key, Cast(Literal(0.0), key.dataType))
    case _ => key
  }

  /** The calls' partial and final phases in the Python workers: one row per group, its keys and results. */
  private def twoPhases(python: Seq[AggregateExpression], keys: Seq[Attribute], child: LogicalPlan,
      conf: SQLConf): LogicalPlan = {
    val udafs = python.map(_.aggregateFunction.asInstanceOf[PythonUdafCall])
    val keyColumns = keys.zipWithIndex.map { case (k, i) => Alias(normal(k), s"${Prefix}k$i")() }
    val arguments = udafs.zipWithIndex.flatMap { case (u, c) =>
      u.arguments.zipWithIndex.map { case (arg, j) => Alias(arg, s"${Prefix}a${c}_$j")() }
    }
    val masks = python.zipWithIndex.collect {
      case (ae, c) if ae.filter.isDefined =>
        c -> Alias(ae.filter.get, s"${Prefix}f$c")()
    }
    val partitions = if (keys.isEmpty) 1 else conf.numShufflePartitions
    // Keys that are all numbers, dates or timestamps are bucketed in numpy; others by Spark's hash, here.
    val bucket =
      if (keys.isEmpty || keys.forall(k => bucketedInPython(k.dataType))) None
      else Some(Alias(Pmod(new Murmur3Hash(keyColumns.map(_.child)), Literal(partitions)), s"${Prefix}bucket")())
    val staged = keyColumns ++ arguments ++ bucket ++ masks.map(_._2)
    val rows =
      if (keys.nonEmpty) Project(staged, child)
      else {
        // A global aggregate has its row even for empty input, and Spark may not start a Python worker for
        // an empty partition: one marked extra row gives the final phase a state to start from.
        val marked = Project(staged :+ Alias(Literal(true), s"${Prefix}row")(), child)
        val extra =
          LocalRelation(marked.output.map(_.newInstance()), Seq(InternalRow.fromSeq(staged.map(_ => null) :+ false)))
        Union(marked, extra)
      }
    val layout = Seq(
      "keys" -> keys.length.toString,
      "widths" -> udafs.map(_.arguments.length).mkString("[", ",", "]"),
      "udafs" -> udafs.map(u => quoted(u.udaf.payload)).mkString("[", ",", "]"),
      "partitions" -> partitions.toString,
      "bucket" -> bucket.map(_ => (keys.length + arguments.length).toString).getOrElse("null"),
      "filters" -> python.indices.map { c =>
        val at = masks.indexWhere(_._1 == c)
        if (at < 0) "null" else (keyColumns.length + arguments.length + bucket.size + at).toString
      }.mkString("[", ",", "]"),
      "max_groups" -> conf.getConfString(PartialGroupsConf, (1 << 20).toString)
    )
    val states = Seq(AttributeReference(s"${Prefix}target", IntegerType)(),
      AttributeReference(s"${Prefix}states", BinaryType)())
    val partial = mapInArrow(udafs.head.udaf, "partial", layout, states, rows)
    val shuffled =
      if (keys.isEmpty) Repartition(1, shuffle = true, partial)
      else RepartitionByExpression(Seq(states.head), partial, None)
    val output = keys.zipWithIndex.map { case (k, i) => AttributeReference(s"${Prefix}k$i", k.dataType)() } ++
      udafs.zipWithIndex.map { case (u, c) => AttributeReference(s"${Prefix}r$c", u.dataType)() }
    mapInArrow(udafs.head.udaf, "final", layout :+ ("names" -> output.map(o => quoted(o.name)).mkString("[", ",", "]")),
      output, shuffled)
  }

  /**
   * A Window node's Python calls, each frame's in a step of its own: the rows shuffled by the partition keys,
   * sorted by them and the order keys, and a MapInArrow (`runner.window`) that hands each row on with the
   * calls' results. The node's JVM window functions, if any, then run over that as a Window of their own.
   */
  private def slide(w: Window): LogicalPlan = {
    val (python, jvm) = w.windowExpressions.partition(calls(_).nonEmpty)
    val framed = python.map {
      case named @ Alias(WindowExpression(ae: AggregateExpression, spec), _) if ae.filter.isEmpty && !ae.isDistinct =>
        (named, ae.aggregateFunction.asInstanceOf[PythonUdafCall], rows(ae.aggregateFunction.prettyName, spec))
      case named => throw SparkAggError.unsupported(s"${calls(named).head.aggregateFunction.prettyName}: over a " +
          "window a Python aggregate takes neither DISTINCT nor FILTER")
    }
    val original = w.child.output
    val (stepped, current, results) = framed.groupBy(_._3).toSeq.sortBy(_._1.toString)
      .foldLeft((w.child, original, Seq.empty[(NamedExpression, Attribute)])) {
        case ((plan, current, done), (bounds, group)) =>
          val now = AttributeMap(original.zip(current))
          def rebound(e: Expression): Expression = e.transform { case a: Attribute if now.contains(a) => now(a) }
          val keys = w.partitionSpec.map(rebound).zipWithIndex.map { case (k, i) =>
            Alias(normal(k), s"${Prefix}p$i")()
          }
          val arguments = group.zipWithIndex.flatMap { case ((_, call, _), c) =>
            call.arguments.zipWithIndex.map { case (arg, j) => Alias(rebound(arg), s"${Prefix}a${c}_$j")() }
          }
          val staged = Project(plan.output ++ keys ++ arguments, plan)
          val shuffled =
            if (keys.isEmpty) Repartition(1, shuffle = true, staged)
            else RepartitionByExpression(keys.map(_.toAttribute), staged, None)
          val order = keys.map(k => SortOrder(k.toAttribute, Ascending)) ++
            w.orderSpec.map(o => o.copy(child = rebound(o.child)))
          val sorted = Sort(order, false, shuffled)
          val kept = plan.output.map(_.newInstance())
          val made = group.zipWithIndex.map { case ((named, call, _), c) =>
            named -> AttributeReference(s"${Prefix}w$c", call.dataType)()
          }
          val output = kept ++ made.map(_._2)
          val layout = Seq(
            "keep" -> plan.output.length.toString,
            "keys" -> keys.length.toString,
            "widths" -> group.map(_._2.arguments.length).mkString("[", ",", "]"),
            "udafs" -> group.map(g => quoted(g._2.udaf.payload)).mkString("[", ",", "]"),
            "rows" -> bounds.map(_.map(_.toString).getOrElse("null")).mkString("[", ",", "]"),
            "names" -> output.map(o => quoted(o.name)).mkString("[", ",", "]")
          )
          val step = mapInArrow(group.head._2.udaf, "window", layout, output, sorted)
          val carried = AttributeMap(plan.output.zip(kept))
          (step, current.map(carried), done.map { case (n, a) => n -> carried(a) } ++ made)
      }
    val restored = Project(
      original.zip(current).map { case (o, c) => Alias(c, o.name)(exprId = o.exprId) } ++
        results.map { case (named, r) => Alias(r, named.name)(exprId = named.exprId) },
      stepped
    )
    val withJvm = if (jvm.isEmpty) restored else w.copy(windowExpressions = jvm, child = restored)
    Project(w.output, withJvm)
  }

  /** A ROWS frame as offsets from the current row (None: unbounded), as `sparkagg.udaf.window` takes it. */
  private def rows(name: String, spec: WindowSpecDefinition): Seq[Option[Int]] = spec.frameSpecification match {
    case SpecifiedWindowFrame(frame, lower, upper)
        if frame == RowFrame || (lower == UnboundedPreceding &&
          upper == UnboundedFollowing) =>
      Seq(lower, upper).map {
        case UnboundedPreceding | UnboundedFollowing => None
        case CurrentRow => Some(0)
        case offset => Some(offset.eval().asInstanceOf[Number].intValue)
      }
    case frame => throw SparkAggError.unsupported(s"$name: over a window a Python aggregate takes a ROWS frame " +
        s"(ROWS BETWEEN ..., or rowsBetween in PySpark), not ${frame.sql}")
  }

  private def bucketedInPython(t: DataType): Boolean = t match {
    case ByteType | ShortType | IntegerType | LongType | FloatType | DoubleType | BooleanType | DateType |
        TimestampType => true
    case _ => false
  }

  private def quoted(text: String): String = "\"" + text.replace("\\", "\\\\").replace("\"", "\\\"") + "\""

  /** A step running `sparkagg.udaf.runner.<phase>` over `child`, in the workers the udafs' registration gave. */
  private def mapInArrow(udaf: PythonUdaf, phase: String, layout: Seq[(String, String)], output: Seq[Attribute],
      child: LogicalPlan): LogicalPlan = {
    val spec = layout.map { case (k, v) => s""""$k":$v""" }.mkString("{", ",", "}")
    val schema = StructType(output.map(a => StructField(a.name, a.dataType, nullable = true)))
    udaf.workers.step(s"sparkagg ${udaf.name} $phase", command(phase, spec, schema), schema, output, child)
  }

  /** The pickle the Python worker loads as its function: `(runner.<phase>(spec), schema)`, protocol 2. */
  private def command(phase: String, spec: String, schema: StructType): Array[Byte] = {
    val out = new ByteArrayOutputStream
    def global(module: String, name: String): Unit = out.write(s"c$module\n$name\n".getBytes(UTF_8))
    def text(value: String): Unit = {
      val bytes = value.getBytes(UTF_8)
      out.write('X')
      (0 until 4).foreach(i => out.write(bytes.length >>> (8 * i)))
      out.write(bytes)
    }
    def call(module: String, name: String, argument: String): Unit = {
      global(module, name)
      text(argument)
      out.write(0x85) // TUPLE1
      out.write('R') // REDUCE: module.name(argument)
    }
    out.write(0x80)
    out.write(2)
    call("sparkagg.udaf.runner", phase, spec)
    call("pyspark.sql.types", "_parse_datatype_json_string", schema.json)
    out.write(0x86) // TUPLE2
    out.write('.')
    out.toByteArray
  }
}
