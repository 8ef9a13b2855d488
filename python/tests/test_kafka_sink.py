"""The Kafka sink from Python: stream(sink="kafka") fed by a transform's
Table (no per-row Python), exactly-once across runs, and kwire.write as
df.write.format("kafka")."""

import json
import time

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import kwire


def read_values(bootstrap, topic, want=None, committed=True, timeout_s=20):
    """Values of `topic` (read_committed by default), read again until there
    are `want` of them: a commit returns before its markers make the records
    readable."""
    opts = {"kafka.bootstrap.servers": bootstrap, "subscribe": topic}
    if committed:
        opts["kafka.isolation.level"] = "read_committed"
    deadline = time.time() + timeout_s
    while True:
        table = kwire.read(opts)
        if want is None or table.num_rows >= want or time.time() > deadline:
            return table


def fill(bootstrap, topic, start, stop):
    p = kwire.Producer({"bootstrap.servers": bootstrap})
    for i in range(start, stop):
        p.send(topic, value=json.dumps({"id": i, "amount": i % 7}).encode(), key=b"%d" % i)
    p.flush()
    p.close()


def test_a_transform_table_feeds_the_kafka_sink(bootstrap, new_topic, tmp_path):
    src, out = new_topic(2), new_topic(2)
    fill(bootstrap, src, 0, 200)

    def transform(t: pa.Table) -> pa.Table:
        # Keep amounts above 2; the value becomes "<id>:<amount>" text.
        t = t.filter(pc.greater(t["amount"], 2))
        value = pc.binary_join_element_wise(pc.cast(t["id"], pa.string()), pc.cast(t["amount"], pa.string()), ":")
        return pa.table({"key": pc.cast(t["id"], pa.string()), "value": value})

    q = kwire.stream(
        {"kafka.bootstrap.servers": bootstrap, "subscribe": src, "startingOffsets": "earliest"},
        checkpoint=str(tmp_path / "ck"),
        sink="kafka",
        sink_options={"kafka.bootstrap.servers": bootstrap, "topic": out},
        value_format="json",
        schema="id INT, amount INT",
        transform=transform,
    )
    expected = sorted("%d:%d" % (i, i % 7) for i in range(200) if i % 7 > 2)
    assert q.last_progress["sink"]["description"].startswith("KafkaSink[topic=" + out)
    assert sum(p["sink"]["numOutputRows"] for p in q.recent_progress) == len(expected)
    values = read_values(bootstrap, out, committed=False).column("value").to_pylist()
    assert sorted(v.decode() for v in values) == expected


def test_exactly_once_across_runs_and_the_group_holds_the_position(bootstrap, new_topic, tmp_path, admin):
    src, out = new_topic(3), new_topic(1)
    fill(bootstrap, src, 0, 150)
    opts = {
        "kafka.bootstrap.servers": bootstrap,
        "subscribe": src,
        "startingOffsets": "earliest",
        "maxOffsetsPerTrigger": "60",
    }
    sink_opts = {"kafka.bootstrap.servers": bootstrap, "topic": out, "exactlyOnce": True}
    sink = kwire.KafkaSink(sink_opts)
    q = kwire.stream(opts, checkpoint=str(tmp_path / "ck"), sink=sink, transform=lambda t: t.select(["value"]))
    assert sink.transactional_id == "kwire-query-" + q.last_progress["id"]
    fill(bootstrap, src, 150, 200)
    kwire.stream(
        opts,
        checkpoint=str(tmp_path / "ck"),
        sink="kafka",
        sink_options=sink_opts,
        transform=lambda t: t.select(["value"]),
    )
    values = read_values(bootstrap, out, want=200).column("value").to_pylist()
    assert sorted(json.loads(v)["id"] for v in values) == list(range(200))


def test_write_is_a_batch_write_with_sparks_checks(bootstrap, new_topic):
    out = new_topic(2)
    table = pa.table({"key": ["a", "b", None], "value": [b"1", b"2", None], "partition": pa.array([0, 1, 1], pa.int32())})
    assert kwire.write(table, {"kafka.bootstrap.servers": bootstrap, "topic": out}) == 3
    got = read_values(bootstrap, out, committed=False)
    assert sorted(zip(got.column("partition").to_pylist(), got.column("value").to_pylist()), key=repr) == sorted(
        [(0, b"1"), (1, b"2"), (1, None)], key=repr
    )
    with pytest.raises(kwire.ConfigError, match="Option 'kafka.bootstrap.servers' must be specified"):
        kwire.write(table, {"topic": out})
    with pytest.raises(kwire.ConfigError, match="Required attribute 'value' not found"):
        kwire.write(pa.table({"key": ["a"]}), {"kafka.bootstrap.servers": bootstrap, "topic": out})
    with pytest.raises(kwire.ConfigError, match="a batch write cannot be exactly once"):
        kwire.write(table, {"kafka.bootstrap.servers": bootstrap, "topic": out, "exactlyOnce": "true"})
    with pytest.raises(kwire.ConfigError, match="sink_options= is only used with sink='kafka'"):
        kwire.stream({}, checkpoint="/nonexistent", sink="json", path="/tmp/x", sink_options={"a": 1})


def test_close_from_another_thread_waits_for_the_running_batch(bootstrap, new_topic, tmp_path):
    import threading

    src, out = new_topic(1), new_topic(1)
    fill(bootstrap, src, 0, 50)
    batches = []
    q = kwire.StreamingQuery(
        {"kafka.bootstrap.servers": bootstrap, "subscribe": src, "startingOffsets": "earliest"},
        str(tmp_path / "ck"),
        "kafka",
        sink_options={"kafka.bootstrap.servers": bootstrap, "topic": out, "exactlyOnce": True},
        trigger="processing-time=100 milliseconds",
        on_progress=lambda p: batches.append(p["batchId"]),
    )
    errors = []

    def run():
        try:
            q.run()
        except BaseException as e:  # noqa: BLE001 - the test reports whatever the run raised
            errors.append(e)

    t = threading.Thread(target=run)
    t.start()
    deadline = time.time() + 20
    while not batches and time.time() < deadline:
        time.sleep(0.05)
    assert batches, "no batch ran"
    fill(bootstrap, src, 50, 80)  # a batch may be running while close() is called
    q.close()  # stops the run, waits for it, then drops the producer
    t.join(20)
    assert not t.is_alive()
    assert errors == []
    values = read_values(bootstrap, out, want=50).column("value").to_pylist()
    ids = sorted(json.loads(v)["id"] for v in values)
    assert ids == list(range(len(ids))) and len(ids) >= 50  # committed batches only, each row once
    with pytest.raises(ValueError, match="closed"):
        q.run()
