"""A Spark Connect client, run in its own process as a user would: SQL and sparkagg.functions against
the server at argv[1]; prints one JSON line per check."""
import json
import sys

from pyspark.sql import SparkSession

from sparkagg import functions as SF

spark = SparkSession.builder.remote(sys.argv[1]).getOrCreate()


def emit(name, rows):
    print(json.dumps({name: [list(r) for r in rows]}), flush=True)


emit("sql", spark.sql("SELECT k, df_avg(x), df_count(*) FROM VALUES (1, 2), (1, 4), (2, NULL) AS t(k, x) "
                      "GROUP BY k ORDER BY k").collect())
df = spark.createDataFrame([("a", 1.0, 2), ("a", 3.0, 4), ("b", None, 5)], "k string, x double, n int")
emit("functions", df.groupBy("k").agg(SF.avg("x").alias("a"), SF.var_pop("x").alias("v"), SF.sum("n").alias("s"),
                                      SF.regr_count("x", "n").alias("c")).orderBy("k").collect())
emit("window", spark.sql("SELECT df_sum(x) OVER (ORDER BY i ROWS BETWEEN 1 PRECEDING AND CURRENT ROW), "
                         "df_count(DISTINCT x) OVER (ORDER BY i ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) "
                         "FROM VALUES (1, 10), (2, 10), (3, 5) AS t(i, x) ORDER BY i").collect())
emit("state", spark.sql("SELECT df_avg_merge(s) FROM (SELECT df_avg_state(x) AS s FROM VALUES (1), (2) AS t(x))")
     .collect())
# A forged state: refused with sparkagg's error class and SQLSTATE, as Spark's own errors arrive.
try:
    spark.sql("SELECT df_avg_merge(named_struct('count', -5L, 'sum', 1.0D))").collect()
    emit("forged", [])
except Exception as e:  # noqa: BLE001 (what arrives is the check)
    emit("forged", [[type(e).__name__, e.getCondition(), e.getSqlState(), str(e).splitlines()[0]]])
spark.stop()
