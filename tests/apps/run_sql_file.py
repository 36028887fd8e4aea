"""A spark-submit application: runs every case of a sql/ file and prints one line per result row.
It registers nothing itself: the functions come from --jars and spark.sql.extensions."""
import sys
from pathlib import Path

from pyspark.sql import SparkSession

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import sqlcases  # noqa: E402

spark = SparkSession.builder.getOrCreate()
for case in sqlcases.parse(Path(sys.argv[1])):
    for row in spark.sql(case.query).collect():
        print(f"ROW {case.name} :: {sqlcases.render_row(row)}")
spark.stop()
