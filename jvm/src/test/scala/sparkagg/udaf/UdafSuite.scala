package sparkagg.udaf

import org.apache.spark.sql.Row
import org.apache.spark.sql.types.{DataType, DoubleType, StringType}
import org.scalatest.funsuite.AnyFunSuite
import sparkagg.{Gen, LocalSpark}
import sparkagg.functions.Functions
import sparkagg.testing.{EveryFunction, Slow}

class UdafSuite extends AnyFunSuite with LocalSpark {
  /** The class of a function: its name in CamelCase (approx_percentile_cont -> ApproxPercentileCont). */
  private def classOf(name: String) = "sparkagg.udaf." + name.split('_').map(_.capitalize).mkString

  private def udaf(name: String): AccumulatorUdaf =
    Class.forName(classOf(name)).getDeclaredConstructor().newInstance().asInstanceOf[AccumulatorUdaf]

  /** What registerJavaUDAF does (PySpark's and Spark Connect's way in; Scala cannot reach it): the class
   *  instantiated by name, registered as a UserDefinedAggregateFunction. */
  private def registerByName(sqlName: String, function: String): Unit = spark.udf.register(sqlName, udaf(function))

  /** A column of `t` in the class's argument type, or the constant a test passes. */
  private def argument(t: DataType, constant: Option[Any]): String = (t, constant) match {
    case (StringType, Some(_)) => "'|'"
    case (DoubleType, Some(_)) => "0.3"
    case (_, Some(_)) => "2"
    case (DoubleType, None) => "d"
    case (StringType, None) => "s"
    case (other, None) => s"CAST(${if (other.simpleString == "boolean") "b" else "l"} AS ${other.sql})"
  }

  test("every function has a class, registered by name with nothing but the JAR") {
    for (f <- Functions.all) assert(udaf(f.name).inputSchema.nonEmpty, f.name)
    registerByName("udaf_avg", "avg")
    val Seq(Row(avg: Double)) = spark.sql("SELECT udaf_avg(x) FROM VALUES (1), (2), (4) AS v(x)").collect().toSeq
    assert(avg == 7.0 / 3)
  }

  test("every class gives the extension's result, grouped, on one partition", Slow) {
    EveryFunction.createTable(spark)
    spark.table("t").coalesce(1).createOrReplaceTempView("t1")
    for (f <- Functions.all) {
      val u = udaf(f.name)
      registerByName(s"udaf_${f.name}", f.name)
      val args = u.inputSchema.fields.zipWithIndex.map { case (field, i) =>
        argument(field.dataType, u.argumentSpecs(i).constant)
      }
      val ours = s"df_${f.name}(${args.mkString(", ")})"
      // percentile_cont's oracle is Spark's own (SqlSuite shows it equal to df_percentile_cont's), which
      // Spark 3.5 parses too.
      val extension =
        if (f.name == "percentile_cont") s"percentile_cont(${args(1)}) WITHIN GROUP (ORDER BY ${args(0)})" else ours
      val q = (call: String) => s"SELECT k, $call, sort_array(collect_list(d)) FROM t1 GROUP BY k ORDER BY k"
      val (a, b) =
        (spark.sql(q(s"udaf_${f.name}(${args.mkString(", ")})")).collect(), spark.sql(q(extension)).collect())
      assert(a.length == b.length && a.nonEmpty, f.name)
      a.zip(b).foreach { case (x, y) =>
        // A t-digest compresses whenever its state is taken, which this path does on every row: its
        // estimate is another one, close in rank.
        val agree =
          if (f.name.startsWith("approx_") && f.name != "approx_distinct")
            EveryFunction.closeInRank(x.getSeq[Double](2).toArray, x.get(1), y.get(1))
          else Gen.same(x.get(1), y.get(1))
        assert(agree, s"${f.name}: ${x.get(1)} vs ${y.get(1)}")
      }
    }
  }

  test("a constant parameter that changes between rows is refused") {
    registerByName("udaf_string_agg", "string_agg")
    val e = intercept[Exception](spark.sql("SELECT udaf_string_agg(s, s) FROM VALUES ('a'), ('b') AS v(s)").collect())
    assert(
      Iterator.iterate[Throwable](e)(_.getCause).takeWhile(_ != null).exists(c =>
        String.valueOf(c.getMessage).contains("string_agg: its constant parameters changed")),
      e
    )
  }
}
