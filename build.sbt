// sparkagg: DataFusion's aggregate accumulator model for Spark SQL.
//
// Spark 4.3.0 is not published where this build resolves from (Maven Central offers up to 4.2.x), but
// the pyspark 4.3.0 wheel carries its exact jars. We compile and test against those: they are the
// Spark the Python package runs on, so there is one Spark everywhere. `make` creates the venv first;
// -Dsparkagg.sparkJars=DIR points elsewhere (any Spark 4.3 distribution's jars/ folder).
import java.io.File

val sparkVersion = "4.3.0"
// What differs between Spark minors lives in jvm/src/main/scala-spark-<minor>/ (docs/spark-versions.md).
val sparkMinor = sparkVersion.split('.').take(2).mkString(".")

lazy val sparkJarsDir: File = {
  val explicit = sys.props.get("sparkagg.sparkJars").orElse(sys.env.get("SPARKAGG_SPARK_JARS")).map(file)
  val fromVenv = Option(file(".venv/lib").listFiles).toSeq.flatten
    .map(_ / "site-packages" / "pyspark" / "jars").find(_.isDirectory)
  explicit.orElse(fromVenv).getOrElse(
    sys.error(
      "sparkagg: no Spark 4.3.0 jars found. Run `make venv` (installs pyspark 4.3.0 into .venv) " +
        "or pass -Dsparkagg.sparkJars=/path/to/spark/jars"))
}

// Spark's jars minus the Scala runtime, which sbt supplies at the same version.
lazy val sparkJars: Seq[File] =
  Option(sparkJarsDir.listFiles).toSeq.flatten
    .filter(f => f.getName.endsWith(".jar") && !f.getName.startsWith("scala-"))

ThisBuild / organization := "io.github.sparkagg"
ThisBuild / version := "0.1.0"
ThisBuild / scalaVersion := "2.13.18"

lazy val root = (project in file("."))
  .settings(
    name := "sparkagg",
    Compile / scalaSource := baseDirectory.value / "jvm" / "src" / "main" / "scala",
    Compile / javaSource := baseDirectory.value / "jvm" / "src" / "main" / "java",
    Compile / unmanagedSourceDirectories += baseDirectory.value / "jvm" / "src" / "main" / s"scala-spark-$sparkMinor",
    Test / scalaSource := baseDirectory.value / "jvm" / "src" / "test" / "scala",
    Test / javaSource := baseDirectory.value / "jvm" / "src" / "test" / "java",
    Test / resourceDirectory := baseDirectory.value / "jvm" / "src" / "test" / "resources",
    scalacOptions ++= Seq("-deprecation", "-feature", "-unchecked", "-release", "17"),
    javacOptions ++= Seq("--release", "17"),
    // Spark brings the Scala library: keep it out of the published POM's runtime dependencies, so that
    // `spark-submit --packages io.github.sparkagg:sparkagg_2.13:0.1.0` adds nothing but our JAR.
    autoScalaLibrary := false,
    libraryDependencies ++= Seq(
      "org.scala-lang" % "scala-library" % scalaVersion.value % "provided",
      "org.scalatest" %% "scalatest" % "3.2.19" % Test
    ),
    // Spark is "provided": on the compile and test classpaths, never in our JAR.
    Compile / unmanagedJars ++= sparkJars.map(Attributed.blank),
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
      "-Djdk.reflect.useDirectMethodHandle=false"
    ),
    Test / parallelExecution := false,
    // The JAR users put on --jars: our classes only, Spark is provided.
    // publishLocal / publishM2 serve `--packages` from the local repositories; no Scaladoc to wait for.
    Compile / doc / sources := Seq.empty,
    publishM2Configuration := publishM2Configuration.value.withOverwrite(true),
    publishLocalConfiguration := publishLocalConfiguration.value.withOverwrite(true),
    Compile / packageBin / artifactPath := baseDirectory.value / "target" / "sparkagg.jar",
    Test / packageBin / artifactPath := baseDirectory.value / "target" / "sparkagg-tests.jar"
  )
