"""kwire.stream: from_json, transform, foreach_batch, sinks, progress,
exactly-once Parquet across kill -9, Ctrl-C."""

import glob
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import kwire

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))


def events(producer, topic, n, partitions=2, start=0):
    for i in range(start, start + n):
        action = "purchase" if i % 2 == 0 else "view"
        producer.send(topic, value=json.dumps({"id": i, "action": action, "amount": float(i % 7)}).encode(),
                      partition=i % partitions)
    producer.flush()


def opts(bootstrap, topic, **extra):
    o = {"kafka.bootstrap.servers": bootstrap, "subscribe": topic, "startingOffsets": "earliest"}
    o.update({k: str(v) for k, v in extra.items()})
    return o


def read_parquet_dir(path):
    files = sorted(glob.glob(os.path.join(path, "part-*.parquet")))
    if not files:
        return None
    return pa.concat_tables([pq.read_table(f) for f in files])


def test_json_values_transform_parquet_and_progress(bootstrap, new_topic, producer, tmp_path):
    topic = new_topic(partitions=2)
    events(producer, topic, 40)
    producer.send(topic, value=b"not json", partition=0)
    producer.send(topic, value=None, partition=1)
    producer.flush()
    out = tmp_path / "out"
    seen = []
    q = kwire.stream(
        opts(bootstrap, topic, maxOffsetsPerTrigger=15),
        checkpoint=str(tmp_path / "cp"),
        sink="parquet",
        path=str(out),
        value_format="json",
        schema="id INT, action STRING, amount DOUBLE",
        foreach_batch=lambda t, b: seen.append((b, t.num_rows, t.schema)),
    )
    assert [b for b, _, _ in seen] == [0, 1, 2]
    assert sum(n for _, n, _ in seen) == 42
    schema = seen[0][2]
    assert schema.names == ["id", "action", "amount", "_corrupt_record"]
    assert schema.types == [pa.int32(), pa.string(), pa.float64(), pa.string()]
    t = read_parquet_dir(str(out))
    assert t.num_rows == 42
    corrupt = [c for c in t.column("_corrupt_record").to_pylist() if c is not None]
    assert corrupt == ["not json"]
    assert sorted(i for i in t.column("id").to_pylist() if i is not None) == list(range(40))
    assert len(q.recent_progress) == 3
    p = q.last_progress
    assert p["batchId"] == 2 and isinstance(p["numInputRows"], int)
    assert sum(x["numInputRows"] for x in q.recent_progress) == 42
    assert sorted(os.listdir(out)) == ["part-%020d.parquet" % i for i in range(3)]

    # a second run finds nothing new; new records make batch 3
    q2 = kwire.stream(opts(bootstrap, topic), checkpoint=str(tmp_path / "cp"), sink="parquet", path=str(out),
                      value_format="json", schema="id INT, action STRING, amount DOUBLE")
    assert q2.recent_progress == []
    events(producer, topic, 4, start=100)
    q3 = kwire.stream(opts(bootstrap, topic), checkpoint=str(tmp_path / "cp"), sink="parquet", path=str(out),
                      value_format="json", schema="id INT, action STRING, amount DOUBLE",
                      transform=lambda t: t.filter(pa.compute.greater(t["amount"], 0)))
    assert [p["batchId"] for p in q3.recent_progress] == [3]
    last = pq.read_table(os.path.join(out, "part-%020d.parquet" % 3))
    assert sorted(last.column("id").to_pylist()) == [i for i in range(100, 104) if i % 7 != 0]


def test_raw_kafka_columns_to_json_lines(bootstrap, new_topic, producer, tmp_path):
    topic = new_topic()
    producer.send(topic, key=b"k", value=b"hello", partition=0)
    producer.send(topic, key=None, value=None, partition=0)
    producer.flush()
    out = tmp_path / "out"
    kwire.stream(opts(bootstrap, topic), checkpoint=str(tmp_path / "cp"), sink="json", path=str(out))
    lines = open(out / ("part-%020d.jsonl" % 0)).read().splitlines()
    rows = [json.loads(line) for line in lines]
    assert rows[0]["key"] == "k" and rows[0]["value"] == "hello" and rows[0]["offset"] == 0
    assert "key" not in rows[1] and "value" not in rows[1]  # nulls left out, as Spark's JSON writer
    assert rows[1]["topic"] == topic
    assert rows[0]["timestamp"].endswith("Z")


def test_failing_callback_leaves_the_batch_uncommitted(bootstrap, new_topic, producer, tmp_path):
    topic = new_topic()
    events(producer, topic, 10, partitions=1)
    cp = str(tmp_path / "cp")

    def boom(table, batch_id):
        raise RuntimeError("callback failed on batch %d" % batch_id)

    with pytest.raises(RuntimeError, match="callback failed on batch 0"):
        kwire.stream(opts(bootstrap, topic), checkpoint=cp, foreach_batch=boom)
    got = []
    kwire.stream(opts(bootstrap, topic), checkpoint=cp,
                 foreach_batch=lambda t, b: got.append((b, t.column("offset").to_pylist())))
    assert got == [(0, list(range(10)))]  # replayed with the same id and range


def test_stream_option_errors(bootstrap, tmp_path):
    with pytest.raises(kwire.ConfigError):
        kwire.stream({"kafka.bootstrap.servers": bootstrap}, checkpoint=str(tmp_path), sink="parquet",
                     path=str(tmp_path / "o"))
    with pytest.raises(kwire.ConfigError):
        kwire.stream(opts(bootstrap, "t"), checkpoint=str(tmp_path), sink="parquet", path=str(tmp_path / "o"),
                     value_format="json", schema="a MAP<STRING,INT>")
    with pytest.raises(kwire.ConfigError, match="needs schema"):
        kwire.stream(opts(bootstrap, "t"), checkpoint=str(tmp_path), sink="parquet", path=str(tmp_path / "o"),
                     value_format="json")
    with pytest.raises(kwire.ConfigError):
        kwire.stream(opts(bootstrap, "t"), checkpoint=str(tmp_path), sink="parquet", path=str(tmp_path / "o"),
                     trigger="sometimes")


def test_data_loss_in_a_stream(bootstrap, new_topic, producer, admin, tmp_path):
    topic = new_topic()
    events(producer, topic, 10, partitions=1)
    cp = str(tmp_path / "cp")
    kwire.stream(opts(bootstrap, topic), checkpoint=cp, foreach_batch=lambda t, b: None)
    events(producer, topic, 10, partitions=1, start=10)
    admin.delete_records([(topic, 0, 15)])
    with pytest.raises(kwire.KafkaDataLossError) as e:
        kwire.stream(opts(bootstrap, topic), checkpoint=cp, foreach_batch=lambda t, b: None)
    assert e.value.condition.startswith("KAFKA_DATA_LOSS.")


def test_ctrl_c_stops_a_processing_time_query(bootstrap, new_topic, producer, tmp_path):
    topic = new_topic()
    events(producer, topic, 5, partitions=1)
    cp = str(tmp_path / "cp")
    batches = []
    timer = threading.Timer(1.5, lambda: os.kill(os.getpid(), signal.SIGINT))
    timer.start()
    start = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        kwire.stream(opts(bootstrap, topic), checkpoint=cp, trigger="processing-time=200 milliseconds",
                     foreach_batch=lambda t, b: batches.append(b))
    assert time.monotonic() - start < 10
    assert batches == [0]
    # the checkpoint is usable: the next run starts after batch 0
    again = []
    kwire.stream(opts(bootstrap, topic), checkpoint=cp, foreach_batch=lambda t, b: again.append(b))
    assert again == []


def run_child(bootstrap, topic, cp, out, kill_at, env=None):
    return subprocess.run([sys.executable, os.path.join(HERE, "stream_child.py"), bootstrap, topic, cp, out, kill_at],
                          capture_output=True, text=True, timeout=120, env=env)


def check_exactly_once(out, n):
    t = read_parquet_dir(out)
    ids = sorted(t.column("id").to_pylist())
    assert ids == [i for i in range(n) if i % 2 == 0]  # every purchase once, no duplicates
    assert not glob.glob(os.path.join(out, ".*.tmp"))


@pytest.mark.parametrize("kill_at", ["before_write:1", "after_write:2", "after_commit:0", "after_write:4"])
def test_parquet_exactly_once_across_kill_9(bootstrap, new_topic, producer, tmp_path, kill_at):
    topic = new_topic(partitions=2)
    n = 100
    events(producer, topic, n)
    cp, out = str(tmp_path / "cp"), str(tmp_path / "out")
    first = run_child(bootstrap, topic, cp, out, kill_at)
    assert first.returncode == -signal.SIGKILL, first.stderr
    second = run_child(bootstrap, topic, cp, out, "none")
    assert second.returncode == 0, second.stderr
    assert "done" in second.stdout
    check_exactly_once(out, n)
    # a batch killed after its file was written is replayed and its file replaced
    files = sorted(os.listdir(out))
    assert files == ["part-%020d.parquet" % i for i in range(len(files))]


@pytest.mark.parametrize("kill_at", ["after_write:1", "after_commit:0"])
def test_partitioned_parquet_exactly_once_across_kill_9(bootstrap, new_topic, producer, tmp_path, kill_at):
    import pyarrow.dataset as ds

    topic = new_topic(partitions=2)
    n = 100
    events(producer, topic, n)
    cp, out = str(tmp_path / "cp"), str(tmp_path / "out")
    env = dict(os.environ, SINK="parquet-partitioned")
    first = run_child(bootstrap, topic, cp, out, kill_at, env)
    assert first.returncode == -signal.SIGKILL, first.stderr
    second = run_child(bootstrap, topic, cp, out, "none", env)
    assert second.returncode == 0, second.stderr
    t = ds.dataset(out, format="parquet", partitioning="hive").to_table()
    assert sorted(t.column("id").to_pylist()) == [i for i in range(n) if i % 2 == 0]
    # amount is i % 7 of even ids: all seven values, each a directory
    assert sorted(os.listdir(out)) == ["amount=%.1f" % a for a in range(7)]
    for row in t.to_pylist():
        assert float(row["amount"]) == float(row["id"] % 7)  # pyarrow reads "0.0" back as a string
    assert not glob.glob(os.path.join(out, "**", ".*.tmp"), recursive=True)


def test_parquet_exactly_once_across_kill_9_at_random_times(bootstrap, new_topic, producer, tmp_path):
    topic = new_topic(partitions=2)
    n = 200
    events(producer, topic, n)
    cp, out = str(tmp_path / "cp"), str(tmp_path / "out")
    rng = random.Random(int(os.environ.get("KWIRE_TEST_SEED", "13")))
    env = dict(os.environ, MAX_OFFSETS="10")
    for _ in range(3):
        child = subprocess.Popen([sys.executable, os.path.join(HERE, "stream_child.py"), bootstrap, topic, cp, out],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        time.sleep(rng.uniform(0.5, 2.0))
        child.kill()
        child.wait()
    final = subprocess.run([sys.executable, os.path.join(HERE, "stream_child.py"), bootstrap, topic, cp, out],
                           capture_output=True, text=True, timeout=120, env=env)
    assert final.returncode == 0, final.stderr
    check_exactly_once(out, n)


def test_purchases_example(bootstrap, new_topic, producer, tmp_path):
    topic = new_topic(partitions=2)
    for i in range(30):
        ev = {"user_id": "u%d" % (i % 4), "action": ["view", "purchase", "cart"][i % 3],
              "amount": float(i % 5) if i % 3 == 1 else 0.0, "ts": "2024-05-01T10:00:%02dZ" % i}
        producer.send(topic, value=json.dumps(ev).encode(), partition=i % 2)
    producer.send(topic, value=b"{broken", partition=0)
    producer.flush()
    out = str(tmp_path / "out")
    r = subprocess.run([sys.executable, os.path.join(REPO, "examples", "purchases.py"), "--bootstrap", bootstrap,
                        "--topic", topic, "--checkpoint", str(tmp_path / "cp"), "--output", out],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    t = read_parquet_dir(out)
    want = [(i, float(i % 5)) for i in range(30) if i % 3 == 1 and i % 5 > 0]
    assert t.num_rows == len(want)
    assert sorted(t.column("amount").to_pylist()) == sorted(a for _, a in want)
    assert set(t.column("action").to_pylist()) == {"purchase"}
    assert t.schema.field("ts").type == pa.timestamp("us", tz="UTC")


def test_purchases_example_to_a_topic_exactly_once(bootstrap, new_topic, producer, tmp_path):
    topic, out = new_topic(partitions=2), new_topic(partitions=2)
    for i in range(30):
        ev = {"user_id": "u%d" % (i % 4), "action": ["view", "purchase", "cart"][i % 3],
              "amount": float(i % 5) if i % 3 == 1 else 0.0, "ts": "2024-05-01T10:00:%02dZ" % i}
        producer.send(topic, value=json.dumps(ev).encode(), key=b"e%d" % i, partition=i % 2)
    producer.send(topic, value=b"{broken", partition=0)
    producer.flush()
    r = subprocess.run([sys.executable, os.path.join(REPO, "examples", "purchases.py"), "--bootstrap", bootstrap,
                        "--topic", topic, "--checkpoint", str(tmp_path / "cp"), "--output-topic", out],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    want = sorted(i for i in range(30) if i % 3 == 1 and i % 5 > 0)
    opts = {"kafka.bootstrap.servers": bootstrap, "subscribe": out, "includeHeaders": True,
            "kafka.isolation.level": "read_committed"}
    deadline = time.time() + 20
    while True:  # a commit returns before its markers make the records readable
        t = kwire.read(opts)
        if t.num_rows >= len(want) or time.time() > deadline:
            break
        time.sleep(0.2)
    rows = t.to_pylist()
    assert sorted(int(r["key"][1:]) for r in rows) == want
    for r in rows:
        i = int(r["key"][1:])
        assert json.loads(r["value"])["action"] == "purchase"
        # The source event i went to partition i % 2 at offset i // 2 (the broken one came last).
        assert r["headers"] == [{"key": "source", "value": b"%d:%d" % (i % 2, i // 2)}]
