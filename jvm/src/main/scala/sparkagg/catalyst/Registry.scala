package sparkagg.catalyst

import org.apache.spark.sql.catalyst.FunctionIdentifier
import org.apache.spark.sql.catalyst.expressions.{Expression, ExpressionInfo}
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.sparkagg.SparkInternals
import sparkagg.api.{BindContext, FunctionDef, FunctionDoc, WithinGroup}

/**
 * Builds the SQL functions: for each function its name and aliases, and its state-as-data forms
 * (`_state`, `_merge`, `_merge_state`, `_finalize`), each with DESCRIBE FUNCTION documentation and an
 * expression builder.
 */
object Registry {
  type Entry = (FunctionIdentifier, ExpressionInfo, Seq[Expression] => Expression)

  /** Every function of `functions`, its aliases and its state forms, under `prefix`. */
  def entries(functions: Seq[FunctionDef], prefix: String): Seq[Entry] =
    functions.flatMap(f => forms(f, prefix + f.name) ++ f.aliases.map(a => entry(f, prefix + a, Form.Plain)))

  /** A function under `name`, with its state forms `name_state`, `name_merge`, ... */
  def forms(function: FunctionDef, name: String): Seq[Entry] =
    (Form.aggregates :+ Form.Finalize).map(form => entry(function, name + form.suffix, form))

  def entry(function: FunctionDef, sqlName: String, form: Form): Entry = {
    val builder = (children: Seq[Expression]) => {
      val ctx = BindContext(SQLConf.get.ansiEnabled)
      form match {
        case Form.Finalize if children.nonEmpty => FinalizeState(function, sqlName, children, ctx)
        case Form.Finalize => throw SparkInternals.wrongNumberOfArguments(sqlName, 1, children.size)
        case _ => AccumulatorAggregate(function, sqlName, children, ctx, form)
      }
    }
    val base = sqlName.stripSuffix(form.suffix)
    (FunctionIdentifier(sqlName), info(function, sqlName, docOf(function, base, form), signatureOf(function, form)),
      builder)
  }

  private def signatureOf(function: FunctionDef, form: Form): String = form match {
    case Form.Plain => function.signature
    case Form.State => function.signature.replaceAll("-> .*$", "-> state struct")
    case Form.MergeState => "(state struct) -> state struct"
    case _ => "(state struct) -> the result type of the function"
  }

  /** The documentation of a form, its examples derived from the function's own, with their results. */
  private def docOf(function: FunctionDef, base: String, form: Form): FunctionDoc = {
    val doc = function.doc
    val stateOf = s"${base}${Form.State.suffix}"
    val finalize = s"${base}${Form.Finalize.suffix}"
    // An example's call, with its WITHIN GROUP clause if any, and the rest of its query.
    val Example = """SELECT _FUNC_\((.+?)\)((?: WITHIN GROUP \(ORDER BY [^)]+\))?) FROM (.+)""".r
    // Constant arguments (string_agg's delimiter; every argument of a function whose WITHIN GROUP key is
    // its value) are parameters, given to every form again.
    def parameters(args: String, within: String): String =
      if (within.nonEmpty && function.withinGroup.isInstanceOf[WithinGroup.KeyAsValue]) ", " + args
      else
        args.split(", ").drop(1).filter(a => a.startsWith("'") || a.headOption.exists(_.isDigit)).map(", " + _).mkString
    def derived(make: (String => String, String, String) => String): Seq[(String, String)] =
      doc.examples.collectFirst {
        case (Example(args, within, rest), result) if args != "*" =>
          make(name => s"$name($args)$within", rest, parameters(args, within)) -> result
      }.toSeq
    form match {
      case Form.Plain => doc
      case Form.State => FunctionDoc(
          s"_FUNC_(${argsOf(doc)}) - The state of $base over the rows, as a struct of its state fields, " +
            s"to store and merge later with ${base}_merge.",
          doc.arguments,
          derived((call, rest, p) => s"SELECT $finalize(${call("_FUNC_")}$p) FROM $rest")
        )
      case Form.Merge => FunctionDoc(
          s"_FUNC_(state) - Merges states made by $stateOf and returns the value of $base.",
          Seq("state" -> s"a struct as $stateOf returns it"),
          derived((call, rest, p) => s"SELECT _FUNC_(s$p) FROM (SELECT ${call(stateOf)} AS s FROM $rest)")
        )
      case Form.MergeState => FunctionDoc(
          s"_FUNC_(state) - Merges states made by $stateOf into one state (rollups of rollups).",
          Seq("state" -> s"a struct as $stateOf returns it"),
          derived((call, rest, p) => s"SELECT $finalize(_FUNC_(s$p)$p) FROM (SELECT ${call(stateOf)} AS s FROM $rest)")
        )
      case Form.Finalize => FunctionDoc(
          s"_FUNC_(state) - The value of $base for one state made by $stateOf; NULL for a NULL state.",
          Seq("state" -> s"a struct as $stateOf returns it"),
          derived((call, rest, p) => s"SELECT _FUNC_(${call(stateOf)}$p) FROM $rest")
        )
    }
  }

  private def argsOf(doc: FunctionDoc): String = doc.arguments.map(_._1).mkString(", ")

  def info(function: FunctionDef, sqlName: String, doc: FunctionDoc, signature: String): ExpressionInfo = {
    val arguments =
      if (doc.arguments.isEmpty) ""
      else doc.arguments.map { case (n, d) => s"      * $n - $d\n" }.mkString("\n    Arguments:\n", "", "  ")
    val examples =
      if (doc.examples.isEmpty) ""
      else doc.examples.map { case (q, r) => s"      > $q;\n       $r\n" }.mkString("\n    Examples:\n", "", "  ")
    val note = if (doc.note.isEmpty) "" else s"\n    ${doc.note}\n  "
    new ExpressionInfo(function.getClass.getName.stripSuffix("$"), null, sqlName,
      doc.usage + s" Signature: _FUNC_$signature.", arguments, examples, note,
      "agg_funcs", "", "", "")
  }
}
