"""Protobuf values as Arrow columns, as Spark's ``from_protobuf`` reads them."""

from __future__ import annotations

import logging
from typing import Any, Mapping, Optional

import pyarrow as pa

from . import _kwire
from ._avro import _topic_of
from .errors import ConfigError

_log = logging.getLogger("kwire")


class ProtobufReader:
    """``from_protobuf`` for a run of batches (a streaming query's): the
    descriptors are loaded once; with a registry each schema id is looked up
    once."""

    def __init__(
        self,
        message_name: Optional[str] = None,
        desc_file_path: Optional[str] = None,
        options: Optional[Mapping[str, Any]] = None,
        binary_descriptor_set: Optional[bytes] = None,
        topic: Optional[str] = None,
    ):
        self._opts = {str(k): v for k, v in (options or {}).items()}
        if message_name is not None:
            self._opts["messageName"] = message_name
        if desc_file_path is not None:
            self._opts["descFilePath"] = desc_file_path
        self._set = binary_descriptor_set
        self._topic = topic
        self._native = None
        has_descriptors = "descFilePath" in self._opts or binary_descriptor_set is not None
        if "schema.registry.url" not in self._opts or has_descriptors:
            if not has_descriptors:
                raise ConfigError(
                    "kwire: from_protobuf needs desc_file_path or binary_descriptor_set (with message_name), or "
                    "options['schema.registry.url']"
                )
            self._native = _kwire.ProtobufReader(self._opts, "", self._set)

    def decode(self, data: Any) -> pa.Table:
        """The decoded values as a table, one column per field of the
        message; a null value (a tombstone) is null in every column."""
        rows = self.decode_rows(data)
        return pa.table({}) if rows is None else pa.Table.from_struct_array(rows)

    def decode_rows(self, data: Any) -> Optional[pa.ChunkedArray]:
        """The decoded values as one struct column, a row per input row: null
        for a null value (a tombstone), as Spark's ``from_protobuf`` gives
        null for a null input; fields of nulls for a malformed one
        (PERMISSIVE). None when no message is known yet (a registry, no
        topic and no rows)."""
        if self._native is None:
            if self._topic is None and getattr(data, "num_rows", None) == 0:
                return None
            topic = self._topic if self._topic is not None else _topic_of(data, self._opts)
            self._native = _kwire.ProtobufReader(self._opts, topic, self._set)
        stream, malformed, first = self._native.decode(data)
        rows = pa.chunked_array(stream)
        if malformed:
            _log.warning(
                "from_protobuf (PERMISSIVE): %d malformed value(s) read as rows of nulls; the first: %s", malformed,
                first,
            )
        return rows


def from_protobuf(
    data: Any,
    message_name: Optional[str] = None,
    desc_file_path: Optional[str] = None,
    options: Optional[Mapping[str, Any]] = None,
    binary_descriptor_set: Optional[bytes] = None,
) -> pa.Table:
    """Decodes the ``value`` column of Kafka records as Protobuf, as Spark's
    ``from_protobuf(col, messageName, descFilePath, options,
    binaryDescriptorSet)``: one column per field of the message, typed as
    Spark types them (see source/protobuf.hpp: Timestamp -> timestamp[us,
    UTC], Duration -> duration[us], enums as names, maps, lists, structs).

    The descriptors: ``desc_file_path`` or ``binary_descriptor_set`` (what
    ``protoc --include_imports --descriptor_set_out`` writes) with
    ``message_name``; or, for Confluent's wire format,
    ``options={"schema.registry.url": ...}``: the subject's latest schema
    (``subject``, default ``"<topic>-value"``) and its ``messageName`` (by
    default its first message).

    Options (Spark's names): ``mode`` (FAILFAST default, PERMISSIVE),
    ``emit.default.values``, ``enums.as.ints``, ``upcast.unsigned.ints``,
    ``unwrap.primitive.wrapper.types``, ``retain.empty.message.types``,
    ``recursive.fields.max.depth``; and the registry's.
    """
    return ProtobufReader(message_name, desc_file_path, options, binary_descriptor_set).decode(data)


class ProtobufWriter:
    """``to_protobuf`` for a run of batches: the message is settled (and, with
    a registry, its file registered) once, when the writer is made."""

    def __init__(
        self,
        message_name: Optional[str] = None,
        desc_file_path: Optional[str] = None,
        options: Optional[Mapping[str, Any]] = None,
        binary_descriptor_set: Optional[bytes] = None,
        topic: Optional[str] = None,
    ):
        opts = {str(k): v for k, v in (options or {}).items()}
        if message_name is not None:
            opts["messageName"] = message_name
        if desc_file_path is not None:
            opts["descFilePath"] = desc_file_path
        if "schema.registry.url" in opts and topic is None and "subject" not in opts:
            raise ConfigError("kwire: to_protobuf with a schema registry needs topic= or options['subject']")
        self._native = _kwire.ProtobufWriter(opts, topic or "", binary_descriptor_set)

    @property
    def message_name(self) -> str:
        """The message's full name."""
        return self._native.message_name

    @property
    def schema_id(self) -> int:
        """The registry's id of the message's file (-1 for plain messages)."""
        return self._native.schema_id

    def encode(self, data: Any) -> pa.ChunkedArray:
        stream = self._native.encode(data)
        return pa.RecordBatchReader.from_stream(stream).read_all().column("value")


def to_protobuf(
    data: Any,
    message_name: Optional[str] = None,
    desc_file_path: Optional[str] = None,
    options: Optional[Mapping[str, Any]] = None,
    binary_descriptor_set: Optional[bytes] = None,
    topic: Optional[str] = None,
) -> pa.ChunkedArray:
    """Encodes the rows of ``data`` (a pyarrow Table or RecordBatch: its
    columns are the message's fields, by name) as Protobuf messages, as
    Spark's ``to_protobuf(struct(*cols), messageName, descFilePath)``: a
    binary array, one value per row, ready to be a Kafka ``value`` column.
    Columns set the field of their name (structs set messages, lists repeated
    fields, maps map fields, timestamps Timestamp, durations Duration, text
    an enum by name); fields without a column and null cells stay unset.

    With ``options={"schema.registry.url": ...}`` the values are in
    Confluent's wire format (magic byte, schema id, message indexes): the
    message's file is registered under ``subject`` (default
    ``"<topic>-value"``; its imports under their file names, as references)
    when ``auto.register.schemas`` is true (the default), looked up
    otherwise; ``use.latest.version=true`` (or no descriptors) writes with the
    subject's latest schema. confluent-kafka's ProtobufDeserializer reads
    them back.

    Raises ConfigError (a column with no field of its name, a type that does
    not fit, bad options), KwireError (a value the field cannot hold, a null
    list element, an unknown enum name), SchemaRegistryError.
    """
    return ProtobufWriter(message_name, desc_file_path, options, binary_descriptor_set, topic).encode(data)
