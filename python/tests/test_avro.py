"""kwire.from_avro against confluent-kafka's Avro serializers (the truth for
Confluent's wire format) and fastavro, through a real broker and the test
Schema Registry (tests/registry/registry_server.py)."""

import datetime
import decimal
import io
import json
import logging
import urllib.request
import uuid

import pyarrow as pa
import pyarrow.compute  # noqa: F401
import pytest

import kwire

ck_avro = pytest.importorskip("confluent_kafka.schema_registry.avro")
from confluent_kafka.schema_registry import SchemaRegistryClient  # noqa: E402
from confluent_kafka.serialization import MessageField, SerializationContext  # noqa: E402

fastavro = pytest.importorskip("fastavro")

UTC = datetime.timezone.utc

ALL_TYPES = {
    "type": "record",
    "name": "Everything",
    "namespace": "kwire.test",
    "fields": [
        {"name": "n", "type": "null"},
        {"name": "flag", "type": "boolean"},
        {"name": "i", "type": "int"},
        {"name": "l", "type": "long"},
        {"name": "f", "type": "float"},
        {"name": "d", "type": "double"},
        {"name": "raw", "type": "bytes"},
        {"name": "s", "type": "string"},
        {"name": "color", "type": {"type": "enum", "name": "Color", "symbols": ["RED", "GREEN", "BLUE"]}},
        {"name": "fx", "type": {"type": "fixed", "name": "Four", "size": 4}},
        {"name": "amount", "type": {"type": "bytes", "logicalType": "decimal", "precision": 12, "scale": 3}},
        {"name": "famount",
         "type": {"type": "fixed", "name": "Dec8", "size": 8, "logicalType": "decimal", "precision": 18, "scale": 2}},
        {"name": "day", "type": {"type": "int", "logicalType": "date"}},
        {"name": "t_ms", "type": {"type": "int", "logicalType": "time-millis"}},
        {"name": "t_us", "type": {"type": "long", "logicalType": "time-micros"}},
        {"name": "ts_ms", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "ts_us", "type": {"type": "long", "logicalType": "timestamp-micros"}},
        {"name": "lts_ms", "type": {"type": "long", "logicalType": "local-timestamp-millis"}},
        {"name": "lts_us", "type": {"type": "long", "logicalType": "local-timestamp-micros"}},
        {"name": "id", "type": {"type": "string", "logicalType": "uuid"}},
        {"name": "tags", "type": {"type": "array", "items": "string"}},
        {"name": "scores", "type": {"type": "map", "values": ["null", "double"]}},
        {"name": "maybe", "type": ["null", "long"], "default": None},
        {"name": "wide", "type": ["int", "long"]},
        {"name": "either", "type": ["null", "string", "int", {"type": "record", "name": "P", "fields": [
            {"name": "x", "type": "int"}]}]},
        {"name": "inner", "type": {"type": "record", "name": "Inner", "fields": [
            {"name": "name", "type": "string"},
            {"name": "nums", "type": {"type": "array", "items": ["null", "int"]}}]}},
    ],
}


def sample(i):
    return {
        "n": None,
        "flag": i % 2 == 0,
        "i": -(2**31) if i == 1 else i * 7,
        "l": 2**63 - 1 if i == 2 else -i,
        "f": 1.5 * i,
        "d": -2.25 * i,
        "raw": bytes([i, 0, 255]),
        "s": "héllo %d ✓" % i,
        "color": ["RED", "GREEN", "BLUE"][i % 3],
        "fx": bytes([i, i + 1, i + 2, i + 3]),
        "amount": decimal.Decimal("-123456789.123") if i == 3 else decimal.Decimal(i) / 8,
        "famount": decimal.Decimal("99999999.99") * (-1 if i % 2 else 1),
        "day": datetime.date(1969, 12, 31) + datetime.timedelta(days=i * 400),
        "t_ms": datetime.time(1, 2, 3, 4000),
        "t_us": datetime.time(23, 59, 59, 999999),
        "ts_ms": datetime.datetime(2024, 5, 1, 10, 0, i, 123000, tzinfo=UTC),
        "ts_us": datetime.datetime(1960, 1, 1, 0, 0, 0, 654321, tzinfo=UTC),
        "lts_ms": datetime.datetime(2024, 5, 1, 10, 0, i, 5000),
        "lts_us": datetime.datetime(2000, 2, 29, 23, 59, 59, 999999),
        "id": uuid.UUID(int=i * 12345),
        "tags": ["t%d" % j for j in range(i)],
        "scores": {"k%d" % j: (None if j == 0 else j / 4) for j in range(i)},
        "maybe": None if i % 2 else i,
        "wide": i,
        "either": [None, "s", 5, {"x": 9}][i % 4],
        "inner": {"name": "in%d" % i, "nums": [None, i]},
    }


def expected_row(r):
    """What Spark's from_avro gives for a record (and so kwire): enums as
    names, time-of-day as numbers, maps as key/value pairs, the 3-branch
    union as member0..member2."""
    e = dict(r)
    e["t_ms"] = ((1 * 60 + 2) * 60 + 3) * 1000 + 4
    e["t_us"] = ((23 * 60 + 59) * 60 + 59) * 1000000 + 999999
    e["id"] = str(r["id"])
    e["scores"] = list(r["scores"].items())
    either = r["either"]
    e["either"] = None if either is None else {
        "member0": either if isinstance(either, str) else None,
        "member1": either if isinstance(either, int) else None,
        "member2": either if isinstance(either, dict) else None,
    }
    return e


def normalise(row):
    out = {}
    for k, v in row.items():
        if isinstance(v, datetime.datetime) and v.tzinfo is not None:
            v = v.astimezone(UTC)
        out[k] = v
    return out


def serializer(url, schema, **conf):
    return ck_avro.AvroSerializer(SchemaRegistryClient({"url": url}), json.dumps(schema), conf=conf or None)


def produce(producer, topic, values):
    for v in values:
        producer.send(topic, value=v, partition=0)
    producer.flush()


def test_every_avro_type_from_confluent_serializer_through_a_broker(bootstrap, new_topic, producer, schema_registry):
    url = schema_registry()
    topic = new_topic()
    ser = serializer(url, ALL_TYPES)
    ctx = SerializationContext(topic, MessageField.VALUE)
    records = [sample(i) for i in range(6)]
    values = [ser(r, ctx) for r in records]
    produce(producer, topic, values + [None])

    table = kwire.read({"kafka.bootstrap.servers": bootstrap, "subscribe": topic})
    out = kwire.from_avro(table, options={"schema.registry.url": url})

    assert out.num_rows == 7
    assert out.schema.field("amount").type == pa.decimal128(12, 3)
    assert out.schema.field("famount").type == pa.decimal128(18, 2)
    assert out.schema.field("day").type == pa.date32()
    assert out.schema.field("ts_ms").type == pa.timestamp("us", tz="UTC")
    assert out.schema.field("lts_us").type == pa.timestamp("us")
    assert out.schema.field("t_ms").type == pa.int32()
    assert out.schema.field("t_us").type == pa.int64()
    assert out.schema.field("scores").type == pa.map_(pa.string(), pa.float64())
    assert out.schema.field("wide").type == pa.int64()
    assert out.schema.field("n").type == pa.null()
    assert [f.name for f in out.schema.field("either").type] == ["member0", "member1", "member2"]

    # Field by field against confluent-kafka's own deserializer.
    deser = ck_avro.AvroDeserializer(SchemaRegistryClient({"url": url}))
    rows = [normalise(r) for r in out.to_pylist()]
    for row, value, record in zip(rows, values, records):
        theirs = deser(value, ctx)
        assert theirs["s"] == row["s"] and theirs["amount"] == row["amount"]
        want = expected_row(record)
        for name in want:
            assert row[name] == want[name], name
    assert all(v is None for v in rows[6].values())  # a tombstone: null in every column


def plain(schema, record):
    b = io.BytesIO()
    fastavro.schemaless_writer(b, fastavro.parse_schema(schema), record)
    return b.getvalue()


def kafka_table(values, topic="t"):
    return pa.table({
        "value": pa.array(values, pa.binary()),
        "topic": [topic] * len(values),
        "partition": pa.array([0] * len(values), pa.int32()),
        "offset": pa.array(range(len(values)), pa.int64()),
    })


def test_plain_avro_with_json_format_schema_as_spark():
    values = [plain(ALL_TYPES, sample(i)) for i in range(4)]
    out = kwire.from_avro(kafka_table(values), json.dumps(ALL_TYPES))
    for row, i in zip(out.to_pylist(), range(4)):
        want = expected_row(sample(i))
        assert normalise(row) == want



def test_a_tombstone_is_a_null_row_and_a_malformed_value_a_row_of_nulls():
    # Spark: from_avro(null) is null; a malformed value under PERMISSIVE is a
    # struct whose fields are null.
    schema = {"type": "record", "name": "R", "fields": [
        {"name": "id", "type": "long"}, {"name": "name", "type": ["null", "string"]}]}
    values = [plain(schema, {"id": 1, "name": "a"}), None, b"\xff", plain(schema, {"id": 2, "name": None})]
    reader = kwire.AvroReader(json.dumps(schema), {"mode": "PERMISSIVE"})
    rows = reader.decode_rows(kafka_table(values))
    assert rows.null_count == 1
    assert rows.is_null().to_pylist() == [False, True, False, False]
    assert rows.to_pylist() == [{"id": 1, "name": "a"}, None, {"id": None, "name": None}, {"id": 2, "name": None}]
    # As a table, the null row is null in every column.
    out = kwire.from_avro(kafka_table(values), json.dumps(schema), {"mode": "PERMISSIVE"})
    assert out.column("id").to_pylist() == [1, None, None, 2]
    assert out.column("name").to_pylist() == ["a", None, None, None]
    # As one column (a key or value decoded in place, e.g. in Spark).
    from kwire._avro import decoded_column

    column = decoded_column(reader, reader.decode_rows(kafka_table(values)))
    assert column.is_null().to_pylist() == [False, True, False, False]
    assert column.field("id").to_pylist()[0] == 1
    # A schema that is not a record: the value itself, null for a tombstone.
    one = kwire.AvroReader(json.dumps("string"))
    column = decoded_column(one, one.decode_rows(kafka_table([plain("string", "x"), None])))
    assert column.type == pa.string() and column.to_pylist() == ["x", None]


V1 = {"type": "record", "name": "User", "fields": [
    {"name": "id", "type": "long"}, {"name": "name", "type": "string"}, {"name": "age", "type": "int"}]}
V2 = {"type": "record", "name": "User", "fields": [
    {"name": "id", "type": "long"}, {"name": "name", "type": "string"},
    {"name": "age", "type": "long"},  # promoted
    {"name": "email", "type": ["null", "string"], "default": None},
    {"name": "tier", "type": {"type": "enum", "name": "Tier", "symbols": ["FREE", "PRO"], "default": "FREE"},
     "default": "FREE"}]}


def test_evolution_writer_v1_reader_v2_and_the_reverse(schema_registry):
    url = schema_registry()
    ctx = SerializationContext("users", MessageField.VALUE)
    v1 = serializer(url, V1)({"id": 1, "name": "ann", "age": 30}, ctx)
    v2 = serializer(url, V2)({"id": 2, "name": "bob", "age": 2**40, "email": "b@x", "tier": "PRO"}, ctx)
    assert v1[1:5] != v2[1:5]  # two schema ids

    # Reader = the subject's latest (v2): v1's record gets the defaults.
    out = kwire.from_avro(kafka_table([v1, v2], "users"), options={"schema.registry.url": url})
    assert out.schema.field("age").type == pa.int64()
    assert out.to_pylist() == [
        {"id": 1, "name": "ann", "age": 30, "email": None, "tier": "FREE"},
        {"id": 2, "name": "bob", "age": 2**40, "email": "b@x", "tier": "PRO"},
    ]

    # Reader = v1 (avroSchema): v2's added fields are skipped; its long age
    # cannot be read as an int, which Avro's rules refuse for the writer id.
    with pytest.raises(kwire.ConfigError, match="long.*int"):
        kwire.from_avro(kafka_table([v1, v2], "users"),
                        options={"schema.registry.url": url, "avroSchema": json.dumps(V1)})
    v1_reader = dict(V1, fields=[V1["fields"][0], V1["fields"][1]])
    out = kwire.from_avro(kafka_table([v1, v2], "users"),
                          options={"schema.registry.url": url, "avroSchema": json.dumps(v1_reader)})
    assert out.to_pylist() == [{"id": 1, "name": "ann"}, {"id": 2, "name": "bob"}]


def test_unknown_id_corrupt_value_and_bad_magic_under_both_modes(schema_registry, caplog):
    url = schema_registry()
    ctx = SerializationContext("t", MessageField.VALUE)
    good = serializer(url, V1)({"id": 1, "name": "a", "age": 2}, ctx)
    unknown = b"\x00\x00\x00\x03\xe7" + good[5:]  # schema id 999
    truncated = good[:-1]
    bad_magic = b"\x01" + good[1:]
    values = [good, unknown, truncated, bad_magic, good]
    opts = {"schema.registry.url": url}

    with pytest.raises(kwire.MalformedRecordError) as e:
        kwire.from_avro(kafka_table(values), options=opts)
    assert e.value.offset == 1 and e.value.partition == 0 and e.value.topic == "t"
    assert "FAILFAST" in str(e.value) and "schema id 999" in str(e.value)

    with caplog.at_level(logging.WARNING, logger="kwire"):
        out = kwire.from_avro(kafka_table(values), options=dict(opts, mode="PERMISSIVE"))
    rows = out.to_pylist()
    assert rows[0] == rows[4] == {"id": 1, "name": "a", "age": 2}
    assert rows[1] == rows[2] == rows[3] == {"id": None, "name": None, "age": None}
    assert "3 malformed" in caplog.text and "offset 1" in caplog.text

    with pytest.raises(kwire.MalformedRecordError, match="magic byte 1"):
        kwire.from_avro(kafka_table([bad_magic]), options=opts)
    with pytest.raises(kwire.MalformedRecordError, match="ends inside"):
        kwire.from_avro(kafka_table([truncated]), options=opts)


def test_registry_down_and_basic_auth(schema_registry):
    url = schema_registry(user="kwire:s3cret")
    client = SchemaRegistryClient({"url": url, "basic.auth.user.info": "kwire:s3cret"})
    ser = ck_avro.AvroSerializer(client, json.dumps(V1))
    v = ser({"id": 7, "name": "x", "age": 1}, SerializationContext("t", MessageField.VALUE))

    ok = kwire.from_avro(kafka_table([v]), options={"schema.registry.url": url, "basic.auth.user.info": "kwire:s3cret"})
    assert ok.to_pylist() == [{"id": 7, "name": "x", "age": 1}]
    with pytest.raises(kwire.SchemaRegistryError) as e:
        kwire.from_avro(kafka_table([v]), options={"schema.registry.url": url, "basic.auth.user.info": "kwire:wrong"})
    assert e.value.http_status == 401
    # User info in the URL, Confluent's basic.auth.credentials.source=URL.
    with_user = url.replace("http://", "http://kwire:s3cret@")
    ok = kwire.from_avro(kafka_table([v]), options={"schema.registry.url": with_user,
                                                    "basic.auth.credentials.source": "URL"})
    assert ok.num_rows == 1
    # Host names the port (RFC 9110), not just the address.
    auth = {"Authorization": "Basic " + __import__("base64").b64encode(b"kwire:s3cret").decode()}
    with urllib.request.urlopen(urllib.request.Request(url + "/_hosts", headers=auth)) as r:
        assert url.removeprefix("http://") in json.load(r)
    # A 404 that is not Confluent's "schema not found" (40403), here a wrong
    # path, is the registry failing, not a malformed value, even in PERMISSIVE.
    with pytest.raises(kwire.SchemaRegistryError) as e:
        kwire.from_avro(kafka_table([v]), options={"schema.registry.url": url + "/wrong", "subject": "t-value",
                                                   "avroSchema": json.dumps(V1), "mode": "PERMISSIVE",
                                                   "basic.auth.user.info": "kwire:s3cret"})
    assert e.value.http_status == 404

    # Nothing listens on port 9 of loopback: the registry cannot be reached.
    with pytest.raises(kwire.SchemaRegistryError) as e:
        kwire.from_avro(kafka_table([v]), options={"schema.registry.url": "http://127.0.0.1:9", "subject": "t-value"})
    assert e.value.http_status == 0 and "unreachable" in str(e.value)


def test_registry_over_tls(schema_registry):
    url = schema_registry(tls=True)
    assert url.startswith("https://")
    ca = schema_registry.ca  # the CA that signed the registry's certificate
    client = SchemaRegistryClient({"url": url, "ssl.ca.location": ca})
    v = ck_avro.AvroSerializer(client, json.dumps(V1))({"id": 5, "name": "tls", "age": 2},
                                                       SerializationContext("t", MessageField.VALUE))
    out = kwire.from_avro(kafka_table([v]), options={"schema.registry.url": url,
                                                     "schema.registry.ssl.ca.location": ca})
    assert out.to_pylist() == [{"id": 5, "name": "tls", "age": 2}]
    # Without the CA the server's certificate is not trusted.
    with pytest.raises(kwire.SchemaRegistryError) as e:
        kwire.from_avro(kafka_table([v]), options={"schema.registry.url": url})
    assert e.value.http_status == 0 and "certificate" in str(e.value).lower()
    # The certificate names 127.0.0.1, not localhost: the host name is checked...
    by_name = url.replace("127.0.0.1", "localhost")
    with pytest.raises(kwire.SchemaRegistryError):
        kwire.from_avro(kafka_table([v]), options={"schema.registry.url": by_name,
                                                   "schema.registry.ssl.ca.location": ca})
    # ...unless endpoint identification is turned off, as in Confluent's clients.
    out = kwire.from_avro(kafka_table([v]), options={
        "schema.registry.url": by_name, "schema.registry.ssl.ca.location": ca,
        "schema.registry.ssl.endpoint.identification.algorithm": ""})
    assert out.num_rows == 1


def test_option_errors():
    with pytest.raises(kwire.ConfigError, match="jsonFormatSchema"):
        kwire.from_avro(kafka_table([b""]), options={})
    with pytest.raises(kwire.ConfigError, match="DROPMALFORMED"):
        kwire.from_avro(kafka_table([b""]), json.dumps(V1), {"mode": "DROPMALFORMED"})
    with pytest.raises(kwire.ConfigError, match="recursive"):
        kwire.from_avro(kafka_table([b""]), json.dumps(
            {"type": "record", "name": "N", "fields": [{"name": "next", "type": ["null", "N"]}]}))
    with pytest.raises(kwire.ConfigError, match="2 topics"):
        two = pa.concat_tables([kafka_table([b""], "a"), kafka_table([b""], "b")])
        kwire.from_avro(two, options={"schema.registry.url": "http://127.0.0.1:9"})


def test_streaming_query_decodes_avro_and_asks_the_registry_once_per_id(
        bootstrap, new_topic, producer, schema_registry, tmp_path):
    url = schema_registry()
    topic = new_topic()
    ctx = SerializationContext(topic, MessageField.VALUE)
    ser1 = serializer(url, V1)
    produce(producer, topic, [ser1({"id": i, "name": "u%d" % i, "age": i}, ctx) for i in range(5)])
    serializer(url, V2)({"id": 9, "name": "v2", "age": 1, "email": None, "tier": "PRO"}, ctx)  # latest is v2 now
    seen = []
    q = kwire.stream({"kafka.bootstrap.servers": bootstrap, "subscribe": topic, "maxOffsetsPerTrigger": 2,
                      "startingOffsets": "earliest"},
                     str(tmp_path / "cp"), foreach_batch=lambda t, b: seen.append((b, t.to_pylist())),
                     value_format="avro", value_options={"schema.registry.url": url},
                     kafka_columns=["partition", "offset"])
    assert [b for b, _ in seen] == [0, 1, 2]
    rows = [r for _, t in seen for r in t]
    assert rows == [{"id": i, "name": "u%d" % i, "age": i, "email": None, "tier": "FREE", "partition": 0, "offset": i}
                    for i in range(5)]
    assert q.last_progress["numInputRows"] == 1
    with urllib.request.urlopen(url + "/_requests", timeout=10) as r:
        asked = json.loads(r.read())
    assert asked["GET /schemas/ids/1"] == 1  # v1, the writer's: once for the query, not per batch
    assert asked["GET /subjects/%s-value/versions/latest" % topic] == 1


def test_to_avro_is_read_back_by_confluent_deserializer_and_from_avro(bootstrap, new_topic, schema_registry):
    url = schema_registry()
    topic = new_topic()
    records = [sample(i) for i in range(6)]
    ctx = SerializationContext(topic, MessageField.VALUE)
    # The table from_avro gives for confluent's values is what to_avro takes.
    values = [serializer(url, ALL_TYPES)(r, ctx) for r in records]
    decoded = kwire.from_avro(kafka_table(values, topic), options={"schema.registry.url": url})

    writer = kwire.AvroWriter(json.dumps(ALL_TYPES), {"schema.registry.url": url}, topic=topic)
    encoded = writer.encode(decoded)
    assert writer.schema_id == int.from_bytes(values[0][1:5], "big")  # the same schema: the same id
    # confluent-kafka reads back every field as it wrote it. (The bytes differ
    # only where [int, long] is written: from an int64 column, as long.)
    deser = ck_avro.AvroDeserializer(SchemaRegistryClient({"url": url}))
    for value, mine in zip(values, encoded.to_pylist()):
        assert deser(mine, ctx) == deser(value, ctx)
    assert encoded.to_pylist()[0][:5] == values[0][:5]

    # Through the broker: kwire.write, kwire.read, from_avro.
    kwire.write(pa.table({"value": encoded}), {"kafka.bootstrap.servers": bootstrap, "topic": topic})
    back = kwire.from_avro(kwire.read({"kafka.bootstrap.servers": bootstrap, "subscribe": topic}),
                           options={"schema.registry.url": url})
    assert back.to_pylist() == decoded.to_pylist()


def test_to_avro_derives_sparks_schema_and_registers_it(schema_registry):
    url = schema_registry()
    t = pa.table({
        "id": pa.array([1, 2], pa.int64()),
        "name": pa.array(["a", None], pa.string()),
        "price": pa.array([decimal.Decimal("1.50"), decimal.Decimal("-2.25")], pa.decimal128(9, 2)),
        "at": pa.array([datetime.datetime(2024, 1, 1, tzinfo=UTC), None], pa.timestamp("ms", tz="UTC")),
        "tags": pa.array([["x"], []], pa.list_(pa.string())),
    })
    w = kwire.AvroWriter(options={"schema.registry.url": url}, topic="orders")
    values = w.encode(t)
    schema = json.loads(w.writer_schema)
    assert schema["name"] == "topLevelRecord"
    assert schema["fields"][1] == {"name": "name", "type": ["string", "null"]}
    assert schema["fields"][2]["type"] == [
        {"type": "fixed", "name": "topLevelRecord.price.fixed", "size": 4, "logicalType": "decimal", "precision": 9,
         "scale": 2}, "null"]
    assert schema["fields"][3]["type"] == [{"type": "long", "logicalType": "timestamp-micros"}, "null"]
    deser = ck_avro.AvroDeserializer(SchemaRegistryClient({"url": url}))
    ctx = SerializationContext("orders", MessageField.VALUE)
    got = [deser(v, ctx) for v in values.to_pylist()]
    assert got[0]["id"] == 1 and got[0]["price"] == decimal.Decimal("1.50") and got[0]["tags"] == ["x"]
    assert got[0]["at"] == datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc)
    assert got[1]["name"] is None and got[1]["at"] is None and got[1]["price"] == decimal.Decimal("-2.25")
    # Plain (no registry): Spark's to_avro bytes, read back by from_avro with the same schema.
    plain_values = kwire.to_avro(t)
    back = kwire.from_avro(pa.table({"value": plain_values}), w.writer_schema)
    assert back.column("price").to_pylist() == [decimal.Decimal("1.50"), decimal.Decimal("-2.25")]

    # Spark's AvroSerializer: a timestamp into a plain long is milliseconds; a date into a plain int, days.
    when = pa.table({"at": pa.array([datetime.datetime(2024, 1, 1, 0, 0, 1, 500000)], pa.timestamp("us", tz="UTC")),
                     "day": pa.array([datetime.date(1970, 1, 11)], pa.date32())})
    plain_schema = {"type": "record", "name": "W", "fields": [{"name": "at", "type": "long"},
                                                             {"name": "day", "type": "int"}]}
    raw = kwire.to_avro(when, json.dumps(plain_schema)).to_pylist()[0]
    assert fastavro.schemaless_reader(io.BytesIO(raw), plain_schema) == {"at": 1704067201500, "day": 10}

    # A union schema that is not a record takes the table's only column.
    names = kwire.to_avro(t.select(["name"]), json.dumps(["null", "string"]))
    assert names.to_pylist() == [b"\x02\x02a", b"\x00"]
    assert kwire.from_avro(pa.table({"value": names}), json.dumps(["null", "string"])).column(0).to_pylist() == \
        ["a", None]

    with pytest.raises(kwire.KwireError, match="null"):
        kwire.to_avro(t, json.dumps({"type": "record", "name": "R", "fields": [{"name": "name", "type": "string"}]}))
    with pytest.raises(kwire.ConfigError, match="price"):
        kwire.to_avro(t, json.dumps({"type": "record", "name": "R", "fields": [{"name": "price", "type": "int"}]}))


def test_big_tables_are_decoded_on_several_cores_in_order():
    schema = {"type": "record", "name": "N", "fields": [{"name": "n", "type": "long"}]}
    values = [plain(schema, {"n": i}) for i in range(200_000)]
    values[150_000] = b"\x81"  # truncated: a varint that never ends
    t = kafka_table(values)
    t = pa.Table.from_batches(t.to_batches(max_chunksize=50_000))
    with pytest.raises(kwire.MalformedRecordError) as e:
        kwire.from_avro(t, json.dumps(schema))
    assert e.value.offset == 150_000
    values[30_000] = b"\x81"
    t = pa.Table.from_batches(kafka_table(values).to_batches(max_chunksize=50_000))
    with pytest.raises(kwire.MalformedRecordError) as e:
        kwire.from_avro(t, json.dumps(schema))
    assert e.value.offset == 30_000  # the earliest, whichever thread finished first
    out = kwire.from_avro(t, json.dumps(schema), {"mode": "PERMISSIVE"}).column("n").to_pylist()
    assert len(out) == 200_000 and out[30_000] is None and out[150_000] is None
    assert [n for n in out if n is not None] == [i for i in range(200_000) if i not in (30_000, 150_000)]


def test_big_tables_from_the_registry_keep_one_reader_schema(schema_registry):
    url = schema_registry()
    ctx = SerializationContext("users", MessageField.VALUE)
    one = serializer(url, V1)({"id": 1, "name": "ann", "age": 30}, ctx)
    reader = kwire.AvroReader(options={"schema.registry.url": url})
    first = reader.decode(kafka_table([one], "users"))  # the reader schema: the latest, V1
    assert first.column_names == ["id", "name", "age"]
    serializer(url, V2)({"id": 2, "name": "bob", "age": 1, "email": None, "tier": "PRO"}, ctx)  # latest is V2 now
    big = pa.Table.from_batches(kafka_table([one] * 200_000, "users").to_batches(max_chunksize=50_000))
    out = reader.decode(big)
    assert out.column_names == ["id", "name", "age"] and out.num_rows == 200_000
    assert out.column("age").unique().to_pylist() == [30]


def test_kafka_sink_writes_avro_values_registered_under_the_topic(bootstrap, new_topic, producer, schema_registry,
                                                                  tmp_path):
    url = schema_registry()
    src, out = new_topic(), new_topic()
    for i in range(30):
        producer.send(src, value=json.dumps({"id": i, "name": "n%d" % i}).encode(), partition=0)
    producer.flush()
    sink = kwire.KafkaSink({"kafka.bootstrap.servers": bootstrap, "topic": out}, value_format="avro",
                           value_options={"schema.registry.url": url})
    kwire.stream({"kafka.bootstrap.servers": bootstrap, "subscribe": src, "startingOffsets": "earliest"},
                 checkpoint=str(tmp_path / "ck"), sink=sink, value_format="json", schema="id INT, name STRING",
                 transform=lambda t: t.drop_columns(["_corrupt_record"]))
    # Confluent's TopicNameStrategy: the derived schema is registered under "<topic>-value".
    with urllib.request.urlopen(url + "/subjects/%s-value/versions/latest" % out) as r:
        registered = json.loads(json.load(r)["schema"])
    assert registered["name"] == "topLevelRecord" and [f["name"] for f in registered["fields"]] == ["id", "name"]
    table = kwire.read({"kafka.bootstrap.servers": bootstrap, "subscribe": out})
    deser = ck_avro.AvroDeserializer(SchemaRegistryClient({"url": url}))
    ctx = SerializationContext(out, MessageField.VALUE)
    got = sorted((deser(v, ctx)["id"], deser(v, ctx)["name"]) for v in table.column("value").to_pylist())
    assert got == [(i, "n%d" % i) for i in range(30)]
    # A struct value column is the value; the key column stays the key.
    out2 = new_topic()

    def keyed(t):
        value = pa.StructArray.from_arrays([t["id"].combine_chunks(), t["name"].combine_chunks()], ["id", "name"])
        return pa.table({"key": pa.compute.cast(t["id"], pa.string()), "value": value})

    kwire.stream({"kafka.bootstrap.servers": bootstrap, "subscribe": src, "startingOffsets": "earliest"},
                 checkpoint=str(tmp_path / "ck2"), value_format="json", schema="id INT, name STRING", transform=keyed,
                 sink=kwire.KafkaSink({"kafka.bootstrap.servers": bootstrap, "topic": out2}, value_format="avro",
                                      value_options={"schema.registry.url": url}))
    table = kwire.read({"kafka.bootstrap.servers": bootstrap, "subscribe": out2})
    ctx = SerializationContext(out2, MessageField.VALUE)
    got = sorted((k, deser(v, ctx)["name"]) for k, v in zip(table.column("key").to_pylist(),
                                                             table.column("value").to_pylist()))
    assert got == sorted((b"%d" % i, "n%d" % i) for i in range(30))
    with pytest.raises(kwire.ConfigError, match="value_format"):
        kwire.KafkaSink({"kafka.bootstrap.servers": bootstrap, "topic": out}, value_format="json")


def test_kafka_sink_encodes_keys_under_the_key_subject(bootstrap, new_topic, producer, schema_registry, tmp_path):
    url = schema_registry()
    src, out = new_topic(), new_topic()
    for i in range(20):
        producer.send(src, value=json.dumps({"id": i, "name": "n%d" % i}).encode(), partition=0)
    producer.flush()

    def keyed(t):
        ids = t["id"].combine_chunks()
        # A quarter of the rows have no key: it stays null, not an encoded record of nulls.
        valid = pa.compute.not_equal(pa.compute.bit_wise_and(ids, 3), 3)
        key = pa.StructArray.from_arrays([pa.compute.cast(ids, pa.string()), pa.compute.cast(ids, pa.int64())],
                                         ["tenant", "id"], mask=pa.compute.invert(valid))
        value = pa.StructArray.from_arrays([ids, t["name"].combine_chunks()], ["id", "name"])
        return pa.table({"key": key, "value": value})

    sink = kwire.KafkaSink({"kafka.bootstrap.servers": bootstrap, "topic": out},
                           value_format="avro", value_options={"schema.registry.url": url},
                           key_format="avro",
                           key_options={"schema.registry.url": url, "jsonFormatSchema": json.dumps(KEY)})
    kwire.stream({"kafka.bootstrap.servers": bootstrap, "subscribe": src, "startingOffsets": "earliest"},
                 checkpoint=str(tmp_path / "ck"), value_format="json", schema="id INT, name STRING", transform=keyed,
                 sink=sink)
    # Confluent's TopicNameStrategy for both: "<topic>-key" holds the key's schema, "<topic>-value" the value's.
    with urllib.request.urlopen(url + "/subjects/%s-key/versions/latest" % out) as r:
        assert json.loads(json.load(r)["schema"])["name"] == "UserKey"
    with urllib.request.urlopen(url + "/subjects/%s-value/versions/latest" % out) as r:
        assert json.loads(json.load(r)["schema"])["name"] == "topLevelRecord"
    table = kwire.read({"kafka.bootstrap.servers": bootstrap, "subscribe": out})
    deser = ck_avro.AvroDeserializer(SchemaRegistryClient({"url": url}))
    kctx, vctx = SerializationContext(out, MessageField.KEY), SerializationContext(out, MessageField.VALUE)
    got = sorted((deser(v, vctx)["id"], None if k is None else deser(k, kctx), deser(v, vctx)["name"])
                 for k, v in zip(table.column("key").to_pylist(), table.column("value").to_pylist()))
    assert got == [(i, None if i % 4 == 3 else {"tenant": str(i), "id": i}, "n%d" % i) for i in range(20)]

    # A key that is not a struct is the value of a non-record schema.
    out2 = new_topic()
    kwire.stream({"kafka.bootstrap.servers": bootstrap, "subscribe": src, "startingOffsets": "earliest"},
                 checkpoint=str(tmp_path / "ck2"), value_format="json", schema="id INT, name STRING",
                 transform=lambda t: pa.table({"key": t["name"], "value": pa.compute.cast(t["id"], pa.string())}),
                 sink=kwire.KafkaSink({"kafka.bootstrap.servers": bootstrap, "topic": out2}, key_format="avro",
                                      key_options={"schema.registry.url": url, "jsonFormatSchema": '"string"'}))
    table = kwire.read({"kafka.bootstrap.servers": bootstrap, "subscribe": out2})
    kctx = SerializationContext(out2, MessageField.KEY)
    keys, values = table.column("key").to_pylist(), table.column("value").to_pylist()
    got = sorted((deser(k, kctx), v) for k, v in zip(keys, values))
    assert got == sorted(("n%d" % i, b"%d" % i) for i in range(20))

    with pytest.raises(kwire.ConfigError, match="key_options= needs key_format"):
        kwire.KafkaSink({"kafka.bootstrap.servers": bootstrap, "topic": out}, key_options={"subject": "s"})
    with pytest.raises(kwire.ConfigError, match="key_format must be"):
        kwire.KafkaSink({"kafka.bootstrap.servers": bootstrap, "topic": out}, key_format="json")
    with pytest.raises(kwire.ConfigError, match="column='value', but these options encode the key"):
        kwire.KafkaSink({"kafka.bootstrap.servers": bootstrap, "topic": out}, key_format="avro",
                        key_options={"jsonFormatSchema": '"string"', "column": "value"})
    no_key = kwire.KafkaSink({"kafka.bootstrap.servers": bootstrap, "topic": out}, key_format="avro",
                             key_options={"jsonFormatSchema": '"string"'})
    with pytest.raises(kwire.ConfigError, match="needs a 'key' column"):
        no_key.write(pa.table({"value": [b"x"]}), 0)
    no_key.close()


KEY = {"type": "record", "name": "UserKey", "fields": [{"name": "tenant", "type": "string"},
                                                       {"name": "id", "type": "long"}]}


def test_avro_keys_from_the_key_subject_in_from_avro_and_streams(bootstrap, new_topic, producer, schema_registry,
                                                                 tmp_path):
    url = schema_registry()
    topic = new_topic()
    key_ctx = SerializationContext(topic, MessageField.KEY)
    keys = [serializer(url, KEY)({"tenant": "t%d" % (i % 2), "id": i}, key_ctx) for i in range(6)]
    for i, k in enumerate(keys):
        producer.send(topic, key=k, value=json.dumps({"n": i}).encode(), partition=0)
    producer.flush()
    # The key's subject is "<topic>-key" (Confluent's TopicNameStrategy for keys).
    t = kwire.read({"kafka.bootstrap.servers": bootstrap, "subscribe": topic})
    got = kwire.from_avro(t, options={"schema.registry.url": url, "column": "key"})
    assert got.to_pylist() == [{"tenant": "t%d" % (i % 2), "id": i} for i in range(6)]
    with pytest.raises(kwire.ConfigError, match="column"):
        kwire.from_avro(t, options={"schema.registry.url": url, "column": "headers"})

    # A stream decoding the JSON value and the Avro key: the decoded key replaces the raw one.
    tables = []
    kwire.stream({"kafka.bootstrap.servers": bootstrap, "subscribe": topic, "startingOffsets": "earliest"},
                 checkpoint=str(tmp_path / "ck"), value_format="json", schema="n INT",
                 kafka_columns=["key", "offset"], key_format="avro", key_options={"schema.registry.url": url},
                 foreach_batch=lambda table, batch_id: tables.append(table))
    rows = pa.concat_tables(tables).to_pylist()
    assert [(r["n"], r["key"], r["offset"]) for r in rows] == [
        (i, {"tenant": "t%d" % (i % 2), "id": i}, i) for i in range(6)]
    # Raw Kafka columns (no value format): the key column is decoded in place.
    tables.clear()
    kwire.stream({"kafka.bootstrap.servers": bootstrap, "subscribe": topic, "startingOffsets": "earliest"},
                 checkpoint=str(tmp_path / "ck2"), key_format="avro", key_options={"schema.registry.url": url},
                 foreach_batch=lambda table, batch_id: tables.append(table))
    raw = pa.concat_tables(tables)
    assert raw.column_names[:2] == ["key", "value"] and raw.column("key").to_pylist()[5] == {"tenant": "t1", "id": 5}
