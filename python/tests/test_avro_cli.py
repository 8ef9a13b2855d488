"""The kwire command-line tool with Avro values: `kwire stream
--value-format avro` reading values written by confluent-kafka's serializer,
and `kwire produce --value-format avro` read back by its deserializer."""
import base64
import datetime
import decimal
import json
import urllib.request

import pytest

import kwire

pytest.importorskip("confluent_kafka.schema_registry.avro")
from test_avro import ALL_TYPES, UTC, V1, V2, ck_avro, plain, produce, sample, serializer  # noqa: E402,F401
from confluent_kafka.schema_registry import SchemaRegistryClient  # noqa: E402,F401
from confluent_kafka.serialization import MessageField, SerializationContext  # noqa: E402,F401


def _kwire_cli():
    import os

    path = os.environ.get("KWIRE_BIN") or os.path.join(os.path.dirname(kwire.__file__), "..", "..", "bin", "kwire")
    if not os.access(path, os.X_OK):
        pytest.skip("the kwire command-line tool is not beside this build of the package")
    return path


def test_cli_reads_avro_values_as_json_lines(bootstrap, new_topic, producer, schema_registry):
    import subprocess

    cli = _kwire_cli()
    url = schema_registry()
    topic = new_topic()
    ctx = SerializationContext(topic, MessageField.VALUE)
    ser = serializer(url, V2)
    produce(producer, topic, [ser({"id": 1, "name": "ann", "age": 3, "email": None, "tier": "PRO"}, ctx), b"\x00\x01"])
    base = [cli, "read", "-b", bootstrap, "-o", "subscribe=" + topic, "--value-format", "avro", "-r", url,
            "--kafka-columns", "offset"]
    r = subprocess.run(base + ["--value-option", "mode=PERMISSIVE"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert [json.loads(line) for line in r.stdout.splitlines()] == [
        {"id": 1, "name": "ann", "age": 3, "tier": "PRO", "offset": 0},
        {"offset": 1},
    ]
    assert "row of nulls (mode PERMISSIVE)" in r.stderr and "offset 1" in r.stderr
    r = subprocess.run(base, capture_output=True, text=True, timeout=60)
    assert r.returncode != 0 and "FAILFAST" in r.stderr and "offset 1" in r.stderr

    # Plain Avro with the schema from a file (@FILE), as Spark's from_avro(col, jsonFormatSchema).
    import tempfile

    with tempfile.NamedTemporaryFile("w", suffix=".avsc", delete=False) as f:
        json.dump(V1, f)
    topic2 = new_topic()
    produce(producer, topic2, [plain(V1, {"id": 5, "name": "z", "age": 9})])
    r = subprocess.run([cli, "read", "-b", bootstrap, "-o", "subscribe=" + topic2, "--value-format", "avro",
                        "--schema", "@" + f.name, "--kafka-columns", "none"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == {"id": 5, "name": "z", "age": 9}


def _json_line(r):
    """sample(i) as the JSON line `kwire produce --value-format avro` takes
    (the forms `kwire read --value-format avro` writes: base64 bytes, ISO
    timestamps, dates as text, time-of-day as numbers, a 3-branch union as
    member0..member2)."""
    def ms_of_day(t):
        return ((t.hour * 60 + t.minute) * 60 + t.second) * 1000 + t.microsecond // 1000

    either = r["either"]
    return json.dumps({
        "flag": r["flag"], "i": r["i"], "l": r["l"], "f": r["f"], "d": r["d"],
        "raw": base64.b64encode(r["raw"]).decode(), "s": r["s"], "color": r["color"],
        "fx": base64.b64encode(r["fx"]).decode(), "amount": str(r["amount"]), "famount": str(r["famount"]),
        "day": r["day"].isoformat(), "t_ms": ms_of_day(r["t_ms"]),
        "t_us": ms_of_day(r["t_us"]) * 1000 + r["t_us"].microsecond % 1000,
        "ts_ms": r["ts_ms"].isoformat(), "ts_us": r["ts_us"].isoformat(), "lts_ms": r["lts_ms"].isoformat(),
        "lts_us": r["lts_us"].isoformat(), "id": str(r["id"]), "tags": r["tags"], "scores": r["scores"],
        "maybe": r["maybe"], "wide": r["wide"], "inner": r["inner"],
        "either": None if either is None else {
            "member%d" % (0 if isinstance(either, str) else 1 if isinstance(either, int) else 2): either},
    }, ensure_ascii=False)


def test_cli_produce_avro_is_read_back_by_confluent_deserializer(bootstrap, new_topic, schema_registry, tmp_path):
    import subprocess

    cli = _kwire_cli()
    url = schema_registry()
    topic = new_topic()
    schema_file = tmp_path / "all.avsc"
    schema_file.write_text(json.dumps(ALL_TYPES))
    records = [sample(i) for i in range(6)]
    lines = ["\"k%d\"|%s" % (i, _json_line(r)) for i, r in enumerate(records)]
    r = subprocess.run([cli, "produce", "-b", bootstrap, "-t", topic, "-p", "0", "-K", "|", "--value-format", "avro",
                        "-r", url, "--schema", "@%s" % schema_file, "--key-format", "avro", "--key-schema",
                        '"string"'], input="\n".join(lines) + "\n", capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "produced 6 records" in r.stderr

    # Confluent's serializer registers the same schema text: the same id, and the same values once decoded.
    vctx, kctx = SerializationContext(topic, MessageField.VALUE), SerializationContext(topic, MessageField.KEY)
    theirs = [serializer(url, ALL_TYPES)(rec, vctx) for rec in records]
    table = kwire.read({"kafka.bootstrap.servers": bootstrap, "subscribe": topic})
    values, keys = table.column("value").to_pylist(), table.column("key").to_pylist()
    assert [v[:5] for v in values] == [theirs[0][:5]] * 6
    deser = ck_avro.AvroDeserializer(SchemaRegistryClient({"url": url}))
    got = [deser(v, vctx) for v in values]
    assert got == [deser(v, vctx) for v in theirs]
    assert got[3]["amount"] == decimal.Decimal("-123456789.123") and got[1]["i"] == -(2**31)
    assert got[2]["l"] == 2**63 - 1 and got[0]["either"] is None and got[3]["either"] == {"x": 9}
    assert got[1]["ts_us"] == datetime.datetime(1960, 1, 1, 0, 0, 0, 654321, tzinfo=UTC)
    assert got[2]["raw"] == bytes([2, 0, 255]) and got[4]["scores"] == {"k0": None, "k1": 0.25, "k2": 0.5, "k3": 0.75}
    assert [deser(k, kctx) for k in keys] == ["k%d" % i for i in range(6)]
    subjects = json.loads(urllib.request.urlopen(url + "/subjects").read())
    assert sorted(subjects) == sorted([topic + "-key", topic + "-value"])

    # A line that does not fit: the error names the line and the field; the lines before it are produced.
    bad = [_json_line(records[0]), _json_line(records[1]).replace('"flag": false', '"flag": "no"')]
    r = subprocess.run([cli, "produce", "-b", bootstrap, "-t", topic, "-p", "0", "--value-format", "avro", "-r", url,
                        "--schema", "@%s" % schema_file], input="\n".join(bad) + "\n", capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 1
    assert 'line 2: value field "flag": expected true or false, got a string' in r.stderr
    assert "produced 1 record to '%s' before line 2" % topic in r.stderr
    assert len(kwire.read({"kafka.bootstrap.servers": bootstrap, "subscribe": topic})) == 7

    # With use.latest.version the subject's schema is the writer's: no --schema.
    r = subprocess.run([cli, "produce", "-b", bootstrap, "-t", topic, "--value-format", "avro", "-r", url,
                        "--value-option", "use.latest.version=true"], input=_json_line(records[5]) + "\n",
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    last = kwire.read({"kafka.bootstrap.servers": bootstrap, "subscribe": topic}).column("value").to_pylist()[-1]
    assert deser(last, vctx) == deser(theirs[5], vctx)
