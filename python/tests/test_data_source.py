"""The driver and executor halves the PySpark data source is built on
(kwire._kwire.SourcePlanner and RangeReadSession), against a real broker:
Spark's batch partitions, streaming offsets, late binding on the executor."""

import json

import pyarrow as pa
import pytest

import kwire
from kwire import _kwire


def fill(producer, topic, counts):
    for p, n in enumerate(counts):
        for i in range(n):
            producer.send(topic, value=b"v%d-%d" % (p, i), partition=p)
    producer.flush()


def read(session, topic, partition, start, end):
    stream, info = session.read(topic, partition, start, end)
    table = pa.RecordBatchReader.from_stream(stream).read_all()
    return table.column("offset").to_pylist(), info


def test_reader_spec_carries_what_executors_need(bootstrap):
    planner = _kwire.SourcePlanner(
        {
            "kafka.bootstrap.servers": bootstrap,
            "kafka.client.id": "me",
            "kafka.group.id": "left-out",
            "subscribe": "t",
            "kafkaConsumer.pollTimeoutMs": 1234,
            "failOnDataLoss": False,
            "includeHeaders": True,
            "maxOffsetsPerTrigger": 5,
        },
        True,
    )
    spec = planner.reader_spec
    planner.close()
    assert spec["kafkaConsumer.pollTimeoutMs"] == "1234"
    assert spec["failOnDataLoss"] == "false" and spec["includeHeaders"] == "true"
    assert spec["kafka.bootstrap.servers"] == bootstrap and spec["kafka.client.id"] == "me"
    assert "kafka.group.id" not in spec and "maxOffsetsPerTrigger" not in spec
    # kafka.group.id is what executors name when set, as in Spark.
    assert spec["executorGroupId"] == "left-out"


def test_streaming_group_id_is_the_source_one(bootstrap):
    spec = _kwire.SourcePlanner({"kafka.bootstrap.servers": bootstrap, "subscribe": "t"}, True).reader_spec
    assert spec["executorGroupId"].startswith("spark-kafka-source-")
    assert spec["executorGroupId"].endswith("-executor")
    batch = _kwire.SourcePlanner({"kafka.bootstrap.servers": bootstrap, "subscribe": "t"}, False).reader_spec
    assert batch["executorGroupId"].startswith("spark-kafka-relation-")


def test_batch_ranges_keep_empty_partitions_and_late_binding(bootstrap, new_topic, producer):
    topic = new_topic(4)
    fill(producer, topic, [6, 0, 3, 0])
    opts = {"kafka.bootstrap.servers": bootstrap, "subscribe": topic}
    planner = _kwire.SourcePlanner(opts, False)
    assert planner.batch_ranges() == [(topic, p, -2, -1) for p in range(4)]
    # JSON offsets: as given, -2 / -1 included.
    ends = json.dumps({topic: {"0": 5, "1": -1, "2": -1, "3": -1}})
    starts = json.dumps({topic: {"0": 1, "1": -2, "2": 0, "3": -2}})
    planner = _kwire.SourcePlanner(dict(opts, startingOffsets=starts, endingOffsets=ends), False)
    assert planner.batch_ranges() == [(topic, 0, 1, 5), (topic, 1, -2, -1), (topic, 2, 0, -1), (topic, 3, -2, -1)]
    # maxRecordsPerPartition with the end at latest: not split (Spark's unresolved size).
    planner = _kwire.SourcePlanner(dict(opts, maxRecordsPerPartition=2), False)
    assert len(planner.batch_ranges()) == 4
    # minPartitions above the partition count: split on the offsets known
    # now, empty ranges dropped, each partition's outer ends unresolved.
    planner = _kwire.SourcePlanner(dict(opts, minPartitions=6), False)
    ranges = planner.batch_ranges()
    assert [r[1] for r in ranges].count(1) == 0 and [r[1] for r in ranges].count(3) == 0
    p0 = [r for r in ranges if r[1] == 0]
    assert p0[0][2] == -2 and p0[-1][3] == -1 and len(p0) > 1
    assert all(a[3] == b[2] for a, b in zip(p0, p0[1:]))
    planner.close()


def test_batch_ranges_reject_a_resolved_start_after_its_end(bootstrap, new_topic, producer):
    from conftest import recent_ms

    topic = new_topic(1)
    t0 = recent_ms()  # once: a second ticking between calls would move every timestamp after it
    for i in range(6):
        producer.send(topic, value=b"v", partition=0, timestamp=t0 + i * 1000)
    producer.flush()
    planner = _kwire.SourcePlanner(
        {
            "kafka.bootstrap.servers": bootstrap,
            "subscribe": topic,
            "startingTimestamp": str(t0 + 4000),  # offset 4
            "endingOffsets": json.dumps({topic: {"0": 2}}),
        },
        False,
    )
    with pytest.raises(kwire.OffsetError, match="start offset 4 is greater than the resolved end offset 2"):
        planner.batch_ranges()


def test_session_binds_earliest_and_latest_when_it_reads(bootstrap, new_topic, producer, admin):
    topic = new_topic(1)
    fill(producer, topic, [5])
    planner = _kwire.SourcePlanner({"kafka.bootstrap.servers": bootstrap, "subscribe": topic}, False)
    (_, _, start, end), = planner.batch_ranges()
    session = _kwire.RangeReadSession(planner.reader_spec)
    # Records written and deleted after planning count: the ends are bound now.
    fill(producer, topic, [3])
    admin.delete_records([(topic, 0, 2)])
    offsets, info = read(session, topic, 0, start, end)
    assert offsets == list(range(2, 8)) and info["rows"] == 6
    # The same session (one consumer) serves the next ranges.
    assert read(session, topic, 0, 3, 5)[0] == [3, 4]
    assert read(session, topic, 0, 5, 5)[0] == []
    session.close()


def test_session_applies_fail_on_data_loss(bootstrap, new_topic, producer, admin):
    topic = new_topic(1)
    fill(producer, topic, [10])
    admin.delete_records([(topic, 0, 4)])
    base = {"kafka.bootstrap.servers": bootstrap, "subscribe": topic}
    strict = _kwire.RangeReadSession(_kwire.SourcePlanner(base, False).reader_spec)
    with pytest.raises(kwire.KafkaDataLossError) as e:
        read(strict, topic, 0, 0, 10)
    assert e.value.condition == "KAFKA_DATA_LOSS.COULD_NOT_READ_OFFSET_RANGE"
    # The session replaced its consumer after the failure and reads on.
    assert read(strict, topic, 0, 4, 6)[0] == [4, 5]
    lenient = _kwire.RangeReadSession(_kwire.SourcePlanner(dict(base, failOnDataLoss=False), False).reader_spec)
    offsets, info = read(lenient, topic, 0, 0, 10)
    assert offsets == list(range(4, 10))
    assert info["offsetOutOfRange"] == 4 and len(info["warnings"]) == 1


def test_streaming_offsets(bootstrap, new_topic, producer):
    topic = new_topic(2)
    fill(producer, topic, [30, 10])
    planner = _kwire.SourcePlanner(
        {"kafka.bootstrap.servers": bootstrap, "subscribe": topic, "startingOffsets": "earliest"}, True
    )
    start = planner.initial_offsets()
    assert json.loads(start) == {topic: {"0": 0, "1": 0}}
    latest = planner.latest_offsets(start)
    assert json.loads(latest) == {topic: {"0": 30, "1": 10}}
    # Spark's rateLimit: 20 offsets over a backlog of 30 + 10.
    assert json.loads(planner.rate_limit(20, start, latest)) == {topic: {"0": 15, "1": 5}}
    ranges, warnings = planner.plan_micro_batch(start, latest)
    assert ranges == [(topic, 0, 0, 30), (topic, 1, 0, 10)] and warnings == []
    # A partition the start does not know is new: it starts at its earliest.
    ranges, _ = planner.plan_micro_batch(json.dumps({topic: {"0": 30}}), latest)
    assert ranges == [(topic, 1, 0, 10)]
    planner.close()


def test_streaming_initial_offsets_resolve_json_and_timestamps(bootstrap, new_topic, producer):
    topic = new_topic(2)
    fill(producer, topic, [4, 6])
    base = {"kafka.bootstrap.servers": bootstrap, "subscribe": topic}
    planner = _kwire.SourcePlanner(dict(base, startingOffsets=json.dumps({topic: {"0": -1, "1": -2}})), True)
    assert json.loads(planner.initial_offsets()) == {topic: {"0": 4, "1": 0}}
    assert json.loads(_kwire.SourcePlanner(base, True).initial_offsets()) == {topic: {"0": 4, "1": 6}}
    far_future = _kwire.SourcePlanner(
        dict(base, startingTimestamp=str(2**53), startingOffsetsByTimestampStrategy="latest"), True
    )
    assert json.loads(far_future.initial_offsets()) == {topic: {"0": 4, "1": 6}}
