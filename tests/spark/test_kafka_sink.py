"""kwire's Kafka sink against Spark's: the same DataFrame written by
df.write.format("kafka") and by kwire.write gives the same records (partition,
key, value, headers); the same bad inputs fail with the same texts; and Spark
reading the output of an exactly-once kwire stream with read_committed gets
exactly the rows kwire's reader gets."""

import time
import uuid

import pytest


@pytest.fixture(scope="module")
def admin(bootstrap):
    import kwire

    a = kwire.Admin({"bootstrap.servers": bootstrap})
    yield a
    a.close()


def new_topic(admin, partitions: int = 3) -> str:
    name = "sink-" + uuid.uuid4().hex[:12]
    admin.create_topics([(name, partitions)])
    return name


def kafka_rows(bootstrap, topic, isolation="read_uncommitted"):
    """(partition, key, value, headers) of every record, sorted."""
    import kwire

    t = kwire.read(
        {
            "kafka.bootstrap.servers": bootstrap,
            "subscribe": topic,
            "includeHeaders": "true",
            "kafka.isolation.level": isolation,
        }
    )
    out = []
    for r in t.to_pylist():
        headers = tuple((h["key"], h["value"]) for h in r["headers"] or [])
        out.append((r["partition"], r["key"], r["value"], headers))
    return sorted(out, key=repr)


def test_the_same_dataframe_through_both_sinks_gives_the_same_records(spark, bootstrap, admin):
    import kwire

    data = [
        (
            None if i % 5 == 0 else "k%d" % i,
            "v%d" % i,
            i % 3,
            [("src", b"p%d" % (i % 3)), ("n", None)] if i % 2 else [],
        )
        for i in range(60)
    ]
    df = spark.createDataFrame(
        data, "key STRING, value STRING, partition INT, headers ARRAY<STRUCT<key: STRING, value: BINARY>>"
    )
    spark_topic, kwire_topic = new_topic(admin), new_topic(admin)
    df.write.format("kafka").option("kafka.bootstrap.servers", bootstrap).option("topic", spark_topic).save()
    written = kwire.write(df.toArrow(), {"kafka.bootstrap.servers": bootstrap, "topic": kwire_topic})
    assert written == 60
    spark_rows = kafka_rows(bootstrap, spark_topic)
    assert len(spark_rows) == 60
    assert kafka_rows(bootstrap, kwire_topic) == spark_rows


def _spark_error(spark, bootstrap, ddl, rows, options):
    df = spark.createDataFrame(rows, ddl)
    w = df.write.format("kafka").option("kafka.bootstrap.servers", bootstrap)
    for k, v in options.items():
        w = w.option(k, v)
    with pytest.raises(Exception) as e:
        w.save()
    return str(e.value)


def _kwire_error(spark, bootstrap, ddl, rows, options):
    import kwire

    table = spark.createDataFrame(rows, ddl).toArrow()
    with pytest.raises(kwire.KwireError) as e:
        kwire.write(table, {"kafka.bootstrap.servers": bootstrap, **options})
    return str(e.value)


@pytest.mark.parametrize(
    "ddl,rows,options",
    [
        ("key STRING", [("a",)], {"topic": "t"}),  # no value column
        ("value INT", [(1,)], {"topic": "t"}),  # value of the wrong type
        ("key INT, value STRING", [(1, "a")], {"topic": "t"}),  # key of the wrong type
        ("value STRING", [("a",)], {}),  # no topic column, no topic option
        ("topic INT, value STRING", [(1, "a")], {}),  # topic of the wrong type
        ("partition STRING, value STRING", [("0", "a")], {"topic": "t"}),  # partition of the wrong type
        ("headers STRING, value STRING", [("h", "a")], {"topic": "t"}),  # headers of the wrong type
        ("value STRING", [("a",)], {"topic": "t", "kafka.key.serializer": "x"}),
        ("value STRING", [("a",)], {"topic": "t", "kafka.value.serializer": "x"}),
    ],
)
def test_bad_input_fails_with_sparks_text(spark, bootstrap, ddl, rows, options):
    spark_text = _spark_error(spark, bootstrap, ddl, rows, options)
    kwire_text = _kwire_error(spark, bootstrap, ddl, rows, options)
    assert kwire_text in spark_text, (kwire_text, spark_text)


def test_null_topic_in_the_data_fails_with_sparks_text(spark, bootstrap):
    ddl, rows = "topic STRING, value STRING", [(None, "a")]
    spark_text = _spark_error(spark, bootstrap, ddl, rows, {})
    kwire_text = _kwire_error(spark, bootstrap, ddl, rows, {})
    assert kwire_text in spark_text, (kwire_text, spark_text)


def test_spark_reads_an_exactly_once_output_as_kwire_does(spark, bootstrap, admin, tmp_path):
    import kwire

    source, out = new_topic(admin), new_topic(admin)
    producer = kwire.Producer({"bootstrap.servers": bootstrap})
    for i in range(300):
        producer.send(source, value=b"e%d" % i, key=b"%d" % i)
    producer.flush()
    producer.close()
    kwire.stream(
        {
            "kafka.bootstrap.servers": bootstrap,
            "subscribe": source,
            "startingOffsets": "earliest",
            "maxOffsetsPerTrigger": "100",
        },
        checkpoint=str(tmp_path / "ck"),
        sink="kafka",
        sink_options={"kafka.bootstrap.servers": bootstrap, "topic": out, "exactlyOnce": "true"},
        transform=lambda t: t.select(["key", "value", "partition"]),
    )
    committed = {"kafka.bootstrap.servers": bootstrap, "subscribe": out, "kafka.isolation.level": "read_committed"}
    # A commit returns before its markers make the records readable.
    deadline = time.time() + 20
    while len(kwire.read(committed)) < 300 and time.time() < deadline:
        time.sleep(0.2)
    spark_rows = sorted(
        (r.partition, r.offset, bytes(r.key), bytes(r.value))
        for r in spark.read.format("kafka").options(**committed).load().collect()
    )
    kwire_rows = sorted(
        (r["partition"], r["offset"], r["key"], r["value"]) for r in kwire.read(committed).to_pylist()
    )
    assert len(kwire_rows) == 300
    assert spark_rows == kwire_rows
    assert sorted(v for _, _, _, v in kwire_rows) == sorted(b"e%d" % i for i in range(300))
