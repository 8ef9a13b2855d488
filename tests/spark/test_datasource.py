"""The PySpark data source format("kwire") against Spark's own format("kafka"):
the same options on the same topics give the same rows, the same Spark
partitions (minPartitions), the same micro-batches under maxOffsetsPerTrigger,
and the same data-loss condition."""

import json
import re
import time
import uuid

import pytest

PARTITIONS = 3


@pytest.fixture(scope="module")
def client(bootstrap):
    import kwire

    admin = kwire.Admin({"bootstrap.servers": bootstrap})
    producer = kwire.Producer({"bootstrap.servers": bootstrap})
    yield admin, producer
    producer.close()
    admin.close()


def new_topic(client, partitions: int = PARTITIONS) -> str:
    name = "ds-" + uuid.uuid4().hex[:12]
    client[0].create_topics([(name, partitions)])
    return name


def fill(client, topic: str, counts: list[int]) -> None:
    """counts[p] records into partition p, covering null / empty keys and
    values, headers with a null value, and records without headers."""
    producer = client[1]
    for p, n in enumerate(counts):
        for i in range(n):
            kind = i % 4
            key = None if kind == 1 else (b"" if kind == 2 else b"k%d-%d" % (p, i))
            value = None if kind == 3 else b"v%d-%d" % (p, i)
            headers = [("h", b"1"), ("h", b"2"), ("n", None)] if kind == 0 else None
            producer.send(topic, value=value, key=key, partition=p, headers=headers)
    producer.flush()


@pytest.fixture(scope="module")
def topic(client):
    name = new_topic(client)
    fill(client, name, [13, 8, 0])  # partition 2 stays empty
    return name


def rows(df) -> list[tuple]:
    out = []
    for r in df.collect():
        t = tuple(r)
        if len(t) > 7:
            headers = None if t[7] is None else tuple((h[0], None if h[1] is None else bytes(h[1])) for h in t[7])
            t = t[:7] + (headers,)
        out.append(tuple(bytes(c) if isinstance(c, (bytearray, memoryview)) else c for c in t))
    return sorted(out, key=lambda t: (t[2], t[3], t[4]))


def read_both(spark, kwire_source, options: dict):
    kafka = spark.read.format("kafka").options(**options).load()
    kw = spark.read.format(kwire_source).options(**options).load()
    return kafka, kw


def assert_same(spark, kwire_source, options: dict) -> list[tuple]:
    kafka, kw = read_both(spark, kwire_source, options)
    assert kw.schema == kafka.schema
    expected = rows(kafka)
    assert rows(kw) == expected
    return expected


def test_batch_defaults_give_the_same_rows(spark, kwire_source, bootstrap, topic):
    got = assert_same(spark, kwire_source, {"kafka.bootstrap.servers": bootstrap, "subscribe": topic})
    assert len(got) == 21
    assert {(r[3], r[4]) for r in got} == {(0, o) for o in range(13)} | {(1, o) for o in range(8)}
    # null and empty keys, null values: kept apart
    assert got[1][0] is None and got[2][0] == b"" and got[3][1] is None


def test_batch_json_offsets_give_the_same_rows(spark, kwire_source, bootstrap, topic):
    options = {
        "kafka.bootstrap.servers": bootstrap,
        "subscribe": topic,
        "startingOffsets": json.dumps({topic: {"0": 3, "1": -2, "2": -2}}),
        "endingOffsets": json.dumps({topic: {"0": 11, "1": -1, "2": -1}}),
    }
    got = assert_same(spark, kwire_source, options)
    assert [r[4] for r in got if r[3] == 0] == list(range(3, 11))
    assert len(got) == 8 + 8


def test_batch_include_headers_gives_the_same_rows(spark, kwire_source, bootstrap, topic):
    options = {"kafka.bootstrap.servers": bootstrap, "subscribe": topic, "includeHeaders": "true"}
    got = assert_same(spark, kwire_source, options)
    assert got[0][7] == (("h", b"1"), ("h", b"2"), ("n", None))
    assert got[1][7] is None


def test_batch_assign_gives_the_same_rows(spark, kwire_source, bootstrap, topic):
    options = {"kafka.bootstrap.servers": bootstrap, "assign": json.dumps({topic: [1, 2]})}
    got = assert_same(spark, kwire_source, options)
    assert {r[3] for r in got} == {1}
    assert len(got) == 8


def test_batch_subscribe_pattern_gives_the_same_rows(spark, kwire_source, bootstrap, topic):
    options = {"kafka.bootstrap.servers": bootstrap, "subscribePattern": re.escape(topic) + "|ds-none-.*"}
    got = assert_same(spark, kwire_source, options)
    assert len(got) == 21 and {r[2] for r in got} == {topic}


def test_batch_min_partitions_gives_the_same_rows_and_splits(spark, kwire_source, bootstrap, topic):
    options = {"kafka.bootstrap.servers": bootstrap, "subscribe": topic, "minPartitions": "5"}
    kafka, kw = read_both(spark, kwire_source, options)
    assert rows(kw) == rows(kafka)
    assert kafka.rdd.getNumPartitions() == 5
    assert kw.rdd.getNumPartitions() == kafka.rdd.getNumPartitions()

    def spans(df):
        # each Spark partition's (partition, first offset, last offset)
        return sorted(
            df.rdd.mapPartitions(
                lambda it: [
                    (lambda rs: (rs[0].partition, rs[0].offset, rs[-1].offset) if rs else None)(list(it))
                ]
            )
            .filter(lambda s: s is not None)
            .collect()
        )

    assert spans(kw) == spans(kafka)


def run_stream(spark, fmt: str, options: dict, checkpoint) -> list[tuple]:
    """Runs until caught up; returns [(batch id, [(partition, offset), ...])]."""
    batches = []

    def collect(df, batch_id):
        batches.append((batch_id, sorted((r.partition, r.offset) for r in df.select("partition", "offset").collect())))

    q = (
        spark.readStream.format(fmt)
        .options(**options)
        .load()
        .writeStream.foreachBatch(collect)
        .option("checkpointLocation", str(checkpoint))
        .start()
    )
    try:
        q.processAllAvailable()
    finally:
        q.stop()
    return sorted(batches)


def logged_offsets(checkpoint) -> dict[int, dict]:
    """offsets/N's source offsets (the last line), parsed."""
    out = {}
    for f in (checkpoint / "offsets").iterdir():
        if f.name.isdigit():
            out[int(f.name)] = json.loads(f.read_text().strip().splitlines()[-1])
    return out


def test_streaming_max_offsets_per_trigger_runs_the_same_batches(spark, kwire_source, bootstrap, client, tmp_path):
    name = new_topic(client)
    fill(client, name, [23, 15, 9])
    options = {
        "kafka.bootstrap.servers": bootstrap,
        "subscribe": name,
        "startingOffsets": "earliest",
        "maxOffsetsPerTrigger": "20",
    }
    kafka = run_stream(spark, "kafka", options, tmp_path / "kafka")
    kw = run_stream(spark, kwire_source, options, tmp_path / "kwire")
    assert len(kafka) >= 3  # 47 offsets at 20 per trigger
    assert kw == kafka
    assert logged_offsets(tmp_path / "kwire") == logged_offsets(tmp_path / "kafka")
    assert sum(len(b[1]) for b in kw) == 47

    # More records, both queries resume from their checkpoints.
    fill(client, name, [6, 17, 11])
    kafka = run_stream(spark, "kafka", options, tmp_path / "kafka")
    kw = run_stream(spark, kwire_source, options, tmp_path / "kwire")
    assert kw == kafka and sum(len(b[1]) for b in kw) == 34
    assert logged_offsets(tmp_path / "kwire") == logged_offsets(tmp_path / "kafka")


CONDITION = re.compile(r"KAFKA_DATA_LOSS\.[A-Z_]+")


def test_batch_data_loss_raises_sparks_condition(spark, kwire_source, bootstrap, client):
    name = new_topic(client, 1)
    fill(client, name, [10])
    client[0].delete_records([(name, 0, 5)])
    options = {
        "kafka.bootstrap.servers": bootstrap,
        "subscribe": name,
        "startingOffsets": json.dumps({name: {"0": 0}}),
    }
    with pytest.raises(Exception) as kafka_error:
        spark.read.format("kafka").options(**options).load().collect()
    with pytest.raises(Exception) as kwire_error:
        spark.read.format(kwire_source).options(**options).load().collect()
    # Spark's exception comes through py4j unconverted: its condition is the
    # Java exception's getCondition().
    expected = kafka_error.value.java_exception.getCondition()
    assert expected == "KAFKA_DATA_LOSS.COULD_NOT_READ_OFFSET_RANGE"
    assert expected in CONDITION.findall(str(kwire_error.value)), str(kwire_error.value)[:2000]
    reason = f"Could not read records in offset [0, 10) for topic partition {name}-0"
    assert reason in " ".join(str(kafka_error.value).split())
    assert reason in " ".join(str(kwire_error.value).split())

    tolerant = dict(options, failOnDataLoss="false")
    got = assert_same(spark, kwire_source, tolerant)
    assert [r[4] for r in got] == list(range(5, 10))


def run_available_now(spark, fmt: str, options: dict, checkpoint) -> list[tuple]:
    batches = []

    def collect(df, batch_id):
        batches.append((batch_id, sorted((r.partition, r.offset) for r in df.select("partition", "offset").collect())))

    q = (
        spark.readStream.format(fmt)
        .options(**options)
        .load()
        .writeStream.foreachBatch(collect)
        .trigger(availableNow=True)
        .option("checkpointLocation", str(checkpoint))
        .start()
    )
    q.awaitTermination(300)
    assert not q.isActive
    return sorted(batches)


def test_available_now_runs_the_same_rate_limited_batches(spark, kwire_source, bootstrap, client, tmp_path):
    name = new_topic(client)
    fill(client, name, [9, 30, 4])
    options = {
        "kafka.bootstrap.servers": bootstrap,
        "subscribe": name,
        "startingOffsets": "earliest",
        "maxOffsetsPerTrigger": "15",
    }
    kafka = run_available_now(spark, "kafka", options, tmp_path / "kafka")
    kw = run_available_now(spark, kwire_source, options, tmp_path / "kwire")
    assert len(kafka) >= 3  # 43 offsets at 15 per trigger: not a single batch
    assert kw == kafka
    assert logged_offsets(tmp_path / "kwire") == logged_offsets(tmp_path / "kafka")


def test_a_new_query_at_latest_runs_the_same_batches(spark, kwire_source, bootstrap, client, tmp_path):
    name = new_topic(client)
    fill(client, name, [5, 5, 5])  # before the start: never read
    options = {"kafka.bootstrap.servers": bootstrap, "subscribe": name}  # startingOffsets latest
    queries = {}
    batches = {}
    for fmt in ("kafka", kwire_source):
        batches[fmt] = []

        def collect(df, batch_id, out=batches[fmt]):
            out.append((batch_id, sorted((r.partition, r.offset) for r in df.select("partition", "offset").collect())))

        queries[fmt] = (
            spark.readStream.format(fmt)
            .options(**options)
            .load()
            .writeStream.foreachBatch(collect)
            .option("checkpointLocation", str(tmp_path / fmt))
            .start()
        )
    try:
        for q in queries.values():
            q.processAllAvailable()
        fill(client, name, [2, 0, 3])
        for q in queries.values():
            q.processAllAvailable()
    finally:
        for q in queries.values():
            q.stop()
    kafka, kw = sorted(batches["kafka"]), sorted(batches[kwire_source])
    # Batch 0 is empty (it starts at the latest offsets); how the records
    # produced later fall into batches depends on when each query triggers,
    # so the rows and the final offsets are compared, not every batch.
    assert kafka[0] == (0, []) and kw[0] == (0, [])
    rows_read = sorted(r for b in kw for r in b[1])
    assert rows_read == sorted(r for b in kafka for r in b[1])
    assert rows_read == [(0, 5), (0, 6), (2, 5), (2, 6), (2, 7)]
    kafka_log, kwire_log = logged_offsets(tmp_path / "kafka"), logged_offsets(tmp_path / kwire_source)
    assert kwire_log[0] == kafka_log[0] == {name: {"0": 5, "1": 5, "2": 5}}
    assert kwire_log[max(kwire_log)] == kafka_log[max(kafka_log)] == {name: {"0": 7, "1": 5, "2": 8}}


def test_streaming_rejects_ending_offsets_as_spark_does(spark, kwire_source, bootstrap, topic, tmp_path):
    options = {"kafka.bootstrap.servers": bootstrap, "subscribe": topic, "endingOffsets": "latest"}
    messages = {}
    for fmt in ("kafka", kwire_source):
        with pytest.raises(Exception) as e:
            q = (
                spark.readStream.format(fmt)
                .options(**options)
                .load()
                .writeStream.format("noop")
                .option("checkpointLocation", str(tmp_path / fmt))
                .start()
            )
            try:
                q.processAllAvailable()
            finally:
                q.stop()
        messages[fmt] = str(e.value)
    for fmt, message in messages.items():
        assert "ending offset not valid in streaming queries" in message, (fmt, message[:2000])


def test_streaming_start_by_json_and_timestamp_runs_the_same_batches(spark, kwire_source, bootstrap, client, tmp_path):
    name = new_topic(client)
    producer = client[1]
    # Recent timestamps (an hour ago): older ones would let retention delete them.
    base = (int(time.time()) - 3600) * 1000
    for p in range(PARTITIONS):
        for i in range(8):
            producer.send(name, value=b"v%d" % i, partition=p, timestamp=base + i * 1000)
    producer.flush()
    starts = {
        "json": {"startingOffsets": json.dumps({name: {"0": 3, "1": -2, "2": -1}})},
        "timestamp": {"startingTimestamp": str(base + 5000)},
        "by-partition": {
            "startingOffsetsByTimestamp": json.dumps({name: {"0": base + 2000, "1": base + 7000, "2": base}})
        },
    }
    for label, start in starts.items():
        options = {"kafka.bootstrap.servers": bootstrap, "subscribe": name, "maxOffsetsPerTrigger": "7", **start}
        kafka = run_stream(spark, "kafka", options, tmp_path / label / "kafka")
        kw = run_stream(spark, kwire_source, options, tmp_path / label / "kwire")
        assert kw == kafka, label
        assert logged_offsets(tmp_path / label / "kwire") == logged_offsets(tmp_path / label / "kafka"), label
        assert sum(len(b[1]) for b in kw) > 0, label


# ---------------------------------------------------------------- empty plans


def test_batch_with_nothing_to_read_returns_no_rows(spark, kwire_source, bootstrap, client):
    empty = new_topic(client)
    cases = {
        "empty topic": {"subscribe": empty},
        "ends equal starts": {
            "subscribe": empty,
            "startingOffsets": json.dumps({empty: {"0": 0, "1": 0, "2": 0}}),
            "endingOffsets": json.dumps({empty: {"0": 0, "1": 0, "2": 0}}),
        },
        "no topic matches": {"subscribePattern": "ds-none-" + uuid.uuid4().hex},
    }
    for label, extra in cases.items():
        options = {"kafka.bootstrap.servers": bootstrap, **extra}
        kafka, kw = read_both(spark, kwire_source, options)
        assert kafka.count() == 0, label
        assert kw.count() == 0, label
        if label == "no topic matches":
            # No Kafka partition: Spark's source plans no task; PySpark runs
            # one for a Python source whose plan is empty (InputPartition(None)).
            assert (kafka.rdd.getNumPartitions(), kw.rdd.getNumPartitions()) == (0, 1)
        else:
            assert kw.rdd.getNumPartitions() == kafka.rdd.getNumPartitions() == 3, label


# ---------------------------------------------------------------- Spark partitions


def partition_spans(df) -> list:
    """Each Spark partition's (kafka partition, first offset, last offset),
    None for an empty one: the tasks Spark runs and what each read."""
    return sorted(
        df.rdd.mapPartitions(
            lambda it: [(lambda rs: (rs[0].partition, rs[0].offset, rs[-1].offset) if rs else None)(list(it))]
        ).collect(),
        key=lambda s: (s is not None, s),
    )


def assert_same_tasks(spark, kwire_source, options: dict) -> int:
    kafka, kw = read_both(spark, kwire_source, options)
    assert rows(kw) == rows(kafka)
    assert kw.rdd.getNumPartitions() == kafka.rdd.getNumPartitions()
    assert partition_spans(kw) == partition_spans(kafka)
    return kafka.rdd.getNumPartitions()


def test_batch_plans_the_spark_partitions_of_format_kafka(spark, kwire_source, bootstrap, client):
    twelve = new_topic(client, 12)
    fill(client, twelve, [40, 0, 7, 0, 0, 3, 0, 0, 25, 0, 0, 1])  # eight partitions stay empty
    base = {"kafka.bootstrap.servers": bootstrap}
    # minPartitions below the partition count: one task per partition, empty ones included.
    assert assert_same_tasks(spark, kwire_source, dict(base, subscribe=twelve, minPartitions="10")) == 12
    # minPartitions above it: split on the offsets known now (empty ranges dropped).
    assert assert_same_tasks(spark, kwire_source, dict(base, subscribe=twelve, minPartitions="20")) > 4
    # maxRecordsPerPartition with the end at latest: Spark does not split (the
    # unresolved size is negative); with a JSON end it does.
    assert assert_same_tasks(spark, kwire_source, dict(base, subscribe=twelve, maxRecordsPerPartition="4")) == 12
    ends = {twelve: {str(p): n for p, n in enumerate([40, 0, 7, 0, 0, 3, 0, 0, 25, 0, 0, 1])}}
    split = dict(base, subscribe=twelve, maxRecordsPerPartition="4", endingOffsets=json.dumps(ends))
    assert assert_same_tasks(spark, kwire_source, split) == 10 + 2 + 1 + 7 + 1

    # subscribePattern over three topics of 3, 3 and 2 partitions, some empty.
    prefix = "ds-pat-" + uuid.uuid4().hex[:8]
    for suffix, counts in (("a", [5, 0, 2]), ("b", [0, 0, 0]), ("c", [1, 9])):
        client[0].create_topics([(f"{prefix}-{suffix}", len(counts))])
        fill(client, f"{prefix}-{suffix}", counts)
    pattern = dict(base, subscribePattern=re.escape(prefix) + "-.*")
    assert assert_same_tasks(spark, kwire_source, pattern) == 8


# ---------------------------------------------------------------- streaming details


def run_stream_progress(spark, fmt: str, options: dict, checkpoint) -> dict:
    """Runs until caught up; returns {batch id: its source progress (a dict)}."""
    q = (
        spark.readStream.format(fmt)
        .options(**options)
        .load()
        .writeStream.format("noop")
        .option("checkpointLocation", str(checkpoint))
        .start()
    )
    try:
        q.processAllAvailable()
        progress = {p["batchId"]: p["sources"][0] for p in q.recentProgress if p["sources"]}
    finally:
        q.stop()
    return progress


def raw_offsets(checkpoint) -> dict[int, str]:
    """offsets/N's last line, as written."""
    return {
        int(f.name): f.read_text().strip().splitlines()[-1]
        for f in (checkpoint / "offsets").iterdir()
        if f.name.isdigit()
    }


def test_streaming_offsets_log_and_lag_match_format_kafka(spark, kwire_source, bootstrap, client, tmp_path):
    from kwire.spark import offsets_behind_latest

    name = new_topic(client)
    fill(client, name, [23, 15, 9])
    options = {
        "kafka.bootstrap.servers": bootstrap,
        "subscribe": name,
        "startingOffsets": "earliest",
        "maxOffsetsPerTrigger": "20",
    }
    kafka = run_stream_progress(spark, "kafka", options, tmp_path / "kafka")
    kw = run_stream_progress(spark, kwire_source, options, tmp_path / "kwire")
    # offsets/N: the same compact line ({"t":{"0":9,...}}), byte for byte.
    assert raw_offsets(tmp_path / "kwire") == raw_offsets(tmp_path / "kafka")
    assert " " not in "".join(raw_offsets(tmp_path / "kwire").values())
    # Spark's Python sources cannot add metrics to the progress; the latest
    # offsets they report give the Kafka source's lag metrics exactly.
    assert sorted(kw) == sorted(kafka) and len(kafka) >= 3
    for batch_id, source in kafka.items():
        assert kw[batch_id]["metrics"] == {}
        assert json.loads(kw[batch_id]["latestOffset"]) == json.loads(source["latestOffset"]), batch_id
        expected = {k: v for k, v in source["metrics"].items() if k.endswith("OffsetsBehindLatest")}
        assert offsets_behind_latest(kw[batch_id]) == expected, batch_id
    assert kafka[0]["metrics"]["maxOffsetsBehindLatest"] != "0"  # rate-limited: batch 0 left a backlog


GROUP = re.compile(r"with consumer group (spark-kafka-[a-z]+)-[0-9a-f-]+-executor")


def test_streaming_data_loss_names_the_source_group(spark, kwire_source, bootstrap, client, tmp_path):
    name = new_topic(client, 1)
    fill(client, name, [10])
    client[0].delete_records([(name, 0, 5)])
    options = {
        "kafka.bootstrap.servers": bootstrap,
        "subscribe": name,
        "startingOffsets": json.dumps({name: {"0": 0}}),
    }
    messages = {}
    for fmt in ("kafka", kwire_source):
        with pytest.raises(Exception) as e:
            run_stream(spark, fmt, options, tmp_path / fmt)
        messages[fmt] = " ".join(str(e.value).split())
    for fmt, message in messages.items():
        assert f"Could not read records in offset [0, 10) for topic partition {name}-0" in message, (fmt, message)
        assert GROUP.search(message).group(1) == "spark-kafka-source", (fmt, message)


def test_batch_data_loss_warning_goes_to_sparks_python_worker_log(spark, kwire_source, bootstrap, client):
    name = new_topic(client, 1)
    fill(client, name, [10])
    client[0].delete_records([(name, 0, 5)])
    options = {
        "kafka.bootstrap.servers": bootstrap,
        "subscribe": name,
        "startingOffsets": json.dumps({name: {"0": 0}}),
        "failOnDataLoss": "false",
    }
    spark.conf.set("spark.sql.pyspark.worker.logging.enabled", "true")
    try:
        assert [r.offset for r in spark.read.format(kwire_source).options(**options).load().collect()] == [5, 6, 7, 8, 9]
        logs = spark.tvf.python_worker_logs().where("logger = 'kwire'").select("level", "msg").collect()
    finally:
        spark.conf.unset("spark.sql.pyspark.worker.logging.enabled")
    mine = [r for r in logs if f"topic partition {name}-0" in r.msg]
    assert len(mine) == 1, logs
    assert mine[0].level == "WARNING"
    assert mine[0].msg.startswith("KAFKA_DATA_LOSS.COULD_NOT_READ_OFFSET_RANGE (failOnDataLoss=false, continuing):")
    assert "records in [0, 5) will be skipped" in mine[0].msg
