"""kwire.read, kwire.plan and the Arrow types of Spark's Kafka schema."""

import datetime as dt

import pyarrow as pa
import pytest

import kwire
from conftest import recent_ms

UTC = dt.timezone.utc

HEADERS_TYPE = pa.list_(pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())]))


def expected_schema(headers):
    fields = [
        pa.field("key", pa.binary()),
        pa.field("value", pa.binary()),
        pa.field("topic", pa.string()),
        pa.field("partition", pa.int32()),
        pa.field("offset", pa.int64()),
        pa.field("timestamp", pa.timestamp("us", tz="UTC")),
        pa.field("timestampType", pa.int32()),
    ]
    if headers:
        fields.append(pa.field("headers", HEADERS_TYPE))
    return pa.schema(fields)


def test_kafka_schema_is_sparks():
    assert kwire.kafka_schema() == expected_schema(False)
    assert kwire.kafka_schema(include_headers=True) == expected_schema(True)
    assert kwire.kafka_schema(True).field("headers").type.value_type.field("value").nullable


def produce_mixed(producer, topic):
    ts = recent_ms(123)
    producer.send(topic, value=b"v0", key=b"k0", partition=0, timestamp=ts,
                  headers=[("h", b"x"), ("n", None)])
    producer.send(topic, value=None, key=None, partition=0, timestamp=ts + 1)
    producer.send(topic, value=b"", key=b"", partition=0, timestamp=ts + 2, headers=[("e", b"")])
    producer.flush()
    return ts


def test_read_exact_types_and_null_vs_empty(bootstrap, new_topic, producer):
    topic = new_topic()
    ts = produce_mixed(producer, topic)
    t = kwire.read({"kafka.bootstrap.servers": bootstrap, "subscribe": topic, "includeHeaders": True})
    assert isinstance(t, pa.Table)
    assert t.schema == expected_schema(True)
    assert t.num_rows == 3
    rows = t.to_pylist()
    assert [r["key"] for r in rows] == [b"k0", None, b""]
    assert [r["value"] for r in rows] == [b"v0", None, b""]
    assert [r["offset"] for r in rows] == [0, 1, 2]
    assert {r["topic"] for r in rows} == {topic}
    assert {r["partition"] for r in rows} == {0}
    assert {r["timestampType"] for r in rows} == {0}
    assert rows[0]["timestamp"] == dt.datetime(1970, 1, 1, tzinfo=UTC) + dt.timedelta(milliseconds=ts)
    assert rows[0]["timestamp"].microsecond == 123000
    assert t.column("timestamp").cast(pa.int64()).to_pylist() == [(ts + i) * 1000 for i in range(3)]
    assert rows[0]["headers"] == [{"key": "h", "value": b"x"}, {"key": "n", "value": None}]
    assert rows[1]["headers"] is None  # no headers: null, as in Spark
    assert rows[2]["headers"] == [{"key": "e", "value": b""}]
    assert t.column("key").null_count == 1
    assert t.column("value").null_count == 1


def test_read_without_headers_has_seven_columns(bootstrap, new_topic, producer):
    topic = new_topic()
    produce_mixed(producer, topic)
    t = kwire.read({"kafka.bootstrap.servers": bootstrap, "subscribe": topic})
    assert t.schema == expected_schema(False)


def test_read_offsets_ranges_and_info(bootstrap, new_topic, producer):
    topic = new_topic(partitions=2)
    for i in range(10):
        producer.send(topic, value=b"%d" % i, partition=i % 2)
    producer.flush()
    opts = {
        "kafka.bootstrap.servers": bootstrap,
        "subscribe": topic,
        "startingOffsets": '{"%s":{"0":1,"1":-2}}' % topic,
        "endingOffsets": '{"%s":{"0":4,"1":-1}}' % topic,
    }
    t, info = kwire.read(opts, return_info=True)
    got = sorted(zip(t.column("partition").to_pylist(), t.column("offset").to_pylist()))
    assert got == [(0, 1), (0, 2), (0, 3)] + [(1, o) for o in range(5)]
    assert info["rows"] == 8
    assert info["plan"]["endOffsets"] == {topic: {"0": 4, "1": 5}}
    p = kwire.plan(opts)
    assert p["startOffsets"] == {topic: {"0": 1, "1": 0}}
    assert sum(r["untilOffset"] - r["fromOffset"] for r in p["ranges"]) == 8


def test_read_arrow_is_a_pycapsule_stream(bootstrap, new_topic, producer):
    topic = new_topic()
    produce_mixed(producer, topic)
    obj = kwire.read_arrow({"kafka.bootstrap.servers": bootstrap, "subscribe": topic})
    assert hasattr(obj, "__arrow_c_stream__")
    t = pa.table(obj)
    assert t.num_rows == 3
    with pytest.raises(ValueError, match="already exported"):
        obj.__arrow_c_stream__()


def test_bad_options_raise_config_error(bootstrap):
    with pytest.raises(kwire.ConfigError) as e:
        kwire.read({"kafka.bootstrap.servers": bootstrap})
    assert isinstance(e.value, ValueError)
    assert isinstance(e.value, kwire.KwireError)
    with pytest.raises(kwire.ConfigError, match="latest"):
        kwire.read({"kafka.bootstrap.servers": bootstrap, "subscribe": "t", "startingOffsets": "latest"})


def test_option_values_that_are_not_scalars_raise_config_error(bootstrap):
    # A list of topics must not become the topic name "['t']", nor None the text "None".
    for value in (["t"], None, {"t": {"0": 1}}):
        with pytest.raises(kwire.ConfigError, match="option 'subscribe' must be a str, int, float or bool") as e:
            kwire.read({"kafka.bootstrap.servers": bootstrap, "subscribe": value})
        assert isinstance(e.value, ValueError)
    with pytest.raises(kwire.ConfigError, match="option 'max.poll.records' must be"):
        kwire.Consumer({"bootstrap.servers": bootstrap, "max.poll.records": None})


def test_data_loss_raises_with_sparks_condition(bootstrap, new_topic, producer, admin):
    topic = new_topic()
    for i in range(10):
        producer.send(topic, value=b"%d" % i, partition=0)
    producer.flush()
    admin.delete_records([(topic, 0, 5)])
    opts = {
        "kafka.bootstrap.servers": bootstrap,
        "subscribe": topic,
        "startingOffsets": '{"%s":{"0":0}}' % topic,
    }
    with pytest.raises(kwire.KafkaDataLossError) as e:
        kwire.read(opts)
    assert e.value.condition.startswith("KAFKA_DATA_LOSS.")
    assert e.value.condition == "KAFKA_DATA_LOSS.COULD_NOT_READ_OFFSET_RANGE"
    assert e.value.topic == topic
    assert e.value.partition == 0
    t, info = kwire.read(dict(opts, failOnDataLoss="false"), return_info=True)
    assert t.column("offset").to_pylist() == list(range(5, 10))
    assert info["dataLoss"] >= 1


def test_start_above_end_is_an_offset_error(bootstrap, new_topic, producer):
    topic = new_topic()
    producer.send(topic, value=b"x", partition=0)
    producer.flush()
    with pytest.raises(kwire.OffsetError) as e:  # the end resolves to 1, below the start
        kwire.read({
            "kafka.bootstrap.servers": bootstrap,
            "subscribe": topic,
            "startingOffsets": '{"%s":{"0":2}}' % topic,
            "endingOffsets": "latest",
        })
    assert e.value.condition == "RESOLVED_START_OFFSET_GREATER_THAN_END_OFFSET"
    with pytest.raises(kwire.ConfigError) as e:  # both given: an option error, as in Spark
        kwire.read({
            "kafka.bootstrap.servers": bootstrap,
            "subscribe": topic,
            "startingOffsets": '{"%s":{"0":2}}' % topic,
            "endingOffsets": '{"%s":{"0":1}}' % topic,
        })
    assert e.value.condition == "UNRESOLVED_START_OFFSET_GREATER_THAN_END_OFFSET"


def test_unreachable_broker_is_a_connection_or_timeout_error():
    with pytest.raises((kwire.KafkaConnectionError, kwire.KafkaTimeoutError)):
        kwire.read({
            "kafka.bootstrap.servers": "127.0.0.1:1",
            "subscribe": "t",
            "kafka.request.timeout.ms": 2000,
            "kafka.default.api.timeout.ms": 2000,
            "kafka.socket.connection.setup.timeout.ms": 500,
            "fetchOffset.numRetries": 1,
        })


def test_ctrl_c_stops_a_long_read(bootstrap, new_topic, producer):
    import os
    import signal
    import threading
    import time

    topic = new_topic()
    v = b"x" * 100
    # small record batches, fetched one at a time: a read of many round trips
    small = kwire.Producer({"bootstrap.servers": bootstrap, "batch.size": "1500", "linger.ms": "0"})
    for _ in range(100_000):
        small.send(topic, value=v, partition=0)
    small.close()
    opts = {"kafka.bootstrap.servers": bootstrap, "subscribe": topic,
            "kafka.max.partition.fetch.bytes": 1, "kafka.fetch.max.bytes": 1}
    start = time.monotonic()
    full = kwire.read(opts)
    full_s = time.monotonic() - start
    assert full.num_rows == 100_000
    if full_s < 1.0:
        pytest.skip("the read took %.2f s: too short to interrupt" % full_s)
    timer = threading.Timer(full_s / 4, lambda: os.kill(os.getpid(), signal.SIGINT))
    timer.start()
    start = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        kwire.read(opts)
    assert time.monotonic() - start < full_s


def test_polars_takes_the_stream(bootstrap, new_topic, producer):
    pl = pytest.importorskip("polars")
    topic = new_topic()
    produce_mixed(producer, topic)
    df = pl.DataFrame(kwire.read_arrow({"kafka.bootstrap.servers": bootstrap, "subscribe": topic}))
    assert df.shape == (3, 7)
    assert df["key"].to_list() == [b"k0", None, b""]
    assert df.schema["timestamp"] == pl.Datetime("us", "UTC")
