#!/usr/bin/env python3
"""The streaming source's sink path at the consumer's speed, and a compacted
topic read without a request per gap.

1. Backfill (--bootstrap): a topic of --events demo events (bin gen_events
   --seed 1, lz4, --partitions; the topic bench/stream_vs_spark.py uses, reused
   when it holds exactly that many), read whole by each contender, --runs
   rounds, the order rotated each round, after --warmup rounds that are not
   counted (default 1). Whole processes:
     consume       kwire consume -e -q -f '%S\\n' into a file (the records)
     stream        kwire stream --trigger available-now --sink jsonl:DIR
     stream-json   the same with --value-format json --schema SCHEMA
     purchases     bin/purchases (the demo job: decode, filter, write JSON Lines)
   rows/s = records / wall time of the process; for the streaming ones also
   the job's rows/s from its own progress (first batch start to last batch
   end, as bench/stream_vs_spark.py reports it). Medians over the runs.
2. Compacted (--compacted-bootstrap, a broker started with a request log,
   e.g. `scripts/kafka cluster start --brokers 1 --request-log`, and
   --request-log its requests.log): a topic with cleanup.policy=compact and
   2 x --keys keyed records (each key twice, so compaction leaves every other
   offset: --keys gaps), waited for until the log cleaner compacted it; and an
   uncompacted topic holding the same number of records of the same size.
   Each is read whole with `kwire stream` into JSON Lines, --runs rounds;
   rows/s per process, and the ListOffsets requests the broker logged during
   each run (from the request log).

Writes a report to --out (default bench/results/<UTC date>-stream-sink.md).
Run it on a quiet machine (load below 1), one benchmark at a time.
"""

import argparse
import datetime as dt
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SCHEMA = "user_id BIGINT, action STRING, amount DOUBLE, event_ts BIGINT"


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def sh(cmd, **kw) -> str:
    return subprocess.run([str(c) for c in cmd], check=True, capture_output=True, text=True, **kw).stdout


def parse_ts(s: str) -> float:
    return dt.datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()


def job_rows_per_s(progress: Path) -> float | None:
    if not progress.exists():
        return None
    batches = [json.loads(line) for line in progress.read_text().splitlines() if line.strip()]
    batches = [p for p in batches if p["numInputRows"] > 0]
    if not batches:
        return None
    start = parse_ts(batches[0]["timestamp"])
    end = parse_ts(batches[-1]["timestamp"]) + batches[-1]["durationMs"]["triggerExecution"] / 1000
    return sum(p["numInputRows"] for p in batches) / max(end - start, 1e-3)


def count_lines(folder: Path) -> int:
    n = 0
    for f in folder.iterdir():
        if f.is_file():
            with open(f, "rb") as fh:
                n += sum(1 for _ in fh)
    return n


class Bench:
    def __init__(self, a):
        self.a = a
        self.bin = Path(a.build) / "bin"
        self.kwire = self.bin / "kwire"
        self.work = Path(a.workdir)
        self.work.mkdir(parents=True, exist_ok=True)

    def latest_total(self, bootstrap: str, topic: str) -> int:
        return sum(p["latest"] for p in json.loads(sh([self.kwire, "offsets", "-b", bootstrap, "-t", topic, "--json"])))

    def fill_events(self) -> str:
        a = self.a
        topic = f"stream-vs-spark-{a.events}-p{a.partitions}"
        sh([self.kwire, "create-topic", "-b", a.bootstrap, "-t", topic, "--partitions", a.partitions, "--if-not-exists"])
        have = self.latest_total(a.bootstrap, topic)
        if have == 0:
            log(f"filling {topic}")
            sh([self.bin / "gen_events", "--bootstrap", a.bootstrap, "--topic", topic, "--count", a.events, "--seed", "1"])
        elif have != a.events:
            raise SystemExit(f"{topic} holds {have} records, not {a.events}")
        return topic

    def run(self, name: str, cmd: list, rows_of, progress: Path | None = None) -> dict:
        t0 = time.monotonic()
        proc = subprocess.run([str(c) for c in cmd], capture_output=True, text=True)
        wall = time.monotonic() - t0
        if proc.returncode != 0:
            raise SystemExit(f"{name} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
        rows = rows_of()
        out = {"name": name, "wall_s": wall, "rows": rows, "rows_per_s": rows / wall}
        if progress is not None:
            out["job_rows_per_s"] = job_rows_per_s(progress)
        return out

    def backfill_round(self, topic: str, order: list[str]) -> list[dict]:
        a, results = self.a, []
        for name in order:
            d = self.work / name
            shutil.rmtree(d, ignore_errors=True)
            d.mkdir(parents=True)
            if name == "consume":
                out = d / "records.txt"
                cmd = ["sh", "-c", f"'{self.kwire}' consume -b {a.bootstrap} -t {topic} -e -q -f '%S\\n' > '{out}'"]
                results.append(self.run(name, cmd, lambda: count_lines(d)))
                continue
            ck, sink = d / "ck", d / "out"
            if name == "purchases":
                cmd = [self.bin / "purchases", "--bootstrap", a.bootstrap, "--topic", topic, "--checkpoint", ck,
                       "--output", sink, "--max-offsets-per-trigger", "none"]
                progress = None
            else:
                cmd = [self.kwire, "stream", "-b", a.bootstrap, "-o", f"subscribe={topic}", "-o",
                       "startingOffsets=earliest", "--checkpoint", ck, "--sink", f"jsonl:{sink}",
                       "--trigger", "available-now"]
                if name == "stream-json":
                    cmd += ["--value-format", "json", "--schema", SCHEMA]
                progress = ck / "progress.jsonl"
            r = self.run(name, cmd, lambda: a.events if name == "purchases" else count_lines(sink), progress)
            if name == "purchases":
                # rows in = every event; the job's own rate from its printed progress.
                r["written"] = count_lines(sink)
            results.append(r)
        return results

    # ------------------------------------------------------------ compacted
    def request_count(self, api: str) -> int:
        path = Path(self.a.request_log)
        if not path.exists():
            return 0
        key = f'"requestApiKeyName":"{api}"'
        with open(path, errors="replace") as f:
            return sum(1 for line in f if key in line)

    def fill_compacted(self) -> tuple[str, str, int]:
        a = self.a
        b = a.compacted_bootstrap
        tag = f"{a.keys}-{int(time.time())}"
        compacted, plain = f"sink-compacted-{tag}", f"sink-plain-{tag}"
        sh([self.kwire, "create-topic", "-b", b, "-t", compacted, "--config", "cleanup.policy=compact",
            "--config", "segment.bytes=1048576", "--config", "min.cleanable.dirty.ratio=0.01",
            "--config", "min.compaction.lag.ms=0", "--config", "delete.retention.ms=0",
            "--config", "segment.ms=500"])
        lines = "".join(f"k{i // 2:08d}|value-{i:08d}-{'x' * 40}\n" for i in range(2 * a.keys))
        sh([self.kwire, "produce", "-b", b, "-t", compacted, "-p", "0", "-K", "|", "-z", "lz4"], input=lines)
        log(f"waiting for the log cleaner to compact {compacted}")
        deadline = time.monotonic() + a.compaction_timeout
        records = 0
        while time.monotonic() < deadline:
            # A keyed record now and then rolls the active segment (segment.ms).
            sh([self.kwire, "produce", "-b", b, "-t", compacted, "-p", "0", "-K", "|"], input="roll|r\n")
            out = sh([self.kwire, "consume", "-b", b, "-t", compacted, "-e", "-q", "-f", "%o\n"])
            records = len(out.split())
            if records <= a.keys + a.keys // 50:
                break
            time.sleep(2)
        log(f"{compacted}: {records} records left of {2 * a.keys + 1}+ offsets")
        sh([self.kwire, "create-topic", "-b", b, "-t", plain])
        plain_lines = "".join(f"k{i:08d}|value-{i:08d}-{'x' * 40}\n" for i in range(records))
        sh([self.kwire, "produce", "-b", b, "-t", plain, "-p", "0", "-K", "|", "-z", "lz4"], input=plain_lines)
        return compacted, plain, records

    def compacted_round(self, topics: list[str]) -> list[dict]:
        out = []
        for topic in topics:
            d = self.work / "compacted"
            shutil.rmtree(d, ignore_errors=True)
            d.mkdir(parents=True)
            before = self.request_count("LIST_OFFSETS")
            cmd = [self.kwire, "stream", "-b", self.a.compacted_bootstrap, "-o", f"subscribe={topic}", "-o",
                   "startingOffsets=earliest", "--checkpoint", d / "ck", "--sink", f"jsonl:{d / 'out'}",
                   "--trigger", "available-now"]
            r = self.run(topic, cmd, lambda: count_lines(d / "out"), d / "ck" / "progress.jsonl")
            time.sleep(1)  # the request log is written as requests complete
            r["list_offsets"] = self.request_count("LIST_OFFSETS") - before
            out.append(r)
        return out


def median(rs: list[dict], key: str) -> float:
    vals = [r[key] for r in rs if r.get(key) is not None]
    return statistics.median(vals) if vals else float("nan")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bootstrap", default="127.0.0.1:19092")
    ap.add_argument("--build", default=str(REPO / "build"))
    ap.add_argument("--events", type=int, default=2_000_000)
    ap.add_argument("--partitions", type=int, default=3)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=1,
                    help="rounds of the backfill run first and left out of the figures (default 1)")
    ap.add_argument("--compacted-bootstrap", default=None, help="broker with a request log for the compacted part")
    ap.add_argument("--request-log", default=None, help="that broker's requests.log")
    ap.add_argument("--keys", type=int, default=100_000, help="compacted topic: keys (each written twice)")
    ap.add_argument("--compaction-timeout", type=float, default=300)
    ap.add_argument("--workdir", default=str(REPO / "build" / "stream-sink"))
    ap.add_argument("--out", default=None)
    ap.add_argument("--note", default="")
    a = ap.parse_args()
    b = Bench(a)
    load0 = os.getloadavg()
    started = dt.datetime.now(dt.timezone.utc)
    topic = b.fill_events()
    names = ["consume", "stream", "stream-json", "purchases"]
    backfill = []
    # On a VM, memory a process touches for the first time since the host
    # took it back is slow to fault in: the first rounds after other work
    # are slower (0.60 s against 0.45 s for `stream`). Warm-up rounds run
    # every contender first and are not counted.
    warmup = []
    for i in range(a.warmup):
        log(f"warm-up round {i + 1}")
        warmup += b.backfill_round(topic, names)
    for i in range(a.runs):
        order = names[i % len(names):] + names[:i % len(names)]
        log(f"backfill round {i + 1}: {order}")
        backfill += b.backfill_round(topic, order)
    compacted = []
    if a.compacted_bootstrap:
        c_topic, p_topic, records = b.fill_compacted()
        for i in range(a.runs):
            order = [c_topic, p_topic] if i % 2 == 0 else [p_topic, c_topic]
            log(f"compacted round {i + 1}")
            compacted += b.compacted_round(order)
    load1 = os.getloadavg()

    L = [f"# Stream sink path and compacted reads\n",
         f"Date: {started:%Y-%m-%d %H:%M} UTC. Machine: {platform.processor() or platform.machine()}, "
         f"{os.cpu_count()} cores, Linux {platform.release()}. Load average at start "
         f"{load0[0]:.2f} / {load0[1]:.2f} / {load0[2]:.2f}, at end {load1[0]:.2f} / {load1[1]:.2f} / {load1[2]:.2f}.\n"]
    if a.note:
        L.append(f"**{a.note}**\n")
    L.append(f"Command: `bench/stream_sink.py {' '.join(sys.argv[1:])}`. kwire "
             f"{sh(['git', '-C', REPO, 'rev-parse', '--short', 'HEAD']).strip()}.\n")
    L.append(f"## Backfill: {a.events:,} events, {a.partitions} partitions (`{topic}`), {a.runs} rounds\n")
    if warmup:
        L.append(f"Before them, {a.warmup} warm-up round(s) of every contender, not counted (wall s: "
                 + ", ".join(f"{r['name']} {r['wall_s']:.2f}" for r in warmup) + ").\n")
    L.append("| contender | rows/s (process), median | min-max | job rows/s (progress), median | wall (s), median |")
    L.append("|---|---|---|---|---|")
    for n in names:
        rs = [r for r in backfill if r["name"] == n]
        lo, hi = min(r["rows_per_s"] for r in rs), max(r["rows_per_s"] for r in rs)
        L.append(f"| {n} | {median(rs, 'rows_per_s'):,.0f} | {lo:,.0f}-{hi:,.0f} | "
                 f"{median(rs, 'job_rows_per_s'):,.0f} | {median(rs, 'wall_s'):.2f} |")
    cons = median([r for r in backfill if r["name"] == "consume"], "rows_per_s")
    for n in ("stream", "stream-json"):
        L.append(f"\nkwire consume / {n}: {cons / median([r for r in backfill if r['name'] == n], 'rows_per_s'):.2f}x "
                 "(rows/s per process).")
    L.append("\nEvery run:\n")
    L.append("| contender | wall (s) | rows | rows/s (process) | job rows/s |")
    L.append("|---|---|---|---|---|")
    for r in backfill:
        job = r.get("job_rows_per_s")
        L.append(f"| {r['name']} | {r['wall_s']:.2f} | {r['rows']:,} | {r['rows_per_s']:,.0f} | "
                 f"{'-' if job is None else f'{job:,.0f}'} |")
    if compacted:
        L.append(f"\n## Compacted topic: {a.keys:,} keys written twice, against an uncompacted topic of the same records\n")
        L.append("| topic | rows | rows/s (process), median | job rows/s, median | ListOffsets per run |")
        L.append("|---|---|---|---|---|")
        for t in dict.fromkeys(r["name"] for r in compacted):
            rs = [r for r in compacted if r["name"] == t]
            L.append(f"| {t} | {rs[0]['rows']:,} | {median(rs, 'rows_per_s'):,.0f} | {median(rs, 'job_rows_per_s'):,.0f} "
                     f"| {', '.join(str(r['list_offsets']) for r in rs)} |")
    out = Path(a.out) if a.out else REPO / "bench" / "results" / f"{started:%Y-%m-%d}-stream-sink.md"
    out.write_text("\n".join(L) + "\n")
    print("\n".join(L))


if __name__ == "__main__":
    main()
