package sparkagg.functions

import sparkagg.api.FunctionDef

/** Every function sparkagg registers, in one place; each family's file defines its own. */
object Functions {
  val all: Seq[FunctionDef] = Seq(Count, Sum, Avg, Min, Max)

  def byName(name: String): Option[FunctionDef] =
    all.find(f => f.name == name || f.aliases.contains(name))
}
