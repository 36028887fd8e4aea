package sparkagg;

import java.io.IOException;
import java.io.InputStream;
import java.util.Properties;

/**
 * Refuses, with one message naming both versions and the JAR to use, to run sparkagg in a Spark other than
 * the minor its JAR is built for (sparkagg/spark-line.properties, written by the build). It is Java so that
 * it links under any Scala: a Scala 2.13 JAR in Spark 3.5 (Scala 2.12) would otherwise fail with a
 * NoSuchMethodError, at session start or deep inside a job.
 */
public final class SparkLineCheck {
  private SparkLineCheck() {}

  /** Throws IllegalStateException unless the running Spark is the minor this JAR is built for. */
  public static void require() {
    Properties line = builtFor();
    String running = org.apache.spark.package$.MODULE$.SPARK_VERSION();
    String minor = minorOf(running);
    String built = line.getProperty("spark.minor");
    if (minor.equals(built)) return;
    String artifact = line.getProperty("artifact");
    String supported = line.getProperty("supported");
    String fitting = null;
    for (String entry : supported.split(",")) {
      String[] minorAndScala = entry.split(":");
      if (minorAndScala[0].equals(minor)) fitting = "sparkagg-spark" + minor + "_" + minorAndScala[1];
    }
    if (fitting == null) {
      throw new IllegalStateException("sparkagg: Spark " + running + " is not supported; sparkagg has JARs for Spark "
          + supported.replaceAll(":[0-9.]+", "").replace(",", ", ") + " (this one, " + artifact + ", is for Spark "
          + built + ")");
    }
    throw new IllegalStateException("sparkagg: this JAR (" + artifact + ") is built for Spark " + built
        + ", but this is Spark " + running + ". Use " + fitting + ".jar instead (`sparkagg jar --spark " + minor
        + "` prints its path; --packages io.github.sparkagg:" + fitting + ":" + line.getProperty("version") + ")");
  }

  static String minorOf(String version) {
    String[] parts = version.split("[.-]");
    return parts.length < 2 ? version : parts[0] + "." + parts[1];
  }

  private static Properties builtFor() {
    Properties p = new Properties();
    try (InputStream in = SparkLineCheck.class.getResourceAsStream("spark-line.properties")) {
      p.load(in);
    } catch (IOException | NullPointerException e) {
      throw new IllegalStateException("sparkagg: the JAR lacks sparkagg/spark-line.properties", e);
    }
    return p;
  }
}
