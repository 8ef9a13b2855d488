"""kwire.stream(..., sink="postgres") against a real broker and a real
PostgreSQL server (scripts/postgres; KWIRE_POSTGRES_ENV names its env file,
the tests skip without it). Read back with psql."""

import json
import os
import subprocess
import uuid

import pytest

import kwire


@pytest.fixture
def pg(postgres_env):
    return postgres_env


def psql(pg, sql):
    r = subprocess.run([os.path.join(pg["KWIRE_POSTGRES_BIN"], "psql"), pg["KWIRE_POSTGRES_URL"], "-At", "-F", "|",
                        "-c", sql], capture_output=True, text=True, timeout=30,
                       env=dict(os.environ, PGPASSWORD=pg["KWIRE_POSTGRES_PASSWORD"]))
    assert r.returncode == 0, r.stderr
    return [line.split("|") for line in r.stdout.splitlines()]


def sink_options(pg, table, **extra):
    o = {"url": pg["KWIRE_POSTGRES_URL"], "password": pg["KWIRE_POSTGRES_PASSWORD"], "dbtable": table}
    o.update(extra)
    return o


def opts(bootstrap, topic):
    return {"kafka.bootstrap.servers": bootstrap, "subscribe": topic, "startingOffsets": "earliest"}


def test_stream_into_postgres_with_decoded_columns_and_upserts(bootstrap, new_topic, producer, pg, tmp_path):
    topic = new_topic(partitions=2)
    for i in range(40):
        producer.send(topic, key=b"k%d" % (i % 10), value=json.dumps({"id": i % 10, "n": i}).encode(),
                      partition=i % 2)
    producer.flush()
    table = "py_" + uuid.uuid4().hex[:10]
    sink = kwire.PostgresSink(sink_options(pg, table, upsertKey="id"))
    q = kwire.stream(opts(bootstrap, topic), checkpoint=str(tmp_path / "cp"), sink=sink,
                     value_format="json", schema="id INT, n BIGINT", kafka_columns=["partition", "offset"])
    assert q.recent_progress[-1]["sink"]["description"].startswith("PostgresSink[")
    rows = psql(pg, "SELECT id, n, \"partition\" FROM %s ORDER BY id" % table)
    # id k is in records k, k+10, k+20, k+30, all in partition k % 2: the last one wins.
    assert rows == [[str(k), str(k + 30), str(k % 2)] for k in range(10)]
    progress = psql(pg, "SELECT batch_id FROM kwire_progress WHERE query_id = '%s'" % q.id)
    assert progress == [["0"]]


def test_a_failed_batch_leaves_nothing_and_its_replay_writes_each_row_once(bootstrap, new_topic, producer, pg,
                                                                          tmp_path):
    topic = new_topic(partitions=1)
    for i in range(25):
        producer.send(topic, value=b"v%d" % i, partition=0)
    producer.flush()
    table = "py_" + uuid.uuid4().hex[:10]
    cp = str(tmp_path / "cp")

    def fail(t, batch_id):
        raise RuntimeError("the batch fails before its commit")

    with pytest.raises(RuntimeError):
        kwire.stream(opts(bootstrap, topic), checkpoint=cp, sink="postgres", sink_options=sink_options(pg, table),
                     foreach_batch=fail)
    assert psql(pg, "SELECT count(*) FROM %s" % table) == [["0"]]
    kwire.stream(opts(bootstrap, topic), checkpoint=cp, sink="postgres", sink_options=sink_options(pg, table))
    assert psql(pg, "SELECT count(*), count(DISTINCT value), min(convert_from(value, 'UTF8')) FROM %s" % table) == [
        ["25", "25", "v0"]]


def test_options_and_transform_are_checked_before_anything_runs(bootstrap, new_topic, producer, pg, tmp_path):
    topic = new_topic()
    producer.send(topic, value=b"x", partition=0)
    producer.flush()
    with pytest.raises(kwire.ConfigError, match="Option 'dbtable' is required"):
        kwire.stream(opts(bootstrap, topic), checkpoint=str(tmp_path / "a"), sink="postgres",
                     sink_options={"url": pg["KWIRE_POSTGRES_URL"]})
    with pytest.raises(kwire.ConfigError, match="transform= cannot be used"):
        kwire.stream(opts(bootstrap, topic), checkpoint=str(tmp_path / "b"), sink="postgres",
                     sink_options=sink_options(pg, "t"), transform=lambda t: t)
    with pytest.raises(kwire.KwireError, match="password authentication failed"):
        kwire.stream(opts(bootstrap, topic), checkpoint=str(tmp_path / "c"), sink="postgres",
                     sink_options=sink_options(pg, "t", password="not-it"))
