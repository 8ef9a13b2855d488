"""ParquetSink(partition_by=...): Hive-style directories as Spark's
partitionBy writes them, read back by pyarrow's dataset reader. No broker:
the sink is given tables directly, as the streaming query gives them."""

import datetime as dt
import os

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

import kwire
from kwire.errors import ConfigError


def sample():
    return pa.table(
        {
            "id": pa.array(range(8), pa.int64()),
            "country": pa.array(["fr", "de", None, "a/b:c", "fr", "", "de", "fr"]),
            "score": pa.array([1.5, float("nan"), 2.0, 1.5, float("nan"), None, 2.0, 1.5]),
            "ts": pa.array(
                [dt.datetime(2024, 5, 1, 10, 0, 0, 500000, tzinfo=dt.timezone.utc)] * 4
                + [dt.datetime(2024, 5, 2, tzinfo=dt.timezone.utc)] * 4,
                pa.timestamp("us", tz="UTC"),
            ),
        }
    )


def part(batch_id):
    return "part-%020d.parquet" % batch_id


def dirs(root):
    out = []
    for d, _, files in os.walk(root):
        for f in files:
            out.append(os.path.relpath(os.path.join(d, f), root))
    return sorted(out)


def test_hive_directories_and_every_row_once(tmp_path):
    sink = kwire.ParquetSink(str(tmp_path), partition_by="country")
    assert sink.write(sample(), 0) == 8
    assert dirs(tmp_path) == [
        "country=__HIVE_DEFAULT_PARTITION__/" + part(0),
        "country=a%2Fb%3Ac/" + part(0),
        "country=de/" + part(0),
        "country=fr/" + part(0),
    ]
    t = ds.dataset(str(tmp_path), format="parquet", partitioning="hive").to_table()
    got = sorted(zip(t.column("id").to_pylist(), t.column("country").to_pylist()))
    # null and "" both go to the default partition, read back as null
    assert got == [(0, "fr"), (1, "de"), (2, None), (3, "a/b:c"), (4, "fr"), (5, None), (6, "de"), (7, "fr")]
    # the partition column is not inside the files
    one = pq.read_table(str(tmp_path / "country=fr" / ("part-%020d.parquet" % 0)))
    assert one.column_names == ["id", "score", "ts"]


def test_nan_null_and_timestamps_as_partition_values(tmp_path):
    sink = kwire.ParquetSink(str(tmp_path), partition_by=["ts", "score"])
    sink.write(sample(), 3)
    top = sorted(os.listdir(tmp_path))
    assert top == ["ts=2024-05-01 10%3A00%3A00.5", "ts=2024-05-02 00%3A00%3A00"]
    assert sorted(os.listdir(tmp_path / top[0])) == ["score=1.5", "score=2.0", "score=NaN"]
    assert sorted(os.listdir(tmp_path / top[1])) == ["score=1.5", "score=2.0", "score=NaN",
                                                     "score=__HIVE_DEFAULT_PARTITION__"]
    t = ds.dataset(str(tmp_path), format="parquet", partitioning="hive").to_table()
    assert sorted(t.column("id").to_pylist()) == list(range(8))  # the NaN rows are not lost


def test_a_replayed_batch_replaces_its_files(tmp_path):
    first = kwire.ParquetSink(str(tmp_path), partition_by="country")
    first.write(sample(), 0)
    first.write(sample().slice(0, 2), 1)
    # A restart replays batch 1 whose partition values changed (a transform
    # that is not deterministic): its old files go, the new ones stay.
    again = kwire.ParquetSink(str(tmp_path), partition_by="country")
    changed = sample().slice(0, 2).set_column(1, "country", pa.array(["es", "es"]))
    again.write(changed, 1)
    t = ds.dataset(str(tmp_path), format="parquet", partitioning="hive").to_table()
    ids = sorted(t.column("id").to_pylist())
    assert ids == sorted(list(range(8)) + [0, 1])
    part1 = [f for f in dirs(tmp_path) if f.endswith("part-%020d.parquet" % 1)]
    assert part1 == ["country=es/part-%020d.parquet" % 1]
    # a temp file a killed process left is removed by the next sink
    stale = tmp_path / "country=fr" / (".part-%020d.parquet.0123456789abcdef.tmp" % 2)
    stale.write_bytes(b"partial")
    kwire.ParquetSink(str(tmp_path), partition_by="country")
    assert not stale.exists()


def test_bad_partition_columns_are_refused(tmp_path):
    with pytest.raises(ConfigError, match="twice"):
        kwire.ParquetSink(str(tmp_path), partition_by=["a", "a"])
    sink = kwire.ParquetSink(str(tmp_path), partition_by="missing")
    with pytest.raises(ConfigError, match="'missing' is not in the batch's columns"):
        sink.write(sample(), 0)
    sink = kwire.ParquetSink(str(tmp_path), partition_by=["id", "country", "score", "ts"])
    with pytest.raises(ConfigError, match="no data column"):
        sink.write(sample(), 0)
