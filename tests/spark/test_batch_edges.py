"""Batch queries at their edges, Spark's `kafka` source against `kwire read`
with the same options on the same broker: an end past the latest offset,
JSON offsets or timestamps naming only some partitions, a timestamp start
matching no record, a missing topic; and the JSON Lines sink's rows against
what Spark's JSON writer writes for the same rows."""

from __future__ import annotations

import json
import time

import pytest

from interop import Kwire, by_offset, sink_batches, spark_read, unique_topic


@pytest.fixture(scope="module")
def kwire(kwire_bin, bootstrap) -> Kwire:
    return Kwire(kwire_bin, bootstrap)


def flat(text: str) -> str:
    """Whitespace collapsed (Spark's messages span lines)."""
    return " ".join(text.split())


def kwire_args(options: dict[str, str]) -> list[str]:
    args = []
    for k, v in options.items():
        if k != "kafka.bootstrap.servers":
            args += ["-o", f"{k}={v}"]
    return args


def kwire_read_fails(kwire: Kwire, tmp_path, options: dict[str, str]) -> str:
    proc = kwire.run("read", "-b", kwire.bootstrap, "--sink", f"jsonl:{tmp_path / 'sink'}", *kwire_args(options),
                     expect_failure=True)
    return proc.stderr


def spark_read_fails(spark, options: dict[str, str]) -> str:
    """Spark's error text, with its condition (getCondition() of the Java
    exception, which py4j passes on unconverted) in front as "[NAME]"."""
    with pytest.raises(Exception) as failure:
        spark.read.format("kafka").options(**options).load().collect()
    condition = None
    for source in (failure.value, getattr(failure.value, "java_exception", None)):
        getter = getattr(source, "getCondition", None)
        try:
            condition = condition or (getter() if getter else None)
        except Exception:
            pass
    return f"[{condition}] {failure.value}"


@pytest.fixture(scope="module")
def forty(kwire) -> str:
    """A topic of one partition holding 40 records."""
    topic = unique_topic("forty")
    kwire.create_topic(topic, 1)
    kwire.produce(topic, 0, [f"r{i}" for i in range(40)])
    return topic


@pytest.fixture(scope="module")
def three(kwire) -> str:
    """A topic of three partitions with a few records each."""
    topic = unique_topic("three")
    kwire.create_topic(topic, 3)
    for p in range(3):
        kwire.produce(topic, p, [f"p{p}-{i}" for i in range(4)])
    return topic


# ------------------------------------------ an end past the latest offset


def test_an_end_past_the_latest_offset_reads_every_record_and_warns(spark, kwire, bootstrap, forty, tmp_path):
    options = {
        "kafka.bootstrap.servers": bootstrap,
        "subscribe": forty,
        "endingOffsets": json.dumps({forty: {"0": 45}}),
        "failOnDataLoss": "false",
    }
    # Spark finds the end after an empty poll: keep its wait short.
    spark_rows = spark_read(spark, dict(options, **{"kafkaConsumer.pollTimeoutMs": "3000"}))
    assert [r[4] for r in spark_rows] == list(range(40))
    # kwire does not wait for the poll timeout: the Fetch answer shows the log end.
    started = time.monotonic()
    proc = kwire.run("read", "-b", bootstrap, "--sink", f"jsonl:{tmp_path / 'sink'}",
                     *kwire_args(dict(options, **{"kafkaConsumer.pollTimeoutMs": "60000"})))
    took = time.monotonic() - started
    kwire_rows = by_offset([row for rows in sink_batches(tmp_path / "sink").values() for row in rows])
    assert kwire_rows == spark_rows
    assert took < 30, took
    assert f"Could not read records in offset [40, 45) for topic partition {forty}-0" in flat(proc.stderr)
    assert "records in [40, 45) will be skipped" in flat(proc.stderr)
    assert "offsetOutOfRange 5" in proc.stderr


def test_an_end_past_the_latest_offset_is_data_loss_with_fail_on_data_loss(spark, kwire, bootstrap, forty, tmp_path):
    options = {
        "kafka.bootstrap.servers": bootstrap,
        "subscribe": forty,
        "endingOffsets": json.dumps({forty: {"0": 45}}),
        "kafkaConsumer.pollTimeoutMs": "3000",
    }
    spark_text = flat(spark_read_fails(spark, options))
    kwire_text = flat(kwire_read_fails(kwire, tmp_path, options))
    reason = f"Could not read records in offset [40, 45) for topic partition {forty}-0"
    for text in (spark_text, kwire_text):
        assert "KAFKA_DATA_LOSS.COULD_NOT_READ_OFFSET_RANGE" in text, text[:3000]
        assert reason in text, text[:3000]


# ------------------------------- JSON offsets naming only some partitions


def sets_named(text: str) -> tuple[set[str], set[str]]:
    """The partitions of "Specified: Set(..) Assigned: Set(..)"."""
    import re

    m = re.search(r"Specified: Set\(([^)]*)\) Assigned: Set\(([^)]*)\)", text)
    assert m, text[:3000]
    return ({p.strip() for p in m.group(1).split(",")}, {p.strip() for p in m.group(2).split(",")})


@pytest.mark.parametrize("end", [False, True])
def test_json_offsets_naming_some_partitions_fail_with_sparks_condition(spark, kwire, bootstrap, three, tmp_path,
                                                                        end):
    name = "endingOffsets" if end else "startingOffsets"
    options = {"kafka.bootstrap.servers": bootstrap, "subscribe": three,
               name: json.dumps({three: {"0": 1 if end else 0, "2": 1 if end else 0}})}
    spark_text = flat(spark_read_fails(spark, options))
    kwire_text = flat(kwire_read_fails(kwire, tmp_path, options))
    sentence = ("Partitions specified for Kafka start offsets don't match what are assigned. Maybe topic partitions "
                "are created or deleted while the query is running. Use -1 for latest, -2 for earliest.")
    for text in (spark_text, kwire_text):
        assert "KAFKA_START_OFFSET_DOES_NOT_MATCH_ASSIGNED" in text, text[:3000]
        assert sentence in text, text[:3000]
        assert sets_named(text) == ({f"{three}-0", f"{three}-2"}, {f"{three}-{p}" for p in range(3)})


def test_timestamp_offsets_naming_some_partitions_are_retried_then_fail(spark, kwire, bootstrap, three, tmp_path):
    options = {
        "kafka.bootstrap.servers": bootstrap,
        "subscribe": three,
        "endingOffsetsByTimestamp": json.dumps({three: {"0": 1}}),
        "fetchOffset.numRetries": "2",
        "fetchOffset.retryIntervalMs": "500",
    }
    spark_text = flat(spark_read_fails(spark, options))
    started = time.monotonic()
    kwire_text = flat(kwire_read_fails(kwire, tmp_path, options))
    took = time.monotonic() - started
    sentence = ("Partitions specified for Kafka timestamp based end offsets don't match what are assigned. Maybe topic "
                "partitions are created or deleted while the query is running, or you didn't specify all the "
                "partitions.")
    for text in (spark_text, kwire_text):
        assert "KAFKA_TIMESTAMP_OFFSET_DOES_NOT_MATCH_ASSIGNED" in text, text[:3000]
        assert sentence in text, text[:3000]
        assert sets_named(text) == ({f"{three}-0"}, {f"{three}-{p}" for p in range(3)})
    # Retried as Spark retries: two attempts, 500 ms apart.
    assert "attempt 1 of 2" in kwire_text
    assert took >= 0.5


def test_a_timestamp_start_matching_nothing_is_retried_then_fails(spark, kwire, bootstrap, three, tmp_path):
    future = int(time.time() * 1000) + 3_600_000
    options = {
        "kafka.bootstrap.servers": bootstrap,
        "subscribe": three,
        "startingTimestamp": str(future),
        "fetchOffset.numRetries": "2",
        "fetchOffset.retryIntervalMs": "500",
    }
    spark_text = flat(spark_read_fails(spark, options))
    kwire_text = flat(kwire_read_fails(kwire, tmp_path, options))
    for text in (spark_text, kwire_text):
        assert f"No offset matched from request of topic-partition {three}-" in text, text[:3000]
        assert f"and timestamp {future}." in text, text[:3000]
    assert "attempt 1 of 2" in kwire_text


def test_a_missing_topic_reads_as_spark_shows_it(spark, kwire, bootstrap, tmp_path):
    options = {
        "kafka.bootstrap.servers": bootstrap,
        "subscribe": unique_topic("missing"),
        "fetchOffset.numRetries": "1",
    }
    sentence = "This server does not host this topic-partition."
    assert sentence in flat(spark_read_fails(spark, options))
    assert sentence in flat(kwire_read_fails(kwire, tmp_path, options))


# ---------------------------------------------- the JSON Lines sink's rows


@pytest.fixture(scope="module")
def mixed(kwire) -> str:
    """Keyed records with headers, unkeyed ones, an empty value, bytes that
    need escaping."""
    topic = unique_topic("json-rows")
    kwire.create_topic(topic, 1)
    kwire.produce(topic, 0, ['k1|{"a":1,"s":"x\\ty"}', "k2|plain text"], key_delimiter="|",
                  headers=("h=1", "h=2"))
    kwire.produce(topic, 0, ["no key", ""])
    return topic


def spark_json_lines(spark, options: dict[str, str], columns: list[str], path) -> list[dict]:
    spark.read.format("kafka").options(**options).load().selectExpr(*columns).coalesce(1).write.json(str(path))
    lines = []
    for part in sorted(path.glob("part-*.json")):
        lines += [json.loads(line) for line in part.read_text().splitlines() if line]
    return sorted(lines, key=lambda d: d["offset"])


def kwire_json_lines(kwire: Kwire, options: dict[str, str], sink, *extra: str) -> list[dict]:
    kwire.run("read", "-b", kwire.bootstrap, "--sink", f"jsonl:{sink}", *extra, *kwire_args(options))
    lines = []
    for part in sorted(sink.glob("part-*.jsonl")):
        lines += [json.loads(line) for line in part.read_text().splitlines() if line]
    return sorted(lines, key=lambda d: d["offset"])


ALL_COLUMNS = ["key", "value", "topic", "partition", "offset", "timestamp", "timestampType", "headers"]


def test_base64_rows_are_what_sparks_json_writer_writes(spark, kwire, bootstrap, mixed, tmp_path):
    options = {"kafka.bootstrap.servers": bootstrap, "subscribe": mixed, "includeHeaders": "true"}
    spark_lines = spark_json_lines(spark, options, ALL_COLUMNS, tmp_path / "spark")
    kwire_lines = kwire_json_lines(kwire, options, tmp_path / "kwire", "--binary", "base64")
    assert len(spark_lines) == 4
    assert spark_lines[0]["timestamp"].endswith("Z") and "T" in spark_lines[0]["timestamp"]
    assert kwire_lines == spark_lines
    # Member order too: the writer follows the columns.
    assert [list(d) for d in kwire_lines] == [list(d) for d in spark_lines]


def test_text_rows_are_what_spark_writes_for_values_cast_to_string(spark, kwire, bootstrap, mixed, tmp_path):
    options = {"kafka.bootstrap.servers": bootstrap, "subscribe": mixed, "includeHeaders": "true"}
    columns = ["CAST(key AS STRING) AS key", "CAST(value AS STRING) AS value", "topic", "partition", "offset",
               "timestamp", "timestampType",
               "transform(headers, h -> named_struct('key', h.key, 'value', CAST(h.value AS STRING))) AS headers"]
    spark_lines = spark_json_lines(spark, options, columns, tmp_path / "spark")
    kwire_lines = kwire_json_lines(kwire, options, tmp_path / "kwire")
    assert kwire_lines == spark_lines


def test_timestamps_are_written_in_the_session_time_zone(spark, kwire, bootstrap, mixed, tmp_path):
    options = {"kafka.bootstrap.servers": bootstrap, "subscribe": mixed}
    zone = "America/New_York"
    previous = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", zone)
    try:
        spark_lines = spark_json_lines(spark, options, ["offset", "timestamp"], tmp_path / "spark")
    finally:
        spark.conf.set("spark.sql.session.timeZone", previous)
    kwire_lines = kwire_json_lines(kwire, options, tmp_path / "kwire", "--time-zone", zone)
    assert [(d["offset"], d["timestamp"]) for d in kwire_lines] == [(d["offset"], d["timestamp"]) for d in spark_lines]
    assert spark_lines[0]["timestamp"][-6:] in ("-05:00", "-04:00")


def test_decoded_values_are_what_from_json_and_the_json_writer_give(spark, kwire, bootstrap, tmp_path):
    topic = unique_topic("json-decoded")
    kwire.create_topic(topic, 1)
    kwire.produce(topic, 0, ['{"id":1,"ts":"2026-12-01T10:00:00.250Z","x":2}', '{"id":"bad"}', "not json",
                             '{"id":3,"x":1e20,"ts":null}'])
    options = {"kafka.bootstrap.servers": bootstrap, "subscribe": topic}
    schema = "id BIGINT, ts TIMESTAMP, x DOUBLE"
    spark_lines = spark_json_lines(
        spark, dict(options, **{}),
        [f"from_json(CAST(value AS STRING), '{schema}', map('columnNameOfCorruptRecord', '_corrupt_record')) AS v",
         "partition", "offset"], tmp_path / "spark-raw")
    kwire_lines = kwire_json_lines(kwire, options, tmp_path / "kwire", "--value-format", "json", "--schema", schema,
                                   "--kafka-columns", "partition,offset")
    flattened = [dict(d.get("v", {}), partition=d["partition"], offset=d["offset"]) for d in spark_lines]
    # from_json in a projection has no _corrupt_record column (that is the
    # JSON reader's): compare the typed columns.
    for d in kwire_lines:
        d.pop("_corrupt_record", None)
    assert kwire_lines == flattened
