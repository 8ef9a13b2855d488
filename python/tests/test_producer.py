"""kwire.Producer: produce_arrow with Spark's Kafka sink columns, and
transactions as read_committed readers see them."""

import time
import uuid

import pyarrow as pa
import pytest

import kwire


def read_topic(bootstrap, topic, committed=False, headers=False):
    opts = {"kafka.bootstrap.servers": bootstrap, "subscribe": topic, "includeHeaders": headers}
    if committed:
        opts["kafka.isolation.level"] = "read_committed"
    return kwire.read(opts)


def read_until(bootstrap, topic, want, committed=True, timeout_s=15):
    """A commit returns before its markers make the records readable: read
    again until the values are `want` (sorted) or the time is up."""
    deadline = time.time() + timeout_s
    while True:
        values = sorted(read_topic(bootstrap, topic, committed).column("value").to_pylist())
        if values == want or time.time() > deadline:
            return values
        time.sleep(0.2)


def test_produce_arrow_writes_every_column(bootstrap, new_topic):
    topic = new_topic(3)
    table = pa.table(
        {
            "key": pa.array([b"k0", None, b"k2", b"k3"], pa.binary()),
            "value": pa.array(["v0", "v1", None, "v3"], pa.string()),
            "partition": pa.array([2, 0, None, 1], pa.int32()),
            "headers": pa.array(
                [[{"key": "h", "value": b"x"}], None, [], [{"key": "a", "value": None}, {"key": "b", "value": b"y"}]],
                pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())])),
            ),
            "ignored": pa.array([1, 2, 3, 4]),
        }
    )
    p = kwire.Producer({"bootstrap.servers": bootstrap})
    assert p.produce_arrow(table, topic=topic) == 4
    p.flush()
    p.close()
    got = read_topic(bootstrap, topic, headers=True).to_pylist()
    by_value = {r["value"]: r for r in got}
    assert len(got) == 4
    assert by_value[b"v0"]["key"] == b"k0" and by_value[b"v0"]["partition"] == 2
    assert by_value[b"v0"]["headers"] == [{"key": "h", "value": b"x"}]
    assert by_value[b"v1"]["key"] is None and by_value[b"v1"]["partition"] == 0
    assert by_value[b"v3"]["partition"] == 1
    assert by_value[b"v3"]["headers"] == [{"key": "a", "value": None}, {"key": "b", "value": b"y"}]
    tombstone = by_value[None]
    assert tombstone["key"] == b"k2"


def test_produce_arrow_takes_the_topic_column_and_record_batches(bootstrap, new_topic):
    t1, t2 = new_topic(1), new_topic(1)
    batch = pa.record_batch({"topic": [t1, t2, t1], "value": [b"a", b"b", b"c"]})
    p = kwire.Producer({"bootstrap.servers": bootstrap})
    assert p.produce_arrow(batch) == 3
    # A sliced table (a non-zero offset) sends only its rows.
    assert p.produce_arrow(pa.Table.from_batches([batch]).slice(1, 1)) == 1
    p.flush()
    p.close()
    assert sorted(read_topic(bootstrap, t1).column("value").to_pylist()) == [b"a", b"c"]
    assert sorted(read_topic(bootstrap, t2).column("value").to_pylist()) == [b"b", b"b"]


def test_produce_arrow_schema_errors_name_the_column(bootstrap):
    p = kwire.Producer({"bootstrap.servers": bootstrap})
    with pytest.raises(kwire.ConfigError, match="Required attribute 'value' not found"):
        p.produce_arrow(pa.table({"key": [b"k"]}), topic="t")
    with pytest.raises(kwire.ConfigError, match="topic option required when no 'topic' attribute is present"):
        p.produce_arrow(pa.table({"value": [b"v"]}))
    with pytest.raises(kwire.ConfigError, match="key attribute unsupported type bigint"):
        p.produce_arrow(pa.table({"key": [1], "value": [b"v"]}), topic="t")
    with pytest.raises(kwire.ConfigError, match="partition attribute unsupported type bigint"):
        p.produce_arrow(pa.table({"value": [b"v"], "partition": [0]}), topic="t")
    two_values = pa.Table.from_arrays([pa.array([b"a"]), pa.array([b"b"])], names=["value", "value"])
    with pytest.raises(kwire.ConfigError, match="Reference `value` is ambiguous"):
        p.produce_arrow(two_values, topic="t")
    with pytest.raises(TypeError, match="Arrow table"):
        p.produce_arrow([1, 2, 3], topic="t")
    p.close()


def test_transactions_commit_abort_and_offsets(bootstrap, new_topic):
    topic = new_topic(2)
    tid = "py-txn-" + uuid.uuid4().hex[:8]
    group = "py-g-" + uuid.uuid4().hex[:8]
    p = kwire.Producer({"bootstrap.servers": bootstrap, "transactional.id": tid})
    with pytest.raises(kwire.TransactionStateError, match="init_transactions"):
        p.begin_transaction()
    p.init_transactions()
    assert p.transactions_v2 in (True, False)
    p.begin_transaction()
    p.produce_arrow(pa.table({"value": [b"aborted-0", b"aborted-1"]}), topic=topic)
    p.send_offsets_to_transaction({(topic, 0): 5}, group)
    p.flush()
    p.abort_transaction()
    p.begin_transaction()
    p.send(topic, value=b"committed-0")
    p.produce_arrow(pa.table({"value": [b"committed-1"]}), topic=topic)
    p.send_offsets_to_transaction({(topic, 0): 7}, group)
    p.commit_transaction()
    with pytest.raises(kwire.TransactionStateError):
        p.send(topic, value=b"outside")
    p.close()
    assert read_until(bootstrap, topic, [b"committed-0", b"committed-1"]) == [b"committed-0", b"committed-1"]
    uncommitted = sorted(read_topic(bootstrap, topic).column("value").to_pylist())
    assert uncommitted == [b"aborted-0", b"aborted-1", b"committed-0", b"committed-1"]


def test_an_older_producer_is_fenced(bootstrap, new_topic):
    topic = new_topic(1)
    props = {"bootstrap.servers": bootstrap, "transactional.id": "py-fence-" + uuid.uuid4().hex[:8]}
    older = kwire.Producer(props)
    older.init_transactions()
    older.begin_transaction()
    older.send(topic, value=b"older")
    newer = kwire.Producer(props)
    newer.init_transactions()
    with pytest.raises(kwire.ProducerFencedError) as e:
        older.commit_transaction()
    assert isinstance(e.value, kwire.KafkaError) and e.value.code in (47, 90)  # INVALID_PRODUCER_EPOCH, PRODUCER_FENCED
    newer.close()


def test_close_aborts_an_open_transaction_and_never_raises(bootstrap, new_topic):
    topic = new_topic(1)
    tid = "py-close-" + uuid.uuid4().hex[:8]
    with kwire.Producer({"bootstrap.servers": bootstrap, "transactional.id": tid}) as p:
        p.init_transactions()
        p.begin_transaction()
        p.send(topic, value=b"left-open", headers={"h": b"1", b"k": None})
        p.flush()
    # Aborted by close: a later plain record is readable under read_committed
    # at once (the open transaction no longer holds the last stable offset).
    plain = kwire.Producer({"bootstrap.servers": bootstrap})
    plain.send(topic, value=b"after")
    plain.flush()
    plain.close()
    assert read_until(bootstrap, topic, [b"after"], timeout_s=5) == [b"after"]
    t = read_topic(bootstrap, topic, headers=True).to_pylist()
    assert [r["headers"] for r in t if r["value"] == b"left-open"] == [[{"key": "h", "value": b"1"}, {"key": "k", "value": None}]]


def test_an_abort_leaves_no_error_for_later_calls(bootstrap, new_topic):
    topic = new_topic(1)
    p = kwire.Producer({"bootstrap.servers": bootstrap, "transactional.id": "py-later-" + uuid.uuid4().hex[:8],
                        "linger.ms": "60000"})
    p.init_transactions()
    p.begin_transaction()
    p.send(topic, value=b"dropped")  # still queued: the abort drops it
    p.abort_transaction()
    p.begin_transaction()
    p.send(topic, value=b"kept")
    p.commit_transaction()
    p.flush()  # nothing of the aborted transaction is reported here
    p.close()
    assert read_until(bootstrap, topic, [b"kept"]) == [b"kept"]


def test_a_record_that_cannot_be_sent_makes_the_transaction_abortable(bootstrap, new_topic):
    topic = new_topic(1)
    p = kwire.Producer({"bootstrap.servers": bootstrap, "transactional.id": "py-half-" + uuid.uuid4().hex[:8]})
    p.init_transactions()
    p.begin_transaction()
    with pytest.raises(kwire.KwireError, match="too large"):
        p.produce_arrow(pa.table({"value": [b"r0", b"r1", b"x" * 2_000_000, b"r3"]}), topic=topic)
    with pytest.raises(kwire.TransactionAbortableError, match="could not be sent"):
        p.commit_transaction()
    p.abort_transaction()
    p.close()
    assert read_until(bootstrap, topic, [], timeout_s=2) == []


def test_ctrl_c_stops_a_blocking_transaction_call():
    """A broker that accepts connections and never answers: init_transactions
    would wait max.block.ms; Ctrl-C (SIGINT) raises KeyboardInterrupt at once,
    and close() then waits for the call left running."""
    import os
    import signal
    import socket
    import threading

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    accepted = []
    stop = threading.Event()

    def accept():
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                accepted.append(server.accept()[0])
            except OSError:
                pass

    t = threading.Thread(target=accept, daemon=True)
    t.start()
    bootstrap = "127.0.0.1:%d" % server.getsockname()[1]
    p = kwire.Producer(
        {
            "bootstrap.servers": bootstrap,
            "transactional.id": "never-answered",
            "max.block.ms": 4000,
            "request.timeout.ms": 2000,
        }
    )
    timer = threading.Timer(0.5, lambda: os.kill(os.getpid(), signal.SIGINT))
    timer.start()
    began = time.monotonic()
    try:
        with pytest.raises(KeyboardInterrupt):
            p.init_transactions()
        assert time.monotonic() - began < 2.5
        began = time.monotonic()
        p.close()  # the interrupted call ends by max.block.ms, its request by request.timeout.ms
        assert time.monotonic() - began < 10
        assert accepted, "the producer never connected"
    finally:
        timer.cancel()
        stop.set()
        t.join()
        for c in accepted:
            c.close()
        server.close()
