"""The purchases job with Spark's Kafka sink, for side-by-side timing with
`purchases --output-topic` (kwire's Kafka sink): Kafka -> from_json ->
action = 'purchase' AND amount > 0 -> Kafka (JSON value, the event's key,
a header "source" = "<partition>:<offset>"), maxOffsetsPerTrigger 20000,
AvailableNow, or a processing-time trigger given as TRIGGER (e.g. "500
milliseconds"; the query then runs until the process is stopped). Prints
the wall time of the query (session start excluded).

Usage: python spark_purchases_to_kafka.py BOOTSTRAP IN_TOPIC OUT_TOPIC CHECKPOINT JARS_DIR [TRIGGER]
(run with the PySpark of scripts/spark-env; JARS_DIR = scripts/spark-env jars)."""

import glob
import sys
import time

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

bootstrap, source, out, checkpoint, jars = sys.argv[1:6]
processing_time = sys.argv[6] if len(sys.argv) > 6 else None
spark = (
    SparkSession.builder.master("local[2]")
    .config("spark.jars", ",".join(glob.glob(jars + "/*.jar")))
    .config("spark.driver.host", "127.0.0.1")
    .config("spark.driver.bindAddress", "127.0.0.1")
    .config("spark.ui.enabled", "false")
    .config("spark.sql.shuffle.partitions", "2")
    .getOrCreate()
)
spark.sparkContext.setLogLevel("ERROR")
schema = "user_id BIGINT, action STRING, amount DOUBLE, event_ts BIGINT"
events = (
    spark.readStream.format("kafka")
    .option("kafka.bootstrap.servers", bootstrap)
    .option("subscribe", source)
    .option("startingOffsets", "earliest")
    .option("maxOffsetsPerTrigger", 20000)
    .load()
    .select("key", "partition", "offset", F.from_json(F.col("value").cast("string"), schema).alias("e"))
)
purchases = events.where("e.action = 'purchase' AND e.amount > 0").select(
    "key",
    F.to_json(F.struct("e.*", "partition", "offset")).alias("value"),
    F.array(
        F.struct(
            F.lit("source").alias("key"),
            F.concat_ws(":", F.col("partition").cast("string"), F.col("offset").cast("string")).cast("binary").alias(
                "value"
            ),
        )
    ).alias("headers"),
)
t0 = time.time()
writer = (
    purchases.writeStream.format("kafka")
    .option("kafka.bootstrap.servers", bootstrap)
    .option("topic", out)
    .option("checkpointLocation", checkpoint)
)
if processing_time:
    writer = writer.trigger(processingTime=processing_time)
else:
    writer = writer.trigger(availableNow=True)
query = writer.start()
print("spark: query started", flush=True)
query.awaitTermination()
print("spark: %.2f s" % (time.time() - t0))
spark.stop()
