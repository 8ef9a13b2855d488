"""The PySpark data source ``kwire``: Spark's Kafka source read by kwire.

    from kwire.spark import KwireDataSource
    spark.dataSource.register(KwireDataSource)
    df = spark.read.format("kwire").option("kafka.bootstrap.servers", ...).option("subscribe", "t").load()
    sdf = spark.readStream.format("kwire").options(**opts).load()

Options and columns are those of ``format("kafka")`` (key, value, topic,
partition, offset, timestamp, timestampType, and headers with
includeHeaders). The driver plans offset ranges with kwire's planner (the C++
source: offset resolution, Spark's rateLimit, minPartitions /
maxRecordsPerPartition splits, the data-loss rules); each Spark partition is
one offset range ``[fromOffset, untilOffset)`` of one Kafka partition, read on
an executor by kwire and handed to Spark as pyarrow RecordBatches.

Streaming offsets are Spark's Kafka offsets JSON, ``{"topic": {"0": 42}}``.
Rate limits (maxOffsetsPerTrigger) go through Spark's admission control
(``getDefaultReadLimit`` / ``latestOffset(start, limit)``), available from
Spark 4.2. Spark 4.0 and 4.1 call ``latestOffset()`` without a start or a
limit: there every micro-batch reads all available offsets and
maxOffsetsPerTrigger is ignored (a warning says so).

Requires Spark >= 4.0 and pyarrow; executors must be able to import kwire
(``spark.pyspark.python`` / ``PYSPARK_PYTHON`` naming an interpreter that has it).
"""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass
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

# Options that select what is read and how to connect; everything else
# (startingOffsets, rate limits, ...) is decided by the driver's plan.
_READ_OPTION_PREFIXES = ("kafka.",)
_READ_OPTIONS = ("failondataloss", "includeheaders", "fetchoffset.numretries", "fetchoffset.retryintervalms")
_SUBSCRIBE_OPTIONS = ("subscribe", "subscribepattern", "assign")
_START_OPTIONS = ("startingoffsets", "startingtimestamp", "startingoffsetsbytimestamp", "startingoffsetsbytimestampstrategy")


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


@dataclass
class KafkaRange(InputPartition):
    """One Spark partition: offsets [from_offset, until_offset) of topic-partition."""

    topic: str
    partition: int
    from_offset: int
    until_offset: int

    def __init__(self, topic: str, partition: int, from_offset: int, until_offset: int):
        super().__init__(None)
        self.topic = topic
        self.partition = partition
        self.from_offset = from_offset
        self.until_offset = until_offset


def _options(options: Mapping[str, Any]) -> Dict[str, str]:
    return {str(k).lower(): str(v) for k, v in dict(options).items()}


def _pick(options: Mapping[str, str], names, prefixes=()) -> Dict[str, str]:
    return {k: v for k, v in options.items() if k in names or k.startswith(prefixes)}


def _offsets_json(offsets: Mapping[str, Mapping[Any, int]]) -> str:
    return json.dumps({t: {str(p): int(o) for p, o in parts.items()} for t, parts in offsets.items()})


def _normalise(offsets: Mapping[str, Mapping[Any, int]]) -> Offsets:
    return {str(t): {str(p): int(o) for p, o in parts.items()} for t, parts in offsets.items()}


def _read_range(options: Mapping[str, str], r: KafkaRange) -> Iterator[pa.RecordBatch]:
    """Executor side: kwire's batch query over exactly one range."""
    import kwire

    opts = _pick(options, _READ_OPTIONS, _READ_OPTION_PREFIXES)
    opts["assign"] = json.dumps({r.topic: [r.partition]})
    opts["startingOffsets"] = json.dumps({r.topic: {str(r.partition): r.from_offset}})
    opts["endingOffsets"] = json.dumps({r.topic: {str(r.partition): r.until_offset}})
    reader = pa.RecordBatchReader.from_stream(kwire.read_arrow(opts))
    for batch in reader:
        if batch.num_rows:
            yield batch


def _ranges(plan: Mapping[str, Any]) -> List[KafkaRange]:
    return [
        KafkaRange(r["topic"], int(r["partition"]), int(r["fromOffset"]), int(r["untilOffset"]))
        for r in plan["ranges"]
    ]


class KwireBatchReader(DataSourceReader):
    def __init__(self, options: Dict[str, str]):
        self.options = options

    def partitions(self) -> List[KafkaRange]:
        import kwire

        return _ranges(kwire.plan(self.options))

    def read(self, partition: KafkaRange) -> Iterator[pa.RecordBatch]:
        return _read_range(self.options, partition)


class KwireStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Driver side of a micro-batch query; offsets are Spark's Kafka JSON.

    Trigger.AvailableNow (Spark >= 4.2): the latest offsets when the query
    starts are its end, as Spark's Kafka source does; later records wait for
    the next run.
    """

    def __init__(self, options: Dict[str, str]):
        self.options = options
        self._subscription = _pick(options, _SUBSCRIBE_OPTIONS + _READ_OPTIONS, _READ_OPTION_PREFIXES)
        limit = options.get("maxoffsetspertrigger")
        self._max_offsets = int(limit) if limit is not None else None
        if self._max_offsets is not None and self._max_offsets <= 0:
            import kwire

            raise kwire.ConfigError(f"maxOffsetsPerTrigger must be positive, got {limit}")
        self._warned_no_limit = False
        # The streaming options are checked when the query starts, as Spark
        # does (ConfigError, e.g. "ending offset not valid in streaming queries").
        from . import _kwire

        _kwire.plan_micro_batch(options, "{}", "{}", "{}")
        self._available_now: Optional[Offsets] = None

    def prepareForTriggerAvailableNow(self) -> None:
        self._available_now = self._earliest_latest()["end"]

    # -- offsets from Kafka, resolved by kwire's batch planner --
    def _resolved(self, **extra: str) -> Dict[str, Offsets]:
        import kwire

        plan = kwire.plan(dict(self._subscription, **extra))
        return {"start": _normalise(plan["startOffsets"]), "end": _normalise(plan["endOffsets"])}

    def _earliest_latest(self) -> Dict[str, Offsets]:
        return self._resolved(startingOffsets="earliest", endingOffsets="latest")

    def initialOffset(self) -> Offsets:
        """Resolves startingOffsets (default latest) or the starting
        timestamp options, which take precedence as in Spark, with kwire's
        batch planner (batch mode, so "latest" / -1 are resolved here)."""
        start = _pick(self.options, _START_OPTIONS)
        by_time = any(k.startswith("startingoffsetsbytimestamp") or k == "startingtimestamp" for k in start)
        offsets = start.pop("startingoffsets", "latest").strip()
        if by_time:
            return self._resolved(endingOffsets="latest", **start)["start"]
        if offsets == "latest":
            return self._earliest_latest()["end"]
        if offsets.startswith("{"):
            spec = json.loads(offsets)
            if any(o == -1 for parts in spec.values() for o in parts.values()):
                latest = self._earliest_latest()["end"]
                spec = {
                    t: {p: (latest.get(t, {}).get(str(p), o) if o == -1 else o) for p, o in parts.items()}
                    for t, parts in spec.items()
                }
            offsets = json.dumps(spec)
        return self._resolved(endingOffsets="latest", startingOffsets=offsets, **start)["start"]

    def getDefaultReadLimit(self):
        from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows

        if self._max_offsets is None:
            return ReadAllAvailable()
        return ReadMaxRows(self._max_offsets)

    def latestOffset(self, start: Optional[Offsets] = None, limit: Any = None) -> Offsets:
        offsets = self._earliest_latest()
        latest = offsets["end"]
        if self._available_now is not None:
            latest = self._available_now  # as Spark's Kafka source: the end fixed at start
        max_rows = getattr(limit, "max_rows", None)
        if start is None:
            # Spark 4.0 / 4.1: no admission control.
            if self._max_offsets is not None and not self._warned_no_limit:
                warnings.warn("maxOffsetsPerTrigger needs Spark >= 4.2 (admission control); reading all available")
                self._warned_no_limit = True
            return latest
        if max_rows is None:
            return latest
        from . import _kwire

        limited = _kwire.rate_limit(
            int(max_rows), _offsets_json(start), _offsets_json(latest), _offsets_json(offsets["start"])
        )
        return _normalise(json.loads(limited))

    def reportLatestOffset(self) -> Optional[Offsets]:
        return self._earliest_latest()["end"]

    def partitions(self, start: Offsets, end: Offsets) -> List[KafkaRange]:
        from . import _kwire

        start_n, end_n = _normalise(start), _normalise(end)
        earliest: Offsets = {}
        if any(p not in start_n.get(t, {}) for t, parts in end_n.items() for p in parts):
            earliest = self._earliest_latest()["start"]
        ranges, plan_warnings = _kwire.plan_micro_batch(
            self.options, _offsets_json(start_n), _offsets_json(end_n), _offsets_json(earliest)
        )
        for w in plan_warnings:
            warnings.warn(w)
        return [KafkaRange(t, int(p), int(f), int(u)) for t, p, f, u in ranges]

    def read(self, partition: KafkaRange) -> Iterator[pa.RecordBatch]:
        return _read_range(self.options, partition)

    def commit(self, end: Offsets) -> None:
        pass


class KwireDataSource(DataSource):
    """``format("kwire")``: Spark's Kafka source options and schema, read by kwire."""

    @classmethod
    def name(cls) -> str:
        return "kwire"

    def schema(self) -> StructType:
        return kafka_spark_schema(_true(self.options.get("includeHeaders", "false")))

    def reader(self, schema: StructType) -> KwireBatchReader:
        return KwireBatchReader(_options(self.options))

    def streamReader(self, schema: StructType) -> KwireStreamReader:
        return KwireStreamReader(_options(self.options))


def register(spark) -> None:
    """Registers ``format("kwire")`` in the session."""
    spark.dataSource.register(KwireDataSource)


__all__ = ["KwireDataSource", "KafkaRange", "kafka_spark_schema", "register"]
