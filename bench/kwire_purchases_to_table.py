"""The purchases job with kwire's Python table sinks, for side-by-side timing
with Spark (bench/spark_purchases_to_table.py): Kafka -> from_json (the
core's decoder) -> action = 'purchase' AND amount > 0 (pyarrow compute) ->
the event's columns with partition and offset, maxOffsetsPerTrigger 20000,
AvailableNow, exactly once into a Delta table, an Iceberg table (SQL catalog
on SQLite) or Parquet files.

Usage: python kwire_purchases_to_table.py BOOTSTRAP IN_TOPIC CHECKPOINT (delta|iceberg|parquet) OUT_DIR"""

import os
import sys
import time

import pyarrow.compute as pc

import kwire

bootstrap, source, checkpoint, kind, out = sys.argv[1:6]
if kind == "delta":
    sink = kwire.DeltaSink(out)
elif kind == "iceberg":
    os.makedirs(os.path.join(out, "warehouse"), exist_ok=True)
    sink = kwire.IcebergSink("bench.purchases", {"type": "sql", "uri": "sqlite:///" + os.path.join(out, "catalog.db"),
                                                 "warehouse": "file://" + os.path.join(out, "warehouse")})
else:
    sink = kwire.ParquetSink(out)


def purchases(t):
    keep = pc.and_(pc.equal(t["action"], "purchase"), pc.greater(t["amount"], 0))
    return t.filter(pc.fill_null(keep, False))


t0 = time.time()
q = kwire.stream(
    {"kafka.bootstrap.servers": bootstrap, "subscribe": source, "startingOffsets": "earliest",
     "maxOffsetsPerTrigger": "20000"},
    checkpoint=checkpoint, sink=sink, value_format="json",
    schema="user_id BIGINT, action STRING, amount DOUBLE, event_ts BIGINT",
    kafka_columns=["partition", "offset"], transform=purchases)
rows = sum(p["sink"]["numOutputRows"] for p in q.recent_progress)
print("kwire %s: %d batches, %d rows written in %.2f s" % (kind, len(q.recent_progress), rows, time.time() - t0))
