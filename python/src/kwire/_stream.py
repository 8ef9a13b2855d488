"""Streaming queries: the C++ query (checkpoint, offsets, data-loss rules)
with batches handed to Python as pyarrow Tables and written by the sinks
below, exactly once per batch id."""

from __future__ import annotations

import datetime as _dt
import glob
import json
import math
import os
import secrets
import weakref
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence

import pyarrow as pa

from . import _kwire
from .errors import ConfigError


def _fsync_dir(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class _AtomicDirSink:
    """One file per batch, DIR/part-<batch id, 20 digits>.<ext>: written to a
    temp file in DIR, fsynced, renamed over the part file (so a replayed batch
    replaces its file) and DIR fsynced. Temp files left by a killed process
    are deleted when the next sink opens DIR."""

    ext = ""

    def __init__(self, path: str):
        self.path = os.path.abspath(path)
        os.makedirs(self.path, exist_ok=True)
        for stale in glob.glob(os.path.join(self.path, ".part-*.tmp")):
            os.unlink(stale)

    def part_path(self, batch_id: int) -> str:
        return os.path.join(self.path, "part-%020d.%s" % (batch_id, self.ext))

    def write(self, table: pa.Table, batch_id: int) -> int:
        final = self.part_path(batch_id)
        tmp = os.path.join(self.path, ".%s.%s.tmp" % (os.path.basename(final), secrets.token_hex(8)))
        try:
            self._write_file(table, tmp)
            fd = os.open(tmp, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(tmp, final)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise
        _fsync_dir(self.path)
        return table.num_rows

    def _write_file(self, table: pa.Table, path: str) -> None:  # pragma: no cover
        raise NotImplementedError

    def description(self) -> str:
        return "%s[%s]" % (type(self).__name__, self.path)


class ParquetSink(_AtomicDirSink):
    """Parquet files, one per batch (pyarrow.parquet), exactly once."""

    ext = "parquet"

    def __init__(self, path: str, compression: str = "snappy"):
        super().__init__(path)
        self.compression = compression

    def _write_file(self, table: pa.Table, path: str) -> None:
        import pyarrow.parquet as pq

        pq.write_table(table, path, compression=self.compression)


def _json_value(v: Any) -> Any:
    if isinstance(v, (bytes, bytearray)):
        return bytes(v).decode("utf-8", errors="replace")  # CAST(... AS STRING)
    if isinstance(v, _dt.datetime):
        if v.tzinfo is not None:
            v = v.astimezone(_dt.timezone.utc).replace(tzinfo=None)
        return v.isoformat(timespec="milliseconds") + "Z"
    if isinstance(v, float) and (math.isnan(v) or math.isinf(v)):
        return "NaN" if math.isnan(v) else ("Infinity" if v > 0 else "-Infinity")
    if isinstance(v, dict):
        return {k: _json_value(x) for k, x in v.items() if x is not None}
    if isinstance(v, list):
        return [_json_value(x) for x in v]
    return v


class JsonLinesSink(_AtomicDirSink):
    """JSON Lines files, one per batch, exactly once. Binary columns are
    written as strings (as CAST(... AS STRING)), timestamps as ISO-8601 UTC
    with milliseconds, null fields left out (Spark's JSON writer)."""

    ext = "jsonl"

    def _write_file(self, table: pa.Table, path: str) -> None:
        with open(path, "w", encoding="utf-8") as f:
            for row in table.to_pylist():
                f.write(json.dumps({k: _json_value(v) for k, v in row.items() if v is not None}, allow_nan=False))
                f.write("\n")


class KafkaSink:
    """Writes each batch to Kafka with the contract of Spark's Kafka sink
    (``df.writeStream.format("kafka")``): the table's columns ``value``
    (required; string or binary), ``key``, ``topic``, ``partition`` and
    ``headers`` (list of struct<key: string, value: binary>); options by
    Spark's names: ``kafka.bootstrap.servers`` (required), ``topic``
    (overrides the column), ``kafka.*`` producer properties.

    At-least-once by default, as Spark's. ``exactlyOnce=True`` (kwire's) makes
    every batch one Kafka transaction that also commits the source offsets
    (to the consumer group ``kwire-query-<query id>``): after any crash,
    ``isolation.level=read_committed`` readers see every row exactly once.
    A transform's Table with these columns is written without a Python loop.
    """

    def __init__(self, options: Mapping[str, Any]):
        self._native = _kwire.KafkaSink(dict(options))

    def write(self, table: pa.Table, batch_id: int) -> int:
        # The rows go to the producer now; the streaming query commits the
        # batch (waits for the acknowledgements, or commits the transaction).
        return self._native.write(table)

    @property
    def transactional_id(self) -> str:
        return self._native.transactional_id

    @property
    def batches_skipped(self) -> int:
        """Batches found committed to Kafka before a restart and not written again."""
        return self._native.batches_skipped

    def close(self) -> None:
        self._native.close()

    def description(self) -> str:
        return self._native.description


class PostgresSink:
    """Writes the source rows into a PostgreSQL table with COPY (libpq, in the
    C++ core: the same sink as ``kwire stream --sink postgres``), each batch
    in one database transaction that also records the query's progress, so
    that the table holds every row exactly once after any crash. Options:
    ``url`` (libpq URI or connection string; ``jdbc:postgresql://...`` is
    taken too), ``dbtable``, ``user``, ``password`` (better: PGPASSWORD or a
    ~/.pgpass file), ``upsertKey`` (comma-separated columns: upsert instead of
    append), ``progressTable`` (default kwire_progress). The columns are the
    Kafka columns, or with ``value_format="json"`` the schema's columns,
    ``_corrupt_record`` and the ``kafka_columns`` (the streaming query fills
    those in). A missing table is created. A transform cannot be used: the
    rows are written as read, in the core."""

    def __init__(self, options: Mapping[str, Any]):
        self.options = {k: str(v) for k, v in options.items()}
        self._native = None

    def _open(self, value_schema: Optional[str], kafka_columns: Optional[Sequence[str]]) -> Any:
        self._native = _kwire.PostgresSink(self.options, value_schema, list(kafka_columns) if kafka_columns else None)
        return self._native

    def write(self, table: pa.Table, batch_id: int) -> Optional[int]:
        return None  # the core wrote the batch's rows

    @property
    def batches_skipped(self) -> int:
        """Batches found committed to the table before a restart and not written again."""
        return self._native.batches_skipped if self._native is not None else 0

    def close(self) -> None:
        if self._native is not None:
            self._native.close()

    def description(self) -> str:
        return self._native.description if self._native is not None else "PostgresSink"


def write(data: Any, options: Mapping[str, Any]) -> int:
    """A batch write to Kafka, as ``df.write.format("kafka").options(...).save()``:
    every row of ``data`` (a pyarrow Table / RecordBatch / RecordBatchReader,
    or anything with ``__arrow_c_stream__``) with Spark's Kafka sink columns
    and options (see ``KafkaSink``). Returns the row count once every record
    is acknowledged; raises ConfigError (options, columns: Spark's texts) and
    the producer's errors."""
    sink = _kwire.KafkaSink(dict(options))
    try:
        sink.begin_batch(0)
        sink.write(data)
        return sink.commit_batch(0)
    finally:
        sink.close()


def _delta_sink(path: str) -> Any:
    from ._table_sinks import DeltaSink

    return DeltaSink(path)


_SINKS = {"parquet": ParquetSink, "json": JsonLinesSink, "jsonl": JsonLinesSink, "delta": _delta_sink}

_KAFKA_COLUMNS = ("key", "value", "topic", "partition", "offset", "timestamp", "timestampType", "headers")

Transform = Callable[[pa.Table], pa.Table]
ForeachBatch = Callable[[pa.Table, int], Any]


class StreamingQuery:
    """A streaming query (Spark's micro-batch semantics) over the C++ core.

    Each batch is read into Arrow, optionally decoded (``value_format="json"``
    with a Spark DDL ``schema``: from_json, PERMISSIVE, ``_corrupt_record``),
    passed through ``transform`` (Table -> Table), given to
    ``foreach_batch(table, batch_id)``, then written by the sink; only then
    is the batch committed in the checkpoint. After a crash the uncommitted
    batch is replayed with the same offsets and replaces its file.
    """

    def __init__(
        self,
        options: Mapping[str, Any],
        checkpoint: str,
        sink: Any = None,
        *,
        path: Optional[str] = None,
        trigger: str = "available-now",
        value_format: Optional[str] = None,
        schema: Optional[str] = None,
        transform: Optional[Transform] = None,
        foreach_batch: Optional[ForeachBatch] = None,
        on_progress: Optional[Callable[[Dict[str, Any]], Any]] = None,
        sink_options: Optional[Mapping[str, Any]] = None,
        kafka_columns: Optional[Sequence[str]] = None,
    ):
        if sink_options is not None and sink not in ("kafka", "postgres"):
            raise ConfigError("kwire: sink_options= is only used with sink='kafka' or sink='postgres'")
        if sink in ("kafka", "postgres"):
            if path:
                raise ConfigError("kwire: the %s sink takes sink_options=, not path=" % sink)
            sink = KafkaSink(sink_options or {}) if sink == "kafka" else PostgresSink(sink_options or {})
        elif isinstance(sink, str):
            if sink not in _SINKS:
                raise ConfigError("kwire: unknown sink %r (parquet, json, delta, kafka, postgres or a sink object)" % sink)
            if not path:
                raise ConfigError("kwire: sink %r needs path=" % sink)
            sink = _SINKS[sink](path)
        elif sink is None and path:
            raise ConfigError("kwire: path= given without a sink")
        if sink is None and foreach_batch is None:
            raise ConfigError("kwire: a streaming query needs a sink or foreach_batch")
        if value_format not in (None, "raw", "json"):
            raise ConfigError("kwire: value_format must be 'json' or None, not %r" % value_format)
        if value_format == "json" and not schema:
            raise ConfigError("kwire: value_format='json' needs schema= (Spark DDL)")
        if schema and value_format != "json":
            raise ConfigError("kwire: schema= is only used with value_format='json'")
        if kafka_columns is not None:
            if value_format != "json":
                raise ConfigError("kwire: kafka_columns= is only used with value_format='json'")
            kafka_columns = list(kafka_columns)
            unknown = [c for c in kafka_columns if c not in _KAFKA_COLUMNS]
            if unknown:
                raise ConfigError(
                    "kwire: unknown kafka_columns %s (the Kafka columns are %s)" % (unknown, ", ".join(_KAFKA_COLUMNS))
                )
        self._kafka_columns = kafka_columns or None
        if isinstance(sink, PostgresSink) and transform is not None:
            raise ConfigError(
                "kwire: the PostgreSQL sink writes the rows as read (Kafka columns, or value_format='json' columns "
                "and kafka_columns): transform= cannot be used with it; use a TransactionalSink for a transformed "
                "table"
            )
        row_sink = sink._open(schema if value_format == "json" else None, kafka_columns) if isinstance(
            sink, PostgresSink) else None
        self.sink = sink
        self.transform = transform
        self.foreach_batch = foreach_batch
        self._on_progress = on_progress
        self.recent_progress: List[Dict[str, Any]] = []
        # The C++ query holds the callback: a weak reference back to this
        # object keeps the two out of a cycle the garbage collector cannot see.
        me = weakref.ref(self)

        def on_batch(batches, schema_obj, batch_id, kafka_batches=None):
            return me()._batch(batches, schema_obj, batch_id, kafka_batches)

        self._q = _kwire.StreamingQuery(
            dict(options),
            os.fspath(checkpoint),
            trigger,
            schema if value_format == "json" else None,
            on_batch,
            sink._native if isinstance(sink, KafkaSink) else None,
            self._kafka_columns is not None,
            row_sink,
        )
        # The checkpoint's query id (its metadata file, Spark's format), for
        # the sinks that name their writes by it (table_sinks).
        with open(os.path.join(os.fspath(checkpoint), "metadata"), encoding="utf-8") as f:
            self.id: str = json.loads(f.readline())["id"]
        if hasattr(sink, "bind"):
            sink.bind(self.id, os.path.abspath(os.fspath(checkpoint)))

    def _batch(self, batches, schema_obj, batch_id: int, kafka_batches=None) -> int:
        schema = pa.schema(schema_obj)
        table = pa.Table.from_batches([pa.record_batch(b) for b in batches], schema=schema)
        if self._kafka_columns:
            kafka = pa.Table.from_batches([pa.record_batch(b) for b in kafka_batches])
            for name in self._kafka_columns:
                if name in table.column_names:
                    raise ConfigError(
                        "kwire: kafka_columns: '%s' is also a column of schema=; leave it out of one of them" % name
                    )
                if name not in kafka.column_names:
                    raise ConfigError("kwire: kafka_columns: '%s' needs the source option includeHeaders=true" % name)
                table = table.append_column(name, kafka[name])
        if self.transform is not None:
            table = self.transform(table)
            if not isinstance(table, pa.Table):
                raise TypeError("kwire: transform must return a pyarrow.Table, not %s" % type(table).__name__)
        if self.foreach_batch is not None:
            self.foreach_batch(table, batch_id)
        if self.sink is not None:
            kept = self.sink.write(table, batch_id)
            return table.num_rows if kept is None else int(kept)
        return table.num_rows

    def _progress(self, text: str) -> None:
        p = json.loads(text)
        self.recent_progress.append(p)
        del self.recent_progress[:-100]
        if self._on_progress is not None:
            self._on_progress(p)

    @property
    def last_progress(self) -> Optional[Dict[str, Any]]:
        return self.recent_progress[-1] if self.recent_progress else None

    @property
    def next_batch_id(self) -> int:
        return self._q.next_batch_id

    def run(self, max_batches: Optional[int] = None) -> "StreamingQuery":
        """Runs batches until the trigger ends (AvailableNow / Once: backlog
        read; ProcessingTime: ``stop()``, Ctrl-C or max_batches). The GIL is
        released while reading. Raises KafkaDataLossError, connection errors,
        CheckpointError and what the transform, foreach_batch or sink raise
        (the batch is then not committed and is replayed by the next run)."""
        self._q.run(max_batches, self._progress)
        return self

    def stop(self) -> None:
        """Ask ``run`` to return after the current batch (from another thread)."""
        self._q.stop()

    def close(self) -> None:
        """Releases the checkpoint (another query may then use it) and the
        Kafka connections; ``recent_progress`` stays readable."""
        self._q.close()
        if isinstance(self.sink, (KafkaSink, PostgresSink)):
            self.sink.close()  # its producer or connection; a later batch would open a new one

    def __enter__(self) -> "StreamingQuery":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def stream(
    options: Mapping[str, Any],
    checkpoint: str,
    sink: Any = None,
    *,
    path: Optional[str] = None,
    trigger: str = "available-now",
    value_format: Optional[str] = None,
    schema: Optional[str] = None,
    transform: Optional[Transform] = None,
    foreach_batch: Optional[ForeachBatch] = None,
    on_progress: Optional[Callable[[Dict[str, Any]], Any]] = None,
    max_batches: Optional[int] = None,
    sink_options: Optional[Mapping[str, Any]] = None,
    kafka_columns: Optional[Sequence[str]] = None,
) -> StreamingQuery:
    """Creates a StreamingQuery, runs it (``start().awaitTermination()``)
    and closes it (the checkpoint is free again); returns it, with
    ``recent_progress`` (Spark-like progress dicts).

    ``kafka_columns`` (with ``value_format="json"``): Kafka columns kept
    after the decoded ones, e.g. ``["key", "partition", "offset"]``.

    ``sink``: "parquet" or "json" (with ``path=``), "kafka" (with
    ``sink_options=``: Spark's Kafka sink options, see KafkaSink), a
    ParquetSink / JsonLinesSink / KafkaSink, or any object with ``write(table, batch_id) -> rows`` that
    is idempotent per batch id. ``trigger``: "available-now", "once",
    "processing-time=10 seconds".
    """
    q = StreamingQuery(
        options,
        checkpoint,
        sink,
        path=path,
        trigger=trigger,
        value_format=value_format,
        schema=schema,
        transform=transform,
        foreach_batch=foreach_batch,
        on_progress=on_progress,
        sink_options=sink_options,
        kafka_columns=kafka_columns,
    )
    try:
        return q.run(max_batches)
    finally:
        q.close()


__all__ = ["stream", "StreamingQuery", "ParquetSink", "JsonLinesSink", "KafkaSink", "write"]
