"""A streaming query that kills itself (SIGKILL) at a chosen point, for the
exactly-once tests: python stream_child.py BOOTSTRAP TOPIC CHECKPOINT OUTPUT
[before_write:N | after_write:N | after_commit:N | none]. The sink is
Parquet files in OUTPUT (SINK=parquet-partitioned: partitioned by amount), or with SINK=delta a Delta table at OUTPUT, or with
SINK=iceberg the Iceberg table "kwire.purchases" of a SQL catalog on SQLite
in OUTPUT. MAX_OFFSETS sets maxOffsetsPerTrigger (default 20); TRIGGER the
trigger (default available-now)."""

import os
import signal
import sys

import pyarrow.compute as pc

import kwire

bootstrap, topic, checkpoint, output = sys.argv[1:5]
kill_at = sys.argv[5] if len(sys.argv) > 5 else "none"
point, _, batch = kill_at.partition(":")
batch = int(batch) if batch else -1
kind = os.environ.get("SINK", "parquet")


def die():
    sys.stdout.flush()
    os.kill(os.getpid(), signal.SIGKILL)


def iceberg_catalog(output):
    os.makedirs(os.path.join(output, "warehouse"), exist_ok=True)
    return {"type": "sql", "uri": "sqlite:///" + os.path.join(output, "catalog.db"),
            "warehouse": "file://" + os.path.join(output, "warehouse")}


if kind == "delta":
    inner = kwire.DeltaSink(output, partition_by=["action"])
elif kind == "iceberg":
    inner = kwire.IcebergSink("kwire.purchases", iceberg_catalog(output), partition_by=["action"])
elif kind == "parquet-partitioned":
    inner = kwire.ParquetSink(output, partition_by=["amount"])
else:
    inner = kwire.ParquetSink(output)


class KillingSink:
    def bind(self, query_id, checkpoint):
        if hasattr(inner, "bind"):
            inner.bind(query_id, checkpoint)

    def write(self, table, batch_id):
        if point == "before_write" and batch_id == batch:
            die()
        n = inner.write(table, batch_id)
        if point == "after_write" and batch_id == batch:
            die()
        return n

    def description(self):
        return inner.description()


def on_progress(p):
    print("batch", p["batchId"], p["numInputRows"], flush=True)
    if point == "after_commit" and p["batchId"] == batch:
        die()


kwire.stream(
    {
        "kafka.bootstrap.servers": bootstrap,
        "subscribe": topic,
        "startingOffsets": "earliest",
        "maxOffsetsPerTrigger": os.environ.get("MAX_OFFSETS", "20"),
    },
    checkpoint=checkpoint,
    sink=KillingSink(),
    trigger=os.environ.get("TRIGGER", "available-now"),
    value_format="json",
    schema="id INT, action STRING, amount DOUBLE",
    transform=lambda t: t.filter(pc.fill_null(pc.equal(t["action"], "purchase"), False)),
    on_progress=on_progress,
)
print("done", flush=True)
