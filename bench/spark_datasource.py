"""One-run comparison of Spark batch reads: format("kwire") vs format("kafka").

Fills a topic with N records of SIZE bytes (once; skipped when the topic
already holds them), then reads it whole on local[2] with each source, the
action summing length(value) so every record is materialised. Prints rows/s
per run. Not a test: numbers depend on the machine and its load.

Usage (the Spark venv's python, kwire on PYTHONPATH):
  PYTHONPATH=build/python KWIRE_SPARK_JARS_DIR=$(scripts/spark-env jars) \
    $(scripts/spark-env python) bench/spark_datasource.py 127.0.0.1:19700 [records] [size] [runs]
"""

import os
import re
import sys
import time
from pathlib import Path

import kwire
import pyspark
from kwire.spark import KwireDataSource
from pyspark.sql import SparkSession

TOPIC = "bench-spark-ds"
PARTITIONS = 3


def connector_jars() -> list[str]:
    def artifact(name: str) -> str:
        return re.sub(r"-\d[\w.\-]*\.jar$", "", name)

    shipped = {artifact(p.name) for p in (Path(pyspark.__file__).parent / "jars").glob("*.jar")}
    jar_dir = Path(os.environ["KWIRE_SPARK_JARS_DIR"])
    return [str(p) for p in sorted(jar_dir.glob("*.jar")) if artifact(p.name) not in shipped]


def fill(bootstrap: str, records: int, size: int) -> None:
    opts = {"kafka.bootstrap.servers": bootstrap, "subscribe": TOPIC}
    admin = kwire.Admin({"bootstrap.servers": bootstrap})
    admin.create_topics([(TOPIC, PARTITIONS)], True)
    have = sum(r["untilOffset"] - r["fromOffset"] for r in kwire.plan(opts)["ranges"])
    if have >= records:
        return
    producer = kwire.Producer({"bootstrap.servers": bootstrap, "linger.ms": "5", "batch.size": "262144"})
    value = b"x" * size
    t0 = time.monotonic()
    for i in range(have, records):
        producer.send(TOPIC, value=value, partition=i % PARTITIONS)
    producer.flush()
    producer.close()
    admin.close()
    print(f"produced {records - have} records in {time.monotonic() - t0:.1f} s", flush=True)


def main() -> None:
    bootstrap = sys.argv[1]
    records = int(sys.argv[2]) if len(sys.argv) > 2 else 2_000_000
    size = int(sys.argv[3]) if len(sys.argv) > 3 else 100
    runs = int(sys.argv[4]) if len(sys.argv) > 4 else 2
    fill(bootstrap, records, size)
    os.environ["PYSPARK_PYTHON"] = sys.executable
    spark = (
        SparkSession.builder.master("local[2]")
        .config("spark.jars", ",".join(connector_jars()))
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.memory", "1g")
        .config("spark.pyspark.python", sys.executable)
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    spark.dataSource.register(KwireDataSource)
    opts = {"kafka.bootstrap.servers": bootstrap, "subscribe": TOPIC, "endingOffsets": "latest"}
    for run in range(runs):
        for fmt in ("kafka", "kwire"):
            df = spark.read.format(fmt).options(**opts).load()
            t0 = time.monotonic()
            row = df.selectExpr("count(*) AS n", "sum(length(value)) AS bytes").collect()[0]
            dt = time.monotonic() - t0
            print(f"run {run} {fmt:5s}: {row.n} rows, {row.bytes} value bytes, {dt:.2f} s, {row.n / dt:,.0f} rows/s",
                  flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
