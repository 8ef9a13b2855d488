"""A streaming query into Parquet that kills itself (SIGKILL) at a chosen
point, for the exactly-once tests: python stream_child.py BOOTSTRAP TOPIC
CHECKPOINT OUTPUT [before_write:N | after_write:N | after_commit:N | none]."""

import os
import signal
import sys

import pyarrow.compute as pc

import kwire

bootstrap, topic, checkpoint, output = sys.argv[1:5]
kill_at = sys.argv[5] if len(sys.argv) > 5 else "none"
point, _, batch = kill_at.partition(":")
batch = int(batch) if batch else -1


def die():
    sys.stdout.flush()
    os.kill(os.getpid(), signal.SIGKILL)


class KillingParquetSink(kwire.ParquetSink):
    def write(self, table, batch_id):
        if point == "before_write" and batch_id == batch:
            die()
        n = super().write(table, batch_id)
        if point == "after_write" and batch_id == batch:
            die()
        return n


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
    sink=KillingParquetSink(output),
    trigger="available-now",
    value_format="json",
    schema="id INT, action STRING, amount DOUBLE",
    transform=lambda t: t.filter(pc.fill_null(pc.equal(t["action"], "purchase"), False)),
    on_progress=on_progress,
)
print("done", flush=True)
