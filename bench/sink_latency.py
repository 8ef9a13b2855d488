"""End-to-end latency of the purchases job Kafka -> Kafka under a
processing-time trigger: events are produced at a steady rate, each with
event_ts = the producer's clock at send time and user_id = a sequence
number; a read_committed reader of the output topic notes when each purchase
becomes visible. Latency = visible - event_ts (one machine, one clock).

Contenders: kwire's purchases example with its Kafka sink (exactly-once or
at-least-once), and Spark's Kafka source and sink (bench/spark_purchases_to_kafka.py,
local[2]). The peak resident memory of the job's whole process tree (for
Spark: the Python driver and its JVM) is sampled every 100 ms.

Usage (PYTHONPATH=build/python, a broker at BOOTSTRAP):
  python bench/sink_latency.py --bootstrap B --contender kwire-eo|kwire-alo|spark
      [--rate 4000] [--seconds 30] [--trigger-ms 500] [--build build]
      [--spark-python PY --jars DIR]
Prints one line: contender, rate, trigger, purchases, p50/p99/max ms, missing,
duplicates, peak tree RSS MB."""

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid

import kwire

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tree_peak import tree_rss_kb  # noqa: E402

ACTIONS = ["view", "click", "add_to_cart", "purchase", "view"]


def now_ms():
    return time.time_ns() // 1_000_000


def percentile(sorted_values, q):
    if not sorted_values:
        return float("nan")
    i = min(len(sorted_values) - 1, max(0, int(round(q * (len(sorted_values) - 1)))))
    return sorted_values[i]


class Reader(threading.Thread):
    """read_committed reader of the output: (user_id -> [visible ms])."""

    def __init__(self, bootstrap, topic, partitions):
        super().__init__(daemon=True)
        self.seen = {}
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.consumer = kwire.Consumer(
            {
                "bootstrap.servers": bootstrap,
                "isolation.level": "read_committed",
                "auto.offset.reset": "earliest",
                "fetch.max.wait.ms": 50,
            }
        )
        self.consumer.assign([(topic, p) for p in range(partitions)])

    def run(self):
        while not self.stopping.is_set():
            batch = self.consumer.poll(100)
            if batch.num_rows == 0:
                continue
            t = now_ms()
            with self.lock:
                for v in batch.column("value").to_pylist():
                    self.seen.setdefault(json.loads(v)["user_id"], []).append(t)

    def count(self, ids):
        with self.lock:
            return sum(1 for i in ids if i in self.seen)


class Sampler(threading.Thread):
    def __init__(self, pid):
        super().__init__(daemon=True)
        self.pid, self.peak_kb = pid, 0
        self.stopping = threading.Event()

    def run(self):
        while not self.stopping.is_set():
            self.peak_kb = max(self.peak_kb, tree_rss_kb(self.pid))
            time.sleep(0.1)


def produce(producer, topic, rate, seconds, first_id, rng):
    """Sends rate*seconds events in 10 ms ticks; returns {user_id: event_ts} of the purchases."""
    purchases = {}
    next_id = first_id
    t0 = time.monotonic()
    tick = 0
    while True:
        elapsed = time.monotonic() - t0
        if elapsed >= seconds:
            break
        due = int(rate * min(seconds, (tick + 1) * 0.01))
        ts = now_ms()
        while next_id - first_id < due:
            action = rng.choice(ACTIONS)
            amount = round(rng.uniform(1, 200), 2)
            value = '{"user_id":%d,"action":"%s","amount":%.2f,"event_ts":%d}' % (next_id, action, amount, ts)
            producer.send(topic, value=value.encode(), key=b"%d" % (next_id % 1000))
            if action == "purchase":
                purchases[next_id] = ts
            next_id += 1
        producer.flush()
        tick += 1
        sleep = t0 + tick * 0.01 - time.monotonic()
        if sleep > 0:
            time.sleep(sleep)
    return purchases, next_id


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--contender", required=True, choices=["kwire-eo", "kwire-alo", "spark"])
    ap.add_argument("--rate", type=int, default=4000, help="events/s")
    ap.add_argument("--seconds", type=float, default=30)
    ap.add_argument("--trigger-ms", type=int, default=500)
    ap.add_argument("--build", default="build")
    ap.add_argument("--spark-python")
    ap.add_argument("--jars")
    args = ap.parse_args()

    admin = kwire.Admin({"bootstrap.servers": args.bootstrap})
    run_id = uuid.uuid4().hex[:8]
    src, out = "lat-in-" + run_id, "lat-out-" + run_id
    admin.create_topics([(src, 3), (out, 3)])
    work = tempfile.mkdtemp(prefix="kwire-latency-")
    ck = os.path.join(work, "ck")
    if args.contender == "spark":
        if not (args.spark_python and args.jars):
            sys.exit("sink_latency: --contender spark needs --spark-python and --jars")
        here = os.path.dirname(os.path.abspath(__file__))
        cmd = [args.spark_python, os.path.join(here, "spark_purchases_to_kafka.py"), args.bootstrap, src, out, ck,
               args.jars, "%d milliseconds" % args.trigger_ms]
    else:
        cmd = [os.path.join(args.build, "bin", "purchases"), "--bootstrap", args.bootstrap, "--topic", src,
               "--checkpoint", ck, "--output-topic", out, "--exactly-once",
               "true" if args.contender == "kwire-eo" else "false", "--trigger",
               "processing-time=%dms" % args.trigger_ms]
    job = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                           start_new_session=True)
    sampler = Sampler(job.pid)
    sampler.start()
    reader = Reader(args.bootstrap, out, 3)
    reader.start()
    producer = kwire.Producer({"bootstrap.servers": args.bootstrap, "linger.ms": 0})
    rng = random.Random(7)
    try:
        # Warm-up: events until the first purchase is visible (Spark's session
        # and first batch, kwire's connections), then the measured window.
        next_id, warm = 0, {}
        deadline = time.monotonic() + 180
        while True:
            p, next_id = produce(producer, src, args.rate, 1.0, next_id, rng)
            warm.update(p)
            if reader.count(warm) > 0 or job.poll() is not None or time.monotonic() > deadline:
                break
        if job.poll() is not None:
            sys.exit("sink_latency: the job exited with %s" % job.returncode)
        time.sleep(2)
        window, next_id = produce(producer, src, args.rate, args.seconds, next_id, rng)
        deadline = time.monotonic() + 60
        while reader.count(window) < len(window) and time.monotonic() < deadline:
            time.sleep(0.2)
        time.sleep(1)  # duplicates arriving late
    finally:
        os.killpg(job.pid, signal.SIGTERM)
        try:
            job.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(job.pid, signal.SIGKILL)
            job.wait()
        sampler.stopping.set()
        reader.stopping.set()
        producer.close()
    reader.join(5)
    with reader.lock:
        latencies = sorted(reader.seen[i][0] - ts for i, ts in window.items() if i in reader.seen)
        missing = sum(1 for i in window if i not in reader.seen)
        duplicates = sum(len(reader.seen[i]) - 1 for i in window if i in reader.seen)
    print(
        "%s rate=%d/s trigger=%dms purchases=%d p50_ms=%.0f p99_ms=%.0f max_ms=%.0f missing=%d duplicates=%d "
        "peak_tree_rss_mb=%.0f"
        % (args.contender, args.rate, args.trigger_ms, len(window), percentile(latencies, 0.5),
           percentile(latencies, 0.99), latencies[-1] if latencies else float("nan"), missing, duplicates,
           sampler.peak_kb / 1024),
        flush=True,
    )
    admin.delete_topics([src, out])
    admin.close()
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
