"""Spark reads Kafka through kwire: format("kwire"), batch and streaming.

The driver plans offset ranges with kwire's planner; Spark's Python workers
read them with kwire and hand Arrow batches to Spark. Needs PySpark >= 4.0,
pyarrow and kwire importable by the workers' python (the same interpreter
here, PYSPARK_PYTHON).

  python examples/spark_kwire.py 127.0.0.1:9092 user-events
"""

import os
import sys
import tempfile

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from kwire.spark import KwireDataSource


def main() -> None:
    bootstrap, topic = sys.argv[1], sys.argv[2]
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = SparkSession.builder.master("local[2]").appName("kwire-example").getOrCreate()
    spark.dataSource.register(KwireDataSource)

    # Batch: the same options as format("kafka").
    df = (
        spark.read.format("kwire")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .option("includeHeaders", "true")
        .load()
    )
    df.groupBy("partition").agg(F.count("*").alias("records"), F.max("offset").alias("last")).show()

    # Streaming, rate-limited through Spark's admission control (Spark >= 4.2),
    # until everything available when the query started is read.
    with tempfile.TemporaryDirectory() as checkpoint:
        query = (
            spark.readStream.format("kwire")
            .option("kafka.bootstrap.servers", bootstrap)
            .option("subscribe", topic)
            .option("startingOffsets", "earliest")
            .option("maxOffsetsPerTrigger", 10000)
            .load()
            .selectExpr("CAST(key AS STRING) AS key", "CAST(value AS STRING) AS value", "partition", "offset")
            .writeStream.format("console")
            .option("numRows", 5)
            .option("checkpointLocation", checkpoint)
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination()
    spark.stop()


if __name__ == "__main__":
    main()
