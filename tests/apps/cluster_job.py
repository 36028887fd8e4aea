"""Runs on local-cluster[2,1,1024]: executors are separate JVMs, so accumulator state really travels as
bytes. One executor is killed in the middle of the first job; Spark reruns its tasks and the results must
still equal Spark's built-ins. Prints one JSON line of findings."""
import json
import subprocess
import sys
import threading
import time

from pyspark.sql import SparkSession

jar = sys.argv[1]
spark = (SparkSession.builder.master("local-cluster[2,1,1024]").appName("sparkagg-cluster")
         .config("spark.jars", jar).config("spark.sql.extensions", "sparkagg.SparkAggExtensions")
         .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "8")
         .config("spark.task.maxFailures", "8").getOrCreate())
spark.sparkContext.setLogLevel("ERROR")


def executor_pids():
    out = subprocess.run(["pgrep", "-f", "CoarseGrainedExecutorBackend"], capture_output=True, text=True).stdout
    return [int(p) for p in out.split()]


killed = []


def kill_one_executor_soon():
    time.sleep(4)
    pids = executor_pids()
    if pids:
        subprocess.run(["kill", "-9", str(pids[0])])
        killed.append(pids[0])


spark.range(0, 30_000_000, numPartitions=60).selectExpr(
    "id % 1000 AS k", "CAST(id % 7919 AS DOUBLE) AS x", "id % 97 AS n").createOrReplaceTempView("big")
threading.Thread(target=kill_one_executor_soon, daemon=True).start()
grouped = spark.sql("SELECT k, df_avg(x) AS a, df_sum(n) AS s, df_var_samp(x) AS v, avg(x) AS a2, sum(n) AS s2, "
                    "var_samp(x) AS v2 FROM big GROUP BY k").collect()
grouped_ok = len(grouped) == 1000 and all(
    r.s == r.s2 and abs(r.a - r.a2) <= 1e-9 * abs(r.a2) and abs(r.v - r.v2) <= 1e-9 * abs(r.v2) for r in grouped)

spark.range(0, 200_000, numPartitions=8).selectExpr("id % 5 AS p", "id AS t", "CAST(id % 101 AS DOUBLE) AS x") \
    .createOrReplaceTempView("series")
windowed = spark.sql("SELECT df_avg(x) OVER (PARTITION BY p ORDER BY t ROWS BETWEEN 50 PRECEDING AND CURRENT ROW) "
                     "AS a, avg(x) OVER (PARTITION BY p ORDER BY t ROWS BETWEEN 50 PRECEDING AND CURRENT ROW) AS b "
                     "FROM series").collect()
windowed_ok = len(windowed) == 200_000 and all(abs(r.a - r.b) <= 1e-9 * max(1.0, abs(r.b)) for r in windowed)
print(json.dumps({"killed": killed, "grouped_rows": len(grouped), "grouped_ok": grouped_ok,
                  "windowed_rows": len(windowed), "windowed_ok": windowed_ok,
                  "executors_alive_after": len(executor_pids())}), flush=True)
spark.stop()
