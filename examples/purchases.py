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

With --output-topic TOPIC the purchases go to Kafka instead, exactly once
(one transaction per batch, kwire's exactlyOnce): each purchase event as it
arrived (the JSON value), its key, and a header "source" holding
"<partition>:<offset>" of the event; read it with
isolation.level=read_committed.

Usage: purchases.py --bootstrap HOST:PORT --checkpoint DIR (--output DIR | --output-topic TOPIC)
                    [--topic user-events] [--max-offsets-per-trigger 20000]
                    [--trigger available-now|once|"processing-time=5 seconds"]
"""

import argparse
import sys

import pyarrow as pa
import pyarrow.compute as pc

import kwire

SCHEMA = "user_id STRING, action STRING, amount DOUBLE, ts TIMESTAMP"


def purchases(table):
    """where action = 'purchase' AND amount > 0 (null compares as false)."""
    keep = pc.and_(pc.equal(table["action"], "purchase"), pc.greater(table["amount"], 0))
    return table.filter(pc.fill_null(keep, False)).drop_columns(["_corrupt_record"])


def purchases_to_kafka(table):
    """The purchases as Kafka sink columns (key, value, headers), built with
    Arrow compute: no Python loop over the rows."""
    t = purchases(table).combine_chunks()
    n = t.num_rows
    source = pc.binary_join_element_wise(
        pc.cast(t["partition"], pa.string()), pc.cast(t["offset"], pa.string()), ":"
    ).combine_chunks()
    header = pa.StructArray.from_arrays(
        [pa.repeat("source", n).cast(pa.string()), pc.cast(source, pa.binary())], names=["key", "value"]
    )
    headers = pa.ListArray.from_arrays(pa.array(range(n + 1), pa.int32()), header)
    return pa.table({"key": t["key"], "value": t["value"], "headers": headers})


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bootstrap", default="127.0.0.1:19092")
    ap.add_argument("--topic", default="user-events")
    ap.add_argument("--checkpoint", required=True)
    out = ap.add_mutually_exclusive_group(required=True)
    out.add_argument("--output", help="folder of Parquet files")
    out.add_argument("--output-topic", help="Kafka topic, written exactly once")
    ap.add_argument("--max-offsets-per-trigger", default="20000")
    ap.add_argument("--trigger", default="available-now")
    args = ap.parse_args(argv)

    if args.output_topic:
        sink = dict(
            sink="kafka",
            sink_options={"kafka.bootstrap.servers": args.bootstrap, "topic": args.output_topic, "exactlyOnce": True},
            kafka_columns=["key", "value", "partition", "offset"],
            transform=purchases_to_kafka,
        )
    else:
        sink = dict(sink="parquet", path=args.output, transform=purchases)
    q = kwire.stream(
        {
            "kafka.bootstrap.servers": args.bootstrap,
            "subscribe": args.topic,
            "startingOffsets": "earliest",
            "maxOffsetsPerTrigger": args.max_offsets_per_trigger,
        },
        checkpoint=args.checkpoint,
        trigger=args.trigger,
        value_format="json",
        schema=SCHEMA,
        **sink,
        on_progress=lambda p: print(
            "batch %d: %d rows in, %d out" % (p["batchId"], p["numInputRows"], p["sink"].get("numOutputRows", -1)),
            file=sys.stderr,
        ),
    )
    print("%d batches" % len(q.recent_progress), file=sys.stderr)


if __name__ == "__main__":
    main()
