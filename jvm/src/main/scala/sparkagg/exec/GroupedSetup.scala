package sparkagg.exec

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions._
import org.apache.spark.sql.types.{DataType, StringType}
import sparkagg.api.Column
import sparkagg.catalyst.{AccumulatorAggregate, Call}

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
    val merges: Seq[Boolean],
    val sortedInput: Boolean) {

  val keys: Seq[Expression] = groupingExpressions.map(BindReferences.bindReference(_: Expression, input))
  val keyTypes: Seq[DataType] = groupingExpressions.map(_.dataType)
  val hasKeys: Boolean = keys.nonEmpty
  def keyProjection(): UnsafeProjection = UnsafeProjection.create(keys)

  val calls: Seq[Call] = functions.map(_.call)
  /** What each function's partial half hands its final half ([[Call.exchangedFields]]). */
  val stateTypes: Seq[Seq[DataType]] = calls.map(_.exchangedFields.map(_.dataType))
  /** The state forms: `_merge` and `_merge_state` read states from their rows, `_state` and `_merge_state`
   *  return the state (a struct of the state schema) instead of the value. */
  val statesIn: Seq[Boolean] = functions.map(_.form.statesIn)
  val stateOut: Seq[Boolean] = functions.map(_.form.stateOut)
  val returnTypes: Seq[DataType] =
    calls.zip(stateOut).map { case (c, state) => if (state) c.bound.stateSchema else c.bound.returnType }
  /** Whether the node's rows out are keys and states (every stage but the last). */
  val emitsStates: Boolean = mode != GroupedMode.Final
  /** How function `j` takes its input: merging exchanged states, merging states a user gave, or updating. */
  def updates(j: Int): Boolean = !merges(j) && !statesIn(j)

  /** What each function reads from an input row: its exchanged states, the fields of a state it was given,
   *  or its (cast) arguments; then its filter. Plain columns of the right type are read in place, else every
   *  value is projected first. */
  private val (valueExpressions, argumentColumns, filterColumns) = {
    val sizes = stateTypes.map(_.size)
    val offsets = sizes.scanLeft(0)(_ + _)
    val perFunction: Seq[Seq[Expression]] = functions.indices.map { j =>
      val f = functions(j)
      val read =
        if (merges(j)) stateAttributes.slice(offsets(j), offsets(j) + sizes(j))
        else if (f.form.statesIn) stateFields(f)
        else f.call.castArguments(f.children)
      read.map(BindReferences.bindReference(_: Expression, input))
    }
    // FILTER applies to rows; exchanged states passed it already. A state form's NULL states are passed
    // over, as the row host passes them over.
    val boundFilters = functions.indices.map { j =>
      if (merges(j)) None
      else if (functions(j).form.statesIn)
        Some(filters(j).foldLeft(IsNotNull(functions(j).children.head): Expression)(And(_, _)))
      else filters(j)
    }.map(_.map(BindReferences.bindReference(_, input)))
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

  /** A state form's input: the fields of its state argument, each as the state schema types it. */
  private def stateFields(f: AccumulatorAggregate): Seq[Expression] =
    f.call.bound.stateSchema.fields.toSeq.zipWithIndex.map { case (field, i) =>
      val read = GetStructField(f.children.head, i)
      if (read.dataType == field.dataType) read else Cast(read, field.dataType)
    }

  /** Constant arguments and filters (a percentile, a separator), evaluated once instead of per row. */
  private val constants: Map[Int, Any] =
    valueExpressions.zipWithIndex.collect { case (e, i) if e.foldable => i -> e.eval() }.toMap
  /** What is gathered from each row into the batch's columns, in the order of [[valueFields]]. */
  val readExpressions: Seq[Expression] =
    valueExpressions.zipWithIndex.filterNot { case (_, i) => constants.contains(i) }.map(_._1)

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
      Array.tabulate(valueExpressions.size)(i =>
        constants.get(i) match {
          case Some(value) => new ConstantColumn(value, numRows)
          case None => fromRows.next()
        })
    }

  /** The value columns function `j` reads, and the column of its filter (-1: none). */
  def columnsOf(j: Int): Array[Int] = argumentColumns(j)
  def filterOf(j: Int): Int = filterColumns(j)

  /** The hash table for this node's keys: none, one integer-like column read in place, integer-like columns
   *  packed into two words (PackedKeyMap.layout), or any (integer-like, boolean and string columns written to the
   *  table's key rows without a projection). */
  def newGroupMap(): GroupMap =
    if (keys.isEmpty) new SingleGroup
    else if (sortedInput) new SortedKeyGroups(keyProjection())
    else if (oneLongKey.isDefined) new LongKeyMap(oneLongKey.get.ordinal, oneLongKey.get.dataType)
    else if (fieldKeys.nonEmpty && PackedKeyMap.layout(fieldKeys.map(_._2)).isDefined) new PackedKeyMap(fieldKeys)
    else new RowKeyMap(keyProjection(), keys.size, fieldKeys)

  /** The keys' fields when each can be written without a projection ([[RowKeyMap.fieldKeyable]]), else none. */
  private def fieldKeys: Seq[(Int, DataType)] = {
    val fields = keys.collect { case b: BoundReference => (b.ordinal, b.dataType) }
    if (fields.size == keys.size && RowKeyMap.fieldKeyable(fields.map(_._2))) fields else Nil
  }

  /** Whether generated code can push each row's key and gathered fields as values ([[GroupedAggregation.valueRoom]]):
   *  a table of no key, one integer-like or one string key, and fields of types a builder takes as values. */
  val pushesValues: Boolean = !sortedInput && (keys.isEmpty || oneLongKey.isDefined || oneStringKey.isDefined) &&
    readExpressions.forall(e => FieldBuilder.pushOf(e.dataType).isDefined)

  private def oneLongKey: Option[BoundReference] = keys match {
    case Seq(b: BoundReference) if LongKeyMap.supports(b.dataType) => Some(b)
    case _ => None
  }
  // UTF8_BINARY only: a collated string's grouping key is its collation key, which Spark computes.
  private def oneStringKey: Option[BoundReference] = keys match {
    case Seq(b: BoundReference) if b.dataType == StringType => Some(b)
    case _ => None
  }

  /** Whether the output rows are the keys and then the emitted columns as they are: a node's states, or a
   *  Final node's results when each result expression is a key or a result, in that order, maybe renamed. */
  val rowsAsEmitted: Boolean = emitsStates || {
    val emitted = groupingExpressions.map(_.toAttribute) ++ resultAttributes
    resultExpressions.size == emitted.size && resultExpressions.zip(emitted).forall {
      case (a: Attribute, e) => a.exprId == e.exprId
      case (Alias(a: Attribute, _), e) => a.exprId == e.exprId
      case _ => false
    }
  }

  /** Output rows from a group's key joined with its values (states, or the results of a Final node). */
  def outputProjection(): UnsafeProjection =
    if (emitsStates) UnsafeProjection.create((keyTypes ++ stateTypes.flatten).toArray)
    else UnsafeProjection.create(resultExpressions, groupingExpressions.map(_.toAttribute) ++ resultAttributes)
}
