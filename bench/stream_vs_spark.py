#!/usr/bin/env python3
"""The demo streaming job, kwire against Apache Spark's own Kafka source.

The job (examples/purchases): read a topic of JSON events, decode each value
with the schema `user_id BIGINT, action STRING, amount DOUBLE, event_ts BIGINT`,
keep `action = 'purchase' AND amount > 0`, write JSON Lines (with the
partition and offset of each row). Contenders:
  kwire-purchases  build/bin/purchases (C++: kwire's streaming source + simdjson)
  kwire-stream     build/bin/kwire stream --value-format json --schema ...
                   (decode only: the CLI has no filter, so it writes every row)
  spark            bench/spark_stream_job.py: PySpark local[2], readStream
                   .format("kafka") (spark-sql-kafka-0-10 from Maven Central,
                   scripts/spark-env) -> from_json -> where -> writeStream json

1. Fill: a topic of --events demo events (bin gen_events, lz4, --partitions),
   once: an existing topic holding exactly that many records is reused.
2. Backfill, --runs rounds (contender order rotated each round): each job
   reads the whole topic from earliest with trigger available-now. Per run:
   rows/s from the job's own progress (first batch start to last batch end:
   excludes JVM start-up and Spark session creation), whole-process wall
   time, peak RSS of the whole process tree (sampled every 50 ms from /proc;
   for Spark the Python driver plus its JVM), rows in and rows written.
   Rows written are checked equal between kwire-purchases and spark, and
   against the purchases counted in kwire-stream's decoded output.
3. Small batches, over PLAINTEXT and SASL_SSL (SCRAM-SHA-512): a fresh topic,
   a producer writing --rate records/s (every 5 ms), the job on a
   processing-time trigger of 0 (kwire: purchases --trigger processing-time=0;
   Spark: processingTime "0 seconds") until --kwire-batches / --spark-batches
   batches with rows ran. Per-batch time is each progress entry's
   durationMs.triggerExecution; the first --warmup batches are dropped.
   p50 and p90 per run, medians over --runs runs.

Writes the report (machine, load average, versions, commands, settings, every
run and the medians) to --out, default bench/results/<UTC date>-stream-vs-spark.md.

Broker: uses the broker running on --port (scripts/kafka) if there is one,
otherwise starts one with --secure whose listeners are cut to PLAINTEXT
(--port), CONTROLLER (--port+1) and SASL_SSL (--port+5), and stops it at the
end. KWIRE_KAFKA_DIR and KWIRE_KAFKA_HEAP are passed through (defaults
build/kafka-run and -Xms512m -Xmx512m).

Usage: bench/stream_vs_spark.py [options]   (system python3; Spark's venv
is found with scripts/spark-env, run `scripts/spark-env install` once)
"""

import argparse
import datetime as dt
import json
import os
import platform
import shlex
import signal
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SCHEMA = "user_id BIGINT, action STRING, amount DOUBLE, event_ts BIGINT"


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def sh(cmd, **kw) -> str:
    return subprocess.run(cmd, check=True, text=True, capture_output=True, **kw).stdout


# ------------------------------------------------------------ process tree RSS


def tree_rss_kb(root: int) -> int:
    """Sum of VmRSS over root and all its descendants (KiB)."""
    children: dict[int, list[int]] = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        ppid = int(stat[stat.rfind(")") + 2 :].split()[1])
        children.setdefault(ppid, []).append(int(d))
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        todo.extend(children.get(pid, []))
        try:
            with open(f"/proc/{pid}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
                        break
        except OSError:
            pass
    return total


class Measured:
    """Runs cmd under GNU time, sampling the process tree's RSS."""

    def __init__(self, cmd, stdout_path: Path, stderr_path: Path, env=None):
        self.time_file = stdout_path.with_suffix(".time")
        self.cmd = ["/usr/bin/time", "-f", "%M %e %U %S", "-o", str(self.time_file)] + [str(c) for c in cmd]
        self.out = open(stdout_path, "w")
        self.err = open(stderr_path, "w")
        self.t0 = time.monotonic()
        self.proc = subprocess.Popen(self.cmd, stdout=self.out, stderr=self.err, env=env, start_new_session=True)
        self.peak_kb = 0
        self._stop = False
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        while not self._stop and self.proc.poll() is None:
            self.peak_kb = max(self.peak_kb, tree_rss_kb(self.proc.pid))
            time.sleep(0.05)

    def wait(self, timeout: float) -> dict:
        try:
            rc = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
            rc = "timeout"
        return self._finish(rc)

    def stop(self) -> dict:
        """SIGTERM the command (not GNU time: it would not forward it)."""
        for pid in self._children(self.proc.pid):
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        return self._finish(0)

    @staticmethod
    def _children(pid: int) -> list[int]:
        try:
            with open(f"/proc/{pid}/task/{pid}/children") as f:
                return [int(x) for x in f.read().split()]
        except OSError:
            return []

    def _finish(self, rc) -> dict:
        wall = time.monotonic() - self.t0
        self._stop = True
        self._thread.join()
        self.out.close()
        self.err.close()
        time_max_kb = None
        try:
            time_max_kb = int(self.time_file.read_text().split()[-4])
        except (OSError, ValueError, IndexError):
            pass
        return {"rc": rc, "wall_s": wall, "peak_rss_mb": self.peak_kb / 1024, "time_max_rss_mb": (time_max_kb or 0) / 1024}


# ------------------------------------------------------------------ progress


def read_progress(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def parse_ts(s: str) -> float:
    return dt.datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()


def backfill_stats(progress: list[dict]) -> dict:
    batches = [p for p in progress if p["numInputRows"] > 0]
    rows = sum(p["numInputRows"] for p in batches)
    if not batches:
        return {"batches": 0, "rows_in": 0, "span_s": 0.0, "rows_per_s": 0.0, "busy_rows_per_s": 0.0}
    start = parse_ts(batches[0]["timestamp"])
    end = parse_ts(batches[-1]["timestamp"]) + batches[-1]["durationMs"]["triggerExecution"] / 1000
    busy = sum(p["durationMs"]["triggerExecution"] for p in batches) / 1000
    span = max(end - start, 1e-3)
    return {
        "batches": len(batches),
        "rows_in": rows,
        "span_s": span,
        "rows_per_s": rows / span,
        "busy_rows_per_s": rows / max(busy, 1e-3),
        "first_batch_s": batches[0]["durationMs"]["triggerExecution"] / 1000,
    }


def pick(values: list[float], q: float) -> float:
    v = sorted(values)
    return v[min(len(v) - 1, int(q * (len(v) - 1) + 0.5))]


def count_lines(folder: Path, suffix: str) -> int:
    n = 0
    for f in folder.glob(f"*{suffix}"):
        with open(f, "rb") as fh:
            n += sum(1 for _ in fh)
    return n


def count_purchases(folder: Path) -> int:
    """Rows of a decoded (unfiltered) JSON Lines output passing the filter."""
    n = 0
    for f in folder.glob("*.jsonl"):
        with open(f) as fh:
            for line in fh:
                r = json.loads(line)
                a = r.get("amount")
                if r.get("action") == "purchase" and a is not None and a > 0:
                    n += 1
    return n


# ------------------------------------------------------------------ the bench


class Bench:
    def __init__(self, a):
        self.a = a
        self.bin = Path(a.build) / "bin"
        self.kwire = self.bin / "kwire"
        self.bootstrap = f"127.0.0.1:{a.port}"
        self.work = Path(a.workdir)
        self.work.mkdir(parents=True, exist_ok=True)
        self.env = dict(os.environ)
        self.env.setdefault("KWIRE_KAFKA_DIR", str(REPO / "build" / "kafka-run"))
        self.env.setdefault("KWIRE_KAFKA_HEAP", "-Xms512m -Xmx512m")
        self.started_broker = False
        self.secure: dict[str, str] = {}
        self.commands: dict[str, str] = {}
        self.spark_py = sh([str(REPO / "scripts/spark-env"), "python"]).strip()
        self.jars = sh([str(REPO / "scripts/spark-env"), "jars"]).strip()

    # broker ---------------------------------------------------------------
    def kafka(self, *args, check=True):
        return subprocess.run([str(REPO / "scripts/kafka"), *args], env=self.env, text=True, capture_output=True, check=check)

    def start_broker(self):
        p = self.a.port
        if self.kafka("status", "--port", str(p), check=False).returncode == 0:
            log(f"using the broker running on {self.bootstrap}")
        else:
            log(f"starting a broker on {self.bootstrap} (SASL_SSL on {p + 5})")
            self.kafka(
                "start", "--secure", "--port", str(p),
                "--set", f"listeners=PLAINTEXT://127.0.0.1:{p},CONTROLLER://127.0.0.1:{p + 1},SASL_SSL://127.0.0.1:{p + 5}",
                "--set", f"advertised.listeners=PLAINTEXT://127.0.0.1:{p},SASL_SSL://127.0.0.1:{p + 5}",
            )
            self.started_broker = True
        env_file = Path(self.env["KWIRE_KAFKA_DIR"]) / str(p) / "secure.env"
        if env_file.exists():
            for line in env_file.read_text().splitlines():
                k, _, v = line.partition("=")
                self.secure[k] = v
        self.broker_version = (Path(self.env["KWIRE_KAFKA_DIR"]) / str(p) / "version").read_text().strip()

    def stop_broker(self):
        if self.started_broker:
            log("stopping the broker")
            self.kafka("stop", "--port", str(self.a.port), check=False)

    def latest_total(self, topic: str) -> int:
        out = sh([self.kwire, "offsets", "-b", self.bootstrap, "-t", topic, "--json"])
        return sum(p["latest"] for p in json.loads(out))

    def fill(self) -> str:
        a = self.a
        topic = f"stream-vs-spark-{a.events}-p{a.partitions}"
        sh([self.kwire, "create-topic", "-b", self.bootstrap, "-t", topic, "--partitions", str(a.partitions), "--if-not-exists"])
        have = self.latest_total(topic)
        if have == a.events:
            log(f"topic {topic} already holds {have} events")
        elif have == 0:
            cmd = [self.bin / "gen_events", "--bootstrap", self.bootstrap, "--topic", topic, "--count", str(a.events), "--seed", "1"]
            self.commands["fill"] = " ".join(map(str, cmd))
            log(f"filling {topic}: " + sh(cmd).strip())
        else:
            raise SystemExit(f"topic {topic} holds {have} records, not {a.events}; delete it or restart the broker")
        return topic

    # security options ----------------------------------------------------
    def listener(self, name: str):
        """(bootstrap, kwire -X args, spark -o args) for PLAINTEXT or SASL_SSL."""
        if name == "PLAINTEXT":
            return self.bootstrap, [], []
        s = self.secure
        props = {
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": "SCRAM-SHA-512",
        }
        kw = [f"{k}={v}" for k, v in props.items()] + [
            f"ssl.ca.location={s['KWIRE_SECURE_CA']}",
            f"sasl.username={s['KWIRE_SECURE_USER']}",
            f"sasl.password={s['KWIRE_SECURE_PASSWORD']}",
        ]
        jaas = (
            "org.apache.kafka.common.security.scram.ScramLoginModule required "
            f'username="{s["KWIRE_SECURE_USER"]}" password="{s["KWIRE_SECURE_PASSWORD"]}";'
        )
        sp = [f"kafka.{k}={v}" for k, v in props.items()] + [
            f"kafka.sasl.jaas.config={jaas}",
            "kafka.ssl.truststore.type=PEM",
            f"kafka.ssl.truststore.location={s['KWIRE_SECURE_CA']}",
        ]
        return f"{s['KWIRE_SECURE_HOST']}:{s['KWIRE_SECURE_SASL_SSL_PORT']}", kw, sp

    # commands ------------------------------------------------------------
    def cmd(self, who: str, topic: str, d: Path, mode: str, listener: str = "PLAINTEXT") -> list:
        a = self.a
        bootstrap, kx, so = self.listener(listener)
        mo = a.max_offsets if mode == "backfill" else "none"
        if who == "kwire-purchases":
            trigger = "available-now" if mode == "backfill" else "processing-time=0"
            c = [self.bin / "purchases", "--bootstrap", bootstrap, "--topic", topic, "--checkpoint", d / "ck",
                 "--output", d / "out", "--max-offsets-per-trigger", mo, "--trigger", trigger]
            for x in kx:
                c += ["-X", x]
            return c
        if who == "kwire-stream":
            c = [self.kwire, "stream", "-b", bootstrap, "-o", f"subscribe={topic}", "-o", "startingOffsets=earliest",
                 "--checkpoint", d / "ck", "--sink", f"jsonl:{d / 'out'}", "--value-format", "json",
                 "--schema", SCHEMA, "--kafka-columns", "partition,offset", "--trigger", "available-now"]
            if mo != "none":
                c += ["-o", f"maxOffsetsPerTrigger={mo}"]
            for x in kx:
                c += ["-X", x]
            return c
        c = [self.spark_py, REPO / "bench/spark_stream_job.py", "--bootstrap", bootstrap, "--topic", topic,
             "--checkpoint", d / "ck", "--output", d / "out", "--progress", d / "progress.jsonl",
             "--jars-dir", self.jars, "--mode", mode, "--max-offsets-per-trigger", mo,
             "--driver-memory", a.driver_memory]
        if mode == "small":
            c += ["--batches", str(a.spark_batches + a.warmup), "--max-seconds", str(a.timeout)]
        for x in so:
            c += ["-o", x]
        return c

    @staticmethod
    def show(cmd: list) -> str:
        return " ".join(shlex.quote(str(c)) for c in cmd).replace(str(REPO) + "/", "")

    def fresh(self, name: str) -> Path:
        d = self.work / name
        subprocess.run(["rm", "-rf", str(d)], check=True)
        d.mkdir(parents=True)
        return d

    # backfill --------------------------------------------------------------
    def backfill(self, topic: str) -> list[dict]:
        a = self.a
        who_all = ["kwire-purchases", "kwire-stream", "spark"]
        results, expected = [], None
        for r in range(a.runs):
            order = who_all[r % 3 :] + who_all[: r % 3]
            for who in order:
                d = self.fresh(f"backfill-{who}")
                cmd = self.cmd(who, topic, d, "backfill")
                self.commands.setdefault(f"backfill {who}", self.show(cmd))
                m = Measured(cmd, d / "stdout", d / "stderr").wait(a.timeout)
                if m["rc"] != 0:
                    raise SystemExit(f"backfill {who} failed ({m['rc']}): {(d / 'stderr').read_text()[-2000:]}")
                prog = read_progress(d / ("progress.jsonl" if who == "spark" else "ck/progress.jsonl"))
                st = backfill_stats(prog)
                out = d / "out"
                st["rows_out"] = count_lines(out, ".json" if who == "spark" else ".jsonl")
                if who == "kwire-stream" and expected is None:
                    expected = count_purchases(out)
                row = {"run": r, "who": who, "load1": os.getloadavg()[0], **m, **st}
                if who == "spark":
                    row["spark"] = json.loads((d / "stdout").read_text().strip().splitlines()[-1])
                results.append(row)
                log(
                    f"backfill run {r} {who}: {st['rows_in']} rows in, {st['rows_out']} out, {st['batches']} batches, "
                    f"{st['rows_per_s']:,.0f} rows/s (job), wall {m['wall_s']:.2f} s, peak RSS {m['peak_rss_mb']:.0f} MB"
                )
                if st["rows_in"] != a.events:
                    raise SystemExit(f"backfill {who} read {st['rows_in']} rows, not {a.events}")
                subprocess.run(["rm", "-rf", str(d)], check=True)
        for row in results:
            want = a.events if row["who"] == "kwire-stream" else expected
            if row["rows_out"] != want:
                raise SystemExit(f"backfill run {row['run']} {row['who']} wrote {row['rows_out']} rows, expected {want}")
        self.expected_purchases = expected
        return results

    # small batches -----------------------------------------------------------
    def producer(self, topic: str):
        pace = f"""
import sys, time
rate, seconds = {self.a.rate}, {self.a.timeout}
per_tick, tick = max(1, rate * 5 // 1000), 0.005
actions = ["view", "click", "add_to_cart", "purchase", "refund"]
start = time.monotonic(); n = 0; out = sys.stdout
while time.monotonic() - start < seconds:
    for _ in range(per_tick):
        u = n * 7919 % 5000 + 1
        out.write('%d\\t{{"user_id":%d,"action":"%s","amount":%.2f,"event_ts":%d}}\\n'
                  % (u, u, actions[n % 5], (n * 37 % 50500 - 500) / 100.0, int(time.time() * 1000)))
        n += 1
    out.flush()
    delay = start + (n / per_tick) * tick - time.monotonic()
    if delay > 0:
        time.sleep(delay)
"""
        gen = subprocess.Popen([sys.executable, "-c", pace], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        prod = subprocess.Popen(
            [self.kwire, "produce", "-b", self.bootstrap, "-t", topic, "-K", "\t", "-X", "batch.size=1000"],
            stdin=gen.stdout, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        gen.stdout.close()
        return gen, prod

    def small_one(self, who: str, listener: str, r: int) -> dict:
        a = self.a
        topic = f"svs-small-{listener.lower()}-{who}-{r}-{os.getpid()}"
        sh([self.kwire, "create-topic", "-b", self.bootstrap, "-t", topic, "--partitions", str(a.partitions)])
        gen, prod = self.producer(topic)
        try:
            time.sleep(0.5)
            d = self.fresh(f"small-{who}")
            cmd = self.cmd(who, topic, d, "small", listener)
            self.commands.setdefault(f"small {who} {listener}", self.show(cmd))
            job = Measured(cmd, d / "stdout", d / "stderr")
            if who == "spark":
                m = job.wait(a.timeout + 120)
            else:
                # purchases runs until stopped: stop it once enough batches ran.
                want = a.kwire_batches + a.warmup
                deadline = time.monotonic() + a.timeout
                while time.monotonic() < deadline and job.proc.poll() is None:
                    if sum(1 for p in read_progress_tail(d / "ck/progress.jsonl") if p["numInputRows"] > 0) >= want:
                        break
                    time.sleep(0.1)
                m = job.stop()
            if m["rc"] not in (0, -15, 143):
                raise SystemExit(f"small {who} {listener} failed ({m['rc']}): {(d / 'stderr').read_text()[-2000:]}")
        finally:
            for p in (gen, prod):
                p.terminate()
                p.wait()
        prog = read_progress(d / ("progress.jsonl" if who == "spark" else "ck/progress.jsonl"))
        batches = [p for p in prog if p["numInputRows"] > 0][a.warmup :]
        if len(batches) < 5:
            raise SystemExit(f"small {who} {listener}: only {len(batches)} batches with rows; see {d}")
        times = [p["durationMs"]["triggerExecution"] for p in batches]
        rows = [p["numInputRows"] for p in batches]
        res = {
            "who": who, "listener": listener, "run": r, "batches": len(batches),
            "p50_ms": pick(times, 0.5), "p90_ms": pick(times, 0.9), "max_ms": max(times),
            "rows_per_batch": statistics.median(rows), "peak_rss_mb": m["peak_rss_mb"],
            "load1": os.getloadavg()[0],
        }
        log(
            f"small {listener} run {r} {who}: {res['batches']} batches, p50 {res['p50_ms']} ms, p90 {res['p90_ms']} ms, "
            f"max {res['max_ms']} ms, {res['rows_per_batch']:.0f} rows/batch"
        )
        subprocess.run(["rm", "-rf", str(d)], check=True)
        return res

    def small(self) -> list[dict]:
        listeners = ["PLAINTEXT"] + (["SASL_SSL"] if "KWIRE_SECURE_SASL_SSL_PORT" in self.secure and not self.a.no_secure else [])
        out = []
        for listener in listeners:
            for r in range(self.a.runs):
                for who in (["kwire-purchases", "spark"] if r % 2 == 0 else ["spark", "kwire-purchases"]):
                    out.append(self.small_one(who, listener, r))
        return out


def read_progress_tail(path: Path) -> list[dict]:
    try:
        return read_progress(path)
    except (json.JSONDecodeError, OSError):
        return []  # a line being written


# ------------------------------------------------------------------ report


def machine() -> dict:
    cpu = "?"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = int(open("/proc/meminfo").readline().split()[1]) // 1024
    return {"cpu": cpu, "cores": os.cpu_count(), "mem_mb": mem, "kernel": platform.release()}


def med(rows, key):
    return statistics.median(r[key] for r in rows)


def report(b: Bench, a, topic, back, small, load_start, load_end, t_total) -> str:
    m = machine()
    java = subprocess.run(["java", "-version"], capture_output=True, text=True).stderr.splitlines()[0]
    rev = sh(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"]).strip()
    spark_version = next((r["spark"]["spark_version"] for r in back if r["who"] == "spark"), "?")
    L = []
    L.append("# The demo streaming job: kwire against Spark's Kafka source")
    L.append("")
    L.append(f"Date: {dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC. Machine: {m['cpu']}, {m['cores']} cores, "
             f"{m['mem_mb']} MB, Linux {m['kernel']}. Load average (1/5/15 min) at start "
             f"{load_start[0]:.2f} / {load_start[1]:.2f} / {load_start[2]:.2f}, at end "
             f"{load_end[0]:.2f} / {load_end[1]:.2f} / {load_end[2]:.2f}.")
    if a.note:
        L.append("")
        L.append(f"**{a.note}**")
    L.append("")
    L.append(f"Versions: kwire {rev} ({a.build}), Kafka broker {b.broker_version} (one node, 127.0.0.1), "
             f"PySpark / Spark {spark_version} with spark-sql-kafka-0-10 {spark_version} "
             f"(kafka-clients from Maven Central, scripts/spark-env), {java}, Python {platform.python_version()} "
             f"(driver script).")
    L.append("")
    L.append(f"Command: `{' '.join(shlex.quote(x) for x in sys.argv).replace(str(REPO) + '/', '')}` "
             f"({t_total / 60:.1f} min in all).")
    L.append("")
    L.append("## Settings")
    L.append("")
    L.append(f"- Topic `{topic}`: {a.events:,} events from `gen_events --seed 1` (lz4 batches, JSON values of "
             f"about 75 bytes such as `{{\"user_id\":42,\"action\":\"purchase\",\"amount\":12.5,\"event_ts\":...}}`), "
             f"{a.partitions} partitions; {b.expected_purchases:,} of them pass the filter.")
    L.append(f"- Schema `{SCHEMA}`; filter `action = 'purchase' AND amount > 0`; output JSON Lines of the "
             "decoded columns plus partition and offset.")
    L.append(f"- maxOffsetsPerTrigger in the backfill: {a.max_offsets} (the same for every contender).")
    L.append(f"- Spark: master local[2], spark.driver.memory {a.driver_memory}, spark.sql.shuffle.partitions 2 "
             "(the job has no shuffle), UI off, default JIT (no C1-only flag), failOnDataLoss true, one new "
             "SparkSession (JVM) per run.")
    L.append("- Backfill rows/s (job) = rows / (end of the last batch - start of the first batch), both from "
             "the query's own progress (`timestamp` + `durationMs.triggerExecution`): excludes process and "
             "JVM start-up and session creation, includes the first batch's warm-up (JIT, code generation). "
             "Busy rows/s divides by the sum of the batches' triggerExecution instead. Wall is the whole "
             "process. Peak RSS is the sum of VmRSS over the process tree sampled every 50 ms (for Spark the "
             "Python driver and its JVM).")
    L.append(f"- Small batches: a fresh topic of {a.partitions} partitions per run, a producer writing {a.rate} "
             "records/s (about 10 records every 5 ms, `kwire produce` to the PLAINTEXT listener), the job with "
             "a processing-time trigger of 0 reading the whole backlog each trigger; per-batch time = "
             f"durationMs.triggerExecution of batches with rows, first {a.warmup} dropped; "
             f"{a.kwire_batches} batches per kwire run, {a.spark_batches} per Spark run. SASL_SSL: "
             "SCRAM-SHA-512 over TLS with the throw-away CA of `scripts/kafka start --secure`.")
    L.append(f"- {a.runs} runs of everything, the contenders' order rotated between runs; medians over runs.")
    L.append("")
    L.append("## Backfill")
    L.append("")
    L.append("| contender | rows/s (job), median | min-max | busy rows/s | wall (s) | peak RSS (MB) | batches | rows written |")
    L.append("|---|---|---|---|---|---|---|---|")
    for who in ["kwire-purchases", "kwire-stream", "spark"]:
        rs = [r for r in back if r["who"] == who]
        L.append(f"| {who} | {med(rs, 'rows_per_s'):,.0f} | {min(r['rows_per_s'] for r in rs):,.0f}-"
                 f"{max(r['rows_per_s'] for r in rs):,.0f} | {med(rs, 'busy_rows_per_s'):,.0f} | "
                 f"{med(rs, 'wall_s'):.2f} | {med(rs, 'peak_rss_mb'):.0f} | {rs[0]['batches']} | {rs[0]['rows_out']:,} |")
    kp = med([r for r in back if r["who"] == "kwire-purchases"], "rows_per_s")
    sp = med([r for r in back if r["who"] == "spark"], "rows_per_s")
    kw = med([r for r in back if r["who"] == "kwire-purchases"], "wall_s")
    sw = med([r for r in back if r["who"] == "spark"], "wall_s")
    L.append("")
    L.append(f"kwire-purchases / spark: {kp / sp:.1f}x the rows/s (job), {sw / kw:.1f}x less wall time. "
             "kwire-stream decodes and writes every row (the CLI has no filter), so it writes "
             f"{a.events:,} rows against {b.expected_purchases:,}; its output's purchases were counted and "
             "match the rows both filtering jobs wrote.")
    L.append("")
    L.append("Every run:")
    L.append("")
    L.append("| run | contender | rows/s (job) | first batch (s) | wall (s) | peak RSS (MB) | GNU time max RSS (MB) | Spark session start (s) | load (1 min) after |")
    L.append("|---|---|---|---|---|---|---|---|---|")
    for r in back:
        ss = f"{r['spark']['session_s']:.1f}" if "spark" in r else "-"
        L.append(f"| {r['run']} | {r['who']} | {r['rows_per_s']:,.0f} | {r['first_batch_s']:.2f} | {r['wall_s']:.2f} | "
                 f"{r['peak_rss_mb']:.0f} | {r['time_max_rss_mb']:.0f} | {ss} | {r['load1']:.1f} |")
    L.append("")
    L.append("GNU time's max RSS is that of the process it started and the children that process waited for: for the kwire tools the whole process, for Spark only the Python driver (the JVM it launches is not counted), hence the sampled tree sum.")
    L.append("")
    L.append("## Small batches")
    L.append("")
    L.append("| listener | contender | batch p50 (ms), median | p90 (ms), median | p50 per run | rows per batch | peak RSS (MB) | load (1 min) after runs |")
    L.append("|---|---|---|---|---|---|---|---|")
    for listener in dict.fromkeys(r["listener"] for r in small):
        for who in ["kwire-purchases", "spark"]:
            rs = [r for r in small if r["who"] == who and r["listener"] == listener]
            L.append(f"| {listener} | {who} | {med(rs, 'p50_ms'):g} | {med(rs, 'p90_ms'):g} | "
                     f"{' / '.join(str(r['p50_ms']) for r in rs)} | {med(rs, 'rows_per_batch'):g} | "
                     f"{med(rs, 'peak_rss_mb'):.0f} | {' / '.join('%.1f' % r['load1'] for r in rs)} |")
    L.append("")
    L.append("## Commands (one run of each; paths relative to the repository, work folders under "
             f"{a.workdir})")
    L.append("")
    L.append("```")
    for k, v in b.commands.items():
        L.append(f"# {k}")
        L.append(v)
    L.append("```")
    L.append("")
    return "\n".join(L)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--port", type=int, default=19092, help="broker PLAINTEXT port (SASL_SSL is port+5; default 19092)")
    ap.add_argument("--build", default=str(REPO / "build"), help="build folder with bin/kwire, bin/purchases, bin/gen_events")
    ap.add_argument("--events", type=int, default=2_000_000, help="events in the backfill topic (default 2000000)")
    ap.add_argument("--partitions", type=int, default=3, help="partitions of every topic (default 3)")
    ap.add_argument("--runs", type=int, default=3, help="runs of each measurement (default 3)")
    ap.add_argument("--max-offsets", default="none", help="backfill maxOffsetsPerTrigger: N or none (default none: one batch)")
    ap.add_argument("--rate", type=int, default=2000, help="small batches: records/s produced (default 2000)")
    ap.add_argument("--kwire-batches", type=int, default=300, help="small batches measured per kwire run (default 300)")
    ap.add_argument("--spark-batches", type=int, default=40, help="small batches measured per Spark run (default 40)")
    ap.add_argument("--warmup", type=int, default=3, help="small batches dropped at the start of each run (default 3)")
    ap.add_argument("--driver-memory", default="1g", help="spark.driver.memory (default 1g)")
    ap.add_argument("--timeout", type=float, default=300, help="seconds before a run is killed (default 300)")
    ap.add_argument("--no-secure", action="store_true", help="skip the SASL_SSL small-batch runs")
    ap.add_argument("--no-small", action="store_true", help="skip the small-batch runs")
    ap.add_argument("--workdir", default=str(REPO / "build" / "stream-vs-spark"), help="checkpoints and outputs (emptied per run)")
    ap.add_argument("--out", default=None, help="report file (default bench/results/<date>-stream-vs-spark.md)")
    ap.add_argument("--note", default="", help="a sentence for the report's header (e.g. about the machine's load)")
    a = ap.parse_args()
    out = Path(a.out or REPO / "bench" / "results" / f"{dt.datetime.now(dt.timezone.utc):%Y-%m-%d}-stream-vs-spark.md")

    b = Bench(a)
    for exe in (b.kwire, b.bin / "purchases", b.bin / "gen_events"):
        if not os.access(exe, os.X_OK):
            raise SystemExit(f"{exe} missing: ninja -C {a.build} kwire_cli purchases gen_events")
    t0 = time.monotonic()
    load_start = os.getloadavg()
    b.start_broker()
    try:
        topic = b.fill()
        back = b.backfill(topic)
        small = [] if a.no_small else b.small()
    finally:
        b.stop_broker()
    text = report(b, a, topic, back, small, load_start, os.getloadavg(), time.monotonic() - t0)
    out.write_text(text)
    log(f"wrote {out}")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
