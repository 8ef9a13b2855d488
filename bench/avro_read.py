"""Avro read benchmark: a topic of Avro records (Confluent's wire format) into
typed rows, per client.

Fills a topic once (RECORDS values, 3 partitions) with kwire.to_avro under a
registered schema of 10 fields (long, string, decimal(10,2), int, double,
timestamp-millis, array<string>, a nested record of 3 fields, an enum,
[null, string]), then reads it whole, once per contender and round:

  kwire             kwire.read (Spark's batch options, earliest..latest) then
                    kwire.from_avro with the registry: a pyarrow.Table of the
                    10 typed columns
  confluent-kafka   Consumer (librdkafka in the wheel) assigned every
                    partition from 0, consume(num_messages=10000) until the end
                    offsets, each value through confluent-kafka's
                    AvroDeserializer (fastavro inside): a list of dicts
  spark             Spark 4.2 local[2]: spark.read.format("kafka") then
                    from_avro(substring(value, 6), schema), written to the
                    "noop" sink (every column computed, nothing stored)

Each read runs in a fresh subprocess. The timed section starts once the
client (SparkSession included) exists and covers the read and the decode.
CPU seconds: user+sys of the process (for Spark, its JVM's too, from
/proc/PID/stat) over the timed section; peak RSS: the process's (for Spark,
the JVM's VmHWM plus the driver's). Every contender must return RECORDS rows
and the same sum of the qty column. Rounds rotate the order. Prints a
markdown table: rows/s median (min-max), CPU µs per row, peak RSS MiB, and
kwire's ratios.

Not a test: numbers depend on the machine and its load (run it quiet).

Usage:
  PYTHONPATH=build/python build/python-venv/bin/python bench/avro_read.py 127.0.0.1:19092 \\
      --spark-python "$(scripts/spark-env python)" --spark-jars "$(scripts/spark-env jars)" \\
      [--records 2000000] [--rounds 3] [--out FILE]
"""

import argparse
import decimal
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
REGISTRY = os.path.join(REPO, "tests", "registry", "registry_server.py")
PARTITIONS = 3

SCHEMA = {
    "type": "record",
    "name": "Purchase",
    "namespace": "bench",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "customer", "type": "string"},
        {"name": "amount", "type": {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}},
        {"name": "qty", "type": "int"},
        {"name": "price", "type": "double"},
        {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "tags", "type": {"type": "array", "items": "string"}},
        {"name": "address", "type": {"type": "record", "name": "Address", "fields": [
            {"name": "street", "type": "string"}, {"name": "city", "type": "string"}, {"name": "zip", "type": "int"}]}},
        {"name": "status", "type": {"type": "enum", "name": "Status", "symbols": ["NEW", "PAID", "SHIPPED"]}},
        {"name": "note", "type": ["null", "string"]},
    ],
}


def cpu_of(pid):
    with open("/proc/%d/stat" % pid) as f:
        parts = f.read().rsplit(")", 1)[1].split()
    return (int(parts[11]) + int(parts[12])) / os.sysconf("SC_CLK_TCK")


def hwm_of(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return 0


# ---- children ----

def child_kwire(args):
    import kwire

    t0, c0 = time.monotonic(), time.process_time()
    table = kwire.read({"kafka.bootstrap.servers": args.bootstrap, "subscribe": args.topic,
                        "startingOffsets": "earliest", "endingOffsets": "latest"})
    rows = kwire.from_avro(table, options={"schema.registry.url": args.registry})
    import pyarrow.compute as pc

    qty = pc.sum(rows.column("qty")).as_py()
    return {"rows": rows.num_rows, "qty": qty, "secs": time.monotonic() - t0, "cpu": time.process_time() - c0,
            "rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}


def child_confluent(args):
    from confluent_kafka import Consumer, TopicPartition
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroDeserializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    t0, c0 = time.monotonic(), time.process_time()
    c = Consumer({"bootstrap.servers": args.bootstrap, "group.id": "avro-bench", "enable.auto.commit": False,
                  "enable.partition.eof": False, "check.crcs": True, "fetch.queue.backoff.ms": 10})
    deser = AvroDeserializer(SchemaRegistryClient({"url": args.registry}))
    ctx = SerializationContext(args.topic, MessageField.VALUE)
    ends = {p: c.get_watermark_offsets(TopicPartition(args.topic, p), timeout=10)[1] for p in range(PARTITIONS)}
    c.assign([TopicPartition(args.topic, p, 0) for p in range(PARTITIONS)])
    left = sum(ends.values())
    rows, qty = [], 0
    while left > 0:
        for m in c.consume(num_messages=10000, timeout=1.0):
            if m.error():
                raise RuntimeError(m.error())
            d = deser(m.value(), ctx)
            rows.append(d)
            qty += d["qty"]
            left -= 1
    c.close()
    return {"rows": len(rows), "qty": qty, "secs": time.monotonic() - t0, "cpu": time.process_time() - c0,
            "rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}


def child_spark(args):
    import glob

    from pyspark.sql import SparkSession
    from pyspark.sql.avro.functions import from_avro
    from pyspark.sql.functions import col, expr
    from pyspark.sql.functions import sum as sum_

    jars = sorted(glob.glob(os.path.join(args.spark_jars, "*.jar")))
    import pyspark

    shipped = {os.path.basename(p).rsplit("-", 1)[0] for p in glob.glob(os.path.join(os.path.dirname(
        pyspark.__file__), "jars", "*.jar"))}
    jars = [j for j in jars if os.path.basename(j).rsplit("-", 1)[0] not in shipped]
    spark = (SparkSession.builder.master("local[2]").config("spark.jars", ",".join(jars))
             .config("spark.driver.memory", "2g").config("spark.ui.enabled", "false")
             .config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    jvm = spark._jvm.java.lang.ProcessHandle.current().pid()
    spark.range(1).collect()  # warm the session up
    t0, c0, j0 = time.monotonic(), time.process_time(), cpu_of(jvm)
    df = (spark.read.format("kafka").option("kafka.bootstrap.servers", args.bootstrap)
          .option("subscribe", args.topic).load()
          .select(from_avro(expr("substring(value, 6)"), json.dumps(SCHEMA)).alias("v")).select("v.*"))
    df.write.format("noop").mode("overwrite").save()
    secs = time.monotonic() - t0
    cpu = time.process_time() - c0 + cpu_of(jvm) - j0
    # The checks, untimed: the same rows again, counted and summed.
    agg = df.agg(sum_(col("qty")).alias("q")).collect()[0]["q"]
    n = df.count()
    rss = hwm_of(jvm) + resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    spark.stop()
    return {"rows": n, "qty": int(agg), "secs": secs, "cpu": cpu, "rss": rss}


# ---- driver ----

def fill(bootstrap, registry, records):
    import pyarrow as pa

    import kwire

    topic = "avro-bench-" + uuid.uuid4().hex[:8]
    admin = kwire.Admin({"bootstrap.servers": bootstrap})
    admin.create_topics([(topic, PARTITIONS)])
    admin.close()
    writer = kwire.AvroWriter(json.dumps(SCHEMA), {"schema.registry.url": registry}, topic=topic)
    chunk = 100_000
    total_qty = 0
    for start in range(0, records, chunk):
        n = min(chunk, records - start)
        ids = list(range(start, start + n))
        t = pa.table({
            "id": pa.array(ids, pa.int64()),
            "customer": ["customer-%d" % (i % 5000) for i in ids],
            "amount": pa.array([decimal.Decimal(i % 100000).scaleb(-2) for i in ids], pa.decimal128(10, 2)),
            "qty": pa.array([i % 7 for i in ids], pa.int32()),
            "price": [i * 0.25 for i in ids],
            "at": pa.array([1_700_000_000_000 + i for i in ids], pa.timestamp("ms", tz="UTC")),
            "tags": [["a", "b"] if i % 2 else ["c"] for i in ids],
            "address": pa.array([{"street": "%d Main St" % (i % 999), "city": "Lyon", "zip": 69000 + i % 10}
                                 for i in ids],
                                pa.struct([("street", pa.string()), ("city", pa.string()), ("zip", pa.int32())])),
            "status": [("NEW", "PAID", "SHIPPED")[i % 3] for i in ids],
            "note": [None if i % 4 else "gift" for i in ids],
        })
        total_qty += sum(i % 7 for i in ids)
        kwire.write(pa.table({"value": writer.encode(t)}), {"kafka.bootstrap.servers": bootstrap, "topic": topic})
    return topic, total_qty


def run_child(name, args, python):
    cmd = [python, os.path.abspath(__file__), "--child", name, args.bootstrap, "--topic", args.topic,
           "--registry", args.registry, "--spark-jars", args.spark_jars or ""]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
    if out.returncode != 0:
        raise RuntimeError("%s failed: %s" % (name, out.stderr[-3000:]))
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("bootstrap")
    ap.add_argument("--child")
    ap.add_argument("--topic")
    ap.add_argument("--registry")
    ap.add_argument("--records", type=int, default=2_000_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--spark-python")
    ap.add_argument("--spark-jars")
    ap.add_argument("--out")
    args = ap.parse_args()
    if args.child:
        fn = {"kwire": child_kwire, "confluent-kafka": child_confluent, "spark": child_spark}[args.child]
        print(json.dumps(fn(args)))
        return 0

    reg = subprocess.Popen([sys.executable, REGISTRY, "--port-file", "/tmp/avro-bench-registry-port"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        while not os.path.exists("/tmp/avro-bench-registry-port"):
            time.sleep(0.05)
        with open("/tmp/avro-bench-registry-port") as f:
            args.registry = "http://127.0.0.1:%s" % f.read()
        load0 = os.getloadavg()
        args.topic, qty = fill(args.bootstrap, args.registry, args.records)
        contenders = ["kwire", "confluent-kafka"] + (["spark"] if args.spark_python else [])
        results = {c: [] for c in contenders}
        for r in range(args.rounds):
            order = contenders[r % len(contenders):] + contenders[:r % len(contenders)]
            for c in order:
                res = run_child(c, args, args.spark_python if c == "spark" else sys.executable)
                if res["rows"] != args.records or res["qty"] != qty:
                    raise RuntimeError("%s read %d rows (qty %d), expected %d (qty %d)" % (
                        c, res["rows"], res["qty"], args.records, qty))
                results[c].append(res)
                print("round %d %s: %.0f rows/s" % (r, c, res["rows"] / res["secs"]), file=sys.stderr)
        load1 = os.getloadavg()
    finally:
        reg.terminate()
        reg.wait()
        os.unlink("/tmp/avro-bench-registry-port")

    def med(c, key):
        return statistics.median(x[key] for x in results[c])

    rate = {c: statistics.median(x["rows"] / x["secs"] for x in results[c]) for c in contenders}
    lines = ["# Avro read: %d records, 10 fields (Confluent wire format), %d rounds" % (args.records, args.rounds),
             "", "machine: %s, %d cores; load %s before, %s after" % (
                 platform.platform(), os.cpu_count(), "%.2f" % load0[0], "%.2f" % load1[0]), "",
             "| contender | rows/s median (min-max) | CPU µs/row | peak RSS MiB | kwire rows/s ratio |",
             "|---|---|---|---|---|"]
    for c in contenders:
        rs = [x["rows"] / x["secs"] for x in results[c]]
        lines.append("| %s | %.0f (%.0f-%.0f) | %.2f | %.0f | %s |" % (
            c, rate[c], min(rs), max(rs), med(c, "cpu") / args.records * 1e6, med(c, "rss") / 2**20,
            "-" if c == "kwire" else "%.1fx" % (rate["kwire"] / rate[c])))
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
