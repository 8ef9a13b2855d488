"""kwire.ShareConsumer against a broker with share groups (Kafka 4.2+).

KWIRE_SHARE_BOOTSTRAP names it (scripts/test names its main broker, Kafka 4.4,
started with group.share.min.record.lock.duration.ms lowered); the tests skip
without it.
"""

import os
import threading
import time
import uuid

import pyarrow as pa
import pytest

import kwire
from kwire.errors import InvalidRecordStateError, ShareAcknowledgementModeError

LOCK_MS = 2000


@pytest.fixture(scope="module")
def share_bootstrap():
    value = os.environ.get("KWIRE_SHARE_BOOTSTRAP")
    if not value:
        pytest.skip("KWIRE_SHARE_BOOTSTRAP not set (scripts/test sets it for a Kafka 4.2+ main broker)")
    return value


@pytest.fixture
def share_topic(share_bootstrap):
    """(topic, group): a one-partition topic with 20 records v-0..v-19 and a
    group that starts at the earliest offset with a short lock."""
    topic = "py-share-" + uuid.uuid4().hex[:10]
    group = "py-share-group-" + uuid.uuid4().hex[:10]
    admin = kwire.Admin({"bootstrap.servers": share_bootstrap})
    try:
        admin.create_topics([(topic, 1)])
        admin.alter_configs(
            "group",
            group,
            {"share.auto.offset.reset": "earliest", "share.record.lock.duration.ms": str(LOCK_MS)},
        )
    finally:
        admin.close()
    with kwire.Producer({"bootstrap.servers": share_bootstrap}) as p:
        for i in range(20):
            p.send(topic, value=f"v-{i}".encode(), key=str(i).encode())
        p.flush()
    return topic, group


def poll_rows(consumer, want, limit_s):
    """Polls until `want` rows came or limit_s passed; the batches."""
    batches, rows = [], 0
    until = time.monotonic() + limit_s
    while rows < want and time.monotonic() < until:
        b = consumer.poll(200)
        if b.num_rows:
            batches.append(b)
            rows += b.num_rows
    return batches


def test_poll_gives_kafka_columns_and_delivery_count(share_bootstrap, share_topic):
    topic, group = share_topic
    props = {"bootstrap.servers": share_bootstrap, "group.id": group}
    with kwire.ShareConsumer(props) as c:
        assert c.schema.field("deliveryCount").type == pa.int16()
        c.subscribe([topic])
        batches = poll_rows(c, 20, 20)
        table = pa.Table.from_batches(batches, schema=c.schema)
        assert sorted(table.column("offset").to_pylist()) == list(range(20))
        assert set(table.column("deliveryCount").to_pylist()) == {1}
        values = {o: v for o, v in zip(table.column("offset").to_pylist(), table.column("value").to_pylist())}
        assert values[7] == b"v-7"
        assert set(table.column("topic").to_pylist()) == {topic}
        assert c.assignment() == [(topic, 0)]
        assert c.acquisition_lock_ms == LOCK_MS


def test_release_some_rows_then_reject_them(share_bootstrap, share_topic):
    """Even offsets are released on their first delivery (a boolean mask),
    the others accepted (row indices); the released ones come back at once
    with deliveryCount 2 and are rejected; then nothing comes back."""
    topic, group = share_topic
    props = {"bootstrap.servers": share_bootstrap, "group.id": group, "share.acknowledgement.mode": "explicit"}
    want = {o: [1, 2] if o % 2 == 0 else [1] for o in range(20)}
    deliveries = {}
    with kwire.ShareConsumer(props) as c:
        c.subscribe(topic)
        until = time.monotonic() + 20
        while deliveries != want and time.monotonic() < until:
            b = c.poll(200)
            offsets = b.column("offset").to_pylist()
            counts = b.column("deliveryCount").to_pylist()
            for o, n in zip(offsets, counts):
                deliveries.setdefault(o, []).append(n)
            release = [n == 1 and o % 2 == 0 for o, n in zip(offsets, counts)]
            reject = [i for i, n in enumerate(counts) if n > 1]
            accept = [i for i, (o, n) in enumerate(zip(offsets, counts)) if n == 1 and o % 2 == 1]
            c.acknowledge(b, "release", rows=pa.array(release, pa.bool_()))
            c.acknowledge(b, "reject", rows=reject)
            c.acknowledge(b, "accept", rows=accept)
        assert deliveries == want
        assert c.commit_sync(10000) == {(topic, 0): None}
        assert poll_rows(c, 1, 2 * LOCK_MS / 1000) == []


def test_explicit_mode_refuses_a_poll_before_acknowledging(share_bootstrap, share_topic):
    topic, group = share_topic
    props = {"bootstrap.servers": share_bootstrap, "group.id": group, "share.acknowledgement.mode": "explicit"}
    with kwire.ShareConsumer(props) as c:
        c.subscribe([topic])
        batches = poll_rows(c, 1, 20)
        assert batches
        with pytest.raises(ShareAcknowledgementModeError, match="not acknowledged"):
            c.poll(100)
        with pytest.raises(IndexError):
            c.acknowledge(batches[-1], "accept", rows=[batches[-1].num_rows])
        with pytest.raises(ValueError, match="accept"):
            c.acknowledge(batches[-1], "ack")
        for b in batches:
            c.acknowledge(b, "accept")
        with pytest.raises(ShareAcknowledgementModeError, match="already acknowledged"):
            c.acknowledge(batches[0], "accept", rows=[0])


def test_lock_ends_then_the_acknowledgement_is_refused(share_bootstrap, share_topic):
    topic, group = share_topic
    props = {
        "bootstrap.servers": share_bootstrap,
        "group.id": group,
        "share.acknowledgement.mode": "explicit",
        "max.poll.records": "5",
    }
    with kwire.ShareConsumer(props) as c:
        c.subscribe([topic])
        batches = poll_rows(c, 1, 20)
        assert batches
        time.sleep(LOCK_MS / 1000 + 1.5)
        for b in batches:
            c.acknowledge(b, "accept")
        assert c.commit_sync(10000) == {(topic, 0): "INVALID_RECORD_STATE"}


def test_commit_callback_gets_the_accepted_offsets(share_bootstrap, share_topic):
    """After commit_sync the callback has had, on this thread, each accepted
    offset with exception None; commit_sync's result is unchanged."""
    topic, group = share_topic
    props = {"bootstrap.servers": share_bootstrap, "group.id": group, "share.acknowledgement.mode": "explicit"}
    calls = []
    caller = threading.get_ident()

    def on_commit(offsets, exception):
        calls.append((offsets, exception, threading.get_ident()))

    with kwire.ShareConsumer(props, acknowledgement_commit_callback=on_commit) as c:
        c.subscribe([topic])
        batches = poll_rows(c, 20, 20)
        for b in batches[:-1]:
            c.acknowledge(b, "accept")
        last = batches[-1]
        c.acknowledge(last, "accept")
        assert c.commit_sync(10000) == {(topic, 0): None}
        assert calls, "no callback after commit_sync"
        offsets = []
        for got, exception, thread in calls:
            assert list(got) == [(topic, 0)]
            assert exception is None
            assert thread == caller
            offsets += got[(topic, 0)]
        # The acknowledgements of all but the last batch went with the polls
        # (delivered at the next poll or here), the last one's with commit_sync.
        assert sorted(offsets) == list(range(20))
        assert calls[-1][0] == {(topic, 0): last.column("offset").to_pylist()}


def test_commit_callback_after_the_lock_gets_invalid_record_state(share_bootstrap, share_topic):
    topic, group = share_topic
    props = {
        "bootstrap.servers": share_bootstrap,
        "group.id": group,
        "share.acknowledgement.mode": "explicit",
        "max.poll.records": "5",
    }
    calls = []
    with kwire.ShareConsumer(props) as c:
        c.set_acknowledgement_commit_callback(lambda offsets, exception: calls.append((offsets, exception)))
        c.subscribe([topic])
        batches = poll_rows(c, 1, 20)
        assert batches
        time.sleep(LOCK_MS / 1000 + 1.5)
        for b in batches:
            c.acknowledge(b, "accept")
        assert c.commit_sync(10000) == {(topic, 0): "INVALID_RECORD_STATE"}
        assert len(calls) == 1
        offsets, exception = calls[0]
        assert offsets == {(topic, 0): sorted(o for b in batches for o in b.column("offset").to_pylist())}
        assert isinstance(exception, InvalidRecordStateError)
        assert isinstance(exception, kwire.KafkaError)
        assert exception.code == 121
        assert "INVALID_RECORD_STATE" in str(exception)


def test_commit_callback_that_raises_propagates_and_the_consumer_goes_on(share_bootstrap, share_topic):
    """A raising callback's exception leaves commit_sync once the callback
    has had every outcome; acknowledgements a poll carried reach it at the
    next poll, which raises before it fetches; the poll after that fetches as
    before, and every record is delivered once."""
    topic, group = share_topic
    props = {"bootstrap.servers": share_bootstrap, "group.id": group, "share.acknowledgement.mode": "explicit"}
    seen = []

    class Boom(Exception):
        pass

    def on_commit(offsets, exception):
        seen.append((offsets, exception))
        raise Boom(f"callback {len(seen)}")

    with kwire.ShareConsumer(props) as c:
        c.set_acknowledgement_commit_callback(on_commit)
        c.subscribe([topic])
        first = poll_rows(c, 20, 20)
        offsets = [o for b in first for o in b.column("offset").to_pylist()]
        assert sorted(offsets) == list(range(20))
        for b in first[:-1]:
            c.acknowledge(b, "accept")
        seen.clear()
        c.acknowledge(first[-1], "accept")
        with pytest.raises(Boom):
            c.commit_sync(10000)
        assert seen[-1] == ({(topic, 0): first[-1].column("offset").to_pylist()}, None)

        with kwire.Producer({"bootstrap.servers": share_bootstrap}) as p:
            for i in range(20, 40):
                p.send(topic, value=f"v-{i}".encode())
            p.flush()
        seen.clear()
        raised = 0

        def reported():
            return sorted(o for got, _ in seen for o in got[(topic, 0)])

        until = time.monotonic() + 30
        while (len(offsets) < 40 or reported() != list(range(20, 40))) and time.monotonic() < until:
            try:
                b = c.poll(200)
            except Boom:
                raised += 1
                continue
            offsets += b.column("offset").to_pylist()
            c.acknowledge(b, "accept")
        assert sorted(offsets) == list(range(40))
        assert reported() == list(range(20, 40))
        assert 1 <= raised <= len(seen)
        assert all(exception is None for _, exception in seen)
        c.set_acknowledgement_commit_callback(None)
        c.commit_sync(10000)


def test_renew_keeps_rows_acquired_past_the_lock(share_bootstrap, share_topic):
    """RENEW (KIP-1222): rows renewed every 0.6 locks, three times (1.8 locks
    after the first poll, then accepted at 2.4), come back from each next poll
    with the same values and delivery count 1, and the accept is taken."""
    topic, group = share_topic
    props = {
        "bootstrap.servers": share_bootstrap,
        "group.id": group,
        "share.acknowledgement.mode": "explicit",
        "max.poll.records": "5",
    }
    with kwire.ShareConsumer(props) as c:
        c.subscribe([topic])
        batches = poll_rows(c, 1, 20)
        assert batches
        batch = batches[0]
        for b in batches[1:]:
            c.acknowledge(b, "release")
        offsets = batch.column("offset").to_pylist()
        values = batch.column("value").to_pylist()
        for _ in range(3):
            time.sleep(LOCK_MS * 0.6 / 1000)
            c.acknowledge(batch, "renew")
            batch = c.poll(5000)
            assert batch.column("offset").to_pylist() == offsets
            assert batch.column("value").to_pylist() == values
            assert set(batch.column("deliveryCount").to_pylist()) == {1}
        time.sleep(LOCK_MS * 0.6 / 1000)
        c.acknowledge(batch, "accept")
        assert c.commit_sync(10000) == {(topic, 0): None}
        with pytest.raises(ValueError):
            c.acknowledge(batch, "extend")


def test_renew_is_refused_in_implicit_mode(share_bootstrap, share_topic):
    topic, group = share_topic
    with kwire.ShareConsumer({"bootstrap.servers": share_bootstrap, "group.id": group}) as c:
        c.subscribe([topic])
        batches = poll_rows(c, 1, 20)
        assert batches
        with pytest.raises(ShareAcknowledgementModeError, match="explicit"):
            c.acknowledge(batches[0], "renew")
