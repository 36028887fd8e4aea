// sparkagg: DataFusion's aggregate accumulator model for Spark SQL.
//
// One JAR per Spark minor (docs/spark-versions.md): a subproject per minor compiles the shared sources in
// jvm/src/main/scala plus that minor's adapters in jvm/src/main/scala-spark-<minor>/, against that Spark's
// own jars. Those come from the pyspark wheel of the minor, which carries them: `.venv` holds pyspark
// 4.3 (the default project, `root`), `.venvs/spark-<minor>` the others (`make venvs`); the minors and their
// pyspark releases are listed in python/sparkagg/spark_lines.tsv. Maven Central lacks some of these Spark
// releases (4.3.0, 4.2.1), so the wheels are the one source for every minor.
// -Dsparkagg.sparkJars.<minor>=DIR points a minor elsewhere (any Spark distribution's jars/ folder).
import java.io.File

import sparkagg.build.CatalogueSources

// The source folders of a line: `<prefix>-<minor>` for that minor alone, `-<from>+` for it and every later
// one, `-<from>-<to>` for a range. Each difference between minors is then written once.
def versionDirs(parent: File, prefix: String, minor: String): Seq[File] = {
  def at(v: String) = v.split('.').map(_.toInt).toSeq match { case Seq(a, b) => a * 100 + b }
  val m = at(minor)
  Option(parent.listFiles).toSeq.flatten.filter(_.isDirectory).filter { d =>
    d.getName.stripPrefix(prefix + "-") match {
      case name if !d.getName.startsWith(prefix + "-") => false
      case from if from.endsWith("+") => m >= at(from.dropRight(1))
      case range if range.contains("-") => val Array(a, b) = range.split("-"); m >= at(a) && m <= at(b)
      case exact => m == at(exact)
    }
  }
}

// Spark's jars for a line, minus the Scala runtime, which sbt supplies at the same version. Evaluated
// when a task of that line runs, so a build that only needs 4.3 does not need the other venvs.
def sparkJars(base: File, line: SparkLine): Seq[File] = {
  val explicit = sys.props.get(s"sparkagg.sparkJars.${line.minor}").map(file)
  val fromVenv = Option((base / line.venv / "lib").listFiles).toSeq.flatten
    .map(_ / "site-packages" / "pyspark" / "jars").find(_.isDirectory)
  val dir = explicit.orElse(fromVenv).getOrElse(
    sys.error(
      s"sparkagg: no Spark ${line.minor} jars found. Run `make venvs` (pyspark ${line.pyspark} into " +
        s"${line.venv}) or pass -Dsparkagg.sparkJars.${line.minor}=/path/to/spark/jars"))
  dir.listFiles.toSeq.filter(f => f.getName.endsWith(".jar") && !f.getName.startsWith("scala-"))
}

// The suites that exercise Spark itself (its planner, parser, operators and SQL), as opposed to the
// accumulators' algebra.
def meetsSpark(suite: String): Boolean =
  Set("sparkagg.SqlSuite", "sparkagg.GroupedAggregateSuite", "sparkagg.GroupedSpillSuite", "sparkagg.WindowSuite",
    "sparkagg.CatalogueSuite")(suite) || suite.startsWith("sparkagg.catalyst.") || suite.startsWith("sparkagg.exec.")

// The suites whose time goes to the accumulators' and the operator's own loops over large inputs.
def hotLoops(suite: String): Boolean = Set("sparkagg.GroupsAccumulatorSuite", "sparkagg.GroupedSpillSuite")(suite)

ThisBuild / organization := "io.github.sparkagg"
ThisBuild / version := "0.1.0"

def sparkLine(line: SparkLine): Project =
  Project(if (line == SparkLines.default) "root" else line.id,
    if (line == SparkLines.default) file(".") else file(s"jvm/${line.id}"))
    .settings(
      name := s"sparkagg-spark${line.minor}",
      moduleName := name.value, // not sbt's normalized sparkagg-spark4-3
      scalaVersion := line.scala,
      Compile / scalaSource := (ThisBuild / baseDirectory).value / "jvm" / "src" / "main" / "scala",
      Compile / javaSource := (ThisBuild / baseDirectory).value / "jvm" / "src" / "main" / "java",
      Compile / unmanagedSourceDirectories ++=
        versionDirs((ThisBuild / baseDirectory).value / "jvm" / "src" / "main", "scala-spark", line.minor) :+
          (ThisBuild / baseDirectory).value / "jvm" / "src" / "main" / s"scala-${line.scalaBinary}",
      Test / scalaSource := (ThisBuild / baseDirectory).value / "jvm" / "src" / "test" / "scala",
      Test / javaSource := (ThisBuild / baseDirectory).value / "jvm" / "src" / "test" / "java",
      Test / unmanagedSourceDirectories ++=
        versionDirs((ThisBuild / baseDirectory).value / "jvm" / "src" / "test", "scala-spark", line.minor),
      Test / resourceDirectory := (ThisBuild / baseDirectory).value / "jvm" / "src" / "test" / "resources",
      scalacOptions ++= Seq("-deprecation", "-feature", "-unchecked") ++
        Seq("-release", line.java),
      javacOptions ++= Seq("--release", line.java),
      // Spark brings the Scala library: keep it out of the published POM's runtime dependencies, so that
      // `spark-submit --packages io.github.sparkagg:sparkagg-spark4.3_2.13:0.1.0` adds nothing but our JAR.
      autoScalaLibrary := false,
      libraryDependencies ++= Seq(
        "org.scala-lang" % "scala-library" % scalaVersion.value % "provided",
        "org.scalatest" %% "scalatest" % "3.2.19" % Test
      ),
      // Spark is "provided": on the compile and test classpaths, never in our JAR.
      Compile / unmanagedJars ++= sparkJars((ThisBuild / baseDirectory).value, line).map(Attributed.blank),
      // Spark needs these opens on Java 17; tests fork so they apply.
      Test / fork := true,
      Test / javaOptions ++= Seq(
        "-Xmx3g",
        "--add-opens=java.base/java.lang=ALL-UNNAMED",
        "--add-opens=java.base/java.lang.invoke=ALL-UNNAMED",
        "--add-opens=java.base/java.io=ALL-UNNAMED",
        "--add-opens=java.base/java.net=ALL-UNNAMED",
        "--add-opens=java.base/java.nio=ALL-UNNAMED",
        "--add-opens=java.base/java.util=ALL-UNNAMED",
        "--add-opens=java.base/java.util.concurrent=ALL-UNNAMED",
        "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
        "--add-opens=java.base/sun.util.calendar=ALL-UNNAMED",
        "-Djdk.reflect.useDirectMethodHandle=false",
        // common/LargeArrays.scala: recycle nearly every array the operator lets go of, scribbled over.
        "-Dsparkagg.test.recycleAll=true"
      ),
      // Two test JVMs. The suites that run large inputs through the accumulators' and the operator's loops
      // (hotLoops) get C2; the others, small inputs through many short plans, C1 alone, where C2's compilations
      // cost more CPU than they return (SqlSuite and WindowSuite: 186 s of CPU -> 120 s; GroupsAccumulatorSuite
      // the other way, 39 s -> 73 s). The Makefile does the same for the tests' Spark applications.
      Test / testGrouping := {
        val options = (Test / forkOptions).value
        val (hot, planned) = (Test / definedTests).value.partition(t => hotLoops(t.name))
        Seq(
          Tests.Group("hot loops", hot, Tests.SubProcess(options)),
          Tests.Group("plans", planned,
            Tests.SubProcess(options.withRunJVMOptions(options.runJVMOptions :+ "-XX:TieredStopAtLevel=1")))
        ).filter(_.tests.nonEmpty)
      },
      Test / parallelExecution := false,
      // Each test's duration in the log, and a JUnit XML report per suite where build/test-times reads the
      // seconds of the run's suites and slowest tests (`make test` ends with its table).
      Test / testOptions += Tests.Argument(TestFrameworks.ScalaTest, "-oD"),
      Test / testReportsDirectory := (ThisBuild / baseDirectory).value / "target" / "test-times" / s"scalatest-${line.id}",
      // The long partition sweeps run on the default minor; the others sweep one count (testing/Sweep.scala).
      Test / javaOptions ++= (if (line == SparkLines.default) Nil else Seq("-Dsparkagg.test.sweep=short")),
      Test / testOptions ++= (if (line == SparkLines.default) Nil
                              else Seq(Tests.Argument(TestFrameworks.ScalaTest, "-l", "sparkagg.DefaultLineOnly"))),
      // On the default's Scala, another minor runs only the suites that meet Spark: the accumulators' own
      // suites would run the same bytecode against the same Scala library again.
      Test / testOptions ++= {
        if (line == SparkLines.default || line.scalaBinary != SparkLines.default.scalaBinary) Nil
        else Seq(Tests.Filter(meetsSpark))
      },
      // The JAR users put on --jars: our classes only, Spark is provided.
      // publishLocal / publishM2 serve `--packages` from the local repositories; no Scaladoc to wait for.
      Compile / doc / sources := Seq.empty,
      publishM2Configuration := publishM2Configuration.value.withOverwrite(true),
      publishLocalConfiguration := publishLocalConfiguration.value.withOverwrite(true),
      // The catalogue as sources (project/CatalogueSources.scala): Functions.families and the classes Spark
      // registers by name. A file is rewritten only when its text changes, so an unchanged catalogue compiles
      // nothing again.
      Compile / sourceGenerators += Def.task {
        val catalogue = (ThisBuild / baseDirectory).value / "jvm" / "src" / "main" / "catalogue.txt"
        CatalogueSources.sources(IO.read(catalogue)).toSeq.map { case (path, text) =>
          val out = (Compile / sourceManaged).value / path
          if (!out.exists || IO.read(out) != text) IO.write(out, text)
          out
        }
      }.taskValue,
      // CatalogueSourcesSuite runs the generator on the catalogue and on a trial one.
      Test / unmanagedSources += (ThisBuild / baseDirectory).value / "project" / "CatalogueSources.scala",
      Test / javaOptions += s"-Dsparkagg.catalogue=${(ThisBuild / baseDirectory).value / "jvm" / "src" / "main" / "catalogue.txt"}",
      // What SparkLineCheck reads to refuse a Spark other than this line's.
      Compile / resourceGenerators += Def.task {
        val out = (Compile / resourceManaged).value / "sparkagg" / "spark-line.properties"
        IO.write(
          out,
          s"""spark.minor=${line.minor}
             |artifact=${line.artifact}
             |version=${version.value}
             |supported=${SparkLines.all.map(l => s"${l.minor}:${l.scalaBinary}").mkString(",")}
             |""".stripMargin
        )
        Seq(out)
      }.taskValue,
      Compile / packageBin / artifactPath :=
        (ThisBuild / baseDirectory).value / "target" / "jars" / s"${line.artifact}.jar",
      Test / packageBin / artifactPath :=
        (ThisBuild / baseDirectory).value / "target" / "jars" / s"${line.artifact}-tests.jar"
    )

lazy val root = sparkLine(SparkLines.default)
lazy val spark35 = sparkLine(SparkLines("3.5"))
lazy val spark40 = sparkLine(SparkLines("4.0"))
lazy val spark41 = sparkLine(SparkLines("4.1"))
lazy val spark42 = sparkLine(SparkLines("4.2"))
