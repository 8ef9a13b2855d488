"""kwire: Kafka reads into Apache Arrow with the semantics of Spark's Kafka source.

- ``read(options)``: a batch query (``spark.read.format("kafka")``'s options)
  into a ``pyarrow.Table`` with Spark's Kafka columns;
- ``Consumer(properties)``: assign / seek / poll returning
  ``pyarrow.RecordBatch``, and the offset look-ups of Java's consumer;
- ``ShareConsumer(properties)``: a share-group member (KIP-932) whose polls
  return record batches with a ``deliveryCount`` column, acknowledged whole
  or row by row (accept, release, reject);
- ``stream(options, checkpoint=..., sink=...)``: a streaming query
  (``spark.readStream.format("kafka")``) with a checkpoint, exactly-once into
  JSON Lines or Parquet files, or into Kafka (``sink="kafka"``);
- ``write(table, options)``: a batch write to Kafka
  (``df.write.format("kafka")``'s columns and options).

Record batches come from the C++ core through the Arrow C Data Interface
(PyCapsule protocol): pyarrow, polars and DuckDB take them without copies.
"""

from __future__ import annotations

import atexit
import json
from typing import Any, Dict, Iterable, List, Mapping, Optional, Tuple

import pyarrow as pa

from . import _kwire, errors
from .errors import (
    AuthenticationError,
    CheckpointError,
    ConfigError,
    CorruptBatchError,
    InvalidRecordStateError,
    KafkaConnectionError,
    KafkaDataLossError,
    KafkaError,
    KafkaTimeoutError,
    KwireError,
    LogTruncationError,
    MalformedRecordError,
    OffsetError,
    OffsetOutOfRangeError,
    ProducerFatalError,
    ProducerFencedError,
    SchemaRegistryError,
    ShareAcknowledgementModeError,
    TransactionAbortableError,
    TransactionAbortedError,
    TransactionStateError,
)
from ._stream import JsonLinesSink, KafkaSink, ParquetSink, PostgresSink, StreamingQuery, stream, write
from ._share import ShareConsumer
from ._avro import AvroReader, AvroWriter, from_avro, to_avro
from ._protobuf import ProtobufReader, ProtobufWriter, from_protobuf, to_protobuf
from ._table_sinks import BatchInfo, DeltaSink, IcebergSink, TransactionalSink

__version__: str = _kwire.__version__  # the project() version of the top-level CMakeLists.txt

# The core's warnings (data loss skipped with failOnDataLoss=false, option
# warnings, retried look-ups) go to logging.getLogger("kwire") at WARNING;
# with no logging configured Python prints them on stderr. Back to plain
# stderr while the interpreter shuts down.
_kwire.set_python_warnings(True)
atexit.register(_kwire.set_python_warnings, False)

TopicPartition = Tuple[str, int]


def kafka_schema(include_headers: bool = False) -> pa.Schema:
    """Spark's Kafka source schema as a pyarrow.Schema."""
    return pa.schema(_kwire.kafka_schema(include_headers))


def read_arrow(options: Mapping[str, Any]) -> "_kwire.ArrowStream":
    """The batch query's result as an object with ``__arrow_c_stream__``
    (for polars.DataFrame(obj), duckdb, pyarrow.table(obj)); read once."""
    stream_obj, _info = _kwire.read(dict(options))
    return stream_obj


def read(options: Mapping[str, Any], *, return_info: bool = False):
    """Batch query with Spark's batch options (``kafka.bootstrap.servers``,
    ``subscribe`` / ``subscribePattern`` / ``assign``, ``startingOffsets``,
    ``endingOffsets``, ``failOnDataLoss``, ``includeHeaders``, ...).

    Returns a pyarrow.Table with Spark's Kafka columns (see ``kafka_schema``);
    with ``return_info=True``, ``(table, info)`` where info has the row count,
    dataLoss / offsetOutOfRange counters, warnings and the plan (a dict).
    Raises ConfigError for bad options, KafkaDataLossError
    (failOnDataLoss=true), OffsetError, connection and timeout errors.
    The GIL is released while reading; Ctrl-C stops the read.
    """
    stream_obj, info = _kwire.read(dict(options))
    table = pa.RecordBatchReader.from_stream(stream_obj).read_all()
    if return_info:
        info = dict(info)
        info["plan"] = json.loads(info["plan"])
        return table, info
    return table


def plan(options: Mapping[str, Any]) -> Dict[str, Any]:
    """The batch query's plan without reading: resolved start / end offsets
    and the offset ranges ``[fromOffset, untilOffset)`` Spark would read."""
    return json.loads(_kwire.plan(dict(options)))


def _partitions(partitions: Iterable[TopicPartition]) -> List[Tuple[str, int]]:
    out = []
    for p in partitions:
        topic, partition = p
        out.append((str(topic), int(partition)))
    return out


class Consumer:
    """A consumer without a group, with Java's property names
    (``bootstrap.servers``, ``auto.offset.reset``, ``max.poll.records``,
    ``security.protocol``, ``sasl.*``, ``ssl.*``, ...).

    Partitions are ``(topic, partition)`` tuples. ``poll`` returns a
    pyarrow.RecordBatch with Spark's Kafka columns (headers with
    ``include_headers=True``), empty on timeout. Use as a context manager or
    call ``close()``. Not thread-safe: use one consumer per thread.
    """

    def __init__(self, properties: Mapping[str, Any], *, include_headers: bool = False):
        self._c = _kwire.Consumer(dict(properties), include_headers)
        self._schema = pa.schema(self._c.schema())

    @property
    def schema(self) -> pa.Schema:
        return self._schema

    def assign(self, partitions: Iterable[TopicPartition]) -> None:
        self._c.assign(_partitions(partitions))

    def assignment(self) -> List[TopicPartition]:
        return [tuple(p) for p in self._c.assignment()]

    def seek(self, partition: TopicPartition, offset: int) -> None:
        topic, p = partition
        self._c.seek(topic, int(p), int(offset))

    def seek_to_beginning(self, partitions: Iterable[TopicPartition]) -> None:
        self._c.seek_to_beginning(_partitions(partitions))

    def seek_to_end(self, partitions: Iterable[TopicPartition]) -> None:
        self._c.seek_to_end(_partitions(partitions))

    def position(self, partition: TopicPartition) -> int:
        topic, p = partition
        return self._c.position(topic, int(p))

    def pause(self, partitions: Iterable[TopicPartition]) -> None:
        self._c.pause(_partitions(partitions))

    def resume(self, partitions: Iterable[TopicPartition]) -> None:
        self._c.resume(_partitions(partitions))

    def poll_arrow(self, timeout_ms: int = 1000):
        """As poll, but the raw batch object (``__arrow_c_array__``, once)."""
        return self._c.poll(int(timeout_ms))

    def poll(self, timeout_ms: int = 1000) -> pa.RecordBatch:
        """Waits up to timeout_ms for records (at most max.poll.records);
        the GIL is released while waiting; Ctrl-C interrupts it. Raises
        OffsetOutOfRangeError (auto.offset.reset=none), CorruptBatchError,
        KafkaError."""
        return pa.record_batch(self._c.poll(int(timeout_ms)))

    def beginning_offsets(self, partitions: Iterable[TopicPartition]) -> Dict[TopicPartition, int]:
        return dict(self._c.beginning_offsets(_partitions(partitions)))

    def end_offsets(self, partitions: Iterable[TopicPartition]) -> Dict[TopicPartition, int]:
        return dict(self._c.end_offsets(_partitions(partitions)))

    def offsets_for_times(
        self, timestamps: Mapping[TopicPartition, int]
    ) -> Dict[TopicPartition, Optional[Tuple[int, int]]]:
        """For each partition, (offset, timestamp) of the earliest record with
        a timestamp >= the one given (ms), or None."""
        query = [(str(tp[0]), int(tp[1]), int(ts)) for tp, ts in timestamps.items()]
        return dict(self._c.offsets_for_times(query))

    def close(self) -> None:
        self._c.close()

    def __enter__(self) -> "Consumer":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


__all__ = [
    "read",
    "read_arrow",
    "plan",
    "kafka_schema",
    "Consumer",
    "ShareConsumer",
    "from_avro",
    "to_avro",
    "AvroReader",
    "AvroWriter",
    "from_protobuf",
    "to_protobuf",
    "ProtobufReader",
    "ProtobufWriter",
    "stream",
    "StreamingQuery",
    "ParquetSink",
    "JsonLinesSink",
    "KafkaSink",
    "PostgresSink",
    "DeltaSink",
    "IcebergSink",
    "TransactionalSink",
    "BatchInfo",
    "write",
    *errors.__all__,
]

#: The client's producer (Java property names; idempotent by default):
#: send(topic, value=None, key=None, partition=None, headers=None,
#: timestamp=None); produce_arrow(table_or_batch, topic=None) sends every row
#: of an Arrow table/record batch/stream with Spark's Kafka sink columns
#: (value required; key, topic, partition, headers optional; topic= overrides
#: the column) and returns the row count; flush(); close(). With
#: transactional.id: init_transactions(), begin_transaction(),
#: send_offsets_to_transaction({(topic, partition): offset}, group_id, ...),
#: commit_transaction(), abort_transaction().
Producer = _kwire.Producer
#: Administration: create_topics([(name, partitions)], if_not_exists,
#: configs), delete_topics([names]), delete_records([(topic, partition, before)]),
#: alter_configs(resource_type, name, {key: value or None}) (IncrementalAlterConfigs;
#: resource_type "topic", "broker", "group", ...; None removes a key).
Admin = _kwire.Admin
__all__ += ["Producer", "Admin"]
