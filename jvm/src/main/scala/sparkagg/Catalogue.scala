package sparkagg

import scala.util.Try

import com.fasterxml.jackson.databind.ObjectMapper

import org.apache.spark.sql.types._
import org.apache.spark.unsafe.types.UTF8String
import sparkagg.api._
import sparkagg.compat.CollectionConverters._
import sparkagg.functions.Functions
import sparkagg.udf.FinalizeClasses

/**
 * What each built-in function is, as its implementation says: name, aliases, signature, whether a
 * sliding window retracts it, whether the vectorised grouped path runs it. `sparkagg functions` prints
 * it, `make docs` writes the function reference from it, and a test holds the README's function table to it.
 *
 * Retract is read from the accumulators themselves: the function is bound to every argument list of
 * up to four arguments drawn from a few representative types (each argument also a constant, for the
 * parameters: p, n, delimiter, ignore_nulls, ...), with an ordering key added for the functions that
 * take `WITHIN GROUP (ORDER BY ...)` keys, and each binding's accumulators are asked.
 *  - "yes": the accumulator retracts;
 *  - "sliding variant": only the accumulator made for sliding frames does (min / max's monotonic queue);
 *  - "no": neither (a sliding window slides it on two stacks of states instead);
 *  - several of these when the answer depends on the arguments, each naming the argument lists that give it.
 *
 * Grouped path, read the same way from the bindings: "native" when the function has its own
 * GroupsAccumulator (primitive arrays indexed by group), which exec/'s grouped operator runs; "Spark's
 * path" when it has none, and a query calling it keeps the TypedImperativeAggregate path.
 */
object Catalogue {
  final case class Row(name: String, aliases: Seq[String], signature: String, retract: String, grouped: String,
      withinGroup: String)

  private val types: Seq[(DataType, Any)] = Seq(
    DoubleType -> 0.5,
    LongType -> 2L,
    IntegerType -> 2,
    StringType -> UTF8String.fromString(","),
    BooleanType -> false,
    DecimalType(10, 2) -> Decimal(BigDecimal("0.50"))
  )

  private val key = Arg(LongType, nullable = true, sortKey = Some(SortKey(descending = false, nullsFirst = false)))

  /** Argument lists of up to `max` arguments, each argument either a column or a constant of its type. */
  private def candidates(max: Int): Seq[Seq[Arg]] = {
    val one = types.flatMap { case (t, v) => Seq(Arg(t, nullable = true), Arg(t, nullable = false, Some(v))) }
    (0 to max).flatMap(n =>
      Seq.fill(n)(one).foldLeft(Seq(Seq.empty[Arg]))((acc, next) => for (a <- acc; b <- next) yield a :+ b))
  }
  private lazy val argumentLists: Seq[Seq[Arg]] = candidates(3)

  private val ctx = BindContext(failOnOverflow = true)

  /** The retract answer of one binding. */
  private def retractOf(b: Bound): String =
    if (b.newAccumulator().supportsRetract) "yes"
    else if (b.newSlidingAccumulator.exists(_().supportsRetract)) "sliding variant"
    else "no"

  /** The grouped-path answer of one binding. */
  private def groupedOf(b: Bound): String = if (b.newGroupsAccumulator.isDefined) "native" else "Spark's path"

  private def nameOf(a: Arg): String = a.dataType.simpleString + (if (a.sortKey.isDefined) " (order key)" else "")

  /** Whether argument lists (of type names, all one length) are every combination of their types per argument. */
  private def isProduct(lists: Seq[Seq[String]]): Boolean =
    lists.size == lists.head.indices.map(i => lists.map(_(i)).distinct.size).product

  def row(f: FunctionDef): Row = {
    val lists = f.withinGroup match {
      case WithinGroup.OrderedBy => argumentLists ++ argumentLists.map(_ :+ key)
      case _ => argumentLists
    }
    def answer(of: Bound => String): String = {
      val answers = lists.flatMap(args =>
        Try(f.bind(args, ctx)).toOption.flatMap(_.toOption)
          .flatMap(b => Try(of(b)).toOption).map(_ -> args))
      // One answer without ordering keys and another with them: said as such, not type by type.
      val byOrdering = answers.groupBy(_._2.exists(_.sortKey.isDefined)).map { case (k, v) =>
        k -> v.map(_._1).distinct
      }
      answers.map(_._1).distinct match {
        case Seq() => "unknown (no argument list tried binds)"
        case Seq(one) => one
        case Seq(_, _) if byOrdering.size == 2 && byOrdering.values.forall(_.size == 1) =>
          s"${byOrdering(false).head}; ${byOrdering(true).head} with WITHIN GROUP"
        case many =>
          // Each answer with the shortest argument lists of columns (no constants) that give it.
          val said = many.map { one =>
            val giving = answers.collect { case (`one`, args) => args }
            val plain = giving.filter(_.forall(_.constant.isEmpty))
            val shortest = if (plain.isEmpty) giving.take(1) else plain.filter(_.size == plain.map(_.size).min)
            one -> shortest.map(_.map(nameOf)).distinct
          }
          // Two answers, one for every combination of some types per argument (max_by's primitives):
          // that one as "(a/b, a/b)", the other as "otherwise".
          val crossed = said.collectFirst {
            case (one, lists) if many.size == 2 && lists.head.size >= 2 && isProduct(lists) => one -> lists
          }
          crossed match {
            case Some((one, lists)) =>
              val perArgument = lists.head.indices.map(i => lists.map(_(i)).distinct.mkString("/"))
              s"$one for ${perArgument.mkString("(", ", ", ")")}; ${many.filterNot(_ == one).head} otherwise"
            case None =>
              said.map { case (one, lists) => s"$one for ${lists.map(_.mkString("(", ", ", ")")).mkString(", ")}" }
                .mkString("; ")
          }
      }
    }
    val within = f.withinGroup match {
      case WithinGroup.Refused => "no"
      case WithinGroup.KeyAsValue(true) => "required"
      case WithinGroup.KeyAsValue(false) => "optional"
      case WithinGroup.OrderedBy => "ordering keys"
    }
    Row(f.name, f.aliases, f.signature, answer(retractOf), answer(groupedOf), within)
  }

  lazy val rows: Seq[Row] = Functions.all.map(row)

  /**
   * The catalogue as JSON for py4j (`sparkagg functions`, the function reference `make docs` writes, the
   * README's tests): one object per function, family by family in [[Functions.all]]'s order, with its row
   * (name, aliases, signature, retract, grouped, within_group), its family (family, family_title) and its
   * [[FunctionDoc]] (usage, arguments and examples as [name or query, text] pairs, note, accepts, result,
   * empty_input, datafusion, nan, spark) and its finalize class for registerJavaFunction (finalize_class, null
   * where it has none; finalize_result, the type the class declares, null where the result follows the state).
   */
  def json(): String = {
    val rowOf = Functions.all.zip(rows).toMap
    val finalizeOf = FinalizeClasses.all.map(c => c.function -> c).toMap
    def pairs(of: Seq[(String, String)]) = of.map { case (a, b) => Seq(a, b).asJava }.asJava
    val entries = for (family <- Functions.families; f <- family.functions) yield {
      val (r, doc) = (rowOf(f), f.doc)
      Map[String, AnyRef](
        "name" -> r.name,
        "aliases" -> r.aliases.asJava,
        "signature" -> r.signature,
        "retract" -> r.retract,
        "grouped" -> r.grouped,
        "within_group" -> r.withinGroup,
        "family" -> family.name,
        "family_title" -> family.title,
        "usage" -> doc.usage,
        "arguments" -> pairs(doc.arguments),
        "examples" -> pairs(doc.examples),
        "note" -> doc.note,
        "accepts" -> doc.accepts,
        "result" -> doc.result,
        "empty_input" -> doc.emptyInput,
        "datafusion" -> doc.dataFusion,
        "nan" -> doc.nan,
        "spark" -> doc.spark,
        "finalize_class" -> finalizeOf.get(f).map(_.className).orNull,
        "finalize_result" -> finalizeOf.get(f).flatMap(_.declaredResult).orNull
      ).asJava
    }
    new ObjectMapper().writeValueAsString(entries.asJava)
  }
}
