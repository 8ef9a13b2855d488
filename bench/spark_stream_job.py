"""The demo job (examples/purchases) with Apache Spark's own Kafka source, for
bench/stream_vs_spark.py:

    spark.readStream.format("kafka") ... .load()
      .select(from_json(col("value").cast("string"), SCHEMA).alias("e"), "partition", "offset")
      .select("e.*", "partition", "offset")
      .where("action = 'purchase' AND amount > 0")
      .writeStream.format("json") ...

--mode backfill: startingOffsets=earliest, trigger availableNow, until done.
--mode small: startingOffsets=latest, trigger processingTime 0 seconds, until
--batches batches with rows have run, then stop.

Writes every StreamingQueryProgress of the query (JSON, one per line) to
--progress, and a summary line (start-up and query times, seconds) to stdout.

Run with the Spark venv's python (scripts/spark-env python); the connector
jars come from --jars-dir (scripts/spark-env jars).
"""

import argparse
import json
import os
import re
import sys
import time
from pathlib import Path

SCHEMA = "user_id BIGINT, action STRING, amount DOUBLE, event_ts BIGINT"


def connector_jars(jar_dir: Path) -> list[str]:
    """The connector's jars less those PySpark ships itself (same artifact)."""
    import pyspark

    def artifact(name: str) -> str:
        return re.sub(r"-\d[\w.\-]*\.jar$", "", name)

    shipped = {artifact(p.name) for p in (Path(pyspark.__file__).parent / "jars").glob("*.jar")}
    jars = [str(p) for p in sorted(jar_dir.glob("*.jar")) if artifact(p.name) not in shipped]
    if not any("spark-sql-kafka-0-10_" in j for j in jars):
        sys.exit(f"spark_stream_job: no spark-sql-kafka-0-10 jar in {jar_dir}")
    return jars


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--topic", required=True)
    ap.add_argument("--checkpoint", required=True)
    ap.add_argument("--output", required=True)
    ap.add_argument("--progress", required=True)
    ap.add_argument("--jars-dir", required=True)
    ap.add_argument("--mode", choices=["backfill", "small"], default="backfill")
    ap.add_argument("--max-offsets-per-trigger", default="none")
    ap.add_argument("--batches", type=int, default=40, help="--mode small: batches with rows to wait for")
    ap.add_argument("--max-seconds", type=float, default=120, help="--mode small: give up after this long")
    ap.add_argument("--driver-memory", default="1g")
    ap.add_argument("--log", default=None, help="Spark's log file (default: next to --progress)")
    ap.add_argument("-o", dest="options", action="append", default=[], help="extra source option KEY=VALUE")
    args = ap.parse_args()

    t0 = time.monotonic()
    from pyspark.sql import SparkSession
    from pyspark.sql.functions import col, from_json

    log = args.log or str(Path(args.progress).with_suffix(".spark.log"))
    log4j = Path(args.progress).with_suffix(".log4j2.properties")
    log4j.write_text(
        "\n".join(
            [
                "rootLogger.level = warn",
                "rootLogger.appenderRef.file.ref = file",
                "appender.file.type = File",
                "appender.file.name = file",
                f"appender.file.fileName = {log}",
                "appender.file.layout.type = PatternLayout",
                "appender.file.layout.pattern = %d{HH:mm:ss.SSS} %p %c: %m%n%ex",
                "",
            ]
        )
    )
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    spark = (
        SparkSession.builder.master("local[2]")
        .appName("stream-vs-spark")
        .config("spark.jars", ",".join(connector_jars(Path(args.jars_dir))))
        .config("spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile=file:{log4j}")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.memory", args.driver_memory)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.streaming.numRecentProgressUpdates", "1000000")
        .getOrCreate()
    )
    t_session = time.monotonic()

    reader = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", args.bootstrap)
        .option("subscribe", args.topic)
        .option("startingOffsets", "earliest" if args.mode == "backfill" else "latest")
        .option("failOnDataLoss", "true")
    )
    if args.max_offsets_per_trigger != "none":
        reader = reader.option("maxOffsetsPerTrigger", args.max_offsets_per_trigger)
    for kv in args.options:
        k, _, v = kv.partition("=")
        reader = reader.option(k, v)
    events = (
        reader.load()
        .select(from_json(col("value").cast("string"), SCHEMA).alias("e"), "partition", "offset")
        .select("e.*", "partition", "offset")
    )
    writer = (
        events.where("action = 'purchase' AND amount > 0")
        .writeStream.format("json")
        .option("path", args.output)
        .option("checkpointLocation", args.checkpoint)
    )
    if args.mode == "backfill":
        query = writer.trigger(availableNow=True).start()
        query.awaitTermination()
    else:
        query = writer.trigger(processingTime="0 seconds").start()
        deadline = time.monotonic() + args.max_seconds
        while time.monotonic() < deadline:
            if query.exception() is not None:
                break
            if sum(1 for p in query.recentProgress if p.numInputRows > 0) >= args.batches:
                break
            time.sleep(0.05)
        query.stop()
    t_query = time.monotonic()
    error = query.exception()
    progress = query.recentProgress
    with open(args.progress, "w") as f:
        for p in progress:
            f.write(p.json.replace("\n", " ") + "\n")
    spark.stop()
    print(
        json.dumps(
            {
                "spark_version": spark.version,
                "session_s": round(t_session - t0, 3),
                "query_s": round(t_query - t_session, 3),
                "batches": len(progress),
                "rows": sum(p.numInputRows for p in progress),
            }
        )
    )
    if error is not None:
        print(f"spark_stream_job: query failed: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
