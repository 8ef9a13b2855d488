"""The purchases job with Spark writing a table, for side-by-side timing with
kwire's table sinks: Kafka -> from_json -> action = 'purchase' AND amount > 0
-> the event's columns with partition and offset, maxOffsetsPerTrigger 20000,
AvailableNow, into Parquet files (Spark's file sink) or into PostgreSQL
(foreachBatch + the JDBC writer, append). Prints the query's wall time
(session start excluded).

Usage: python spark_purchases_to_table.py BOOTSTRAP IN_TOPIC CHECKPOINT JARS_DIR parquet OUT_DIR
       python spark_purchases_to_table.py BOOTSTRAP IN_TOPIC CHECKPOINT JARS_DIR postgres JDBC_URL TABLE USER PASSWORD JDBC_JAR
(run with the PySpark of scripts/spark-env; JARS_DIR = scripts/spark-env jars)."""

import glob
import sys
import time

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

bootstrap, source, checkpoint, jars, kind = sys.argv[1:6]
jar_list = glob.glob(jars + "/*.jar")
if kind == "postgres":
    jdbc_url, table, user, password, jdbc_jar = sys.argv[6:11]
    jar_list.append(jdbc_jar)
spark = (
    SparkSession.builder.master("local[2]")
    .config("spark.jars", ",".join(jar_list))
    .config("spark.driver.host", "127.0.0.1")
    .config("spark.driver.bindAddress", "127.0.0.1")
    .config("spark.ui.enabled", "false")
    .config("spark.sql.shuffle.partitions", "2")
    .getOrCreate()
)
spark.sparkContext.setLogLevel("ERROR")
schema = "user_id BIGINT, action STRING, amount DOUBLE, event_ts BIGINT"
purchases = (
    spark.readStream.format("kafka")
    .option("kafka.bootstrap.servers", bootstrap)
    .option("subscribe", source)
    .option("startingOffsets", "earliest")
    .option("maxOffsetsPerTrigger", 20000)
    .load()
    .select("partition", "offset", F.from_json(F.col("value").cast("string"), schema).alias("e"))
    .where("e.action = 'purchase' AND e.amount > 0")
    .select("e.*", "partition", "offset")
)
writer = purchases.writeStream.option("checkpointLocation", checkpoint).trigger(availableNow=True)
if kind == "parquet":
    writer = writer.format("parquet").option("path", sys.argv[6])
else:
    props = {"user": user, "password": password, "driver": "org.postgresql.Driver"}
    writer = writer.foreachBatch(lambda df, batch_id: df.write.jdbc(jdbc_url, table, mode="append", properties=props))
t0 = time.time()
writer.start().awaitTermination()
print("spark: %.2f s" % (time.time() - t0))
