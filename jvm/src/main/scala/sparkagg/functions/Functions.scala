package sparkagg.functions

import sparkagg.api.FunctionDef

/**
 * A family of functions: the file of functions/ that defines them (`name`, without ".scala"), and the
 * title of its page in the function reference.
 */
final case class Family(name: String, title: String, functions: Seq[FunctionDef])

/** Every function sparkagg registers, by family: the catalogue (jvm/src/main/catalogue.txt), which the build
 *  writes as `Catalogued`; each family's file defines its own. */
object Functions {
  val families: Seq[Family] = Catalogued.families

  val all: Seq[FunctionDef] = families.flatMap(_.functions)

  def byName(name: String): Option[FunctionDef] =
    all.find(f => f.name == name || f.aliases.contains(name))
}
