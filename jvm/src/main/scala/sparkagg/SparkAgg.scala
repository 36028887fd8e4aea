package sparkagg

import org.apache.spark.SparkEnv
import org.apache.spark.sql.{Encoders, SparkSession, SparkSessionExtensions}
import org.apache.spark.sql.functions.{udaf => aggregatorUdf} // renamed: Scala 2.12 takes `udaf` for the package sparkagg.udaf
import org.apache.spark.sql.types.{DataType, StructField, StructType}
import org.apache.spark.sql.sparkagg.SparkInternals
import sparkagg.api.FunctionDef
import sparkagg.catalyst.{AccumulatorAggregator, CountStarParser, Registry, SparkAggregates}
import sparkagg.exec.{GroupedAggregateStrategy, GroupedPartialInput, StatePackets}
import sparkagg.functions.{Avg, Count, Functions, Max, Min, Sum}
import sparkagg.python.PythonAggregateStatements
import sparkagg.window.{DistinctWindowRule, SlidingWindowStrategy}

/**
 * Registration of sparkagg's functions on a running session, and of user-defined functions.
 *
 * {{{
 *   SparkAgg.register(spark)                       // df_avg, df_sum, ...
 *   SparkAgg.register(spark, "")                   // DataFusion's names, replacing Spark's built-ins
 *   SparkAgg.registerFunction(spark, "my_avg", MyAvg)
 *   SparkAgg.registerClass(spark, "my_avg", "com.example.MyAvg")
 * }}}
 * `df_count(*)` needs the parser of [[SparkAggExtensions]]; on a session registered at run time write
 * `df_count()` instead (Spark would expand `*` into every column).
 */
object SparkAgg {
  val PrefixConf = "spark.sparkagg.prefix"
  val DefaultPrefix = "df_"

  def register(spark: SparkSession): Unit = register(spark, prefixOf(spark))

  def register(spark: SparkSession, prefix: String): Unit = {
    SparkLineCheck.require()
    Registry.entries(Functions.all, prefix).foreach(registerTemporary(spark, _, replacingBuiltin = prefix.isEmpty))
  }

  /** Registers a user's function (an object or class implementing [[FunctionDef]]) under `name`,
   *  with its state forms `name_state`, `name_merge`, `name_merge_state` and `name_finalize`. */
  def registerFunction(spark: SparkSession, name: String, function: FunctionDef): Unit = {
    SparkLineCheck.require()
    Registry.forms(function, name).foreach(registerTemporary(spark, _, replacingBuiltin = false))
  }

  // A running session's registry holds temporary functions under system.session, as spark.udf does,
  // and resolves built-ins (system.builtin) first: DataFusion's names must take the built-in's place.
  private def registerTemporary(spark: SparkSession, entry: Registry.Entry, replacingBuiltin: Boolean): Unit = {
    val (id, info, builder) = entry
    val qualified =
      if (replacingBuiltin) SparkInternals.builtinFunction(id.funcName)
      else SparkInternals.temporaryFunction(id.funcName)
    spark.sessionState.functionRegistry.registerFunction(qualified, info, builder)
  }

  /** As [[registerFunction]], by class name: a Scala `object`, or a class with a no-argument constructor. */
  def registerClass(spark: SparkSession, name: String, className: String): Unit =
    registerFunction(spark, name, loadFunction(className))

  /**
   * Registers a function through Spark's Aggregator route (`functions.udaf`) instead of the Catalyst
   * host: slower, but it is what the typed API gives, and what benchmarks compare against.
   * `argumentTypes` is a comma-separated list of Spark types, e.g. "double" or "bigint, string".
   */
  def registerUdaf(spark: SparkSession, name: String, className: String, argumentTypes: String): Unit = {
    SparkLineCheck.require()
    val schema = StructType(
      argumentTypes.split(",").toSeq.zipWithIndex.map { case (t, i) =>
        StructField(s"_$i", DataType.fromDDL(t.trim))
      })
    val input = Encoders.row(schema)
    spark.udf.register(name, aggregatorUdf(AccumulatorAggregator(loadFunction(className), input), input))
  }

  def loadFunction(className: String): FunctionDef = {
    val loader = Option(Thread.currentThread.getContextClassLoader).getOrElse(getClass.getClassLoader)
    val instance =
      try {
        val module = Class.forName(className + "$", true, loader)
        module.getField("MODULE$").get(null)
      } catch {
        case _: ClassNotFoundException | _: NoSuchFieldException =>
          Class.forName(className, true, loader).getDeclaredConstructor().newInstance()
      }
    instance match {
      case f: FunctionDef => f
      case other => throw new IllegalArgumentException(
          s"sparkagg: $className is a ${other.getClass.getName}, not a sparkagg.api.FunctionDef")
    }
  }

  private def prefixOf(spark: SparkSession): String = spark.conf.get(PrefixConf, DefaultPrefix)

  private[sparkagg] def configuredPrefix: String =
    Option(SparkEnv.get).map(_.conf.get(PrefixConf, DefaultPrefix)).getOrElse(DefaultPrefix)

  private[sparkagg] def countName(prefix: String): String = prefix + Count.name
}

/**
 * `spark.sql.extensions=sparkagg.SparkAggExtensions`: registers every function under
 * `spark.sparkagg.prefix` (default `df_`) in each new session, and makes `df_count(*)` count rows.
 */
class SparkAggExtensions extends (SparkSessionExtensions => Unit) {
  // The line check runs before any other class of the JAR is touched: the JVM verifies a method before
  // running it, loading the classes its body hands on as another type, and a Scala 2.12 class does not load
  // under Scala 2.13 (Spark then logs the failure and starts without sparkagg instead of refusing).
  override def apply(extensions: SparkSessionExtensions): Unit = {
    SparkLineCheck.require()
    SparkAggExtensions.inject(extensions)
  }
}

object SparkAggExtensions {
  /** What the extension adds to each new session. Not in SparkAgg: the JVM verifies every method of a class
   *  when it links it, and SparkAgg.register must reach its own line check. */
  private[sparkagg] def inject(extensions: SparkSessionExtensions): Unit = {
    val prefix = SparkAgg.configuredPrefix
    Registry.entries(Functions.all, prefix).foreach(extensions.injectFunction)
    extensions.injectParser((_, delegate) => new CountStarParser(delegate, SparkAgg.countName(prefix)))
    extensions.injectParser((_, delegate) => new PythonAggregateStatements(delegate))
    extensions.injectPlannerStrategy(SlidingWindowStrategy(_))
    extensions.injectPlannerStrategy(GroupedAggregateStrategy(_, SparkAggregates(Count, Sum, Avg, Min, Max)))
    extensions.injectColumnar(_ => GroupedPartialInput)
    extensions.injectQueryStagePrepRule(_ => StatePackets.Rule)
    extensions.injectResolutionRule(_ => DistinctWindowRule)
  }
}
