"""kwire.from_avro against Spark's from_avro (spark-avro): Spark encodes rows
of every type with to_avro, prefixes Confluent's header (magic byte 0 and the
id the test Schema Registry gave the schema) and writes them to Kafka; Spark
reads them back with from_avro(substring(value, 6), schema), as users of a
registry do in open-source Spark, and kwire with the registry. Both give the
same rows."""

import datetime as dt
import decimal
import json
import os
import subprocess
import sys
import time
import urllib.request
import uuid
from pathlib import Path

import pytest

REGISTRY = Path(__file__).resolve().parents[1] / "registry" / "registry_server.py"

SCHEMA = {
    "type": "record",
    "name": "Order",
    "namespace": "shop",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "customer", "type": "string"},
        {"name": "paid", "type": "boolean"},
        {"name": "qty", "type": "int"},
        {"name": "weight", "type": "float"},
        {"name": "price", "type": "double"},
        {"name": "blob", "type": "bytes"},
        {"name": "note", "type": ["null", "string"]},
        {"name": "status", "type": {"type": "enum", "name": "Status", "symbols": ["NEW", "SHIPPED", "LOST"]}},
        {"name": "code", "type": {"type": "fixed", "name": "Code", "size": 3}},
        {"name": "amount", "type": {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}},
        {"name": "day", "type": {"type": "int", "logicalType": "date"}},
        {"name": "at", "type": {"type": "long", "logicalType": "timestamp-micros"}},
        {"name": "at_ms", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "local", "type": {"type": "long", "logicalType": "local-timestamp-micros"}},
        {"name": "tags", "type": {"type": "array", "items": "string"}},
        {"name": "counts", "type": {"type": "map", "values": "long"}},
        {"name": "ship", "type": {"type": "record", "name": "Ship", "fields": [
            {"name": "city", "type": "string"}, {"name": "zip", "type": ["null", "int"]}]}},
    ],
}

DDL = (
    "id BIGINT, customer STRING, paid BOOLEAN, qty INT, weight FLOAT, price DOUBLE, blob BINARY, note STRING, "
    "status STRING, code BINARY, amount DECIMAL(10,2), day DATE, at TIMESTAMP, at_ms TIMESTAMP, "
    "local TIMESTAMP_NTZ, tags ARRAY<STRING>, counts MAP<STRING, BIGINT>, ship STRUCT<city: STRING, zip: INT>"
)

UTC = dt.timezone.utc


def rows(n):
    out = []
    for i in range(n):
        out.append((
            i, "c%d-ü" % i, i % 2 == 0, -i, 0.5 * i, 1.25 * i, bytes([i % 256, 0, 255]),
            None if i % 3 == 0 else "n%d" % i, ["NEW", "SHIPPED", "LOST"][i % 3], bytes([65 + i % 26] * 3),
            decimal.Decimal(i * 101 - 5000) / 100, dt.date(2024, 1, 1) + dt.timedelta(days=i),
            dt.datetime(2024, 5, 1, 10, 0, 0, i, tzinfo=UTC), dt.datetime(2024, 5, 1, 10, 0, 0, 1000 * i, tzinfo=UTC),
            dt.datetime(1999, 12, 31, 23, 59, 59, i), ["t"] * (i % 4), {"k%d" % j: j for j in range(i % 3)},
            ("city%d" % i, None if i % 2 else i),
        ))
    return out


@pytest.fixture
def registry(tmp_path):
    port_file = tmp_path / "registry-port"
    proc = subprocess.Popen([sys.executable, str(REGISTRY), "--port-file", str(port_file)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 10
    while not port_file.exists():
        assert proc.poll() is None and time.monotonic() < deadline, "the test schema registry did not start"
        time.sleep(0.02)
    yield "http://127.0.0.1:%s" % port_file.read_text()
    proc.terminate()
    proc.wait(timeout=10)


def register(url, subject, schema):
    req = urllib.request.Request(url + "/subjects/%s/versions" % subject,
                                 data=json.dumps({"schema": json.dumps(schema)}).encode(),
                                 headers={"Content-Type": "application/vnd.schemaregistry.v1+json"})
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.loads(r.read())["id"]


def plain(value):
    """A Spark or kwire cell as plain Python, comparable across both."""
    if hasattr(value, "asDict"):
        return {k: plain(v) for k, v in value.asDict().items()}
    if isinstance(value, dict):  # a struct (Spark's maps are turned into pairs by the caller)
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        if value and isinstance(value[0], tuple) and len(value[0]) == 2:  # pyarrow's map
            return sorted((k, plain(v)) for k, v in value)
        return [plain(v) for v in value]
    if isinstance(value, bytearray):
        return bytes(value)
    if isinstance(value, dt.datetime) and value.tzinfo is not None:
        return value.astimezone(UTC).replace(tzinfo=None)
    return value


def test_kwire_from_avro_gives_sparks_from_avro_rows(spark, kwire_source, bootstrap, registry):
    kwire = pytest.importorskip("kwire")
    from pyspark.sql.avro.functions import from_avro, to_avro
    from pyspark.sql.functions import col, concat, expr, lit, struct

    admin = kwire.Admin({"bootstrap.servers": bootstrap})
    topic = "avro-" + uuid.uuid4().hex[:12]
    admin.create_topics([(topic, 2)])
    admin.close()
    schema_id = register(registry, topic + "-value", SCHEMA)
    header = bytes([0]) + schema_id.to_bytes(4, "big")

    data = rows(40)
    df = spark.createDataFrame(data, DDL)
    # Spark's session time zone is UTC (conftest); TIMESTAMP values come back in it.
    encoded = df.select(concat(lit(header), to_avro(struct(*[col(c) for c in df.columns]), json.dumps(SCHEMA)))
                        .alias("value"))
    encoded.write.format("kafka").option("kafka.bootstrap.servers", bootstrap).option("topic", topic).save()

    read = spark.read.format("kafka").option("kafka.bootstrap.servers", bootstrap).option("subscribe", topic).load()
    theirs = (read.select(col("partition"), col("offset"),
                          from_avro(expr("substring(value, 6)"), json.dumps(SCHEMA)).alias("v"))
              .select("partition", "offset", "v.*").collect())

    # format("kwire") with valueFormat avro: the value column is what from_avro gives, typed as Spark types it.
    theirs_df = read.select(from_avro(expr("substring(value, 6)"), json.dumps(SCHEMA)).alias("v"))
    kw = (spark.read.format("kwire").option("kafka.bootstrap.servers", bootstrap).option("subscribe", topic)
          .option("valueFormat", "avro").option("value.schema.registry.url", registry).load())
    assert kw.schema["value"].dataType.simpleString() == theirs_df.schema["v"].dataType.simpleString()
    assert [f.name for f in kw.schema.fields] == [f.name for f in read.schema.fields]

    def by_offset(collected):
        return {(r["partition"], r["offset"]): plain(r.asDict()) for r in collected}

    spark_rows = by_offset(read.select("partition", "offset", from_avro(expr("substring(value, 6)"),
                                                                        json.dumps(SCHEMA)).alias("value")).collect())
    kwire_rows = by_offset(kw.select("partition", "offset", "value").collect())
    assert len(kwire_rows) == len(data) and kwire_rows == spark_rows

    table = kwire.read({"kafka.bootstrap.servers": bootstrap, "subscribe": topic})
    ours = kwire.from_avro(table, options={"schema.registry.url": registry})
    assert ours.num_rows == len(theirs) == len(data)
    ours_by_offset = {
        (p, o): r for p, o, r in zip(table.column("partition").to_pylist(), table.column("offset").to_pylist(),
                                     ours.to_pylist())
    }
    for row in theirs:
        d = row.asDict()
        mine = ours_by_offset[(d.pop("partition"), d.pop("offset"))]
        d["counts"] = sorted(d["counts"].items())  # Spark's map as pyarrow's (key, value) pairs
        assert {k: plain(v) for k, v in mine.items()} == {k: plain(v) for k, v in d.items()}
    # The same values as written, too (not only the same as Spark).
    assert sorted(r["id"] for r in ours.to_pylist()) == list(range(len(data)))

    # kwire.to_avro of the decoded rows writes Spark's to_avro bytes, byte for byte.
    again = kwire.to_avro(ours, json.dumps(SCHEMA)).to_pylist()
    written = [bytes(v)[5:] for v in table.column("value").to_pylist()]
    assert again == written
    # And with the registry: Confluent's header with the registered id.
    framed = kwire.to_avro(ours, json.dumps(SCHEMA), {"schema.registry.url": registry}, topic=topic).to_pylist()
    assert framed == [bytes(v) for v in table.column("value").to_pylist()]


def test_kwire_source_streams_plain_avro_and_protobuf_values(spark, kwire_source, bootstrap, registry, tmp_path):
    """format("kwire") streaming with a non-record Avro schema (the value is
    the array itself; the key a string, keyFormat) and a batch query of Protobuf values read with protoc's
    descriptors; PERMISSIVE rows of nulls for a corrupt value."""
    import shutil

    kwire = pytest.importorskip("kwire")
    import pyarrow as pa

    admin = kwire.Admin({"bootstrap.servers": bootstrap})
    avro_topic, pb_topic = "avro-s-" + uuid.uuid4().hex[:10], "pb-" + uuid.uuid4().hex[:10]
    admin.create_topics([(avro_topic, 1), (pb_topic, 1)])
    admin.close()
    longs = json.dumps({"type": "array", "items": "long"})
    values = kwire.to_avro(pa.table({"v": pa.array([[i, i * 10] for i in range(5)], pa.list_(pa.int64()))}), longs)
    keys = kwire.to_avro(pa.table({"k": ["k%d" % i for i in range(5)]}), json.dumps("string"))
    kwire.write(pa.table({"key": keys, "value": values}), {"kafka.bootstrap.servers": bootstrap, "topic": avro_topic})

    got = []
    q = (spark.readStream.format("kwire").option("kafka.bootstrap.servers", bootstrap)
         .option("subscribe", avro_topic).option("startingOffsets", "earliest")
         .option("valueFormat", "avro").option("value.jsonFormatSchema", longs)
         .option("keyFormat", "avro").option("key.jsonFormatSchema", json.dumps("string")).load()
         .writeStream.foreachBatch(lambda df, _: got.extend(df.select("offset", "key", "value").collect()))
         .option("checkpointLocation", str(tmp_path / "cp")).start())
    try:
        q.processAllAvailable()
    finally:
        q.stop()
    assert sorted((r["offset"], r["key"], r["value"]) for r in got) == [(i, "k%d" % i, [i, i * 10]) for i in range(5)]

    if not shutil.which("protoc"):
        pytest.skip("protoc not installed (scripts/bootstrap installs protobuf-compiler)")
    proto_dir = Path(__file__).resolve().parents[1] / "protobuf"
    desc = tmp_path / "recursive.desc"
    subprocess.run(["protoc", "--include_imports", "--descriptor_set_out=%s" % desc, "-I", str(proto_dir),
                    "recursive.proto"], check=True)
    # kwire.test.Person{name = "ann", friend = {name = "bob"}}, then bytes that are no message.
    person = b"\x0a\x03ann\x12\x05\x0a\x03bob"
    kwire.write(pa.table({"value": pa.array([person, b"\xff\xff"], pa.binary())}),
                {"kafka.bootstrap.servers": bootstrap, "topic": pb_topic})
    df = (spark.read.format("kwire").option("kafka.bootstrap.servers", bootstrap).option("subscribe", pb_topic)
          .option("valueFormat", "protobuf").option("value.messageName", "Person")
          .option("value.descFilePath", str(desc)).option("value.recursive.fields.max.depth", "2")
          .option("value.mode", "PERMISSIVE").load())
    assert df.schema["value"].dataType.simpleString() == "struct<name:string,friend:struct<name:string>>"
    rows = sorted((r["offset"], plain(r["value"])) for r in df.select("offset", "value").collect())
    assert rows == [(0, {"name": "ann", "friend": {"name": "bob"}}), (1, {"name": None, "friend": None})]
    with pytest.raises(Exception, match="valueFormat must be avro or protobuf"):
        spark.read.format("kwire").option("kafka.bootstrap.servers", bootstrap).option("subscribe", pb_topic) \
            .option("valueFormat", "json").load().collect()


def test_stable_union_identifiers_as_spark_names_them(spark):
    """enableStableIdentifiersForUnionType / stableIdentifierPrefixForUnionType:
    the same member names and rows as Spark's from_avro, and the same refusal
    of two type names that differ only in case."""
    kwire = pytest.importorskip("kwire")
    import pyarrow as pa
    from pyspark.sql.avro.functions import from_avro

    union = ["null", "int", "string", {"type": "record", "name": "Pt", "namespace": "a.b",
                                       "fields": [{"name": "x", "type": "int"}]},
             {"type": "enum", "name": "Color", "symbols": ["RED", "BLUE"]}, {"type": "array", "items": "int"}]
    schema = json.dumps({"type": "record", "name": "R", "fields": [{"name": "u", "type": union}]})
    # Branch index (zigzag) then the value: null, int 5, "a", Pt{x=3}, BLUE, [7].
    values = [b"\x00", b"\x02\x0a", b"\x04\x02a", b"\x06\x06", b"\x08\x02", b"\x0a\x02\x0e\x00"]
    df = spark.createDataFrame([(v,) for v in values], "v BINARY")
    for opts in ({"enableStableIdentifiersForUnionType": "true"},
                 {"enableStableIdentifiersForUnionType": "true", "stableIdentifierPrefixForUnionType": "as_"}):
        theirs = df.select(from_avro("v", schema, opts).alias("r")).select("r.*")
        ours = kwire.from_avro(pa.table({"value": pa.array(values, pa.binary())}), schema, opts)
        assert ours.schema.field("u").type.num_fields == 5
        assert [f.name for f in ours.schema.field("u").type] == theirs.schema["u"].dataType.names
        assert [plain(r["u"]) for r in ours.to_pylist()] == [plain(r["u"]) for r in theirs.collect()]
    clash = json.dumps({"type": "record", "name": "R", "fields": [
        {"name": "u", "type": ["int", {"type": "record", "name": "Int", "fields": [{"name": "x", "type": "int"}]}]}]})
    with pytest.raises(Exception, match="name conflict of type name Int"):
        df.select(from_avro("v", clash, {"enableStableIdentifiersForUnionType": "true"})).schema
    with pytest.raises(kwire.ConfigError, match="name conflict of type name Int"):
        kwire.from_avro(pa.table({"value": pa.array(values, pa.binary())}), clash,
                        {"enableStableIdentifiersForUnionType": "true"})
