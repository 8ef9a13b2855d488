"""kwire.Consumer: assign / seek / poll into pyarrow, offset look-ups,
errors, Ctrl-C."""

import os
import signal
import threading
import time

import pyarrow as pa
import pytest

import kwire
from conftest import recent_ms


def fill(producer, topic, n, partition=0, t0=None):
    t0 = recent_ms() if t0 is None else t0
    for i in range(n):
        producer.send(topic, value=b"v%d" % i, key=b"k%d" % i, partition=partition, timestamp=t0 + i * 1000)
    producer.flush()


def poll_all(consumer, want, timeout_s=20):
    batches = []
    deadline = time.time() + timeout_s
    while sum(b.num_rows for b in batches) < want and time.time() < deadline:
        batches.append(consumer.poll(500))
    return pa.Table.from_batches(batches, schema=consumer.schema)


def test_assign_seek_poll_returns_record_batches(bootstrap, new_topic, producer):
    topic = new_topic(partitions=2)
    fill(producer, topic, 6, partition=0)
    fill(producer, topic, 4, partition=1)
    with kwire.Consumer({"bootstrap.servers": bootstrap, "auto.offset.reset": "earliest"}) as c:
        c.assign([(topic, 0), (topic, 1)])
        assert sorted(c.assignment()) == [(topic, 0), (topic, 1)]
        c.seek((topic, 0), 2)
        b = c.poll(5000)
        assert isinstance(b, pa.RecordBatch)
        assert b.schema == kwire.kafka_schema()
        t = pa.Table.from_batches([b], schema=c.schema)
        rest = poll_all(c, 8 - b.num_rows)
        t = pa.concat_tables([t, rest])
        got = sorted(zip(t.column("partition").to_pylist(), t.column("offset").to_pylist()))
        assert got == [(0, o) for o in range(2, 6)] + [(1, o) for o in range(4)]
        assert c.position((topic, 0)) == 6
        empty = c.poll(200)
        assert empty.num_rows == 0 and empty.schema == kwire.kafka_schema()


def test_poll_with_headers_and_pycapsule(bootstrap, new_topic, producer):
    topic = new_topic()
    producer.send(topic, value=b"a", partition=0, headers=[("h", None)])
    producer.flush()
    with kwire.Consumer({"bootstrap.servers": bootstrap, "auto.offset.reset": "earliest"},
                        include_headers=True) as c:
        c.assign([(topic, 0)])
        deadline = time.time() + 20
        obj = c.poll_arrow(1000)
        while obj.num_rows == 0 and time.time() < deadline:
            obj = c.poll_arrow(1000)
        assert hasattr(obj, "__arrow_c_array__")
        b = pa.record_batch(obj)
        assert b.column("headers").to_pylist() == [[{"key": "h", "value": None}]]


def test_offsets_lookups(bootstrap, new_topic, producer, admin):
    topic = new_topic()
    t0 = recent_ms()
    fill(producer, topic, 5, t0=t0)
    admin.delete_records([(topic, 0, 1)])
    with kwire.Consumer({"bootstrap.servers": bootstrap}) as c:
        assert c.beginning_offsets([(topic, 0)]) == {(topic, 0): 1}
        assert c.end_offsets([(topic, 0)]) == {(topic, 0): 5}
        found = c.offsets_for_times({(topic, 0): t0 + 2500})
        assert found == {(topic, 0): (3, t0 + 3000)}
        assert c.offsets_for_times({(topic, 0): t0 + 10_000_000}) == {(topic, 0): None}


def test_offset_out_of_range_with_reset_none(bootstrap, new_topic, producer):
    topic = new_topic()
    fill(producer, topic, 3)
    with kwire.Consumer({"bootstrap.servers": bootstrap, "auto.offset.reset": "none"}) as c:
        c.assign([(topic, 0)])
        c.seek((topic, 0), 100)
        with pytest.raises(kwire.OffsetOutOfRangeError) as e:
            for _ in range(20):
                c.poll(500)
        assert e.value.topic == topic
        assert e.value.partition == 0
        assert e.value.offset == 100
        assert isinstance(e.value, kwire.KafkaError)


def test_unknown_property_is_a_config_error(bootstrap):
    with pytest.raises(kwire.ConfigError):
        kwire.Consumer({"bootstrap.servers": bootstrap, "auto.offset.reset": "sometimes"})


def test_closed_consumer_raises(bootstrap):
    c = kwire.Consumer({"bootstrap.servers": bootstrap})
    c.close()
    with pytest.raises(ValueError, match="closed"):
        c.poll(10)


def test_ctrl_c_stops_a_long_poll(bootstrap, new_topic):
    topic = new_topic()
    with kwire.Consumer({"bootstrap.servers": bootstrap}) as c:
        c.assign([(topic, 0)])
        timer = threading.Timer(0.5, lambda: os.kill(os.getpid(), signal.SIGINT))
        timer.start()
        start = time.monotonic()
        with pytest.raises(KeyboardInterrupt):
            c.poll(60_000)
        assert time.monotonic() - start < 5
        # the consumer is still usable afterwards
        assert c.poll(10).num_rows == 0


def test_seek_to_beginning_end_pause_resume(bootstrap, new_topic, producer):
    topic = new_topic(partitions=2)
    fill(producer, topic, 3, partition=0)
    fill(producer, topic, 2, partition=1)
    with kwire.Consumer({"bootstrap.servers": bootstrap, "auto.offset.reset": "latest"}) as c:
        c.assign([(topic, 0), (topic, 1)])
        c.seek_to_end([(topic, 0), (topic, 1)])
        assert c.position((topic, 0)) == 3 and c.position((topic, 1)) == 2
        c.seek_to_beginning([(topic, 0), (topic, 1)])
        c.pause([(topic, 1)])
        t = poll_all(c, 3, timeout_s=10)
        assert set(t.column("partition").to_pylist()) == {0}
        assert t.column("offset").to_pylist() == [0, 1, 2]
        c.resume([(topic, 1)])
        t = poll_all(c, 2, timeout_s=10)
        assert sorted(t.column("offset").to_pylist()) == [0, 1]
        assert set(t.column("partition").to_pylist()) == {1}


def test_poll_releases_the_gil(bootstrap, new_topic):
    topic = new_topic()
    with kwire.Consumer({"bootstrap.servers": bootstrap}) as c:
        c.assign([(topic, 0)])
        c.poll(10)
        ticks = []
        done = threading.Event()

        def count():
            while not done.is_set():
                ticks.append(1)
                time.sleep(0.001)

        t = threading.Thread(target=count)
        t.start()
        start = time.monotonic()
        c.poll(1000)  # nothing to read: waits the whole second
        elapsed = time.monotonic() - start
        done.set()
        t.join()
        assert elapsed >= 0.9
        assert len(ticks) > 100  # the other thread ran while poll waited


def _port(listen):
    import socket
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    if listen:
        s.listen(64)  # connections complete in the kernel and are never read
        return s, port
    s.close()  # nobody listens: refused
    return None, port


@pytest.mark.parametrize("listen", [True, False], ids=["silent", "refused"])
def test_poll_returns_by_its_timeout_whatever_the_network_does(listen):
    sock, port = _port(listen)
    try:
        with kwire.Consumer({"bootstrap.servers": "127.0.0.1:%d" % port, "auto.offset.reset": "earliest"}) as c:
            c.assign([("t", 0)])
            for _ in range(2):
                start = time.monotonic()
                assert c.poll(1000).num_rows == 0
                assert time.monotonic() - start < 2.0
    finally:
        if sock:
            sock.close()


def test_silence_past_default_api_timeout_is_a_timeout_error():
    sock, port = _port(True)
    try:
        with kwire.Consumer({"bootstrap.servers": "127.0.0.1:%d" % port, "auto.offset.reset": "earliest",
                             "default.api.timeout.ms": "1500"}) as c:
            c.assign([("t", 0)])
            start = time.monotonic()
            with pytest.raises(kwire.KafkaTimeoutError, match=r"default\.api\.timeout\.ms \(1500 ms\)"):
                while time.monotonic() - start < 10:
                    c.poll(300)
            assert 1.5 <= time.monotonic() - start < 3.5
    finally:
        sock.close()
