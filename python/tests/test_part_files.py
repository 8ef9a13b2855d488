"""The Python file sinks write their part files with kwire's one part-file
writer and JSON Lines with its one record writer (the C++ core, as `kwire
stream --sink jsonl:DIR`). No broker: the sinks are given tables directly,
as the streaming query gives them."""

import datetime as dt
import decimal
import json
import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import kwire
from kwire import _kwire


def names(folder):
    return sorted(os.listdir(folder))


def test_json_lines_are_written_as_sparks_json_writer_writes_them(tmp_path):
    table = pa.table(
        {
            "key": pa.array([b"k\xff", None], pa.binary()),
            "value": pa.array([b'{"a":1}', b"x"], pa.binary()),
            "n": pa.array([7, None], pa.int32()),
            "x": pa.array([float("nan"), 0.1], pa.float64()),
            "ts": pa.array([dt.datetime(2026, 12, 7, 10, 0, 0, 123456, tzinfo=dt.timezone.utc), None],
                           pa.timestamp("us", tz="UTC")),
            "day": pa.array([dt.date(2026, 12, 7), None], pa.date32()),
            "price": pa.array([decimal.Decimal("1.50"), decimal.Decimal("-0.05")], pa.decimal128(10, 2)),
            "tags": pa.array([["a", None], []], pa.list_(pa.string())),
            "s": pa.array([{"f": 1, "g": None}, None], pa.struct([("f", pa.int64()), ("g", pa.string())])),
        }
    )
    sink = kwire.JsonLinesSink(str(tmp_path))
    assert sink.write(table, 4) == 2
    assert names(tmp_path) == ["part-%020d.jsonl" % 4]
    lines = (tmp_path / ("part-%020d.jsonl" % 4)).read_text().splitlines()
    # Binary as text (a byte that is not UTF-8 as its \u00XX escape), NaN
    # quoted, timestamps in UTC with milliseconds, decimals with their scale,
    # null fields left out (nulls inside arrays kept), as Spark writes them.
    assert lines == [
        '{"key":"k\\u00ff","value":"{\\"a\\":1}","n":7,"x":"NaN","ts":"2026-12-07T10:00:00.123Z",'
        '"day":"2026-12-07","price":1.50,"tags":["a",null],"s":{"f":1}}',
        '{"value":"x","x":0.1,"price":-0.05,"tags":[]}',
    ]
    assert json.loads(lines[0])["value"] == '{"a":1}'
    # A replayed batch replaces its file.
    assert sink.write(table.slice(1), 4) == 1
    assert (tmp_path / ("part-%020d.jsonl" % 4)).read_text().splitlines() == lines[1:]
    assert names(tmp_path) == ["part-%020d.jsonl" % 4]


def test_the_part_file_is_durable_at_its_path_on_commit_and_absent_after_abort(tmp_path):
    path = str(tmp_path / "part-00000000000000000001.parquet")
    f = _kwire.AtomicFile(path)
    table = pa.table({"a": list(range(1000))})
    pq.write_table(table, f)
    assert f.tell() > 0 and not f.closed
    assert not os.path.exists(path)
    (temp,) = names(tmp_path)
    assert temp.startswith(".part-00000000000000000001.parquet.") and temp.endswith(".tmp")
    f.commit()
    assert f.closed
    assert names(tmp_path) == ["part-00000000000000000001.parquet"]
    assert pq.read_table(path).equals(table)
    with pytest.raises(ValueError, match="closed part file"):
        f.write(b"more")
    g = _kwire.AtomicFile(str(tmp_path / "part-00000000000000000002.parquet"))
    g.write(memoryview(b"partial"))
    g.abort()
    assert names(tmp_path) == ["part-00000000000000000001.parquet"]
    with pytest.raises(TypeError):
        _kwire.AtomicFile(path).write("text, not bytes")


def test_a_sink_whose_write_fails_leaves_no_temp_file_and_the_old_part_file(tmp_path):
    sink = kwire.ParquetSink(str(tmp_path))
    sink.write(pa.table({"a": [1, 2]}), 0)

    class Unwritable:
        num_rows = 1

    with pytest.raises(Exception):
        sink.write(Unwritable(), 0)
    assert names(tmp_path) == ["part-%020d.parquet" % 0]
    assert pq.read_table(str(tmp_path / ("part-%020d.parquet" % 0))).column("a").to_pylist() == [1, 2]
    with pytest.raises(TypeError, match="JsonLinesSink"):
        kwire.JsonLinesSink(str(tmp_path / "json")).write(Unwritable(), 0)
    assert names(tmp_path / "json") == []
