"""Streaming queries: the C++ query (checkpoint, offsets, data-loss rules)
with batches handed to Python as pyarrow Tables and written by the sinks
below, exactly once per batch id."""

from __future__ import annotations

import datetime as _dt
import glob
import json
import math
import os
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
    """One file per batch, DIR/part-<batch id, 20 digits>.<ext>, by the one
    part-file writer of kwire (its C++ core): written to a temp file beside
    it, fsynced, renamed over the part file (so a replayed batch replaces its
    file) and its folder fsynced. Temp files left by a killed process are
    deleted when the next sink opens DIR."""

    ext = ""

    def __init__(self, path: str):
        self.path = os.path.abspath(path)
        os.makedirs(self.path, exist_ok=True)
        # (partitioned sinks write in subdirectories: those are searched too)
        for folder, _, _ in os.walk(self.path):
            _kwire.remove_stale_temp_files(folder)

    def part_path(self, batch_id: int) -> str:
        return os.path.join(self.path, "part-%020d.%s" % (batch_id, self.ext))

    def write(self, table: pa.Table, batch_id: int) -> int:
        self._write_atomic(table, self.part_path(batch_id))
        return table.num_rows

    def _write_atomic(self, table: pa.Table, final: str) -> None:
        """`table` into the file `final`, durable there on return."""
        f = _kwire.AtomicFile(final)
        try:
            self._write_file(table, f)
            f.commit()
        finally:
            f.abort()  # the temp file, unless committed

    def _write_file(self, table: pa.Table, f: Any) -> None:  # pragma: no cover
        raise NotImplementedError

    def description(self) -> str:
        return "%s[%s]" % (type(self).__name__, self.path)


# Characters Spark escapes (as %XX) in a partition directory's value
# (ExternalCatalogUtils.escapePathName), besides control characters.
_HIVE_ESCAPED = set('"#%\'*/:=?\\\x7f{[]^')
_HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"


def _hive_text(v: Any) -> str:
    """A partition value as Spark casts it to a string."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        if math.isnan(v):
            return "NaN"
        if math.isinf(v):
            return "Infinity" if v > 0 else "-Infinity"
        return repr(v)
    if isinstance(v, _dt.datetime):
        if v.tzinfo is not None:
            v = v.astimezone(_dt.timezone.utc).replace(tzinfo=None)
        text = v.strftime("%Y-%m-%d %H:%M:%S")
        if v.microsecond:
            text += (".%06d" % v.microsecond).rstrip("0")
        return text
    if isinstance(v, _dt.date):
        return v.isoformat()
    if isinstance(v, (bytes, bytearray)):
        return bytes(v).decode("utf-8", errors="replace")  # CAST(... AS STRING)
    return str(v)


def _hive_segment(name: str, v: Any) -> str:
    """name=value with Spark's escaping; null and "" give Hive's default
    partition."""
    text = None if v is None else _hive_text(v)
    if not text:
        text = _HIVE_NULL
    else:
        text = "".join("%%%02X" % ord(c) if c in _HIVE_ESCAPED or ord(c) < 0x20 else c for c in text)
    return "%s=%s" % (name, text)


class ParquetSink(_AtomicDirSink):
    """Parquet files, one per batch (pyarrow.parquet), exactly once.

    With ``partition_by`` (a column name or a list of them), each batch's
    rows go to Hive-style directories as Spark's ``partitionBy`` writes them:
    DIR/<col>=<value>/.../part-<batch id>.parquet, the partition columns
    left out of the files, values escaped as Spark escapes them, null or
    empty values under ``__HIVE_DEFAULT_PARTITION__``. Each file is written
    atomically; a replayed batch first removes the files it wrote before,
    so a reader of the directory after the batch sees every row once (while
    a batch is written, a reader may see some of its partitions only). Read it back with ``pyarrow.dataset.dataset(DIR,
    partitioning="hive")`` or Spark's ``spark.read.parquet(DIR)``."""

    ext = "parquet"

    def __init__(self, path: str, compression: str = "snappy", partition_by: Optional[Sequence[str]] = None):
        super().__init__(path)
        self.compression = compression
        if isinstance(partition_by, str):
            partition_by = [partition_by]
        self.partition_by = list(partition_by or [])
        self._replay_checked = False
        if len(set(self.partition_by)) != len(self.partition_by):
            raise ConfigError("kwire: partition_by names a column twice: %r" % (self.partition_by,))

    def write(self, table: pa.Table, batch_id: int) -> int:
        if not self.partition_by:
            return super().write(table, batch_id)
        missing = [c for c in self.partition_by if c not in table.column_names]
        if missing:
            raise ConfigError("kwire: partition_by column %r is not in the batch's columns %r"
                              % (missing[0], table.column_names))
        data_columns = [c for c in table.column_names if c not in self.partition_by]
        if not data_columns:
            raise ConfigError("kwire: partition_by takes every column; no data column would be written")
        if not self._replay_checked:
            # Only a query's first batch after a start can be a replay: its
            # files from before are removed wherever they are, so that a
            # transform whose partition values changed leaves no stale rows.
            self._replay_checked = True
            name = "part-%020d.%s" % (batch_id, self.ext)
            for stale in glob.glob(os.path.join(self.path, "**", name), recursive=True):
                os.unlink(stale)
        if table.num_rows == 0:
            return 0
        # Every row goes to exactly one group (nulls and NaN included): the
        # groups hold row numbers, and the rows are taken by number.
        numbered = table.select(self.partition_by).append_column("__kwire_row", pa.array(range(table.num_rows),
                                                                                           pa.int64()))
        groups = numbered.group_by(self.partition_by, use_threads=False).aggregate([("__kwire_row", "list")])
        keys = groups.select(self.partition_by).to_pylist()
        rows = groups.column("__kwire_row_list").to_pylist()
        # Groups that name the same directory (null and "") share its file.
        by_dir: Dict[str, List[int]] = {}
        for key, index in zip(keys, rows):
            sub = os.path.join(self.path, *[_hive_segment(c, key[c]) for c in self.partition_by])
            by_dir.setdefault(sub, []).extend(index)
        data = table.select(data_columns)
        for sub, index in by_dir.items():
            os.makedirs(sub, exist_ok=True)
            part = data.take(pa.array(sorted(index), pa.int64()))
            self._write_atomic(part, os.path.join(sub, "part-%020d.%s" % (batch_id, self.ext)))
        # Each file's commit fsyncs its own folder; the folders above it hold
        # the entries of the folders made here.
        above = set()
        for sub in by_dir:
            d = os.path.dirname(sub)
            while d.startswith(self.path) and d not in above:
                above.add(d)
                d = os.path.dirname(d)
        for d in sorted(above, key=len, reverse=True):
            _fsync_dir(d)
        return table.num_rows

    def _write_file(self, table: pa.Table, f: Any) -> None:
        import pyarrow.parquet as pq

        pq.write_table(table, f, compression=self.compression)


class JsonLinesSink(_AtomicDirSink):
    """JSON Lines files, one per batch, exactly once, written by kwire's one
    record writer (its C++ core, as ``kwire stream --sink jsonl:DIR``) with
    Spark's JSON writer's rules: binary columns as text (CAST(... AS
    STRING)), timestamps as ISO-8601 UTC with milliseconds, dates, decimals,
    lists, maps and structs as Spark writes them, null fields left out."""

    ext = "jsonl"

    def _write_atomic(self, table: pa.Table, final: str) -> None:
        _kwire.write_json_lines(final, table)


def _column_encoder(column: str, fmt: Optional[str], options: Optional[Mapping[str, Any]],
                    topic: Optional[str]) -> Any:
    """KafkaSink's encoder of its `column` ("key" or "value"): an AvroWriter
    or ProtobufWriter whose registry subject defaults to <topic>-<column>."""
    if fmt not in (None, "avro", "protobuf"):
        raise ConfigError("kwire: KafkaSink %s_format must be 'avro', 'protobuf' or None, not %r" % (column, fmt))
    if fmt is None:
        if options is not None:
            raise ConfigError("kwire: KafkaSink %s_options= needs %s_format='avro' or 'protobuf'" % (column, column))
        return None
    opts = {str(k): v for k, v in (options or {}).items()}
    if opts.setdefault("column", column) != column:
        raise ConfigError("kwire: KafkaSink %s_options: column=%r, but these options encode the %s"
                          % (column, opts["column"], column))
    if fmt == "avro":
        from ._avro import AvroWriter

        return AvroWriter(options=opts, topic=topic)
    from ._protobuf import ProtobufWriter

    return ProtobufWriter(options=opts, topic=topic)


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

    ``value_format="avro"`` or ``"protobuf"`` (kwire's) encodes the value of
    each row first, as ``to_avro`` / ``to_protobuf`` with ``value_options``
    (their options: ``jsonFormatSchema``, ``messageName``, ``descFilePath``,
    ``schema.registry.url``, ``subject``, ``auto.register.schemas``,
    ``use.latest.version``...): the value is the ``value`` column when it is
    a struct, else every column but ``key``, ``topic``, ``partition`` and
    ``headers``. ``key_format`` / ``key_options`` encode the ``key`` column
    the same way (a struct key gives the record's fields, any other key is
    the value of a non-record schema such as ``"string"``). With a registry
    the subject is ``<topic>-value`` (``<topic>-key`` for the key) for the
    ``topic`` option (Confluent's TopicNameStrategy) unless ``subject``. A
    null ``key`` or struct ``value`` stays null (no key, a tombstone), as
    Spark's ``to_avro`` / ``to_protobuf`` give null for null.
    """

    _KAFKA = ("key", "topic", "partition", "headers")

    def __init__(
        self,
        options: Mapping[str, Any],
        value_format: Optional[str] = None,
        value_options: Optional[Mapping[str, Any]] = None,
        key_format: Optional[str] = None,
        key_options: Optional[Mapping[str, Any]] = None,
    ):
        topic = options.get("topic")
        value_encoder = _column_encoder("value", value_format, value_options, topic)
        key_encoder = _column_encoder("key", key_format, key_options, topic)
        self._native = _kwire.KafkaSink(dict(options))
        self._encoders = [(c, e) for c, e in (("key", key_encoder), ("value", value_encoder)) if e is not None]

    def _encode(self, table: pa.Table, column: str, encoder: Any) -> pa.Table:
        """`table` with `column` replaced by its rows encoded (see the class)."""
        source: Optional[pa.Array] = None
        if column in table.column_names and (column == "key" or pa.types.is_struct(table.schema.field(column).type)):
            source = table.column(column).combine_chunks()
            if pa.types.is_struct(source.type):
                rows = pa.Table.from_arrays(source.flatten(), schema=pa.schema(list(source.type)))
            else:
                rows = pa.table({column: source})
        elif column == "key":
            raise ConfigError("kwire: KafkaSink key_format= needs a 'key' column")
        else:
            rows = table.drop_columns([c for c in table.column_names if c in self._KAFKA])
        if source is not None and source.null_count:
            # Null stays null (no key, a tombstone): only the other rows are encoded.
            import pyarrow.compute as pc

            valid = pc.is_valid(source)
            encoded = encoder.encode(rows.filter(valid)).combine_chunks()
            encoded = pc.replace_with_mask(pa.nulls(len(source), encoded.type), valid, encoded)
        else:
            encoded = encoder.encode(rows)
        if column == "key":
            return table.set_column(table.column_names.index("key"), "key", encoded)
        kept = table.select([c for c in table.column_names if c in self._KAFKA])
        return kept.append_column("value", encoded)

    def write(self, table: pa.Table, batch_id: int) -> int:
        # The rows go to the producer now; the streaming query commits the
        # batch (waits for the acknowledgements, or commits the transaction).
        for column, encoder in self._encoders:
            table = self._encode(table, column, encoder)
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
        value_options: Optional[Mapping[str, Any]] = None,
        key_format: Optional[str] = None,
        key_options: Optional[Mapping[str, Any]] = None,
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
        if value_format not in (None, "raw", "json", "avro", "protobuf"):
            raise ConfigError("kwire: value_format must be 'json', 'avro', 'protobuf' or None, not %r" % value_format)
        if value_options is not None and value_format not in ("avro", "protobuf"):
            raise ConfigError("kwire: value_options= is only used with value_format='avro' or 'protobuf'")
        self._avro = None  # the decoder of Avro or Protobuf values
        if value_format in ("avro", "protobuf"):
            if isinstance(sink, PostgresSink):
                raise ConfigError("kwire: the PostgreSQL sink takes the Kafka columns or value_format='json'; "
                                  "use a TransactionalSink for Avro or Protobuf values")
            subscribed = str(options.get("subscribe", ""))
            topic = subscribed if subscribed and "," not in subscribed else None
            if value_format == "avro":
                from ._avro import AvroReader

                self._avro = AvroReader(schema, value_options, topic)
            else:
                from ._protobuf import ProtobufReader

                if schema is not None:
                    raise ConfigError("kwire: value_format='protobuf' takes value_options= (messageName, "
                                      "descFilePath or schema.registry.url), not schema=")
                self._avro = ProtobufReader(options=value_options, topic=topic)
        self._value_format = value_format
        self._key = None  # the decoder of Avro or Protobuf keys
        if key_format not in (None, "avro", "protobuf"):
            raise ConfigError("kwire: key_format must be 'avro', 'protobuf' or None, not %r" % key_format)
        if key_options is not None and key_format is None:
            raise ConfigError("kwire: key_options= is only used with key_format='avro' or 'protobuf'")
        if key_format is not None:
            if isinstance(sink, PostgresSink):
                raise ConfigError("kwire: the PostgreSQL sink takes the Kafka columns or value_format='json'; "
                                  "use a TransactionalSink for Avro or Protobuf keys")
            subscribed = str(options.get("subscribe", ""))
            topic = subscribed if subscribed and "," not in subscribed else None
            opts = dict(key_options or {}, column="key")
            if key_format == "avro":
                from ._avro import AvroReader

                self._key = AvroReader(options=opts, topic=topic)
            else:
                from ._protobuf import ProtobufReader

                self._key = ProtobufReader(options=opts, topic=topic)
        if value_format == "json" and not schema:
            raise ConfigError("kwire: value_format='json' needs schema= (Spark DDL)")
        if schema and value_format not in ("json", "avro", "protobuf"):
            raise ConfigError("kwire: schema= is only used with value_format='json' or 'avro'")
        if kafka_columns is not None:
            if value_format not in ("json", "avro", "protobuf"):
                raise ConfigError("kwire: kafka_columns= is only used with value_format='json', 'avro' or 'protobuf'")
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
            (self._kafka_columns is not None or self._key is not None) and value_format == "json",
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
        kafka = None
        if self._avro is not None:  # the batch has the Kafka columns: decode its values
            kafka = table
            table = self._avro.decode(kafka)
        if self._kafka_columns:
            if kafka is None:
                kafka = pa.Table.from_batches([pa.record_batch(b) for b in kafka_batches])
            for name in self._kafka_columns:
                if name in table.column_names:
                    raise ConfigError(
                        "kwire: kafka_columns: '%s' is also a column of schema=; leave it out of one of them" % name
                    )
                if name not in kafka.column_names:
                    raise ConfigError("kwire: kafka_columns: '%s' needs the source option includeHeaders=true" % name)
                table = table.append_column(name, kafka[name])
        if self._key is not None:
            # The decoded key: in place of a raw key column, else added.
            from ._avro import decoded_column

            if kafka is None:
                kafka = table if self._value_format in (None, "raw") else pa.Table.from_batches(
                    [pa.record_batch(b) for b in kafka_batches])
            key = decoded_column(self._key, self._key.decode_rows(kafka))
            if "key" in table.column_names:
                table = table.set_column(table.column_names.index("key"), "key", key)
            else:
                table = table.append_column("key", key)
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
        Kafka connections; ``recent_progress`` stays readable. Called from
        another thread while ``run`` is in progress, it asks the run to stop
        and waits until it has returned (after the current batch) first."""
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
    value_options: Optional[Mapping[str, Any]] = None,
    key_format: Optional[str] = None,
    key_options: Optional[Mapping[str, Any]] = None,
) -> StreamingQuery:
    """Creates a StreamingQuery, runs it (``start().awaitTermination()``)
    and closes it (the checkpoint is free again); returns it, with
    ``recent_progress`` (Spark-like progress dicts).

    ``kafka_columns`` (with ``value_format="json"`` or ``"avro"``): Kafka
    columns kept after the decoded ones, e.g. ``["key", "partition", "offset"]``.

    ``value_format="avro"``: the values are decoded as ``kwire.from_avro``
    does, with ``schema=`` the writer's Avro schema (plain Avro) and/or
    ``value_options=`` (``schema.registry.url``, ``mode``, ``avroSchema``...);
    the registry is asked for each schema id once per query.
    ``value_format="protobuf"``: as ``kwire.from_protobuf``, with
    ``value_options=`` (``messageName`` and ``descFilePath``, or
    ``schema.registry.url``; Spark's from_protobuf options).
    ``key_format="avro"`` or ``"protobuf"`` with ``key_options=`` decodes
    the ``key`` column the same way (registry subject ``"<topic>-key"``): the
    decoded key (a struct for a record or message) replaces the raw key, or
    is added as ``key``.

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
        value_options=value_options,
        key_format=key_format,
        key_options=key_options,
    )
    try:
        return q.run(max_batches)
    finally:
        q.close()


__all__ = ["stream", "StreamingQuery", "ParquetSink", "JsonLinesSink", "KafkaSink", "write"]
