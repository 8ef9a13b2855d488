"""Helpers of the Spark interop tests: run the kwire tool and Spark's Kafka
source on the same broker, and read what each left behind (checkpoint files,
sink rows, progress) in one normalised shape so the two can be compared.

A row is the tuple (key, value, topic, partition, offset, timestamp_ms,
timestampType, headers), key and value as text (None when null), headers a
tuple of (key, value-as-text) pairs or None when the record has none, as in
Spark's `headers` column with includeHeaders=true.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

# Spark's columns, projected to the row tuple above (value and header values
# cast to text; the test data is UTF-8).
SPARK_COLUMNS = [
    "CAST(key AS STRING) AS key",
    "CAST(value AS STRING) AS value",
    "topic",
    "partition",
    "offset",
    "unix_millis(timestamp) AS timestamp",
    "timestampType",
]
HEADERS_COLUMN = "transform(headers, h -> named_struct('key', h.key, 'value', CAST(h.value AS STRING))) AS headers"

# Offsets JSON as a plain dict {(topic, partition): offset}.
Offsets = dict


def unique_topic(name: str) -> str:
    """A topic name no earlier run on the same broker used."""
    return f"spark-{name}-{uuid.uuid4().hex[:8]}"


def offsets_from_json(value) -> Offsets:
    """{"t":{"0":5}} (text or parsed) -> {("t", 0): 5}."""
    if isinstance(value, str):
        value = json.loads(value)
    return {(t, int(p)): int(o) for t, parts in value.items() for p, o in parts.items()}


# ------------------------------------------------------------------ kwire


@dataclass
class Kwire:
    binary: Path
    bootstrap: str

    def run(self, *args: str, stdin: str | None = None, timeout: float = 180,
            expect_failure: bool = False,
            on_start: Callable[[subprocess.Popen], None] | None = None) -> subprocess.CompletedProcess:
        """Runs the CLI to its end; on_start, if given, is called with the
        process once it is started (to signal it from another thread)."""
        if on_start is None:
            proc = subprocess.run(
                [str(self.binary), *args],
                input=stdin,
                capture_output=True,
                text=True,
                timeout=timeout,
            )
        else:
            popen = subprocess.Popen([str(self.binary), *args], stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            on_start(popen)
            out, err = popen.communicate(stdin, timeout=timeout)
            proc = subprocess.CompletedProcess(popen.args, popen.returncode, out, err)
        if expect_failure:
            if proc.returncode == 0:
                raise AssertionError(f"kwire {' '.join(args)} succeeded, a failure was expected:\n{proc.stderr}")
            return proc
        if proc.returncode != 0:
            raise AssertionError(
                f"kwire {' '.join(args)} failed with exit status {proc.returncode}:\n{proc.stderr}{proc.stdout}"
            )
        return proc

    def create_topic(self, topic: str, partitions: int) -> None:
        self.run("create-topic", "-b", self.bootstrap, "-t", topic, "--partitions", str(partitions))

    def recreate_topic(self, topic: str, partitions: int, timeout: float = 60) -> None:
        """Delete the topic and create it again, empty (the broker deletes a
        topic in the background, so the create is retried until it is gone)."""
        self.run("delete-topic", "-b", self.bootstrap, "-t", topic)
        deadline = time.monotonic() + timeout
        while True:
            proc = subprocess.run(
                [str(self.binary), "create-topic", "-b", self.bootstrap, "-t", topic, "--partitions", str(partitions)],
                capture_output=True,
                text=True,
                timeout=60,
            )
            if proc.returncode == 0:
                return
            if time.monotonic() > deadline:
                raise AssertionError(f"could not create {topic} again:\n{proc.stderr}")
            time.sleep(0.5)

    def produce(self, topic: str, partition: int, lines: list[str], key_delimiter: str | None = None,
                headers: tuple[str, ...] = ()) -> None:
        """One record per line into one partition; with key_delimiter, the
        text before it is the key (lines without it get a null key)."""
        args = ["produce", "-b", self.bootstrap, "-t", topic, "-p", str(partition), "--acks", "all"]
        if key_delimiter:
            args += ["-K", key_delimiter]
        for h in headers:
            args += ["-H", h]
        self.run(*args, stdin="".join(line + "\n" for line in lines))

    def stream(self, checkpoint: Path, sink: Path, options: dict[str, str], trigger: str = "available-now",
               expect_failure: bool = False,
               on_start: Callable[[subprocess.Popen], None] | None = None) -> "KwireRun":
        """Runs `kwire stream`; with expect_failure, it must fail, and the
        run's stderr is in KwireRun.error."""
        args = ["stream", "-b", self.bootstrap, "--checkpoint", str(checkpoint), "--sink", f"jsonl:{sink}",
                "--trigger", trigger]
        for k, v in options.items():
            args += ["-o", f"{k}={v}"]
        progress_before = len(progress_lines(checkpoint))
        proc = self.run(*args, expect_failure=expect_failure, on_start=on_start)
        return KwireRun(batches=sink_batches(sink), progress=progress_lines(checkpoint)[progress_before:],
                        error=proc.stderr if expect_failure else None)

    def read(self, sink: Path, options: dict[str, str]) -> list[tuple]:
        args = ["read", "-b", self.bootstrap, "--sink", f"jsonl:{sink}"]
        for k, v in options.items():
            args += ["-o", f"{k}={v}"]
        self.run(*args)
        return [row for rows in sink_batches(sink).values() for row in rows]


@dataclass
class KwireRun:
    batches: dict[int, list[tuple]]  # batch id -> rows, in sink order
    progress: list[dict] = field(default_factory=list)  # this run's progress lines
    error: str | None = None  # stderr of a run expected to fail


def millis(timestamp: str) -> int:
    """Milliseconds of a timestamp as Spark's JSON writer writes it
    ("2026-12-01T10:00:00.315Z", or with an offset such as "+02:00")."""
    import datetime as dt

    return round(dt.datetime.fromisoformat(timestamp.replace("Z", "+00:00")).timestamp() * 1000)


def row_from_kwire(line: dict) -> tuple:
    # A null column may be written as null or left out (as Spark's JSON
    # writer does); both read as None.
    headers = line.get("headers")
    return (
        line.get("key"),
        line.get("value"),
        line["topic"],
        line["partition"],
        line["offset"],
        millis(line["timestamp"]),
        line["timestampType"],
        None if headers is None else tuple((h["key"], h.get("value")) for h in headers),
    )


def sink_batches(sink: Path) -> dict[int, list[tuple]]:
    """Rows of each part-<batch id>.jsonl file a JsonLinesSink wrote."""
    out: dict[int, list[tuple]] = {}
    if not sink.is_dir():
        return out
    for part in sorted(sink.glob("part-*.jsonl")):
        batch_id = int(part.stem.split("-", 1)[1])
        out[batch_id] = [row_from_kwire(json.loads(line)) for line in part.read_text().splitlines() if line]
    return out


def progress_lines(checkpoint: Path) -> list[dict]:
    path = checkpoint / "progress.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


# ------------------------------------------------------------- checkpoints


def _log_ids(folder: Path) -> list[int]:
    if not folder.is_dir():
        return []
    return sorted(int(p.name) for p in folder.iterdir() if p.name.isdigit())


def offset_log(checkpoint: Path) -> dict[int, Offsets]:
    """Batch id -> the end offsets logged in offsets/N (its third line: the
    only source's offsets)."""
    out = {}
    for n in _log_ids(checkpoint / "offsets"):
        lines = (checkpoint / "offsets" / str(n)).read_text().splitlines()
        assert lines[0] == "v1", f"offsets/{n}: version line {lines[0]!r}"
        out[n] = offsets_from_json(lines[2])
    return out


def offset_log_metadata(checkpoint: Path, batch_id: int) -> dict:
    """The metadata line (second line) of offsets/N."""
    return json.loads((checkpoint / "offsets" / str(batch_id)).read_text().splitlines()[1])


def initial_offsets(checkpoint: Path) -> Offsets:
    """sources/0/0: a 0x00 byte, a "v1" line, then the offsets JSON."""
    data = (checkpoint / "sources" / "0" / "0").read_bytes()
    assert data[:1] == b"\x00", f"sources/0/0 starts with {data[:4]!r}"
    version, text = data[1:].decode("utf-8").split("\n", 1)
    assert version == "v1", f"sources/0/0: version line {version!r}"
    return offsets_from_json(text)


def commit_ids(checkpoint: Path) -> list[int]:
    return _log_ids(checkpoint / "commits")


def copy_checkpoint(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


def uncommit_last_batch(checkpoint: Path) -> int:
    """Delete the last commits/N (and Hadoop's .N.crc beside it), as a crash
    between writing offsets/N and commits/N leaves it. Returns N."""
    last = commit_ids(checkpoint)[-1]
    (checkpoint / "commits" / str(last)).unlink()
    crc = checkpoint / "commits" / f".{last}.crc"
    if crc.exists():
        crc.unlink()
    return last


# ------------------------------------------------------------------ Spark


@dataclass
class SparkRun:
    batches: dict[int, list[tuple]]  # batch id -> rows (sorted by partition, offset)
    progress: list[dict]  # StreamingQueryProgress as JSON, one per batch


def rows_from_spark(df) -> list[tuple]:
    out = []
    # Without includeHeaders there is no headers column: None, as kwire
    # writes no "headers" field then.
    columns = SPARK_COLUMNS + [HEADERS_COLUMN if "headers" in df.columns else "NULL AS headers"]
    for r in df.selectExpr(*columns).collect():
        headers = None if r["headers"] is None else tuple((h["key"], h["value"]) for h in r["headers"])
        out.append((r["key"], r["value"], r["topic"], r["partition"], r["offset"], r["timestamp"],
                    r["timestampType"], headers))
    return sorted(out, key=lambda row: (row[2], row[3], row[4]))


def spark_stream(spark, checkpoint: Path, options: dict[str, str], trigger: str = "available-now",
                 timeout: float = 180, on_batch=None) -> SparkRun:
    """readStream.format("kafka") into foreachBatch with Trigger.AvailableNow
    (or Trigger.Once: trigger="once"); on_batch(batch_id) is called after each
    batch's rows are collected. A failed query raises Spark's
    StreamingQueryException."""
    batches: dict[int, list[tuple]] = {}

    def collect(df, batch_id):
        batches[batch_id] = rows_from_spark(df)
        if on_batch:
            on_batch(batch_id)

    reader = spark.readStream.format("kafka")
    for k, v in options.items():
        reader = reader.option(k, v)
    query = (
        reader.load()
        .writeStream.foreachBatch(collect)
        .option("checkpointLocation", str(checkpoint))
        .trigger(**({"once": True} if trigger == "once" else {"availableNow": True}))
        .start()
    )
    try:
        if not query.awaitTermination(timeout):
            raise AssertionError(f"Spark's query did not finish within {timeout} s")
    finally:
        if query.isActive:
            query.stop()
    progress = [p if isinstance(p, dict) else json.loads(p.json) for p in query.recentProgress]
    return SparkRun(batches=batches, progress=progress)


def spark_read(spark, options: dict[str, str]) -> list[tuple]:
    reader = spark.read.format("kafka")
    for k, v in options.items():
        reader = reader.option(k, v)
    return rows_from_spark(reader.load())


def by_offset(rows: list[tuple]) -> list[tuple]:
    return sorted(rows, key=lambda row: (row[2], row[3], row[4]))


LAG_METRICS = ("minOffsetsBehindLatest", "maxOffsetsBehindLatest", "avgOffsetsBehindLatest")


def source_progress(progress: dict) -> dict:
    """The one source of a progress line: batch id, rows, offsets parsed
    (None when null or absent) and the lag metrics Spark's Kafka source
    reports (those present, as the strings the progress JSON carries)."""
    (src,) = progress["sources"]

    def offsets(name):
        # PySpark's progress object keeps offsets as JSON text ("null" too).
        value = src.get(name)
        if isinstance(value, str):
            value = json.loads(value)
        return None if value is None else offsets_from_json(value)

    metrics = src.get("metrics") or {}
    return {
        "batchId": progress["batchId"],
        "numInputRows": src["numInputRows"],
        "startOffset": offsets("startOffset"),
        "endOffset": offsets("endOffset"),
        "latestOffset": offsets("latestOffset"),
        "lag": {k: metrics[k] for k in LAG_METRICS if k in metrics},
    }
