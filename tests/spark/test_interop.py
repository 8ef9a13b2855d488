"""kwire against real Apache Spark (PySpark with spark-sql-kafka-0-10, same
release) on one real broker: checkpoints resumed in both directions, and
batch reads returning the same rows.

Each streaming scenario writes records, runs one engine from scratch with
maxOffsetsPerTrigger, writes more records, then continues from copies of that
checkpoint with both engines (Trigger.AvailableNow / --trigger available-now,
same options). The continuation of the other engine must equal the original
engine's own: the same batch ids, the same end offsets logged per batch, the
same progress ranges and the same rows in each batch.
"""

from __future__ import annotations

import json
import os
import re
import signal
import threading
import time

import pytest

from interop import (
    Kwire,
    by_offset,
    commit_ids,
    copy_checkpoint,
    initial_offsets,
    offset_log,
    source_progress,
    spark_read,
    spark_stream,
    uncommit_last_batch,
    unique_topic,
)

PARTITIONS = 3
MAX_OFFSETS = 20
# Records per partition before the first run and after it: uneven, so that
# maxOffsetsPerTrigger spreads each batch over the partitions unevenly.
FIRST = [23, 15, 9]  # 47 records: three batches (Spark's rateLimit floors each share)
SECOND = [6, 17, 11]  # 34 more: two batches

CONF_WARNING = re.compile(r"Conf '([^']+)' was not found in the offset log")


@pytest.fixture(scope="module")
def kwire(kwire_bin, bootstrap) -> Kwire:
    return Kwire(kwire_bin, bootstrap)


def fill(kwire: Kwire, topic: str, counts: list[int], tag: str) -> None:
    """counts[p] records into partition p: keyed records with two headers of
    the same key (order and duplicates kept), unkeyed ones without headers, and
    an empty value, so every column has something to compare."""
    for p, n in enumerate(counts):
        if n == 0:
            continue
        half = n // 2
        if half:
            kwire.produce(topic, p, [f"k{p}-{i}|{tag}-p{p}-{i}" for i in range(half)], key_delimiter="|",
                          headers=("h=1", "h=2", "origin=" + tag))
        rest = [f"{tag}-p{p}-{i}" for i in range(half, n - 1)] + [""]
        kwire.produce(topic, p, rest)


def stream_options(topic: str, bootstrap: str) -> dict[str, str]:
    return {
        "kafka.bootstrap.servers": bootstrap,
        "subscribe": topic,
        "startingOffsets": "earliest",
        "maxOffsetsPerTrigger": str(MAX_OFFSETS),
        "includeHeaders": "true",
    }


def kwire_options(options: dict[str, str]) -> dict[str, str]:
    """kwire takes the bootstrap servers with -b."""
    return {k: v for k, v in options.items() if k != "kafka.bootstrap.servers"}


def log_since(path, offset: int) -> str:
    if not path.exists():
        return ""
    with open(path, "rb") as f:
        f.seek(offset)
        return f.read().decode("utf-8", "replace")


def log_size(path) -> int:
    return path.stat().st_size if path.exists() else 0


def assert_rate_limited(batches: dict, ids: list[int], records: int) -> None:
    """The batches ran had these ids, read `records` rows in all, none more
    than maxOffsetsPerTrigger, and none empty."""
    assert sorted(batches) == ids
    sizes = [len(batches[n]) for n in ids]
    assert sum(sizes) == records and all(0 < n <= MAX_OFFSETS for n in sizes), sizes


def assert_same_continuation(spark_ck, spark_run, kwire_ck, kwire_run, first_batch: int) -> None:
    """Both engines ran the same batches from first_batch on: ids, logged end
    offsets, progress ranges and row counts, and the rows of each batch."""
    spark_ids = sorted(spark_run.batches)
    kwire_ids = sorted(kwire_run.batches)
    assert spark_ids and spark_ids[0] == first_batch, f"Spark ran batches {spark_ids}, expected from {first_batch}"
    assert kwire_ids == spark_ids

    spark_log, kwire_log = offset_log(spark_ck), offset_log(kwire_ck)
    assert sorted(spark_log) == sorted(kwire_log)
    for n in spark_ids:
        assert kwire_log[n] == spark_log[n], f"offsets/{n}"
    assert commit_ids(spark_ck) == commit_ids(kwire_ck)

    # Progress: the same ranges and rows, and the same offsets behind
    # latest (none, and no latestOffset, for a replayed batch).
    spark_progress = [source_progress(p) for p in spark_run.progress]
    kwire_progress = [source_progress(p) for p in kwire_run.progress]
    assert [p["batchId"] for p in spark_progress] == spark_ids
    assert kwire_progress == spark_progress

    for n in spark_ids:
        assert by_offset(kwire_run.batches[n]) == spark_run.batches[n], f"rows of batch {n}"


# ------------------------------------------------ a/b: Spark resumes kwire


@pytest.fixture(scope="module")
def kwire_checkpoint(kwire, bootstrap, tmp_path_factory):
    """A kwire checkpoint of three committed batches, with more records
    written after it, and copies of it for each engine to continue from."""
    root = tmp_path_factory.mktemp("kwire-checkpoint")
    topic = unique_topic("from-kwire")
    kwire.create_topic(topic, PARTITIONS)
    fill(kwire, topic, FIRST, "first")
    options = stream_options(topic, bootstrap)
    first = kwire.stream(root / "ck", root / "sink", kwire_options(options))
    assert_rate_limited(first.batches, [0, 1, 2], sum(FIRST))
    assert commit_ids(root / "ck") == [0, 1, 2]
    fill(kwire, topic, SECOND, "second")
    copies = {}
    for name in ("spark", "kwire", "spark-uncommitted", "kwire-uncommitted"):
        copies[name] = copy_checkpoint(root / "ck", root / name)
    for name in ("spark-uncommitted", "kwire-uncommitted"):
        assert uncommit_last_batch(copies[name]) == 2
    return {"options": options, "first": first, "copies": copies, "root": root}


@pytest.fixture(scope="module")
def spark_resumes_committed(spark, spark_log, kwire, kwire_checkpoint):
    ck = kwire_checkpoint["copies"]
    options = kwire_checkpoint["options"]
    log_start = log_size(spark_log)
    spark_run = spark_stream(spark, ck["spark"], options)
    log = log_since(spark_log, log_start)
    kwire_run = kwire.stream(ck["kwire"], kwire_checkpoint["root"] / "sink-kwire", kwire_options(options))
    return {"spark": spark_run, "kwire": kwire_run, "log": log}


def test_spark_resumes_a_committed_kwire_checkpoint(spark_resumes_committed, kwire_checkpoint):
    ck = kwire_checkpoint["copies"]
    spark_run, kwire_run = spark_resumes_committed["spark"], spark_resumes_committed["kwire"]
    # The next batch is 3, and the new records arrive in batches 3 and 4.
    assert_rate_limited(spark_run.batches, [3, 4], sum(SECOND))
    assert {row[1].split("-p")[0] for n in (3, 4) for row in spark_run.batches[n] if row[1]} == {"second"}
    # Batch 3 starts where kwire's batch 2 ended.
    assert source_progress(spark_run.progress[0])["startOffset"] == offset_log(ck["spark"])[2]
    assert_same_continuation(ck["spark"], spark_run, ck["kwire"], kwire_run, first_batch=3)


def test_spark_resumes_a_kwire_checkpoint_without_conf_warnings(spark_resumes_committed):
    log = spark_resumes_committed["log"]
    # The log is really captured: Spark says where it resumed.
    assert "Resuming at batch 3" in log, f"Spark's log does not show the resume:\n{log[-3000:]}"
    missing = sorted(set(CONF_WARNING.findall(log)))
    assert missing == [], f"Spark found these keys missing from the conf map of kwire's offsets/2: {missing}"


def test_spark_replays_an_uncommitted_kwire_batch(spark, kwire, kwire_checkpoint):
    ck = kwire_checkpoint["copies"]
    options = kwire_checkpoint["options"]
    logged = offset_log(ck["spark-uncommitted"])
    spark_run = spark_stream(spark, ck["spark-uncommitted"], options)
    # Batch 2 runs again with the range kwire logged, and the rows kwire's
    # own batch 2 had; then the new records follow in batches 3 and 4.
    assert sorted(spark_run.batches) == [2, 3, 4]
    replay = source_progress(spark_run.progress[0])
    assert replay["batchId"] == 2
    assert replay["startOffset"] == logged[1]
    assert replay["endOffset"] == logged[2]
    assert offset_log(ck["spark-uncommitted"])[2] == logged[2]
    assert spark_run.batches[2] == by_offset(kwire_checkpoint["first"].batches[2])
    kwire_run = kwire.stream(ck["kwire-uncommitted"], kwire_checkpoint["root"] / "sink-kwire-uncommitted",
                             kwire_options(options))
    assert_same_continuation(ck["spark-uncommitted"], spark_run, ck["kwire-uncommitted"], kwire_run, first_batch=2)


# --------------------------------------------------- c: kwire resumes Spark


@pytest.fixture(scope="module")
def spark_checkpoint(spark, kwire, bootstrap, tmp_path_factory):
    """A checkpoint Spark wrote (three committed batches), more records
    written after it, and copies for each engine to continue from."""
    root = tmp_path_factory.mktemp("spark-checkpoint")
    topic = unique_topic("from-spark")
    kwire.create_topic(topic, PARTITIONS)
    fill(kwire, topic, FIRST, "first")
    options = stream_options(topic, bootstrap)
    first = spark_stream(spark, root / "ck", options)
    assert_rate_limited(first.batches, [0, 1, 2], sum(FIRST))
    fill(kwire, topic, SECOND, "second")
    copies = {}
    uncommitted = ("spark-uncommitted", "kwire-uncommitted", "spark-once", "kwire-once")
    for name in ("spark", "kwire") + uncommitted:
        copies[name] = copy_checkpoint(root / "ck", root / name)
    for name in uncommitted:
        assert uncommit_last_batch(copies[name]) == 2
    return {"options": options, "first": first, "copies": copies, "root": root}


def test_kwire_resumes_a_committed_spark_checkpoint(spark, kwire, spark_checkpoint):
    ck = spark_checkpoint["copies"]
    options = spark_checkpoint["options"]
    spark_run = spark_stream(spark, ck["spark"], options)
    kwire_run = kwire.stream(ck["kwire"], spark_checkpoint["root"] / "sink-kwire", kwire_options(options))
    assert_rate_limited(kwire_run.batches, [3, 4], sum(SECOND))
    assert_same_continuation(ck["spark"], spark_run, ck["kwire"], kwire_run, first_batch=3)


def test_kwire_replays_an_uncommitted_spark_batch(spark, kwire, spark_checkpoint):
    ck = spark_checkpoint["copies"]
    options = spark_checkpoint["options"]
    logged = offset_log(ck["kwire-uncommitted"])
    kwire_run = kwire.stream(ck["kwire-uncommitted"], spark_checkpoint["root"] / "sink-kwire-uncommitted",
                             kwire_options(options))
    assert sorted(kwire_run.batches) == [2, 3, 4]
    replay = source_progress(kwire_run.progress[0])
    assert (replay["batchId"], replay["startOffset"], replay["endOffset"]) == (2, logged[1], logged[2])
    assert by_offset(kwire_run.batches[2]) == spark_checkpoint["first"].batches[2]
    spark_run = spark_stream(spark, ck["spark-uncommitted"], options)
    assert_same_continuation(ck["spark-uncommitted"], spark_run, ck["kwire-uncommitted"], kwire_run, first_batch=2)


# ----------------------------------------------------------- d: batch read


@pytest.fixture(scope="module")
def batch_topic(kwire):
    topic = unique_topic("batch")
    kwire.create_topic(topic, PARTITIONS)
    fill(kwire, topic, [12, 7, 0], "batch")  # partition 2 stays empty
    return topic


def batch_options(topic: str, bootstrap: str, **extra: str) -> dict[str, str]:
    return {"kafka.bootstrap.servers": bootstrap, "subscribe": topic, "includeHeaders": "true", **extra}


def test_batch_read_earliest_to_latest_returns_the_same_rows(spark, kwire, bootstrap, batch_topic, tmp_path):
    options = batch_options(batch_topic, bootstrap)
    spark_rows = spark_read(spark, options)
    kwire_rows = by_offset(kwire.read(tmp_path / "sink", kwire_options(options)))
    assert len(spark_rows) == 19
    assert {(r[3], r[4]) for r in spark_rows} == {(0, o) for o in range(12)} | {(1, o) for o in range(7)}
    # Keyed records carry the headers in order, duplicates included; the
    # others have none (null, not an empty array), and one empty value each.
    assert spark_rows[0][0] == "k0-0" and spark_rows[0][7] == (("h", "1"), ("h", "2"), ("origin", "batch"))
    assert spark_rows[11][0] is None and spark_rows[11][7] is None and spark_rows[11][1] == ""
    assert kwire_rows == spark_rows


def test_batch_read_with_json_offsets_returns_the_same_rows(spark, kwire, bootstrap, batch_topic, tmp_path):
    t = batch_topic
    options = batch_options(
        t,
        bootstrap,
        startingOffsets=f'{{"{t}":{{"0":3,"1":-2,"2":-2}}}}',
        endingOffsets=f'{{"{t}":{{"0":10,"1":-1,"2":-1}}}}',
        minPartitions="4",
    )
    spark_rows = spark_read(spark, options)
    kwire_rows = by_offset(kwire.read(tmp_path / "sink", kwire_options(options)))
    assert {(r[3], r[4]) for r in spark_rows} == {(0, o) for o in range(3, 10)} | {(1, o) for o in range(7)}
    assert kwire_rows == spark_rows


def test_batch_read_of_assigned_partitions_returns_the_same_rows(spark, kwire, bootstrap, batch_topic, tmp_path):
    t = batch_topic
    options = {
        "kafka.bootstrap.servers": bootstrap,
        "assign": f'{{"{t}":[1]}}',
        "startingOffsets": f'{{"{t}":{{"1":2}}}}',
    }
    spark_rows = spark_read(spark, options)
    kwire_rows = by_offset(kwire.read(tmp_path / "sink", kwire_options(options)))
    assert [(r[3], r[4]) for r in spark_rows] == [(1, o) for o in range(2, 7)]
    # Without includeHeaders neither engine has a headers column.
    assert all(r[7] is None for r in spark_rows)
    assert kwire_rows == spark_rows



# ------------------------------------- e: the same query in both engines


def test_the_same_query_from_earliest_runs_the_same_batches(spark, kwire, bootstrap, tmp_path):
    topic = unique_topic("same-query")
    kwire.create_topic(topic, PARTITIONS)
    fill(kwire, topic, FIRST, "first")
    options = stream_options(topic, bootstrap)
    spark_run = spark_stream(spark, tmp_path / "spark", options)
    kwire_run = kwire.stream(tmp_path / "kwire", tmp_path / "sink", kwire_options(options))
    assert_rate_limited(spark_run.batches, [0, 1, 2], sum(FIRST))
    assert initial_offsets(tmp_path / "spark") == {(topic, p): 0 for p in range(PARTITIONS)}
    assert initial_offsets(tmp_path / "kwire") == initial_offsets(tmp_path / "spark")
    # Batch 0 starts from nothing and is behind latest by what it left.
    first = source_progress(spark_run.progress[0])
    assert first["startOffset"] is None
    assert first["latestOffset"] == {(topic, p): n for p, n in enumerate(FIRST)}
    assert int(first["lag"]["maxOffsetsBehindLatest"]) > 0
    assert_same_continuation(tmp_path / "spark", spark_run, tmp_path / "kwire", kwire_run, first_batch=0)


def test_a_new_query_at_latest_runs_an_empty_batch_0(spark, kwire, bootstrap, tmp_path):
    topic = unique_topic("at-latest")
    kwire.create_topic(topic, PARTITIONS)
    fill(kwire, topic, FIRST, "first")
    options = {**stream_options(topic, bootstrap), "startingOffsets": "latest"}
    spark_run = spark_stream(spark, tmp_path / "spark", options)
    # Spark logs and commits batch 0 with end = start = latest, reads nothing,
    # and reports no lag.
    assert spark_run.batches == {0: []}
    latest = {(topic, p): n for p, n in enumerate(FIRST)}
    assert offset_log(tmp_path / "spark") == {0: latest}
    assert commit_ids(tmp_path / "spark") == [0]
    assert source_progress(spark_run.progress[0])["lag"] == {
        "minOffsetsBehindLatest": "0",
        "maxOffsetsBehindLatest": "0",
        "avgOffsetsBehindLatest": "0.0",
    }
    kwire_run = kwire.stream(tmp_path / "kwire", tmp_path / "sink", kwire_options(options))
    assert_same_continuation(tmp_path / "spark", spark_run, tmp_path / "kwire", kwire_run, first_batch=0)
    # Records written afterwards are batch 1 on, in both.
    fill(kwire, topic, SECOND, "second")
    spark_run = spark_stream(spark, tmp_path / "spark", options)
    kwire_run = kwire.stream(tmp_path / "kwire", tmp_path / "sink-2", kwire_options(options))
    assert_rate_limited(spark_run.batches, [1, 2], sum(SECOND))
    assert_same_continuation(tmp_path / "spark", spark_run, tmp_path / "kwire", kwire_run, first_batch=1)


def test_trigger_once_after_a_crash_only_replays_the_logged_batch(spark, kwire, spark_checkpoint):
    # New records wait, but a Trigger.Once run after a crash that left
    # offsets/2 without commits/2 only replays batch 2, then stops.
    ck = spark_checkpoint["copies"]
    options = spark_checkpoint["options"]
    spark_run = spark_stream(spark, ck["spark-once"], options, trigger="once")
    assert sorted(spark_run.batches) == [2]
    assert spark_run.batches[2] == spark_checkpoint["first"].batches[2]
    kwire_run = kwire.stream(ck["kwire-once"], spark_checkpoint["root"] / "sink-kwire-once", kwire_options(options),
                             trigger="once")
    assert_same_continuation(ck["spark-once"], spark_run, ck["kwire-once"], kwire_run, first_batch=2)


def test_batch_read_by_timestamp_returns_the_same_rows(spark, kwire, bootstrap, tmp_path):
    topic = unique_topic("by-time")
    kwire.create_topic(topic, 2)
    fill(kwire, topic, [5, 4], "early")
    time.sleep(0.2)
    middle = int(time.time() * 1000)
    time.sleep(0.2)
    fill(kwire, topic, [3, 6], "late")
    future = middle + 3_600_000
    cases = [
        # The first offset at or after the timestamp, in every partition.
        ({"startingTimestamp": str(middle)}, [(0, o) for o in range(5, 8)] + [(1, o) for o in range(4, 10)]),
        # An end by timestamp is exclusive: the records before it.
        ({"endingOffsetsByTimestamp": json.dumps({topic: {"0": middle, "1": middle}})},
         [(0, o) for o in range(5)] + [(1, o) for o in range(4)]),
        # No record at or after a start: latest under strategy=latest.
        ({"startingOffsetsByTimestamp": json.dumps({topic: {"0": middle, "1": future}}),
          "startingOffsetsByTimestampStrategy": "latest"}, [(0, o) for o in range(5, 8)]),
    ]
    for i, (extra, expected) in enumerate(cases):
        options = batch_options(topic, bootstrap, **extra)
        spark_rows = spark_read(spark, options)
        kwire_rows = by_offset(kwire.read(tmp_path / f"sink-{i}", kwire_options(options)))
        assert [(r[3], r[4]) for r in spark_rows] == expected, extra
        assert kwire_rows == spark_rows, extra


def test_assign_with_a_partition_the_topic_does_not_have_reads_the_others(spark, kwire, bootstrap, tmp_path):
    topic = unique_topic("assign-missing")
    kwire.create_topic(topic, PARTITIONS)
    fill(kwire, topic, FIRST, "first")
    options = {
        "kafka.bootstrap.servers": bootstrap,
        "assign": json.dumps({topic: [0, 2, 7]}),
        "startingOffsets": "earliest",
        "maxOffsetsPerTrigger": str(MAX_OFFSETS),
    }
    spark_run = spark_stream(spark, tmp_path / "spark", options)
    # Partition 7 is left out; 0 and 2 are read whole.
    assert {(r[3], r[4]) for rows in spark_run.batches.values() for r in rows} == {
        (p, o) for p in (0, 2) for o in range(FIRST[p])
    }
    assert offset_log(tmp_path / "spark")[max(spark_run.batches)] == {(topic, 0): FIRST[0], (topic, 2): FIRST[2]}
    kwire_run = kwire.stream(tmp_path / "kwire", tmp_path / "sink", kwire_options(options))
    assert_same_continuation(tmp_path / "spark", spark_run, tmp_path / "kwire", kwire_run, first_batch=0)


def test_a_recreated_topic_is_data_loss_found_while_planning(spark, kwire, bootstrap, tmp_path):
    # The topic is deleted and made again with fewer records than the
    # checkpoint has read: latest is below the last end, PARTITION_OFFSET_CHANGED
    # with failOnDataLoss=true. Spark writes offsets/3 first, then fails, so a
    # restart replays that range; kwire must leave the same checkpoint.
    topic = unique_topic("recreated")
    kwire.create_topic(topic, PARTITIONS)
    fill(kwire, topic, FIRST, "first")
    options = stream_options(topic, bootstrap)
    spark_run = spark_stream(spark, tmp_path / "spark", options)
    assert_rate_limited(spark_run.batches, [0, 1, 2], sum(FIRST))
    kwire.recreate_topic(topic, PARTITIONS)
    fill(kwire, topic, [2, 2, 2], "again")
    copy_checkpoint(tmp_path / "spark", tmp_path / "kwire")

    from pyspark.errors import StreamingQueryException

    with pytest.raises(StreamingQueryException) as failure:
        spark_stream(spark, tmp_path / "spark", options)
    spark_text = str(failure.value)
    changed = re.compile(rf"Partition {topic}-[0-2] offset was changed from (23|15|9) to 2\.")
    assert changed.search(spark_text), spark_text[:2000]
    assert sorted(offset_log(tmp_path / "spark")) == [0, 1, 2, 3]
    assert commit_ids(tmp_path / "spark") == [0, 1, 2]

    kwire_run = kwire.stream(tmp_path / "kwire", tmp_path / "sink", kwire_options(options), expect_failure=True)
    assert changed.search(kwire_run.error), kwire_run.error
    # Spark 4.2's text.
    sentence = ("This could be either 1) a user error that the start offset is set beyond available offset when "
                "starting query, or 2) the kafka topic-partition is deleted and re-created.")
    assert sentence in spark_text
    assert sentence in kwire_run.error
    assert offset_log(tmp_path / "kwire") == offset_log(tmp_path / "spark")
    assert commit_ids(tmp_path / "kwire") == [0, 1, 2]


def test_available_now_reports_lag_against_the_end_fixed_at_start(spark, kwire, bootstrap, tmp_path):
    # Records arriving during an AvailableNow run are left for the next run,
    # and every batch's offsets behind latest and latestOffset are against the
    # end fixed when the run started. Each engine reads its own topic with the
    # same records, and more records arrive in it once batch 0 is done.
    late = [5, 5, 5]
    options = {"startingOffsets": "earliest", "maxOffsetsPerTrigger": "4", "includeHeaders": "true"}

    def topic_with_records(name):
        topic = unique_topic(name)
        kwire.create_topic(topic, PARTITIONS)
        fill(kwire, topic, FIRST, "first")
        return topic

    spark_topic = topic_with_records("now-spark")

    def spark_batch_done(batch_id):
        if batch_id == 0:
            fill(kwire, spark_topic, late, "late")

    spark_run = spark_stream(spark, tmp_path / "spark", {**options, "subscribe": spark_topic,
                                                         "kafka.bootstrap.servers": bootstrap},
                             on_batch=spark_batch_done)

    kwire_topic = topic_with_records("now-kwire")
    started = {}
    process_ready = threading.Event()
    produced = {}

    def kwire_planned():
        # Once offsets/0 exists the run has fixed its end: stop the process
        # (kwire's batches take milliseconds), write the late records, let
        # it go on.
        process_ready.wait(60)
        proc = started["process"]
        deadline = time.monotonic() + 120
        while not (tmp_path / "kwire" / "offsets" / "0").exists() and proc.poll() is None \
                and time.monotonic() < deadline:
            time.sleep(0.001)
        if proc.poll() is not None:
            produced["while_running"] = False
            return
        os.kill(proc.pid, signal.SIGSTOP)
        try:
            produced["while_running"] = proc.poll() is None
            fill(kwire, kwire_topic, late, "late")
        finally:
            os.kill(proc.pid, signal.SIGCONT)

    def on_start(proc):
        started["process"] = proc
        process_ready.set()

    producer = threading.Thread(target=kwire_planned)
    producer.start()
    kwire_run = kwire.stream(tmp_path / "kwire", tmp_path / "sink", {**options, "subscribe": kwire_topic},
                             on_start=on_start)
    producer.join()
    assert produced["while_running"], "the late records arrived after kwire's run ended; the test proves nothing"

    def by_partition(progress, topic):
        out = dict(source_progress(progress))
        for k in ("startOffset", "endOffset", "latestOffset"):
            if out[k] is not None:
                assert {t for t, _ in out[k]} == {topic}
                out[k] = {p: o for (_, p), o in out[k].items()}
        return out

    spark_progress = [by_partition(p, spark_topic) for p in spark_run.progress]
    kwire_progress = [by_partition(p, kwire_topic) for p in kwire_run.progress]
    # Only the records there at the start are read, and the last batch is
    # not behind.
    assert sum(p["numInputRows"] for p in spark_progress) == sum(FIRST)
    assert spark_progress[-1]["lag"]["maxOffsetsBehindLatest"] == "0"
    assert all(p["latestOffset"] == dict(enumerate(FIRST)) for p in spark_progress)
    assert kwire_progress == spark_progress
