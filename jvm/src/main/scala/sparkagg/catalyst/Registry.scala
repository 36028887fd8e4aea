package sparkagg.catalyst

import org.apache.spark.sql.catalyst.FunctionIdentifier
import org.apache.spark.sql.catalyst.expressions.{Expression, ExpressionInfo}
import org.apache.spark.sql.internal.SQLConf
import sparkagg.api.{BindContext, FunctionDef}
import sparkagg.functions.Functions

/** Builds the SQL functions: a name, its DESCRIBE FUNCTION documentation, and an expression builder. */
object Registry {
  type Entry = (FunctionIdentifier, ExpressionInfo, Seq[Expression] => Expression)

  /** Every built-in sparkagg function and alias under `prefix`. */
  def entries(prefix: String): Seq[Entry] =
    Functions.all.flatMap(f => (f.name +: f.aliases).map(n => entry(f, prefix + n)))

  def entry(function: FunctionDef, sqlName: String): Entry = {
    val builder = (children: Seq[Expression]) =>
      AccumulatorAggregate(function, sqlName, children, BindContext(SQLConf.get.ansiEnabled))
    (FunctionIdentifier(sqlName), info(function, sqlName), builder)
  }

  def info(function: FunctionDef, sqlName: String): ExpressionInfo = {
    val doc = function.doc
    val arguments =
      if (doc.arguments.isEmpty) ""
      else doc.arguments.map { case (n, d) => s"      * $n - $d\n" }.mkString("\n    Arguments:\n", "", "  ")
    val examples =
      if (doc.examples.isEmpty) ""
      else doc.examples.map { case (q, r) => s"      > $q;\n       $r\n" }.mkString("\n    Examples:\n", "", "  ")
    val note = if (doc.note.isEmpty) "" else s"\n    ${doc.note}\n  "
    new ExpressionInfo(function.getClass.getName.stripSuffix("$"), null, sqlName,
      doc.usage + s" Signature: _FUNC_${function.signature}.", arguments, examples, note,
      "agg_funcs", "", "", "")
  }
}
