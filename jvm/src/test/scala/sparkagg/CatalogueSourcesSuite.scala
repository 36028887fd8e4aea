package sparkagg

import java.nio.charset.StandardCharsets.UTF_8
import java.nio.file.{Files, Paths}

import org.apache.spark.sql.types._
import org.apache.spark.unsafe.types.UTF8String
import org.scalatest.funsuite.AnyFunSuite
import sparkagg.api.{Arg, BindContext}
import sparkagg.build.CatalogueSources
import sparkagg.functions.Functions
import sparkagg.testing.EveryFunction
import sparkagg.udf.FinalizeClasses

/** The catalogue (jvm/src/main/catalogue.txt) and what the build writes from it (project/CatalogueSources.scala). */
class CatalogueSourcesSuite extends AnyFunSuite {
  private val text = new String(Files.readAllBytes(Paths.get(sys.props("sparkagg.catalogue"))), UTF_8)
  private val listed = CatalogueSources.parse(text).flatMap(_.functions)
  private def objectName(f: AnyRef) = f.getClass.getSimpleName.stripSuffix("$")

  test("the built functions are the catalogue's, in its order, each with its classes for registration by name") {
    assert(Functions.all.map(objectName) == listed.map(_.objectName))
    for (f <- listed) Class.forName(s"sparkagg.udaf.${f.objectName}")
    val finalizing = listed.filter(_.finalizeResult != CatalogueSources.NoFinalize)
    assert(FinalizeClasses.all.map(c => objectName(c.function)) == finalizing.map(_.objectName))
    FinalizeClasses.all.foreach(c => Class.forName(c.className))
  }

  test("every function has its call in EveryFunction, which the operator suites sweep") {
    val called = (EveryFunction.calls ++ EveryFunction.withinGroupCalls).map(EveryFunction.name).toSet
    assert(Functions.all.map(_.name).filterNot(called) == Nil)
  }

  test("a declared finalize result is what the function returns for its registerJavaUDAF argument types") {
    val types = Map[String, (DataType, String => Any)](
      "double" -> (DoubleType -> (_.toDouble)),
      "bigint" -> (LongType -> (_.toLong)),
      "boolean" -> (BooleanType -> (_.toBoolean)),
      "string" -> (StringType -> (s => UTF8String.fromString(s.stripPrefix("\"").stripSuffix("\""))))
    )
    for ((f, definition) <- listed.zip(Functions.all)) {
      val args = f.arguments.map { a =>
        val (t, parse) = types(a.sqlType)
        Arg(t, nullable = a.constant.isEmpty, a.constant.map(parse))
      }
      val bound = definition.bind(args, BindContext(failOnOverflow = true))
      assert(bound.isRight, s"${definition.name} refuses its registerJavaUDAF arguments: $bound")
      f.finalizeResult match {
        case CatalogueSources.Declared(t) => assert(bound.toOption.get.returnType.simpleString == t, definition.name)
        case _ =>
      }
    }
  }

  test("a trial function added to the catalogue shows up in every source the build writes") {
    val trial =
      text + "trial: Trial family\n    TrialFunction   double, string = \"a, b\", bigint = 3 -> follows double\n"
    val sources = CatalogueSources.sources(trial)
    assert(
      sources("sparkagg/functions/Catalogued.scala").contains(
        """Family("trial", "Trial family", Seq(TrialFunction))"""))
    assert(
      sources("sparkagg/udaf/classes.scala").contains(
        "class TrialFunction extends AccumulatorUdaf(_root_.sparkagg.functions.TrialFunction, " +
          "UdafArg(org.apache.spark.sql.types.DoubleType), " +
          "UdafArg(org.apache.spark.sql.types.StringType, Some(\"a, b\")), " +
          "UdafArg(org.apache.spark.sql.types.LongType, Some(3L)))"))
    val udf = sources("sparkagg/udf/classes.scala")
    Seq(
      "class TrialFunctionFinalize extends FinalizeUdf[TrialFunctionResult](_root_.sparkagg.functions.TrialFunction)",
      "@SQLUserDefinedType(udt = classOf[TrialFunctionResult])",
      "final class TrialFunctionResult extends ResultTypeRequired(classOf[TrialFunctionFinalize], " +
        "_root_.sparkagg.functions.TrialFunction, \"double\")",
      "FinalizeClass(_root_.sparkagg.functions.TrialFunction, classOf[TrialFunctionFinalize].getName, None)"
    ).foreach(line => assert(udf.contains(line), line))
  }

  test("a malformed line is refused, naming its line") {
    def refusal(catalogue: String) = intercept[RuntimeException](CatalogueSources.parse(catalogue)).getMessage
    assert(refusal("    Orphan double -> double\n").startsWith("catalogue line 1: a function before any family"))
    assert(refusal("f: F\n    Fn decimal -> double\n").contains("line 2: argument 'decimal' is not one of"))
    assert(refusal("f: F\n    Fn double -> float\n").contains("line 2: result 'float' is none, follows <type>"))
    assert(refusal("f: F\ng: G\n    Fn double -> double\n").contains("family f lists no function"))
  }
}
