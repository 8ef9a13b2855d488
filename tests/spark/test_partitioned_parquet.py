"""kwire.ParquetSink(partition_by=...) against Spark's partitionBy: the same
table written by both gives the same partition directories (names, escaping,
the default partition for null and ""), and Spark reads kwire's output back
as the same rows."""

import datetime as dt
import os

import pytest


def rows():
    countries = ["fr", "de", None, "a/b:c=d%e", "", "x y", "fr"]
    out = []
    for i, c in enumerate(countries):
        out.append((i, c, dt.date(2024, 5, 1 + i % 2), float(i) / 2))
    return out


def partition_dirs(root):
    """Every directory below root that holds a data file, relative to root."""
    found = set()
    for d, _, files in os.walk(root):
        if any(f.endswith(".parquet") for f in files):
            found.add(os.path.relpath(d, root))
    return sorted(found)


def test_same_directories_as_spark_and_spark_reads_them(spark, tmp_path):
    kwire = pytest.importorskip("kwire")
    import pyarrow as pa

    data = rows()
    table = pa.table(
        {
            "id": pa.array([r[0] for r in data], pa.int64()),
            "country": pa.array([r[1] for r in data], pa.string()),
            "day": pa.array([r[2] for r in data], pa.date32()),
            "amount": pa.array([r[3] for r in data], pa.float64()),
        }
    )
    ours = tmp_path / "kwire"
    kwire.ParquetSink(str(ours), partition_by=["day", "country"]).write(table, 0)

    theirs = tmp_path / "spark"
    df = spark.createDataFrame(data, "id BIGINT, country STRING, day DATE, amount DOUBLE")
    df.write.partitionBy("day", "country").parquet(str(theirs))

    assert partition_dirs(ours) == partition_dirs(theirs)

    back = spark.read.parquet(str(ours))
    got = sorted((r["id"], r["country"], r["day"], r["amount"]) for r in back.collect())
    # Spark reads the default partition back as null ("" was written there too)
    want = sorted((i, c if c else None, d, a) for i, c, d, a in data)
    assert got == want
