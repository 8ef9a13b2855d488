"""kwire.from_protobuf: messages written by Python's protobuf runtime and by
confluent-kafka's ProtobufSerializer (Confluent's wire format, with the test
Schema Registry), read with the descriptors protoc writes, through a real
broker; Spark's null rules and options."""

import datetime
import json
import os
import shutil
import subprocess
import urllib.request

import pyarrow as pa
import pytest

import kwire

pytest.importorskip("google.protobuf")
ck_pb = pytest.importorskip("confluent_kafka.schema_registry.protobuf")
from confluent_kafka.schema_registry import SchemaRegistryClient  # noqa: E402
from confluent_kafka.serialization import MessageField, SerializationContext  # noqa: E402
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory  # noqa: E402

PROTO_DIR = os.path.join(os.path.dirname(__file__), "..", "..", "tests", "protobuf")
UTC = datetime.timezone.utc


@pytest.fixture(scope="module")
def desc(tmp_path_factory):
    """protoc's descriptor set of tests/protobuf/*.proto and the message classes."""
    if not shutil.which("protoc"):
        pytest.skip("protoc not installed (scripts/bootstrap installs protobuf-compiler)")
    out = tmp_path_factory.mktemp("proto") / "test.desc"
    subprocess.run(["protoc", "--include_imports", "--descriptor_set_out=%s" % out, "-I", PROTO_DIR,
                    "everything.proto", "recursive.proto", "lookalike.proto", "any.proto"], check=True)
    raw = out.read_bytes()
    pool = descriptor_pool.DescriptorPool()
    for f in descriptor_pb2.FileDescriptorSet.FromString(raw).file:
        pool.Add(f)

    def cls(name):
        return message_factory.GetMessageClass(pool.FindMessageTypeByName(name))

    return str(out), raw, cls


def full(E):
    e = E(i32=-5, s32=-6, sf32=7, u32=4294967295, fx32=3, i64=-(2**62), s64=5, sf64=6, u64=2**64 - 1, fx64=2,
          f=1.5, d=2.5, b=True, s="hé ✓", raw=b"\x00\x01", color=2, maybe=0, tags=["a", "b"], number=42,
          palette=[0, 1, 7])
    e.inners.add(name="x", nums=[1, 2])
    e.counts["k"] = 9
    e.by_id[3].name = "three"
    e.inner.name = "in"
    e.at.FromDatetime(datetime.datetime(2024, 5, 1, 10, 0, 0, 123456))
    e.took.FromMicroseconds(90_000_001)
    e.wrapped.value = 0
    e.sub.flag = False
    return e


FULL_ROW = {
    "i32": -5, "s32": -6, "sf32": 7, "u32": -1, "fx32": 3, "i64": -(2**62), "s64": 5, "sf64": 6, "u64": -1,
    "fx64": 2, "f": 1.5, "d": 2.5, "b": True, "s": "hé ✓", "raw": b"\x00\x01", "color": "BLUE",
    # proto3 `optional` has presence: 0 was sent, so it is 0 (not null).
    "maybe": 0, "tags": ["a", "b"], "inners": [{"name": "x", "nums": [1, 2]}], "counts": [("k", 9)],
    "by_id": [(3, {"name": "three", "nums": []})], "inner": {"name": "in", "nums": []},
    "text": None, "number": 42, "nested": None,
    "at": datetime.datetime(2024, 5, 1, 10, 0, 0, 123456, tzinfo=UTC),
    "took": datetime.timedelta(seconds=90, microseconds=1),
    # Set messages whose fields hold their defaults: the fields are null (Spark's rule).
    "wrapped": {"value": None}, "sub": {"flag": None},
    "palette": ["RED", "GREEN", "UNKNOWN_ENUM_VALUE_Color_7"],
}


def kafka_table(values, topic="t"):
    return pa.table({
        "value": pa.array(values, pa.binary()),
        "topic": [topic] * len(values),
        "partition": pa.array([0] * len(values), pa.int32()),
        "offset": pa.array(range(len(values)), pa.int64()),
    })


def test_every_type_from_a_descriptor_file_as_spark(desc):
    path, raw, cls = desc
    E = cls("kwire.test.Everything")
    values = [full(E).SerializeToString(), E().SerializeToString(), None]
    out = kwire.from_protobuf(kafka_table(values), "Everything", path)
    assert out.schema.field("at").type == pa.timestamp("us", tz="UTC")
    assert out.schema.field("took").type == pa.duration("us")
    assert out.schema.field("by_id").type == pa.map_(pa.int32(), pa.struct([("name", pa.string()),
                                                                            ("nums", pa.list_(pa.int32()))]))
    rows = out.to_pylist()
    assert rows[0] == FULL_ROW
    # An empty message: lists are empty, every other field null (nothing set).
    assert rows[1] == {k: ([] if isinstance(v, list) else None) for k, v in FULL_ROW.items()}
    assert all(v is None for v in rows[2].values())  # a tombstone: null in every column
    # As one struct column the tombstone's row is null (Spark's from_protobuf(null)).
    struct = kwire.ProtobufReader("Everything", path).decode_rows(kafka_table(values))
    assert struct.is_null().to_pylist() == [False, False, True]
    assert struct.to_pylist()[2] is None
    # The same with the full name and the descriptor set's bytes.
    again = kwire.from_protobuf(kafka_table(values), "kwire.test.Everything", binary_descriptor_set=raw)
    assert again.to_pylist() == rows


def test_spark_options(desc):
    path, _, cls = desc
    E = cls("kwire.test.Everything")
    t = kafka_table([full(E).SerializeToString(), E().SerializeToString()])
    out = kwire.from_protobuf(t, "Everything", path, {"enums.as.ints": "true", "upcast.unsigned.ints": "true",
                                                      "unwrap.primitive.wrapper.types": "true"})
    assert out.schema.field("color").type == pa.int32()
    assert out.schema.field("u32").type == pa.int64() and out.schema.field("u64").type == pa.decimal128(20, 0)
    assert out.schema.field("wrapped").type == pa.int32()
    r = out.to_pylist()[0]
    assert (r["color"], r["u32"], r["u64"], r["palette"]) == (2, 4294967295, 2**64 - 1, [0, 1, 7])
    assert r["wrapped"] == 0  # a set wrapper gives its value, its default included (Spark)
    assert out.to_pylist()[1]["wrapped"] is None  # an unset one: null
    emitted = kwire.from_protobuf(t, "Everything", path, {"emit.default.values": "true"}).to_pylist()[1]
    assert (emitted["i32"], emitted["s"], emitted["color"], emitted["b"]) == (0, "", "RED", False)
    assert emitted["inner"] == {"name": "", "nums": []} and emitted["text"] == ""

    R = cls("kwire.test.Person")
    with pytest.raises(kwire.ConfigError, match="recursive"):
        kwire.from_protobuf(kafka_table([b""]), "Person", path)
    p = R(name="a")
    p.friend.name = "b"
    p.friend.friend.name = "c"
    cut = kwire.from_protobuf(kafka_table([p.SerializeToString()]), "Person", path,
                              {"recursive.fields.max.depth": "2"})
    assert cut.to_pylist() == [{"name": "a", "friend": {"name": "b"}}]
    with pytest.raises(kwire.ConfigError, match="convert.any.fields.to.json"):
        kwire.from_protobuf(t, "Everything", path, {"convert.any.fields.to.json": "yes"})
    # A message without Any fields reads the same with it.
    assert kwire.from_protobuf(t, "Everything", path, {"convert.any.fields.to.json": "true"}).to_pylist() == \
        kwire.from_protobuf(t, "Everything", path).to_pylist()


def test_malformed_values_under_both_modes(desc, caplog):
    path, _, cls = desc
    E = cls("kwire.test.Everything")
    good = full(E).SerializeToString()
    values = [good, b"\xff\xff\xff", good[:-3]]
    with pytest.raises(kwire.MalformedRecordError) as e:
        kwire.from_protobuf(kafka_table(values), "Everything", path)
    assert e.value.offset == 1 and "FAILFAST" in str(e.value) and "kwire.test.Everything" in str(e.value)
    out = kwire.from_protobuf(kafka_table(values), "Everything", path, {"mode": "PERMISSIVE"}).to_pylist()
    assert out[0] == FULL_ROW
    assert all(v is None for v in out[1].values()) and all(v is None for v in out[2].values())
    # Malformed rows stay structs of nulls (Spark's PERMISSIVE), not null rows.
    struct = kwire.ProtobufReader("Everything", path, {"mode": "PERMISSIVE"}).decode_rows(kafka_table(values))
    assert struct.null_count == 0


def test_lookalike_well_known_types_and_timestamps_past_int64(desc, caplog):
    path, _, cls = desc
    C = cls("kwire.test.Clock")
    ok = C()
    ok.fake.seconds, ok.fake.nanos = "12", "34"
    ok.fake_duration.seconds = 5
    ok.fake_duration.nanos.extend([1, 2])
    ok.real.seconds = 1
    far = C()
    far.real.seconds = 2**62  # past int64 microseconds
    # A slice: the reader must follow the columns' offsets.
    t = kafka_table([far.SerializeToString(), ok.SerializeToString(), far.SerializeToString()]).slice(1)
    out = kwire.from_protobuf(t, "Clock", path, {"mode": "PERMISSIVE"})
    assert out.schema.field("fake").type == pa.struct([("seconds", pa.string()), ("nanos", pa.string())])
    assert out.schema.field("real").type == pa.timestamp("us", tz="UTC")
    rows = out.to_pylist()
    assert rows[0] == {"fake": {"seconds": "12", "nanos": "34"},
                       "fake_duration": {"seconds": 5, "nanos": [1, 2]},
                       "real": datetime.datetime(1970, 1, 1, 0, 0, 1, tzinfo=UTC)}
    assert rows[1] == {"fake": None, "fake_duration": None, "real": None}
    with pytest.raises(kwire.MalformedRecordError) as e:
        kwire.from_protobuf(t, "Clock", path)
    assert e.value.offset == 2 and "does not fit in int64 microseconds" in str(e.value)


def test_confluent_serializer_through_a_broker(desc, bootstrap, new_topic, producer, schema_registry):
    _, _, cls = desc
    E = cls("kwire.test.Everything")
    url = schema_registry()
    topic = new_topic()
    ctx = SerializationContext(topic, MessageField.VALUE)
    ser = ck_pb.ProtobufSerializer(E, SchemaRegistryClient({"url": url}), {"use.deprecated.format": False})
    msgs = [full(E), E(s="only s", text="t")]
    for m in msgs:
        producer.send(topic, value=ser(m, ctx), partition=0)
    producer.flush()

    t = kwire.read({"kafka.bootstrap.servers": bootstrap, "subscribe": topic})
    # The subject's latest schema; its message "Everything" (the file's first is Inner).
    out = kwire.from_protobuf(t, options={"schema.registry.url": url, "messageName": "Everything"})
    rows = out.to_pylist()
    assert rows[0] == FULL_ROW
    assert rows[1]["s"] == "only s" and rows[1]["text"] == "t" and rows[1]["number"] is None
    deser = ck_pb.ProtobufDeserializer(E, {"use.deprecated.format": False})
    back = deser(t.column("value")[1].as_py(), ctx)
    assert back.s == rows[1]["s"] and back.text == rows[1]["text"]

    # The file's first message (Inner) is not what the values hold: each value names its message.
    with pytest.raises(kwire.MalformedRecordError, match="kwire.test.Everything.*not the reader's kwire.test.Inner"):
        kwire.from_protobuf(t, options={"schema.registry.url": url})
    # Unknown schema id, bad magic byte.
    bad = kafka_table([b"\x00\x00\x00\x03\xe7\x00" + msgs[1].SerializeToString(), b"\x07abc"], topic)
    out = kwire.from_protobuf(bad, options={"schema.registry.url": url, "messageName": "Everything",
                                            "mode": "PERMISSIVE"})
    assert out.num_rows == 2 and all(v is None for r in out.to_pylist() for v in r.values())


def test_registry_schema_importing_confluents_own_protos(schema_registry):
    url = schema_registry()
    text = """syntax = "proto3";
package shop;
import "confluent/meta.proto";
import "confluent/type/decimal.proto";
message Price {
  string sku = 1 [(confluent.field_meta).doc = "stock keeping unit"];
  confluent.type.Decimal amount = 2;
}
"""
    # Registered as Confluent's serializers do: the confluent/ imports are not references.
    req = urllib.request.Request(url + "/subjects/prices-value/versions", method="POST",
                                 data=json.dumps({"schema": text, "schemaType": "PROTOBUF"}).encode(),
                                 headers={"Content-Type": "application/vnd.schemaregistry.v1+json"})
    with urllib.request.urlopen(req) as r:
        sid = json.load(r)["id"]
    amount = b"\x0a\x01\x05\x10\x03\x18\x01"  # value 0x05, precision 3, scale 1
    value = b"\x00" + sid.to_bytes(4, "big") + b"\x00" + b"\x0a\x02a1\x12" + bytes([len(amount)]) + amount
    out = kwire.from_protobuf(kafka_table([value], "prices"), options={"schema.registry.url": url})
    assert out.to_pylist() == [{"sku": "a1", "amount": {"value": b"\x05", "precision": 3, "scale": 1}}]


def test_to_protobuf_round_trips_every_type(desc):
    path, _, cls = desc
    E = cls("kwire.test.Everything")
    want = full(E)
    del want.palette[:]  # 7 is no Color: from_protobuf names it UNKNOWN_ENUM_VALUE_Color_7, which has no number back
    decoded = kwire.from_protobuf(kafka_table([want.SerializeToString(), E(s="x").SerializeToString()]), "Everything",
                                  path)
    values = kwire.to_protobuf(decoded, "Everything", path).to_pylist()
    assert E.FromString(values[0]) == want
    assert E.FromString(values[1]) == E(s="x")
    # Ints as enum numbers, int64 into uint32 when it fits; columns of a subset of the fields.
    t = pa.table({"color": pa.array([1], pa.int32()), "u32": pa.array([7], pa.int64()),
                  "palette": pa.array([["GREEN", "RED"]])})
    got = E.FromString(kwire.to_protobuf(t, "Everything", path).to_pylist()[0])
    assert got.color == 1 and got.u32 == 7 and list(got.palette) == [1, 0] and not got.HasField("at")

    with pytest.raises(kwire.ConfigError, match='column "nope" has no field of its name in message kwire.test'):
        kwire.to_protobuf(pa.table({"nope": [1]}), "Everything", path)
    with pytest.raises(kwire.ConfigError, match='column "s".*cannot be written into field kwire.test.Everything.s'):
        kwire.to_protobuf(pa.table({"s": pa.array([1], pa.int32())}), "Everything", path)
    with pytest.raises(kwire.KwireError, match='"PURPLE" is not a value of enum'):
        kwire.to_protobuf(pa.table({"color": ["PURPLE"]}), "Everything", path)
    with pytest.raises(kwire.KwireError, match="does not fit field kwire.test.Everything.i32"):
        kwire.to_protobuf(pa.table({"i32": pa.array([2**40], pa.int64())}), "Everything", path)
    with pytest.raises(kwire.KwireError, match="element 1 is null"):
        kwire.to_protobuf(pa.table({"tags": pa.array([["a", None]])}), "Everything", path)


def test_to_protobuf_with_the_registry_is_read_by_confluent(desc, schema_registry):
    path, _, cls = desc
    E = cls("kwire.test.Everything")
    url = schema_registry()
    want = full(E)
    del want.palette[:]
    decoded = kwire.from_protobuf(kafka_table([want.SerializeToString()]), "Everything", path)
    w = kwire.ProtobufWriter("Everything", path, {"schema.registry.url": url}, topic="things")
    values = w.encode(decoded).to_pylist()
    assert w.schema_id >= 1 and values[0][:5] == b"\x00" + w.schema_id.to_bytes(4, "big")
    # Everything is message 1 of its file (after Inner): indexes [1] are written as count 1, then 1.
    assert values[0][5:7] == b"\x02\x02"
    ctx = SerializationContext("things", MessageField.VALUE)
    assert ck_pb.ProtobufDeserializer(E, {"use.deprecated.format": False})(values[0], ctx) == want
    back = kwire.from_protobuf(kafka_table(values, "things"),
                               options={"schema.registry.url": url, "messageName": "Everything"})
    assert back.to_pylist() == decoded.to_pylist()
    # The latest schema of the subject, without descriptors; lookup only (auto.register.schemas=false).
    latest = kwire.to_protobuf(decoded, options={"schema.registry.url": url, "messageName": "Everything"},
                               topic="things").to_pylist()
    assert latest == values
    looked_up = kwire.to_protobuf(decoded, "Everything", path, {"schema.registry.url": url,
                                                                "auto.register.schemas": "false"}, topic="things")
    assert looked_up.to_pylist() == values
    with pytest.raises(kwire.SchemaRegistryError):
        kwire.to_protobuf(decoded, "Everything", path, {"schema.registry.url": url, "auto.register.schemas": "false"},
                          topic="elsewhere")


def test_streaming_query_decodes_protobuf(desc, bootstrap, new_topic, producer, tmp_path):
    path, _, cls = desc
    E = cls("kwire.test.Everything")
    topic = new_topic()
    for i in range(4):
        producer.send(topic, value=E(i64=i, s="m%d" % i).SerializeToString(), partition=0)
    producer.flush()
    seen = []
    kwire.stream({"kafka.bootstrap.servers": bootstrap, "subscribe": topic, "startingOffsets": "earliest",
                  "maxOffsetsPerTrigger": 3}, str(tmp_path / "cp"),
                 foreach_batch=lambda t, b: seen.append(t.select(["i64", "s", "offset"]).to_pylist()),
                 value_format="protobuf", value_options={"messageName": "Everything", "descFilePath": path},
                 kafka_columns=["offset"])
    assert seen == [[{"i64": None, "s": "m0", "offset": 0}, {"i64": 1, "s": "m1", "offset": 1},
                     {"i64": 2, "s": "m2", "offset": 2}], [{"i64": 3, "s": "m3", "offset": 3}]]


def test_cli_reads_protobuf_values_as_json_lines(desc, bootstrap, new_topic, producer):
    path, _, cls = desc
    cli = os.environ.get("KWIRE_BIN") or os.path.join(os.path.dirname(kwire.__file__), "..", "..", "bin", "kwire")
    if not os.access(cli, os.X_OK):
        pytest.skip("the kwire command-line tool is not beside this build of the package")
    E = cls("kwire.test.Everything")
    topic = new_topic()
    e = E(i64=7, s="x", color=1)
    e.took.FromMicroseconds(-93_784_000_005)
    e.counts["a"] = 1
    producer.send(topic, value=e.SerializeToString(), partition=0)
    producer.flush()
    r = subprocess.run([cli, "read", "-b", bootstrap, "-o", "subscribe=" + topic, "--value-format", "protobuf",
                        "--value-option", "messageName=kwire.test.Everything", "--value-option",
                        "descFilePath=" + path, "--kafka-columns", "offset"], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    import json

    assert json.loads(r.stdout) == {
        "i64": 7, "s": "x", "color": "GREEN", "tags": [], "inners": [], "counts": {"a": 1}, "by_id": {},
        "took": "INTERVAL '-1 02:03:04.000005' DAY TO SECOND", "palette": [], "offset": 0}


def test_kafka_sink_encodes_protobuf_keys_under_the_key_subject(desc, bootstrap, new_topic, producer, schema_registry,
                                                                tmp_path):
    path, _, cls = desc
    Inner = cls("kwire.test.Inner")
    url = schema_registry()
    src, out = new_topic(), new_topic()
    for i in range(5):
        producer.send(src, value=b"v%d" % i, key=b"k%d" % i, partition=0)
    producer.flush()

    def keyed(t):
        names = t["key"].cast(pa.string()).combine_chunks()
        nums = pa.array([[len(n)] for n in names.to_pylist()], pa.list_(pa.int32()))
        return pa.table({"key": pa.StructArray.from_arrays([names, nums], ["name", "nums"]), "value": t["value"]})

    sink = kwire.KafkaSink({"kafka.bootstrap.servers": bootstrap, "topic": out}, key_format="protobuf",
                           key_options={"schema.registry.url": url, "messageName": "Inner", "descFilePath": path})
    kwire.stream({"kafka.bootstrap.servers": bootstrap, "subscribe": src, "startingOffsets": "earliest"},
                 checkpoint=str(tmp_path / "ck"), transform=keyed, sink=sink)
    with urllib.request.urlopen(url + "/subjects/%s-key/versions/latest" % out) as r:
        assert json.load(r)["schemaType"] == "PROTOBUF"
    table = kwire.read({"kafka.bootstrap.servers": bootstrap, "subscribe": out})
    ctx = SerializationContext(out, MessageField.KEY)
    deser = ck_pb.ProtobufDeserializer(Inner, {"use.deprecated.format": False})
    got = sorted((deser(k, ctx).name, list(deser(k, ctx).nums), v)
                 for k, v in zip(table.column("key").to_pylist(), table.column("value").to_pylist()))
    assert got == [("k%d" % i, [2], b"v%d" % i) for i in range(5)]


def test_any_fields_as_json_with_convert_any_fields_to_json(desc, caplog):
    path, _, cls = desc
    W, P = cls("kwire.test.WithAny"), cls("kwire.test.Point")
    w = W(id="a")
    w.payload.Pack(P(x=7, label_text="seven"))
    w.extras.add().Pack(P(x=-1))
    w.extras.add().Pack(P())
    unset = W(id="b")
    values = [w.SerializeToString(), unset.SerializeToString()]

    # Without the option: a struct of type_url and value, as before.
    plain = kwire.from_protobuf(kafka_table(values), "WithAny", path)
    assert plain.column("payload")[0].as_py() == {"type_url": "type.googleapis.com/kwire.test.Point",
                                                  "value": P(x=7, label_text="seven").SerializeToString()}

    out = kwire.from_protobuf(kafka_table(values), "WithAny", path, {"convert.any.fields.to.json": "true"})
    assert out.schema.field("payload").type == pa.string()
    assert out.schema.field("extras").type == pa.list_(pa.string())
    # Spark's JSON of an Any: "@type" first, then the fields by their JSON (camelCase) names, compact.
    assert out.to_pylist() == [
        {"id": "a", "payload": '{"@type":"type.googleapis.com/kwire.test.Point","x":7,"labelText":"seven"}',
         "extras": ['{"@type":"type.googleapis.com/kwire.test.Point","x":-1}',
                    '{"@type":"type.googleapis.com/kwire.test.Point"}']},
        {"id": "b", "payload": None, "extras": []},
    ]

    # A packed type the descriptors do not hold: a malformed value, as Spark's printer fails on it.
    bad = W(id="c")
    bad.payload.type_url = "type.googleapis.com/kwire.test.Missing"
    bad.payload.value = b"\x08\x01"
    with pytest.raises(kwire.MalformedRecordError, match="kwire.test.Missing") as e:
        kwire.from_protobuf(kafka_table([w.SerializeToString(), bad.SerializeToString()]), "WithAny", path,
                            {"convert.any.fields.to.json": "true"})
    assert e.value.offset == 1 and "FAILFAST" in str(e.value)
    permissive = kwire.from_protobuf(kafka_table([bad.SerializeToString(), w.SerializeToString()]), "WithAny", path,
                                     {"convert.any.fields.to.json": "true", "mode": "PERMISSIVE"})
    assert permissive.column("id").to_pylist() == [None, "a"]
    assert permissive.column("payload").to_pylist()[1].startswith('{"@type":"type.googleapis.com/kwire.test.Point"')


def test_cli_produce_protobuf_from_json_lines(desc, bootstrap, new_topic):
    path, _, cls = desc
    E = cls("kwire.test.Everything")
    cli = os.environ.get("KWIRE_BIN") or os.path.join(os.path.dirname(kwire.__file__), "..", "..", "bin", "kwire")
    if not os.access(cli, os.X_OK):
        pytest.skip("the kwire command-line tool is not beside this build of the package")
    topic = new_topic()
    line = json.dumps({"i32": -5, "u64": -1, "s": "hé", "raw": "AAE=", "color": "BLUE", "tags": ["a"],
                       "counts": {"k": 9}, "by_id": {"3": {"name": "three"}}, "inner": {"name": "in", "nums": [1, 2]},
                       "number": 42, "at": "2024-05-01T10:00:00.123456Z", "took": "90.000001s",
                       "wrapped": {"value": 0}, "palette": ["RED", "GREEN"]})
    args = [cli, "produce", "-b", bootstrap, "-t", topic, "--value-format", "protobuf",
            "--value-option", "messageName=Everything", "--value-option", "descFilePath=" + path]
    r = subprocess.run(args, input=line + "\n", capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    value = kwire.read({"kafka.bootstrap.servers": bootstrap, "subscribe": topic}).column("value")[0].as_py()
    e = E.FromString(value)
    assert (e.i32, e.u64, e.s, e.raw, e.color, list(e.tags), dict(e.counts)) == (-5, 2**64 - 1, "hé", b"\x00\x01", 2,
                                                                                 ["a"], {"k": 9})
    assert (e.by_id[3].name, e.inner.name, list(e.inner.nums), e.number, e.WhichOneof("choice")) == \
        ("three", "in", [1, 2], 42, "number")
    assert e.at.ToDatetime() == datetime.datetime(2024, 5, 1, 10, 0, 0, 123456)
    assert e.took.ToMicroseconds() == 90_000_001 and e.HasField("wrapped") and e.wrapped.value == 0
    assert list(e.palette) == [0, 1] and not e.HasField("sub")

    r = subprocess.run(args, input=line + "\n" + json.dumps({"inner": {"nums": [1, "two"]}}) + "\n",
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 1
    assert 'line 2: value field "inner.nums[1]": expected an integer (int32), got a string' in r.stderr
