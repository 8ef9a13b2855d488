"""The PySpark data source ``kwire``: Spark's Kafka source read by kwire.

    from kwire.spark import KwireDataSource
    spark.dataSource.register(KwireDataSource)
    df = spark.read.format("kwire").option("kafka.bootstrap.servers", ...).option("subscribe", "t").load()
    sdf = spark.readStream.format("kwire").options(**opts).load()

Options and columns are those of ``format("kafka")`` (key, value, topic,
partition, offset, timestamp, timestampType, and headers with
includeHeaders). Planning is kwire's C++ source (``_kwire.SourcePlanner``,
one admin client per query): a batch query gets the Spark partitions Spark's
``KafkaBatch`` plans, a stream the offsets, rate limits and ranges of Spark's
``KafkaMicroBatchStream``. Each Spark partition is one offset range
``[fromOffset, untilOffset)`` of one Kafka partition, read on an executor by
``_kwire.RangeReadSession`` (one consumer per Python worker and query, kept
from task to task) and handed to Spark as pyarrow RecordBatches.

Streaming offsets are Spark's Kafka offsets JSON, ``{"topic":{"0":42}}``.
Rate limits (maxOffsetsPerTrigger) go through Spark's admission control
(``getDefaultReadLimit`` / ``latestOffset(start, limit)``), available from
Spark 4.2. Spark 4.0 and 4.1 call ``latestOffset()`` without a start or a
limit: there every micro-batch reads all available offsets and
maxOffsetsPerTrigger is ignored (a warning says so).

Values in Avro or Protobuf (kwire's options, not Spark's): with
``valueFormat`` ``avro`` or ``protobuf`` the ``value`` column is the decoded
value, as ``select(from_avro(col("value"), ...).alias("value"), ...)`` gives
it (a struct for a record or message), and the other columns stay; so do
``keyFormat`` and ``key.``-prefixed options for the ``key`` column (subject
``<topic>-key``). The
decoder's options are ``value.``-prefixed: ``value.jsonFormatSchema``,
``value.avroSchema``, ``value.schema.registry.url``, ``value.subject``,
``value.mode``, ``value.messageName``, ``value.descFilePath`` and the rest of
``kwire.from_avro`` / ``kwire.from_protobuf``'s options. The driver settles
the reader schema when the query is planned (a registry's latest schema of
``<topic>-value`` for one subscribed topic, else ``value.subject``); Avro's
reader schema is then fixed for the executors.

Requires Spark >= 4.0 and pyarrow; executors must be able to import kwire
(``spark.pyspark.python`` / ``PYSPARK_PYTHON`` naming an interpreter that has it).
"""

from __future__ import annotations

import json
import logging
import sys
import types
from typing import Any, Dict, Iterator, List, Mapping, Optional

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceReader, DataSourceStreamReader, InputPartition
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

try:  # Spark >= 4.2
    from pyspark.sql.streaming.datasource import SupportsTriggerAvailableNow
except ImportError:  # Spark 4.0 / 4.1: AvailableNow runs as a single batch

    class SupportsTriggerAvailableNow:  # type: ignore[no-redef]
        pass


Offsets = Dict[str, Dict[str, int]]

_log = logging.getLogger("kwire")


def _true(value: Any) -> bool:
    return str(value).strip().lower() == "true"


def kafka_spark_schema(include_headers: bool = False) -> StructType:
    """Spark's Kafka source schema (``format("kafka")``'s columns)."""
    fields = [
        StructField("key", BinaryType()),
        StructField("value", BinaryType()),
        StructField("topic", StringType()),
        StructField("partition", IntegerType()),
        StructField("offset", LongType()),
        StructField("timestamp", TimestampType()),
        StructField("timestampType", IntegerType()),
    ]
    if include_headers:
        header = StructType([StructField("key", StringType()), StructField("value", BinaryType())])
        fields.append(StructField("headers", ArrayType(header)))
    return StructType(fields)


class KafkaRange(InputPartition):
    """One Spark partition: offsets [from_offset, until_offset) of
    topic-partition; -2 / -1 ends (earliest / latest) are bound when the
    task reads, as Spark's executors do. ``spec`` is what the executor needs
    to read it (client properties, failOnDataLoss, poll timeout, headers,
    group id), decided by the planner."""

    def __init__(
        self,
        topic: str,
        partition: int,
        from_offset: int,
        until_offset: int,
        spec: Dict[str, str],
        value_format: Optional[List[Dict[str, Any]]] = None,
    ):
        super().__init__(None)
        self.topic = topic
        self.partition = partition
        self.from_offset = from_offset
        self.until_offset = until_offset
        self.spec = spec
        self.value_format = value_format  # the key and value decoders: see _column_format

    def __repr__(self) -> str:
        return "KafkaRange(%s-%d [%d, %d))" % (self.topic, self.partition, self.from_offset, self.until_offset)


def _options(options: Mapping[str, Any]) -> Dict[str, str]:
    return {str(k).lower(): str(v) for k, v in dict(options).items()}


def _offsets_json(offsets: Mapping[str, Mapping[Any, int]]) -> str:
    return json.dumps(
        {str(t): {str(p): int(o) for p, o in parts.items()} for t, parts in offsets.items()}, separators=(",", ":")
    )


def _ranges(ranges, spec: Dict[str, str], value_format: Optional[List[Dict[str, Any]]] = None) -> List[KafkaRange]:
    return [KafkaRange(t, int(p), int(f), int(u), spec, value_format) for t, p, f, u in ranges]


# ---------------------------------------------------------------- values

# The decoders' option names as kwire.from_avro / from_protobuf spell them
# (Spark hands a data source its options in lower case).
_VALUE_OPTIONS = {
    n.lower(): n
    for n in (
        "jsonFormatSchema", "avroSchema", "mode", "subject", "schema.registry.url", "basic.auth.user.info",
        "basic.auth.credentials.source", "schema.registry.ssl.ca.location", "schema.registry.request.timeout.ms",
        "messageName", "descFilePath", "emit.default.values", "enums.as.ints", "upcast.unsigned.ints",
        "unwrap.primitive.wrapper.types", "retain.empty.message.types", "recursive.fields.max.depth",
        "convert.any.fields.to.json", "enableStableIdentifiersForUnionType", "stableIdentifierPrefixForUnionType",
    )
}


def _column_format(options: Dict[str, str], column: str) -> Optional[Dict[str, Any]]:
    """{"format", "column", "options", "topic", "type"} from valueFormat (or
    keyFormat) and the value.* (key.*) options, the reader schema settled
    here (the driver), or None."""
    flag = column + "Format"
    prefix = column + "."
    name = options.get(flag.lower())
    decoder_options = {
        _VALUE_OPTIONS.get(k[len(prefix):], k[len(prefix):]): v for k, v in options.items() if k.startswith(prefix)
    }
    if name is None:
        if decoder_options:
            raise _kwire_error(
                "%s* options (%s) need %s avro or protobuf" % (prefix, ", ".join(sorted(decoder_options)), flag)
            )
        return None
    name = name.strip().lower()
    if name not in ("avro", "protobuf"):
        raise _kwire_error("%s must be avro or protobuf, not %r" % (flag, options[flag.lower()]))
    decoder_options["column"] = column
    subscribed = options.get("subscribe", "")
    topic = subscribed.strip() if subscribed and "," not in subscribed else None
    spec: Dict[str, Any] = {"format": name, "column": column, "options": decoder_options, "topic": topic}
    decoder = _new_decoder(spec)
    empty = pa.table({column: pa.array([], pa.binary()), "topic": pa.array([], pa.string()),
                      "partition": pa.array([], pa.int32()), "offset": pa.array([], pa.int64())})
    decoded = decoder.decode_rows(empty)
    if decoded is None:
        raise _kwire_error(
            "%s %s with %sschema.registry.url needs one subscribed topic (its subject <topic>-%s), %ssubject or a "
            "reader schema (%savroSchema, %sdescFilePath)" % (flag, name, prefix, column, prefix, prefix, prefix)
        )
    if name == "avro" and "jsonFormatSchema" not in decoder_options:
        decoder_options["avroSchema"] = decoder._native.reader_schema  # one reader schema for every executor
    from ._avro import decoded_column

    spec["type"] = decoded_column(decoder, decoded).type
    return spec


def _column_formats(options: Dict[str, str]) -> Optional[List[Dict[str, Any]]]:
    formats = [f for f in (_column_format(options, "key"), _column_format(options, "value")) if f is not None]
    return formats or None


def _new_decoder(spec: Dict[str, Any]):
    if spec["format"] == "avro":
        from ._avro import AvroReader

        return AvroReader(options=spec["options"], topic=spec["topic"])
    from ._protobuf import ProtobufReader

    return ProtobufReader(options=spec["options"], topic=spec["topic"])


_DECODERS: Dict[str, Any] = {}  # one per column spec and Python worker: schema ids fetched once


def _decode(batch: pa.RecordBatch, specs: List[Dict[str, Any]]) -> pa.RecordBatch:
    from ._avro import decoded_column

    columns = dict(zip(batch.schema.names, batch.columns))
    fields = {f.name: f for f in batch.schema}
    table = pa.Table.from_batches([batch])
    for spec in specs:
        key = json.dumps({k: spec[k] for k in ("format", "options", "topic")}, sort_keys=True)  # not "type"
        decoder = _DECODERS.get(key)
        if decoder is None:
            while len(_DECODERS) >= _MAX_SESSIONS:
                _DECODERS.pop(next(iter(_DECODERS)))
            decoder = _DECODERS[key] = _new_decoder(spec)
        decoded = decoded_column(decoder, decoder.decode_rows(table))
        columns[spec["column"]] = decoded
        fields[spec["column"]] = pa.field(spec["column"], decoded.type)
    names = batch.schema.names
    return pa.RecordBatch.from_arrays([columns[n] for n in names], schema=pa.schema([fields[n] for n in names]))


# ---------------------------------------------------------------- executors

# One RangeReadSession (one consumer) per query and Python worker, kept from
# task to task while Spark reuses the worker: connections and fetch sessions
# are paid once, as Spark's executors pool their consumers.
_SESSIONS: Dict[tuple, Any] = {}
_MAX_SESSIONS = 4


def _session(spec: Dict[str, str]):
    from . import _kwire

    key = tuple(sorted(spec.items()))
    session = _SESSIONS.pop(key, None)
    if session is None:
        session = _kwire.RangeReadSession(spec)
    _SESSIONS[key] = session  # most recently used last
    while len(_SESSIONS) > _MAX_SESSIONS:
        _SESSIONS.pop(next(iter(_SESSIONS))).close()
    return key, session


def _read_range(r: InputPartition) -> Iterator[pa.RecordBatch]:
    """Executor side: one range through the query's RangeReadSession.
    PySpark hands read() a bare InputPartition(None) when the plan has no
    partition at all: that reads nothing, as Spark's Kafka source."""
    if not isinstance(r, KafkaRange):
        return
    key, session = _session(r.spec)
    try:
        stream, _info = session.read(r.topic, r.partition, r.from_offset, r.until_offset)
    except BaseException:
        # As Spark after a failed task: the next task gets a new consumer.
        _SESSIONS.pop(key, None)
        session.close()
        raise
    for batch in pa.RecordBatchReader.from_stream(stream):
        if batch.num_rows:
            yield _decode(batch, r.value_format) if r.value_format else batch


# ---------------------------------------------------------------- batch


class KwireBatchReader(DataSourceReader):
    def __init__(self, options: Dict[str, str], value_format: Optional[List[Dict[str, Any]]] = None):
        self.options = options
        self.value_format = value_format

    def partitions(self) -> List[KafkaRange]:
        """Spark's KafkaBatch plan: one range per partition of the
        subscription, empty ones included; earliest / latest left for the
        executors to bind; split only by what minPartitions and
        maxRecordsPerPartition ask, on the offsets known now."""
        from . import _kwire

        planner = _kwire.SourcePlanner(self.options, False)
        try:
            return _ranges(planner.batch_ranges(), planner.reader_spec, self.value_format)
        finally:
            planner.close()

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return _read_range(partition)


# ---------------------------------------------------------------- streaming


class _CompactJson(types.SimpleNamespace):
    """Stands in for the json module in Spark's streaming-source runner:
    offsets are written as Spark's Kafka source writes them, without blanks."""


def _compact_offsets_json() -> None:
    """PySpark's streaming-source runner (the Python process that hosts the
    driver side of a Python stream reader) writes the offsets it gets from
    ``initialOffset`` / ``latestOffset`` with ``json.dumps(offset)``, whose
    default separators put a blank after every ',' and ':'; that text is what
    Spark logs in ``offsets/N``. Spark's Kafka source writes compact JSON,
    ``{"t":{"0":5}}``. The runner module's ``json`` name is pointed at a
    compact ``dumps`` (the same ``loads``); nothing else in the process
    changes. Without that runner (Spark's code moved), offsets keep Python's
    blanks, which Spark reads just as well."""
    for name in ("pyspark.sql.streaming.python_streaming_source_runner", "__main__"):
        module = sys.modules.get(name)
        if module is None or not hasattr(module, "latest_offset_func"):
            continue
        current = getattr(module, "json", None)
        if current is json:
            module.json = _CompactJson(
                dumps=lambda obj, **kw: json.dumps(obj, **{"separators": (",", ":"), **kw}), loads=json.loads
            )


class KwireStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Driver side of a micro-batch query; offsets are Spark's Kafka JSON.

    One SourcePlanner (one admin client) serves every trigger of the query.
    Trigger.AvailableNow (Spark >= 4.2): the latest offsets when the query
    starts are its end, as Spark's Kafka source does; later records wait for
    the next run.
    """

    def __init__(self, options: Dict[str, str], value_format: Optional[List[Dict[str, Any]]] = None):
        from . import _kwire

        self.options = options
        self.value_format = value_format
        limit = options.get("maxoffsetspertrigger")
        self._max_offsets = int(limit) if limit is not None else None
        if self._max_offsets is not None and self._max_offsets <= 0:
            raise _kwire_error(f"maxOffsetsPerTrigger must be positive, got {limit}")
        # The streaming options are checked when the query starts, as Spark
        # does (ConfigError, e.g. "ending offset not valid in streaming queries").
        _kwire.plan_micro_batch(options, "{}", "{}", "{}")
        self._planner = None
        self._warned_no_limit = False
        self._available_now: Optional[Offsets] = None
        self._latest: Optional[Offsets] = None
        _compact_offsets_json()

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_planner"] = None  # a driver's client never travels
        return state

    @property
    def planner(self):
        if self._planner is None:
            from . import _kwire

            self._planner = _kwire.SourcePlanner(self.options, True)
        return self._planner

    def prepareForTriggerAvailableNow(self) -> None:
        self._available_now = json.loads(self.planner.latest_offsets("{}"))

    def initialOffset(self) -> Offsets:
        """startingOffsets (default latest) or the starting timestamp options,
        resolved by the C++ source as its own streaming query does."""
        return json.loads(self.planner.initial_offsets())

    def getDefaultReadLimit(self):
        from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows

        if self._max_offsets is None:
            return ReadAllAvailable()
        return ReadMaxRows(self._max_offsets)

    def latestOffset(self, start: Optional[Offsets] = None, limit: Any = None) -> Offsets:
        if self._available_now is not None:
            latest = self._available_now  # as Spark's Kafka source: the end fixed at start
        else:
            latest = json.loads(self.planner.latest_offsets(_offsets_json(start or {})))
        self._latest = latest
        if start is None:
            # Spark 4.0 / 4.1: no admission control.
            if self._max_offsets is not None and not self._warned_no_limit:
                _log.warning("maxOffsetsPerTrigger needs Spark >= 4.2 (admission control); reading all available")
                self._warned_no_limit = True
            return latest
        max_rows = getattr(limit, "max_rows", None)
        if max_rows is None:
            return latest
        return json.loads(self.planner.rate_limit(int(max_rows), _offsets_json(start), _offsets_json(latest)))

    def reportLatestOffset(self) -> Optional[Offsets]:
        """The latest offsets the last ``latestOffset`` planned against (Spark's
        Kafka source reports the same map): with the batch's end offset it
        gives Spark's offsetsBehindLatest (see ``offsets_behind_latest``)."""
        if self._latest is None:
            self._latest = json.loads(self.planner.latest_offsets("{}"))
        return self._latest

    def partitions(self, start: Offsets, end: Offsets) -> List[KafkaRange]:
        # Warnings (failOnDataLoss=false) go to logging "kwire" from the C++ core.
        ranges, _warnings = self.planner.plan_micro_batch(_offsets_json(start), _offsets_json(end))
        return _ranges(ranges, self.planner.reader_spec, self.value_format)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return _read_range(partition)

    def commit(self, end: Offsets) -> None:
        pass

    def stop(self) -> None:
        if self._planner is not None:
            self._planner.close()
            self._planner = None


def _kwire_error(message: str) -> Exception:
    from .errors import ConfigError

    return ConfigError(message)


class KwireDataSource(DataSource):
    """``format("kwire")``: Spark's Kafka source options and schema, read by kwire."""

    @classmethod
    def name(cls) -> str:
        return "kwire"

    def _values(self) -> Optional[List[Dict[str, Any]]]:
        if not hasattr(self, "_value_specs"):
            self._value_specs = _column_formats(_options(self.options))
        return self._value_specs

    def schema(self) -> StructType:
        kafka = kafka_spark_schema(_true(self.options.get("includeHeaders", "false")))
        specs = self._values()
        if specs is None:
            return kafka
        from pyspark.sql.pandas.types import from_arrow_type

        decoded = {s["column"]: from_arrow_type(s["type"]) for s in specs}
        return StructType([StructField(f.name, decoded[f.name]) if f.name in decoded else f for f in kafka.fields])

    def reader(self, schema: StructType) -> KwireBatchReader:
        return KwireBatchReader(_options(self.options), self._values())

    def streamReader(self, schema: StructType) -> KwireStreamReader:
        return KwireStreamReader(_options(self.options), self._values())


def offsets_behind_latest(source_progress: Mapping[str, Any]) -> Optional[Dict[str, Any]]:
    """Spark's Kafka source metrics minOffsetsBehindLatest,
    maxOffsetsBehindLatest and avgOffsetsBehindLatest, computed from one
    entry of a query progress's ``sources`` (a dict, e.g.
    ``json.loads(query.lastProgress_json)["sources"][0]`` or
    ``query.lastProgress["sources"][0]``), as Spark computes them: for each
    partition of ``latestOffset``, latest minus the batch's ``endOffset``.
    Values are strings, as in Spark's progress JSON ("0", "9.7"). None when the
    progress has no latestOffset (a replayed batch) or no end offset.

    Spark 4.2's Python data sources cannot put metrics into the progress
    themselves (see docs/python.md); ``format("kwire")`` reports the latest
    offsets (``reportLatestOffset``), which is what these are computed from.
    """

    def parse(value):
        if value is None:
            return None
        return json.loads(value) if isinstance(value, str) else value

    latest, end = parse(source_progress.get("latestOffset")), parse(source_progress.get("endOffset"))
    if not latest or not end:
        return None
    behind = [
        int(off) - int(end[t][p]) for t, parts in latest.items() for p, off in parts.items() if p in end.get(t, {})
    ]
    if not behind:
        return None
    return {
        "minOffsetsBehindLatest": str(min(behind)),
        "maxOffsetsBehindLatest": str(max(behind)),
        "avgOffsetsBehindLatest": _progress_average(sum(behind) / len(behind)),
    }


def _progress_average(value: float) -> str:
    """avgOffsetsBehindLatest as Spark's progress JSON writes it: Java's
    Double.toString of the mean, as a BigDecimal rounded HALF_UP to one
    decimal ("9.7", "26667.0")."""
    import decimal

    return str(decimal.Decimal(repr(float(value))).quantize(decimal.Decimal("0.1"), rounding=decimal.ROUND_HALF_UP))


def register(spark) -> None:
    """Registers ``format("kwire")`` in the session."""
    spark.dataSource.register(KwireDataSource)


__all__ = ["KwireDataSource", "KafkaRange", "kafka_spark_schema", "offsets_behind_latest", "register"]
