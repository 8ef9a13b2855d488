"""Python read benchmark: a whole topic into one pyarrow.Table, per client.

Fills a topic once with kwire's Producer (RECORDS values of SIZE bytes, null
keys, round-robin over 3 partitions), then reads every record of it into a
pyarrow.Table with Spark's Kafka columns (key, value, topic, partition,
offset, timestamp, timestampType), once per contender and round:

  kwire             kwire.read({..., "startingOffsets": "earliest",
                    "endingOffsets": "latest"})
  confluent-kafka   Consumer (librdkafka bundled in the wheel): assign every
                    partition from offset 0, consume(num_messages=10000) until
                    the end offsets seen at the start, one RecordBatch per call
  kafka-python      KafkaConsumer: assign + seek_to_beginning,
                    poll(max_records=10000) until those end offsets, one
                    RecordBatch per call

Every read runs in a fresh subprocess (so its peak RSS is its own) and is
checked: per partition the offsets are exactly [0, end) with no duplicate,
no value is null, the value bytes add up to RECORDS x SIZE and the schema is
kwire's. The timed section starts after the imports and covers client
creation, the end-offset lookup, the read and the Table; CPU seconds are
getrusage(RUSAGE_SELF) user+sys over that section (all threads), peak RSS is
the child's ru_maxrss. Rounds rotate the order of the contenders. Prints a
markdown table (median of the rounds, min-max) and the machine and load.

Not a test: numbers depend on the machine and its load. confluent-kafka and
kafka-python are benchmark-only packages (pip install them into the venv
that has kwire's dependencies); they are not dependencies of kwire.

Usage (kwire on PYTHONPATH, e.g. the python phase's venv of scripts/test):
  PYTHONPATH=build/python build/python-venv/bin/python bench/python_read.py \
      127.0.0.1:19092 [--records 2000000] [--size 100] [--rounds 5] [--out FILE]
"""

import argparse
import importlib.metadata
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time

PARTITIONS = 3
BATCH = 10_000
CONTENDERS = ("kwire", "confluent-kafka", "kafka-python")

# librdkafka settings for the confluent-kafka contender (the rest are defaults).
CONFLUENT_SETTINGS = {
    "group.id": "kwire-python-read-bench",  # no group is joined: assign() only
    "enable.auto.commit": False,
    "enable.auto.offset.store": False,
    "enable.partition.eof": False,  # the loop stops at the end offsets
    "check.crcs": True,  # kwire checks every batch's CRC-32C
    "fetch.queue.backoff.ms": 10,  # default 1000: a full pre-fetch queue no longer stalls fetching for 1 s
}
# kafka-python settings (check_crcs=True is its default, stated for clarity).
KAFKA_PYTHON_SETTINGS = {
    "group_id": None,
    "enable_auto_commit": False,
    "check_crcs": True,
    "max_poll_records": BATCH,
}


def topic_name(records: int, size: int) -> str:
    return f"bench-python-read-{records}x{size}"


# ------------------------------------------------------------------ fill


def fill(bootstrap: str, topic: str, records: int, size: int) -> None:
    import kwire

    admin = kwire.Admin({"bootstrap.servers": bootstrap})
    admin.create_topics([(topic, PARTITIONS)], True)
    admin.close()
    opts = {"kafka.bootstrap.servers": bootstrap, "subscribe": topic}
    have = sum(r["untilOffset"] - r["fromOffset"] for r in kwire.plan(opts)["ranges"])
    if have == records:
        print(f"{topic}: already holds {records:,} records", file=sys.stderr)
        return
    if have != 0:
        sys.exit(f"{topic} holds {have:,} records, expected 0 or {records:,}; delete it or use a fresh broker")
    producer = kwire.Producer({"bootstrap.servers": bootstrap, "linger.ms": "5", "batch.size": "262144"})
    t0 = time.monotonic()
    for i in range(records):
        # the record's number, then filler: values differ, SIZE bytes each
        value = f"{i:012d}".encode().ljust(size, b".")
        producer.send(topic, value=value, partition=i % PARTITIONS)
    producer.flush()
    producer.close()
    print(f"{topic}: produced {records:,} x {size} B in {time.monotonic() - t0:.1f} s", file=sys.stderr)


# ------------------------------------------------------------------ readers (child process)


def schema():
    import pyarrow as pa

    return pa.schema(
        [
            ("key", pa.binary()),
            ("value", pa.binary()),
            ("topic", pa.string()),
            ("partition", pa.int32()),
            ("offset", pa.int64()),
            ("timestamp", pa.timestamp("us", tz="UTC")),
            ("timestampType", pa.int32()),
        ]
    )


def read_kwire(bootstrap: str, topic: str):
    import kwire

    return kwire.read(
        {
            "kafka.bootstrap.servers": bootstrap,
            "subscribe": topic,
            "startingOffsets": "earliest",
            "endingOffsets": "latest",
        }
    )


def to_batch(sch, keys, values, topics, parts, offsets, stamps, types):
    import pyarrow as pa

    return pa.RecordBatch.from_arrays(
        [
            pa.array(keys, pa.binary()),
            pa.array(values, pa.binary()),
            pa.array(topics, pa.string()),
            pa.array(parts, pa.int32()),
            pa.array(offsets, pa.int64()),
            pa.array(stamps, pa.int64()).cast(pa.timestamp("us", tz="UTC")),
            pa.array(types, pa.int32()),
        ],
        schema=sch,
    )


def read_confluent(bootstrap: str, topic: str):
    import pyarrow as pa
    from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, TopicPartition

    sch = schema()
    consumer = Consumer({"bootstrap.servers": bootstrap, **CONFLUENT_SETTINGS})
    end = {}
    for p in range(PARTITIONS):
        low, high = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)
        if high > low:
            end[p] = high
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in end])
    nxt = {p: 0 for p in end}
    batches = []
    deadline = time.monotonic() + 600
    while any(nxt[p] < end[p] for p in end):
        if time.monotonic() > deadline:
            raise TimeoutError(f"confluent-kafka: stuck at {nxt} of {end}")
        msgs = consumer.consume(num_messages=BATCH, timeout=1.0)
        keys, values, topics, parts, offsets, stamps, types = [], [], [], [], [], [], []
        for m in msgs:
            if m.error() is not None:
                raise KafkaException(m.error())
            p, o = m.partition(), m.offset()
            if o >= end[p]:
                continue
            nxt[p] = o + 1
            kind, ms = m.timestamp()
            keys.append(m.key())
            values.append(m.value())
            topics.append(m.topic())
            parts.append(p)
            offsets.append(o)
            stamps.append(ms * 1000)
            types.append(kind - 1)  # librdkafka: 1 create, 2 log append; Spark: 0, 1
        if offsets:
            batches.append(to_batch(sch, keys, values, topics, parts, offsets, stamps, types))
    consumer.close()
    return pa.Table.from_batches(batches, schema=sch)


def read_kafka_python(bootstrap: str, topic: str):
    import pyarrow as pa
    from kafka import KafkaConsumer, TopicPartition

    sch = schema()
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, **KAFKA_PYTHON_SETTINGS)
    tps = [TopicPartition(topic, p) for p in range(PARTITIONS)]
    end = {tp.partition: o for tp, o in consumer.end_offsets(tps).items() if o > 0}
    consumer.assign([TopicPartition(topic, p) for p in end])
    consumer.seek_to_beginning()
    nxt = {p: 0 for p in end}
    batches = []
    deadline = time.monotonic() + 1800
    while any(nxt[p] < end[p] for p in end):
        if time.monotonic() > deadline:
            raise TimeoutError(f"kafka-python: stuck at {nxt} of {end}")
        polled = consumer.poll(timeout_ms=1000, max_records=BATCH)
        keys, values, topics, parts, offsets, stamps, types = [], [], [], [], [], [], []
        for tp, recs in polled.items():
            p = tp.partition
            for r in recs:
                if r.offset >= end[p]:
                    continue
                nxt[p] = r.offset + 1
                keys.append(r.key)
                values.append(r.value)
                topics.append(r.topic)
                parts.append(p)
                offsets.append(r.offset)
                stamps.append(r.timestamp * 1000)
                types.append(r.timestamp_type)  # 0 create, 1 log append, as Spark
        if offsets:
            batches.append(to_batch(sch, keys, values, topics, parts, offsets, stamps, types))
    consumer.close()
    return pa.Table.from_batches(batches, schema=sch)


def verify(table, records: int, size: int) -> dict:
    """Raises unless the table holds exactly the topic's records; returns per-partition counts."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if table.num_rows != records:
        raise AssertionError(f"{table.num_rows} rows, expected {records}")
    got = table.select([f.name for f in schema()])
    if not got.schema.equals(schema()):
        raise AssertionError(f"schema differs from kwire's:\n{got.schema}")
    if table.column("value").null_count:
        raise AssertionError("null values")
    nbytes = pc.sum(pc.binary_length(table.column("value"))).as_py()
    if nbytes != records * size:
        raise AssertionError(f"{nbytes} value bytes, expected {records * size}")
    # fill() wrote record i to partition i % 3 with its number in the first 12 bytes
    number = pc.cast(pc.cast(pc.binary_slice(table.column("value"), 0, 12), pa.string()), pa.int64())
    expect = pc.add(pc.multiply(table.column("offset"), PARTITIONS), pc.cast(table.column("partition"), pa.int64()))
    if not pc.all(pc.equal(number, expect)).as_py():
        raise AssertionError("a value is not the record fill() wrote at its partition and offset")
    if table.column("timestamp").null_count or not pc.all(pc.equal(table.column("timestampType"), 0)).as_py():
        raise AssertionError("null timestamps or a timestampType other than 0 (CreateTime)")
    agg = table.group_by("partition").aggregate(
        [("offset", "min"), ("offset", "max"), ("offset", "count"), ("offset", "count_distinct")]
    )
    counts = {}
    for row in agg.to_pylist():
        n = row["offset_count"]
        if row["offset_min"] != 0 or row["offset_max"] != n - 1 or row["offset_count_distinct"] != n:
            raise AssertionError(f"partition {row['partition']}: offsets are not exactly [0, {n}): {row}")
        counts[row["partition"]] = n
    return counts


def versions() -> dict:
    import pyarrow

    out = {"python": platform.python_version(), "pyarrow": pyarrow.__version__}
    try:
        import confluent_kafka

        out["confluent-kafka"] = importlib.metadata.version("confluent-kafka")
        out["librdkafka"] = confluent_kafka.libversion()[0]
    except ImportError:
        pass
    try:
        import kafka

        out["kafka-python"] = importlib.metadata.version("kafka-python")
    except ImportError:
        pass
    return out


def child(who: str, bootstrap: str, topic: str, records: int, size: int) -> None:
    import pyarrow  # noqa: F401  (imported outside the timed section by every contender)

    reader = {"kwire": read_kwire, "confluent-kafka": read_confluent, "kafka-python": read_kafka_python}[who]
    if who == "kwire":
        import kwire  # noqa: F401
    elif who == "confluent-kafka":
        import confluent_kafka  # noqa: F401
    else:
        import kafka  # noqa: F401
    r0 = resource.getrusage(resource.RUSAGE_SELF)
    t0 = time.perf_counter()
    table = reader(bootstrap, topic)
    seconds = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    counts = verify(table, records, size)
    json.dump(
        {
            "who": who,
            "rows": table.num_rows,
            "partitions": counts,
            "seconds": seconds,
            "cpu": (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime),
            "rss_kb": r1.ru_maxrss,
        },
        sys.stdout,
    )


# ------------------------------------------------------------------ driver


def run_child(who: str, args, topic: str) -> dict:
    cmd = [sys.executable, os.path.abspath(__file__), args.bootstrap, "--child", who, "--topic", topic,
           "--records", str(args.records), "--size", str(args.size)]
    for kv in args.confluent_set:
        cmd += ["--confluent-set", kv]
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        sys.exit(f"{who}: exited with {proc.returncode}")
    return json.loads(proc.stdout)


def cpu_model() -> str:
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.machine()


def loadavg() -> str:
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def report(args, results: dict, loads: list, vers: dict) -> str:
    med = {}
    for who, rs in results.items():
        rate = [r["rows"] / r["seconds"] for r in rs]
        med[who] = {
            "rate": statistics.median(rate),
            "rate_min": min(rate),
            "rate_max": max(rate),
            "seconds": statistics.median(r["seconds"] for r in rs),
            "cpu": statistics.median(r["cpu"] for r in rs),
            "rss": statistics.median(r["rss_kb"] for r in rs) / 1024,
            "rss_max": max(r["rss_kb"] for r in rs) / 1024,
        }
    k = med.get("kwire")
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    lines = [
        f"- machine: {cpu_model()}, nproc {os.cpu_count()}, {mem:.1f} GB RAM, Linux {platform.release()}",
        f"- load average (1/5/15 min) before each round, then at the end: {'; '.join(loads)}",
        f"- topic {topic_name(args.records, args.size)}: {args.records:,} records x {args.size} B values, "
        f"null keys, {PARTITIONS} partitions; {args.rounds} rounds, each contender in a fresh process per round, "
        "order rotated",
        "- versions: " + ", ".join(f"{n} {v}" for n, v in vers.items()),
        "- confluent-kafka settings: " + ", ".join(f"`{k}={v}`" for k, v in CONFLUENT_SETTINGS.items())
        + f"; consume(num_messages={BATCH}, timeout=1.0)",
        "- kafka-python settings: " + ", ".join(f"`{k}={v}`" for k, v in KAFKA_PYTHON_SETTINGS.items())
        + f"; poll(timeout_ms=1000, max_records={BATCH})",
        "",
        "| contender | rows/s (median) | min - max | read s | CPU s | CPU s / M rows | peak RSS MB |"
        " kwire rows/s ratio | kwire CPU ratio | kwire RSS ratio |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for who in CONTENDERS:
        if who not in med:
            continue
        m = med[who]
        if k is None or who == "kwire":
            ratios = "| | |"
        else:
            ratios = f"{k['rate'] / m['rate']:.1f}x | {k['cpu'] / m['cpu']:.2f} | {k['rss'] / m['rss']:.2f} |"
        lines.append(
            f"| {who} | {m['rate']:,.0f} | {m['rate_min']:,.0f} - {m['rate_max']:,.0f} | {m['seconds']:.2f} | "
            f"{m['cpu']:.2f} | {m['cpu'] / (args.records / 1e6):.2f} | {m['rss']:,.0f} | {ratios}"
        )
    lines += [
        "",
        "Ratios: kwire's median rows/s over the contender's (higher is better for kwire); "
        "kwire's CPU seconds and peak RSS over the contender's (lower is better for kwire).",
        "",
        "Per round (rows/s, CPU s, peak RSS MB):",
        "",
    ]
    for who in CONTENDERS:
        if who in results:
            cells = ", ".join(
                f"{r['rows'] / r['seconds']:,.0f} / {r['cpu']:.2f} / {r['rss_kb'] / 1024:,.0f}" for r in results[who]
            )
            lines.append(f"- {who}: {cells}")
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("bootstrap")
    ap.add_argument("--records", type=int, default=2_000_000)
    ap.add_argument("--size", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--contenders", default=",".join(CONTENDERS), help="comma-separated subset")
    ap.add_argument("--out", help="also write the markdown table to this file")
    ap.add_argument("--confluent-set", action="append", default=[], metavar="KEY=VALUE",
                    help="override or add a librdkafka property of the confluent-kafka contender")
    ap.add_argument("--topic", help=argparse.SUPPRESS)
    ap.add_argument("--child", choices=CONTENDERS, help=argparse.SUPPRESS)
    args = ap.parse_args()
    topic = args.topic or topic_name(args.records, args.size)
    for kv in args.confluent_set:
        key, sep, value = kv.partition("=")
        if not sep:
            sys.exit(f"--confluent-set {kv!r}: expected KEY=VALUE")
        CONFLUENT_SETTINGS[key] = value
    if args.child:
        child(args.child, args.bootstrap, topic, args.records, args.size)
        return
    who_all = [w for w in args.contenders.split(",") if w]
    for w in who_all:
        if w not in CONTENDERS:
            sys.exit(f"unknown contender {w!r}; one of {', '.join(CONTENDERS)}")
    fill(args.bootstrap, topic, args.records, args.size)
    vers = versions()
    print("versions: " + ", ".join(f"{n} {v}" for n, v in vers.items()), file=sys.stderr)
    results = {w: [] for w in who_all}
    loads = []
    for rnd in range(args.rounds):
        loads.append(loadavg())
        order = [who_all[(i + rnd) % len(who_all)] for i in range(len(who_all))]
        for who in order:
            res = run_child(who, args, topic)
            results[who].append(res)
            print(
                f"round {rnd + 1}/{args.rounds} {who:15s}: {res['rows']:,} rows in {res['seconds']:.2f} s, "
                f"{res['rows'] / res['seconds']:,.0f} rows/s, CPU {res['cpu']:.2f} s, "
                f"peak RSS {res['rss_kb'] / 1024:,.0f} MB",
                file=sys.stderr,
                flush=True,
            )
    loads.append(loadavg())
    text = report(args, results, loads, vers)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
