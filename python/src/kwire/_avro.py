"""Avro values as Arrow columns, as Spark's ``from_avro`` reads them."""

from __future__ import annotations

import logging
import os
from concurrent.futures import ThreadPoolExecutor
from typing import Any, List, Mapping, Optional

import pyarrow as pa
import pyarrow.compute as pc

from . import _kwire
from .errors import ConfigError

_log = logging.getLogger("kwire")


def _topic_of(data: Any, options: Mapping[str, Any]) -> str:
    """The topic that names the registry subject ("<topic>-value")."""
    if "subject" in options or "avroSchema" in options or "jsonFormatSchema" in options:
        return ""
    if isinstance(data, (pa.Table, pa.RecordBatch)) and "topic" in data.schema.names:
        topics = [t for t in pc.unique(data.column("topic")).to_pylist() if t is not None]
        if len(topics) == 1:
            return topics[0]
        if len(topics) > 1:
            raise ConfigError(
                "kwire: from_avro: the records come from %d topics (%s); give options['subject'] or "
                "options['avroSchema'] to choose the reader schema" % (len(topics), ", ".join(sorted(topics)))
            )
    raise ConfigError(
        "kwire: from_avro with a schema registry needs the topic (a topic column), options['subject'] "
        "or options['avroSchema'] to find the reader schema"
    )


def from_avro(
    data: Any,
    json_format_schema: Optional[str] = None,
    options: Optional[Mapping[str, Any]] = None,
) -> pa.Table:
    """Decodes the ``value`` column of Kafka records (``kwire.read``'s table,
    a record batch, any Arrow stream with Spark's Kafka columns) as Avro.

    Returns a table with one column per field of the reader schema (a
    single ``value`` column for a schema that is not a record), one row per
    input row, typed as Spark's ``from_avro`` types them (decimal128,
    date32, timestamp[us, tz=UTC], struct, list, map...).

    Plain Avro: ``json_format_schema`` is the writer's schema (Spark's
    ``from_avro(col, jsonFormatSchema)``). Confluent's wire format: give
    ``options={"schema.registry.url": ...}`` instead; each value's schema
    id is looked up once, and the reader schema is ``avroSchema`` or the
    latest schema of the subject (``subject``, default
    ``"<topic>-value"``).

    Options: ``mode`` (``FAILFAST``, the default, raises
    kwire.errors.MalformedRecordError naming topic, partition and offset;
    ``PERMISSIVE`` gives a row of nulls and logs a warning with the count),
    ``avroSchema`` (a reader schema; Avro's resolution rules apply),
    ``subject``, ``schema.registry.url``, ``basic.auth.user.info``,
    ``basic.auth.credentials.source``, ``schema.registry.ssl.ca.location``,
    ``schema.registry.request.timeout.ms``, ``column`` (kwire's: ``"key"``
    decodes the ``key`` column instead, with subject ``"<topic>-key"``).

    Raises ConfigError (bad options or schema), SchemaRegistryError,
    MalformedRecordError.
    """
    return AvroReader(json_format_schema, options).decode(data)


class AvroReader:
    """``from_avro`` for a run of batches (a streaming query's): the registry
    is asked for each schema id once, and for the reader schema once, when
    the first batch names the topic."""

    def __init__(
        self,
        json_format_schema: Optional[str] = None,
        options: Optional[Mapping[str, Any]] = None,
        topic: Optional[str] = None,
    ):
        self._topic = topic
        self._opts = {str(k): v for k, v in (options or {}).items()}
        if json_format_schema is not None:
            self._opts["jsonFormatSchema"] = json_format_schema
        self._native = None
        self._extra: List[Any] = []  # more readers, for big tables decoded on several cores
        if "schema.registry.url" not in self._opts or "jsonFormatSchema" in self._opts:
            self._native = _kwire.AvroReader(self._opts, "")  # checks the options now

    def _reader(self, data: Any):
        topic = self._topic if self._topic is not None else _topic_of(data, self._opts)
        return _kwire.AvroReader(self._opts, topic)

    def decode(self, data: Any) -> pa.Table:
        """The decoded values as a table, one column per field; a null value
        (a tombstone) is null in every column."""
        rows = self.decode_rows(data)
        return pa.table({}) if rows is None else pa.Table.from_struct_array(rows)

    def decode_rows(self, data: Any) -> Optional[pa.ChunkedArray]:
        """The decoded values as one struct column, a row per input row (the
        fields of the reader schema; one field ``value`` for a schema that is
        not a record). A null value (a tombstone) gives a null row, as
        Spark's ``from_avro`` gives null for a null input; a malformed one
        (PERMISSIVE) a row whose fields are null. None when no reader schema
        is known yet (a registry, no topic and no rows)."""
        if self._native is None:
            if self._topic is None and getattr(data, "num_rows", None) == 0:
                return None  # no record names the topic, so no reader schema yet
            self._native = self._reader(data)
        groups = _split_for_threads(data)
        if len(groups) < 2:
            stream, malformed, first = self._native.decode(data)
            rows = pa.chunked_array(stream)
        else:
            # A big table: its batches decoded on several cores, one reader
            # each (the C++ decode releases the GIL); the rows keep their order.
            while len(self._extra) < len(groups) - 1:
                # The same reader schema as the first reader's, not the
                # subject's latest again (it may have moved on).
                opts = dict(self._opts)
                if "jsonFormatSchema" not in opts:
                    opts["avroSchema"] = self._native.reader_schema
                self._extra.append(_kwire.AvroReader(opts, self._topic or ""))
            readers = [self._native] + self._extra
            with ThreadPoolExecutor(len(groups)) as pool:
                futures = [pool.submit(r.decode, g) for r, g in zip(readers, groups)]
            parts = []
            malformed, first = 0, ""
            for f in futures:  # the first group's error first: FAILFAST names the earliest record
                stream, n, why = f.result()
                parts.append(pa.chunked_array(stream))
                if n and not malformed:
                    first = why
                malformed += n
            rows = pa.chunked_array([c for p in parts for c in p.chunks], type=parts[0].type)
        if malformed:
            _log.warning(
                "from_avro (PERMISSIVE): %d malformed value(s) read as rows of nulls; the first: %s", malformed, first
            )
        return rows


def decoded_column(decoder: Any, rows: Optional[pa.ChunkedArray]) -> pa.Array:
    """A decoder's rows (AvroReader.decode_rows, ProtobufReader.decode_rows)
    as one column, as Spark's from_avro / from_protobuf give it: a struct for
    an Avro record or a Protobuf message (null for a tombstone), the value
    itself for other Avro schemas."""
    if rows is None:
        return pa.array([], pa.struct([]))
    struct = True
    if isinstance(decoder, AvroReader):
        import json

        reader = json.loads(decoder._native.reader_schema)
        struct = isinstance(reader, dict) and reader.get("type") == "record"
    column = rows.combine_chunks()
    return column if struct else column.flatten()[0]


_THREAD_ROWS = 1 << 17  # below this a table is decoded on one thread


def _split_for_threads(data: Any) -> List[Any]:
    """Contiguous groups of a big pyarrow.Table's batches, one per core."""
    cores = os.cpu_count() or 1
    if cores < 2 or not isinstance(data, pa.Table) or data.num_rows < _THREAD_ROWS:
        return [data]
    batches = data.to_batches()
    if len(batches) < 2:
        return [data]
    k = min(cores, len(batches))
    per = data.num_rows / k
    groups: List[List[pa.RecordBatch]] = [[] for _ in range(k)]
    seen = 0
    for b in batches:
        groups[min(k - 1, int(seen / per))].append(b)
        seen += b.num_rows
    return [pa.Table.from_batches(g, schema=data.schema) for g in groups if g]


class AvroWriter:
    """``to_avro`` for a run of batches: the writer schema is settled (and
    registered in the registry) once, on the first batch."""

    def __init__(
        self,
        json_format_schema: Optional[str] = None,
        options: Optional[Mapping[str, Any]] = None,
        topic: Optional[str] = None,
    ):
        opts = {str(k): v for k, v in (options or {}).items()}
        if json_format_schema is not None:
            opts["jsonFormatSchema"] = json_format_schema
        if "schema.registry.url" in opts and topic is None and "subject" not in opts:
            raise ConfigError("kwire: to_avro with a schema registry needs topic= or options['subject']")
        self._native = _kwire.AvroWriter(opts, topic or "")

    @property
    def writer_schema(self) -> str:
        """The writer schema (Avro JSON); empty before the first batch when it is derived."""
        return self._native.writer_schema

    @property
    def schema_id(self) -> int:
        """The registry's id of the writer schema (-1 for plain Avro)."""
        return self._native.schema_id

    def encode(self, data: Any) -> pa.ChunkedArray:
        stream = self._native.encode(data)
        return pa.RecordBatchReader.from_stream(stream).read_all().column("value")


def to_avro(
    data: Any,
    json_format_schema: Optional[str] = None,
    options: Optional[Mapping[str, Any]] = None,
    topic: Optional[str] = None,
) -> pa.ChunkedArray:
    """Encodes the rows of ``data`` (a pyarrow Table or RecordBatch: its
    columns are the record's fields) as Avro values, as Spark's
    ``to_avro(struct(*cols), jsonFormatSchema)``: a binary array, one value
    per row, ready to be a Kafka ``value`` column (``kwire.write``,
    ``KafkaSink``).

    Without ``json_format_schema`` the schema is the one Spark derives
    (record ``topLevelRecord``, nullable columns as ``[T, "null"]``...).
    With ``options={"schema.registry.url": ...}`` the values are in
    Confluent's wire format: the schema is registered under ``subject``
    (default ``"<topic>-value"``) when ``auto.register.schemas`` is true
    (the default), looked up otherwise, or replaced by the subject's latest
    with ``use.latest.version=true``; confluent-kafka's AvroDeserializer
    reads them back.

    Raises ConfigError (a column that does not fit its field, bad options),
    KwireError (a value that cannot be written: a null into a non-null
    field, an unknown enum symbol), SchemaRegistryError.
    """
    return AvroWriter(json_format_schema, options, topic).encode(data)
