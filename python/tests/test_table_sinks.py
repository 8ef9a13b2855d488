"""The exactly-once table sinks (Delta Lake, Iceberg, TransactionalSink)
against a real broker: rows once, partitions, the query's id and batch id in
the table, a batch committed before a crash not written again, a checkpoint
behind the table refused, and SIGKILL at random points of a streaming query
leaving every row exactly once, read back with the table's library and with
DuckDB. KWIRE_SINK_KILL_POINTS sets the kills per sink (default 3; the full
sweep is 50)."""

import glob
import json
import os
import random
import sqlite3
import subprocess
import sys
import time

import pyarrow as pa
import pytest

import kwire

deltalake = pytest.importorskip("deltalake")
pytest.importorskip("pyiceberg")
duckdb = pytest.importorskip("duckdb")

HERE = os.path.dirname(os.path.abspath(__file__))


def events(producer, topic, n, start=0, partitions=2):
    for i in range(start, start + n):
        action = "purchase" if i % 2 == 0 else "view"
        producer.send(topic, value=json.dumps({"id": i, "action": action, "amount": float(i % 7)}).encode(),
                      partition=i % partitions)
    producer.flush()


def opts(bootstrap, topic, **extra):
    o = {"kafka.bootstrap.servers": bootstrap, "subscribe": topic, "startingOffsets": "earliest"}
    o.update({k: str(v) for k, v in extra.items()})
    return o


def iceberg_catalog(root):
    os.makedirs(os.path.join(root, "warehouse"), exist_ok=True)
    return {"type": "sql", "uri": "sqlite:///" + os.path.join(root, "catalog.db"),
            "warehouse": "file://" + os.path.join(root, "warehouse")}


def delta_ids(path):
    """The ids in the Delta table, by deltalake and by DuckDB over its data files."""
    table = deltalake.DeltaTable(path)
    ids = sorted(table.to_pyarrow_table().column("id").to_pylist())
    files = [u.replace("file://", "") for u in table.file_uris()]
    by_duckdb = sorted(r[0] for r in duckdb.sql("SELECT id FROM read_parquet(%r)" % files).fetchall()) if files else []
    assert by_duckdb == ids
    return ids


def iceberg_ids(root, name="kwire.purchases"):
    from pyiceberg.catalog import load_catalog

    table = load_catalog("kwire", **iceberg_catalog(root)).load_table(name)
    ids = sorted(table.scan().to_arrow().column("id").to_pylist())
    files = [t.file.file_path.replace("file://", "") for t in table.scan().plan_files()]
    by_duckdb = sorted(r[0] for r in duckdb.sql("SELECT id FROM read_parquet(%r)" % files).fetchall()) if files else []
    assert by_duckdb == ids
    return ids


class FailAfterWrite:
    """A sink in front of another that fails right after the table commit:
    the crash between the sink's commit and commits/N."""

    def __init__(self, inner, batch):
        self.inner, self.batch = inner, batch

    def bind(self, query_id, checkpoint):
        self.inner.bind(query_id, checkpoint)

    def write(self, table, batch_id):
        n = self.inner.write(table, batch_id)
        if batch_id == self.batch:
            raise RuntimeError("crash after the table commit")
        return n

    def description(self):
        return "FailAfterWrite"


def make_sink(kind, root, **kw):
    if kind == "delta":
        return kwire.DeltaSink(str(root / "table"), **kw)
    return kwire.IcebergSink("kwire.purchases", iceberg_catalog(str(root)), **kw)


def ids_of(kind, root):
    return delta_ids(str(root / "table")) if kind == "delta" else iceberg_ids(str(root))


@pytest.mark.parametrize("kind", ["delta", "iceberg"])
def test_each_batch_once_with_the_query_and_batch_in_the_table(bootstrap, new_topic, producer, tmp_path, kind):
    topic = new_topic(partitions=2)
    events(producer, topic, 60)
    cp = str(tmp_path / "cp")
    sink = make_sink(kind, tmp_path, partition_by=["action"])
    q = kwire.stream(opts(bootstrap, topic, maxOffsetsPerTrigger=25), checkpoint=cp, sink=sink,
                     value_format="json", schema="id INT, action STRING, amount DOUBLE")
    assert [p["batchId"] for p in q.recent_progress] == [0, 1, 2]  # 60 records, at most 25 per batch
    assert ids_of(kind, tmp_path) == list(range(60))
    assert sink.last_batch() == 2
    if kind == "delta":
        table = deltalake.DeltaTable(str(tmp_path / "table"))
        assert table.transaction_version(q.id) == 2
        assert table.metadata().partition_columns == ["action"]
        assert sorted(os.listdir(str(tmp_path / "table")))[:2] == ["_delta_log", "action=purchase"]
    else:
        from pyiceberg.catalog import load_catalog

        table = load_catalog("kwire", **iceberg_catalog(str(tmp_path))).load_table("kwire.purchases")
        summaries = [s.summary for s in table.metadata.snapshots]
        assert [s.get("kwire.batch-id") for s in summaries] == ["0", "1", "2"]
        assert {s.get("kwire.query-id") for s in summaries} == {q.id}
        assert [f.name for f in table.spec().fields] == ["action"]


@pytest.mark.parametrize("kind", ["delta", "iceberg"])
def test_a_batch_committed_before_a_crash_is_not_written_again(bootstrap, new_topic, producer, tmp_path, kind):
    topic = new_topic(partitions=2)
    events(producer, topic, 40)
    cp = str(tmp_path / "cp")
    with pytest.raises(RuntimeError, match="crash after the table commit"):
        kwire.stream(opts(bootstrap, topic), checkpoint=cp, sink=FailAfterWrite(make_sink(kind, tmp_path), 0),
                     value_format="json", schema="id INT, action STRING, amount DOUBLE")
    assert ids_of(kind, tmp_path) == list(range(40))  # in the table; commits/0 not written
    events(producer, topic, 10, start=40)
    sink = make_sink(kind, tmp_path)
    with pytest.warns(UserWarning, match="batch 0 was committed to .* its rows are not written again"):
        q = kwire.stream(opts(bootstrap, topic), checkpoint=cp, sink=sink, value_format="json",
                         schema="id INT, action STRING, amount DOUBLE")
    assert sink.batches_skipped == 1
    assert [p["sink"]["numOutputRows"] for p in q.recent_progress] == [40, 10]
    assert ids_of(kind, tmp_path) == list(range(50))


@pytest.mark.parametrize("kind", ["delta", "iceberg"])
def test_a_checkpoint_behind_the_table_is_refused(bootstrap, new_topic, producer, tmp_path, kind):
    import shutil

    topic = new_topic(partitions=1)
    events(producer, topic, 10, partitions=1)
    cp = str(tmp_path / "cp")
    schema = "id INT, action STRING, amount DOUBLE"
    kwire.stream(opts(bootstrap, topic), checkpoint=cp, sink=make_sink(kind, tmp_path), value_format="json",
                 schema=schema)
    shutil.copytree(cp, str(tmp_path / "old"))
    for start in (10, 20):
        events(producer, topic, 10, start=start, partitions=1)
        kwire.stream(opts(bootstrap, topic), checkpoint=cp, sink=make_sink(kind, tmp_path), value_format="json",
                     schema=schema)
    # The copy taken after batch 0 plans batch 1 again: the table has batch 2.
    with pytest.raises(kwire.KwireError, match=r"batch 1 is below the last batch this query committed .*\(batch 2\)"):
        kwire.stream(opts(bootstrap, topic), checkpoint=str(tmp_path / "old"), sink=make_sink(kind, tmp_path),
                     value_format="json", schema=schema)
    assert ids_of(kind, tmp_path) == list(range(30))


def test_transactional_sink_gives_the_callback_what_an_idempotent_write_needs(bootstrap, new_topic, producer,
                                                                            tmp_path):
    topic = new_topic(partitions=2)
    events(producer, topic, 30)
    db = sqlite3.connect(str(tmp_path / "out.db"), check_same_thread=False)  # batches run on the query thread
    db.execute("CREATE TABLE rows (id INTEGER, action TEXT)")
    db.execute("CREATE TABLE progress (query_id TEXT, batch_id INTEGER, end_offsets TEXT, PRIMARY KEY (query_id, "
               "batch_id))")
    seen = []

    def write(table, info):
        seen.append(info)
        with db:  # one transaction: the rows and the batch's id
            if db.execute("SELECT 1 FROM progress WHERE query_id = ? AND batch_id = ?",
                          (info.query_id, info.batch_id)).fetchone():
                return 0
            db.executemany("INSERT INTO rows VALUES (?, ?)", zip(table["id"].to_pylist(),
                                                                table["action"].to_pylist()))
            db.execute("INSERT INTO progress VALUES (?, ?, ?)",
                       (info.query_id, info.batch_id, json.dumps(info.end_offsets)))
        if info.batch_id == 0 and len(seen) == 1:
            raise RuntimeError("crash after the database commit")
        return table.num_rows

    cp = str(tmp_path / "cp")
    with pytest.raises(RuntimeError):
        kwire.stream(opts(bootstrap, topic), checkpoint=cp, sink=kwire.TransactionalSink(write),
                     value_format="json", schema="id INT, action STRING, amount DOUBLE")
    q = kwire.stream(opts(bootstrap, topic), checkpoint=cp, sink=kwire.TransactionalSink(write),
                     value_format="json", schema="id INT, action STRING, amount DOUBLE")
    assert [i.batch_id for i in seen] == [0, 0]  # the replay of batch 0
    assert seen[0].query_id == q.id
    assert seen[0].end_offsets == {topic: {"0": 15, "1": 15}}
    assert sorted(r[0] for r in db.execute("SELECT id FROM rows")) == list(range(30))


@pytest.mark.parametrize("kind", ["delta", "iceberg"])
def test_kill_9_at_random_times_leaves_every_purchase_once(bootstrap, new_topic, producer, tmp_path, kind):
    topic = new_topic(partitions=2)
    points = int(os.environ.get("KWIRE_SINK_KILL_POINTS", "3"))
    seed = int(os.environ.get("KWIRE_KILL_SEED", str(random.randrange(1 << 30))))
    rng = random.Random(seed)
    print("kill points %d, seed %d (replay: KWIRE_KILL_SEED=%d)" % (points, seed, seed))
    cp = str(tmp_path / "cp")
    out = str(tmp_path / "table") if kind == "delta" else str(tmp_path)
    # Batches of 5 rows (Delta) or 20 (Iceberg: pyiceberg's commit rewrites the
    # table metadata, which grows with every snapshot).
    env = dict(os.environ, SINK=kind, MAX_OFFSETS="5" if kind == "delta" else "20", TRIGGER="processing-time=0")
    child_cmd = [sys.executable, os.path.join(HERE, "stream_child.py"), bootstrap, topic, cp, out]
    def latest(log):
        names = [n for n in os.listdir(os.path.join(cp, log)) if n.isdigit()] if os.path.isdir(
            os.path.join(cp, log)) else []
        return max((int(n) for n in names), default=-1)

    produced, inside, skipped = 0, 0, 0
    for _ in range(points):
        # 10-40 batches a round, a table commit each: the child is busy for
        # seconds after its start-up, so kills land inside batches too.
        events(producer, topic, 200, start=produced)
        produced += 200
        child = subprocess.Popen(child_cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
        time.sleep(rng.uniform(1.0, 4.0))  # the child's start-up (imports) takes about a second
        assert child.poll() is None, child.stderr.read().decode()
        child.kill()
        skipped += child.stderr.read().decode().count("its rows are not written again")
        child.wait()
        inside += latest("offsets") > latest("commits")
    final = subprocess.run(child_cmd, capture_output=True, text=True, timeout=180,
                           env=dict(env, TRIGGER="available-now"))
    assert final.returncode == 0, final.stderr
    skipped += final.stderr.count("its rows are not written again")
    ids = ids_of(kind, tmp_path)
    print("%s: %d kills (%d inside a batch: offsets/N logged, commits/N not), %d input rows, %d purchases in the "
          "table, %d distinct; %d restarts found their batch in the table and did not write it again"
          % (kind, points, inside, produced, len(ids), len(set(ids)), skipped))
    assert ids == [i for i in range(produced) if i % 2 == 0]  # every purchase once
    assert not glob.glob(os.path.join(cp, "offsets", "*.tmp"))
