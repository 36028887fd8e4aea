// The catalogue, jvm/src/main/catalogue.txt, as Scala sources. It is the one list of sparkagg's functions: the
// build writes from it the list `Functions.families` returns and the classes Spark needs one of per function,
// because it registers them by class name (registerJavaUDAF's UDAFs, registerJavaFunction's finalize UDFs and
// the result types those declare). Adding a function is then its FunctionDef and one catalogue line.
// Plain Scala (2.12 and 2.13): build.sbt runs it, and CatalogueSourcesSuite runs it on a trial catalogue.
package sparkagg.build

object CatalogueSources {
  /** An argument of a function's registerJavaUDAF class: a SQL type, and a placeholder for a constant. */
  final case class Argument(sqlType: String, constant: Option[String])

  /** What the function's finalize class returns: a declared type, the state's own (with an example type to
   *  pass), or no finalize class at all (a result that needs more than the state). */
  sealed trait Finalize
  final case class Declared(sqlType: String) extends Finalize
  final case class FollowsState(example: String) extends Finalize
  case object NoFinalize extends Finalize

  final case class Function(objectName: String, arguments: Seq[Argument], finalizeResult: Finalize)
  final case class Family(file: String, title: String, functions: Seq[Function])

  private val udafTypes = Map(
    "string" -> "StringType", "double" -> "DoubleType", "bigint" -> "LongType", "boolean" -> "BooleanType")
  private val finalizeTypes = Map(
    "double" -> "java.lang.Double", "bigint" -> "java.lang.Long", "boolean" -> "java.lang.Boolean")
  private val FamilyLine = """(\w+):\s+(\S.*)""".r
  private val FunctionLine = """\s+(\w+)\s+(.*?)\s*->\s*(.+?)\s*""".r
  private val OutsideQuotes = ",(?=(?:[^\"]*\"[^\"]*\")*[^\"]*$)"
  private val ArgumentForm = """(\w+)(?:\s*=\s*(.+))?""".r

  def parse(text: String): Seq[Family] = {
    val families = scala.collection.mutable.ArrayBuffer.empty[Family]
    text.split("\n").zipWithIndex.foreach { case (line, i) =>
      def fail(why: String) = sys.error(s"catalogue line ${i + 1}: $why: $line")
      line match {
        case l if l.trim.isEmpty || l.trim.startsWith("#") =>
        case FamilyLine(file, title) => families += Family(file, title.trim, Nil)
        case FunctionLine(name, args, result) =>
          if (families.isEmpty) fail("a function before any family")
          val arguments = args.split(OutsideQuotes).map(_.trim).filter(_.nonEmpty).map {
            case ArgumentForm(t, constant) if udafTypes.contains(t) => Argument(t, Option(constant).map(_.trim))
            case other => fail(s"argument '$other' is not one of ${udafTypes.keys.mkString(", ")} [= constant]")
          }.toSeq
          val finalizeResult = result.split("\\s+").toSeq match {
            case Seq("none") => NoFinalize
            case Seq("follows", example) => FollowsState(example)
            case Seq(t) if finalizeTypes.contains(t) => Declared(t)
            case _ => fail(s"result '$result' is none, follows <type>, or one of ${finalizeTypes.keys.mkString(", ")}")
          }
          if (arguments.isEmpty) fail("no arguments")
          val last = families.last
          families(families.length - 1) =
            last.copy(functions = last.functions :+ Function(name, arguments, finalizeResult))
        case _ => fail("neither '<family>: <title>' nor '    <Object> <arguments> -> <result>'")
      }
    }
    families.find(_.functions.isEmpty).foreach(f => sys.error(s"catalogue: family ${f.file} lists no function"))
    families.toList
  }

  private val header =
    "// Written by the build from jvm/src/main/catalogue.txt (project/CatalogueSources.scala): edit those.\n"
  private def quote(s: String) = "\"" + s.replace("\\", "\\\\").replace("\"", "\\\"") + "\""
  private def function(f: Function) = s"_root_.sparkagg.functions.${f.objectName}"

  private def literal(a: Argument, constant: String): String = a.sqlType match {
    case "string" if constant.startsWith("\"") => constant
    case "string" => quote(constant)
    case "bigint" => constant.stripSuffix("L") + "L"
    case "double" => if (constant.contains('.')) constant else constant + ".0"
    case "boolean" => constant
  }

  /** Each generated file, by its path under the managed source folder. */
  def sources(text: String): Map[String, String] = {
    val families = parse(text)
    val all = families.flatMap(_.functions)

    val listing = families.map { f =>
      s"    Family(${quote(f.file)}, ${quote(f.title)}, Seq(${f.functions.map(_.objectName).mkString(", ")}))"
    }.mkString(",\n")
    val catalogued =
      s"""${header}package sparkagg.functions
         |
         |/** The catalogue's families, in its order. */
         |private[functions] object Catalogued {
         |  val families: Seq[Family] = Seq(
         |$listing
         |  )
         |}
         |""".stripMargin

    val udafs = all.map { f =>
      val args = f.arguments.map { a =>
        val t = s"org.apache.spark.sql.types.${udafTypes(a.sqlType)}"
        a.constant.fold(s"UdafArg($t)")(c => s"UdafArg($t, Some(${literal(a, c)}))")
      }
      s"class ${f.objectName} extends AccumulatorUdaf(${function(f)}, ${args.mkString(", ")})"
    }
    val udafClasses =
      s"""${header}package sparkagg.udaf
         |
         |// One class per function, for spark.udf.registerJavaUDAF(name, "sparkagg.udaf.<Class>"), each with the
         |// argument types Spark casts to and the placeholders of its constant parameters.
         |${udafs.mkString("\n")}
         |""".stripMargin

    val finalizing = all.flatMap { f =>
      val cls = s"${f.objectName}Finalize"
      f.finalizeResult match {
        case NoFinalize => Nil
        case Declared(t) =>
          Seq(
            s"class $cls extends FinalizeUdf[${finalizeTypes(t)}](${function(f)}) with UDF1[Row, ${finalizeTypes(t)}]")
        case FollowsState(example) =>
          val result = s"${f.objectName}Result"
          Seq(
            s"class $cls extends FinalizeUdf[$result](${function(f)}) with UDF1[Row, $result]",
            s"@SQLUserDefinedType(udt = classOf[$result])",
            s"final class $result extends ResultTypeRequired(classOf[$cls], ${function(f)}, ${quote(example)})"
          )
      }
    }
    val registered = all.collect {
      case f if f.finalizeResult != NoFinalize =>
        val declared = f.finalizeResult match { case Declared(t) => s"Some(${quote(t)})"; case _ => "None" }
        s"    FinalizeClass(${function(f)}, classOf[${f.objectName}Finalize].getName, $declared)"
    }
    val udfClasses =
      s"""${header}package sparkagg.udf
         |
         |import org.apache.spark.sql.Row
         |import org.apache.spark.sql.api.java.UDF1
         |import org.apache.spark.sql.types.SQLUserDefinedType
         |
         |// The finalize class of each function whose state alone gives its result, for registerJavaFunction; where
         |// the result type follows the state, the result class that makes registering without the type fail.
         |${finalizing.mkString("\n")}
         |
         |object FinalizeClasses {
         |  val all: Seq[FinalizeClass] = Seq(
         |${registered.mkString(",\n")}
         |  )
         |}
         |""".stripMargin

    Map(
      "sparkagg/functions/Catalogued.scala" -> catalogued,
      "sparkagg/udaf/classes.scala" -> udafClasses,
      "sparkagg/udf/classes.scala" -> udfClasses)
  }
}
