#!/usr/bin/env python3
"""The headline job of Spark's Kafka source, with kwire:

    events = (spark.readStream.format("kafka")
              .option("kafka.bootstrap.servers", bootstrap)
              .option("subscribe", "user-events")
              .option("startingOffsets", "earliest")
              .option("maxOffsetsPerTrigger", 20000)
              .load()
              .select(from_json(col("value").cast("string"), schema).alias("e"))
              .select("e.*"))
    (events.where("action = 'purchase' AND amount > 0")
           .writeStream.format("parquet").option("path", out)
           .option("checkpointLocation", checkpoint)
           .trigger(availableNow=True).start().awaitTermination())

Each micro-batch becomes one Parquet file, OUTPUT/part-<batch id>.parquet,
written atomically; a batch replayed after a crash replaces its file, so
every purchase is in the output exactly once.

Usage: purchases.py --bootstrap HOST:PORT --checkpoint DIR --output DIR
                    [--topic user-events] [--max-offsets-per-trigger 20000]
                    [--trigger available-now|once|"processing-time=5 seconds"]
"""

import argparse
import sys

import pyarrow.compute as pc

import kwire

SCHEMA = "user_id STRING, action STRING, amount DOUBLE, ts TIMESTAMP"


def purchases(table):
    """where action = 'purchase' AND amount > 0 (null compares as false)."""
    keep = pc.and_(pc.equal(table["action"], "purchase"), pc.greater(table["amount"], 0))
    return table.filter(pc.fill_null(keep, False)).drop_columns(["_corrupt_record"])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bootstrap", default="127.0.0.1:19092")
    ap.add_argument("--topic", default="user-events")
    ap.add_argument("--checkpoint", required=True)
    ap.add_argument("--output", required=True)
    ap.add_argument("--max-offsets-per-trigger", default="20000")
    ap.add_argument("--trigger", default="available-now")
    args = ap.parse_args(argv)

    q = kwire.stream(
        {
            "kafka.bootstrap.servers": args.bootstrap,
            "subscribe": args.topic,
            "startingOffsets": "earliest",
            "maxOffsetsPerTrigger": args.max_offsets_per_trigger,
        },
        checkpoint=args.checkpoint,
        sink="parquet",
        path=args.output,
        trigger=args.trigger,
        value_format="json",
        schema=SCHEMA,
        transform=purchases,
        on_progress=lambda p: print(
            "batch %d: %d rows in, %d out" % (p["batchId"], p["numInputRows"], p["sink"].get("numOutputRows", -1)),
            file=sys.stderr,
        ),
    )
    print("%d batches" % len(q.recent_progress), file=sys.stderr)


if __name__ == "__main__":
    main()
