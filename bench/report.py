#!/usr/bin/env python3
"""Writes the markdown results of scripts/bench from its raw rows.

--kind consume (default), produce (scripts/bench --produce: rows as the
consume rows with the shape label in place of the topic; no decode rows) or
share (scripts/bench --share: rows as the consume rows; no decode rows).

Consume rows (tab-separated): topic, contender, wall s, CPU s, peak RSS KB,
records/s. Decode rows: label, decoder, the `key=value ...` line printed by
`kwire_fetch_decode decode` and `franz decode`. Topic specs after `--`:
"name records record_size codec partitions".
"""
import argparse
import os
import platform
import statistics

CONTENDERS = ["kwire", "librdkafka-newest", "librdkafka-debian", "franz-go", "kcat", "java"]
PRODUCE_CONTENDERS = ["kwire", "librdkafka-newest", "franz-go", "java", "broker-ceiling"]
SHARE_CONTENDERS = ["kwire", "kwire-lines", "franz-go"]


def cpu_model():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.machine()


def med_range(xs, fmt):
    return f"{fmt(statistics.median(xs))} ({fmt(min(xs))}-{fmt(max(xs))})" if len(xs) > 1 else fmt(xs[0])


def transactions_table(path, failed_path=None):
    """Rows: label, contender, records per transaction, wall s, CPU s, peak RSS KB, records/s, commits/s."""
    rows, shapes = {}, {}
    for line in open(path):
        label, who, per_txn, wall, cpu, rss, rec_s, commits_s = line.rstrip("\n").split("\t")
        shapes[label] = int(per_txn)
        rows.setdefault((label, who), []).append((float(cpu), int(rss), float(rec_s), float(commits_s)))
    if not rows:
        return []
    out = [
        "## Transactions",
        "",
        "Records of 100 B without key, no compression, 6 partitions, acks=all; each program begins a "
        "transaction, sends K records and commits, over and over (transactional.id fresh per run; "
        "init_transactions before the clock starts). commits/s and records/s from the first begin to the last "
        "commit; CPU of the whole process (java's include JVM start-up and compiling TxnBench.java).",
        "",
        "| records per transaction | contender | commits/s | records/s | CPU s | peak RSS MB | kwire ratio: commits/s |",
        "|---:|---|---:|---:|---:|---:|---:|",
    ]
    for label, k in shapes.items():
        by = {w: rows[(label, w)] for w in ("kwire", "franz-go", "java") if (label, w) in rows}
        kw = by.get("kwire")
        for who, r in by.items():
            ratio = ""
            if kw and who != "kwire":
                ratio = f"{statistics.median([x[3] for x in kw]) / statistics.median([x[3] for x in r]):.2f}x"
            out.append(
                f"| {k:,} | {who} | {med_range([x[3] for x in r], lambda v: f'{v:,.1f}')} | "
                f"{med_range([x[2] for x in r], lambda v: f'{v:,.0f}')} | "
                f"{med_range([x[0] for x in r], lambda v: f'{v:.2f}')} | "
                f"{med_range([x[1] / 1024 for x in r], lambda v: f'{v:.0f}')} | {ratio} |"
            )
    failed = [line.rstrip("\n").split("\t") for line in open(failed_path)] if failed_path else []
    if failed:
        out += ["Runs that failed (not in the medians):", ""]
        out += [f"- {f[0]}, {f[1]}: {f[2] if len(f) > 2 and f[2] else 'non-zero exit'}" for f in failed]
    out.append("")
    return out


def main():
    ap = argparse.ArgumentParser()
    for a in ("raw", "decode", "settings", "out", "mode", "runs", "load-before", "load-after", "command"):
        ap.add_argument("--" + a, required=True)
    ap.add_argument("--kind", choices=("consume", "produce", "share"), default="consume")
    ap.add_argument("--txn-raw", help="produce: rows of the transactions runs")
    ap.add_argument("--txn-failed", help="produce: transactions runs that failed (label, contender, error)")
    ap.add_argument("--join", help="share: rows of the runs with N = 1 (the group join alone)")
    ap.add_argument("specs", nargs="*")
    a = ap.parse_args()
    produce = a.kind == "produce"
    share = a.kind == "share"
    contenders = PRODUCE_CONTENDERS if produce else SHARE_CONTENDERS if share else CONTENDERS
    specs = [s.split() for s in a.specs]

    rows = {}
    for line in open(a.raw):
        topic, who, wall, cpu, rss, rec_s = line.rstrip("\n").split("\t")
        rows.setdefault((topic, who), []).append((float(wall), float(cpu), int(rss), float(rec_s)))

    # share: the median wall time of a run that reads 1 record (the join),
    # per contender; kwire-lines joins as kwire does.
    join = {}
    if share and a.join:
        walls = {}
        for line in open(a.join):
            _, who, wall, *_ = line.rstrip("\n").split("\t")
            walls.setdefault(who, []).append(float(wall))
        join = {who: statistics.median(w) for who, w in walls.items()}
        if "kwire" in join:
            join.setdefault("kwire-lines", join["kwire"])

    mem_gb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    out = [
        f"# kwire {a.kind} benchmark ({a.mode})",
        "",
        f"- command: `{a.command}`",
        f"- machine: {cpu_model()}, {os.cpu_count()} CPUs, {mem_gb:.0f} GB RAM, Linux {platform.release()}",
        f"- load average (1/5/15 min): {a.load_before} before, {a.load_after} after",
    ]
    busy = float(a.load_before.split()[0])  # the benchmark itself raises the load after
    if busy > 0.5 * (os.cpu_count() or 1):
        out.append(
            f"- **the machine was busy (1-min load {busy:.1f} before it, on {os.cpu_count()} CPUs): these figures show "
            "that the benchmark runs, they are not a result**"
        )
    out.append(f"- rounds: {a.runs}, contenders in rotating order; figures are medians (min-max over the rounds)")
    if produce:
        out += [
            "- each run: N records of S bytes without key (one value of random letters A-Z, generated once) to a "
            "fresh topic of 6 partitions, acks=all with idempotence on, every acknowledgement awaited; the topic "
            "is deleted after the run",
            "- records/s: each program's own figure, from its first send to the last acknowledgement (java: "
            "ProducerPerformance's records/sec; process and JVM start-up excluded for all)",
            "- CPU: user + sys seconds of the whole process (GNU time) per million records (java's include JVM "
            "start-up); RSS: peak resident set",
        ]
    elif share:
        out += [
            "- each run: a fresh share group (share.auto.offset.reset=earliest set before the run) reads N "
            "records of the topic, acknowledging every one explicitly (ACCEPT), and leaves the group; each record "
            "is delivered once (lock 30 s, the broker's default)",
            "- records/s: N / whole-process wall time (process start, group join, the last acknowledgements and the "
            "leave included)",
            "- CPU: user + sys seconds of the whole process (GNU time) per million records; RSS: peak resident set",
            "- kwire-lines is the same kwire run writing each record's value as a line to /dev/null (the CLI's "
            "default output); its ratio column is kwire without output / kwire with it",
        ]
        if join:
            out.append(
                "- the group join: a run that reads 1 record takes "
                + ", ".join(f"{who} {w:.2f} s" for who, w in join.items() if who != "kwire-lines")
                + " (median); records/s after the join = N / (wall - that median), per run"
            )
    else:
        out.append(
            "- records/s: records / whole-process wall time (process start, metadata and offset lookups "
            "included), except java: its fetch.nMsg.sec (JVM start-up and group join excluded)"
        )
        out.append(
            "- CPU: user + sys seconds of the whole process (GNU time) per million records; RSS: peak resident set"
        )
    out += [
        "- ratios are kwire's: records/s kwire/peer (above 1: kwire faster); CPU per record and peak RSS "
        "kwire/peer (below 1: kwire uses less)",
        "- every contender's count of acknowledged records and the topic's record count (sum of the high "
        "watermarks) after the run were checked against N"
        if produce
        else "- every contender's count of accepted records was checked against N, and every run's "
        "acknowledgements had to succeed"
        if share
        else "- every contender's record count was checked against the topic's",
        "",
        "## Versions and settings",
        "",
    ]
    out += [f"- {line.strip()}" for line in open(a.settings) if line.strip()]
    after = " records/s after the join | kwire ratio: after the join |" if join else ""
    out += [
        "",
        "## Produce" if produce else "## Share group, explicit acknowledgement" if share else "## Consume",
        "",
        f"| {'shape' if produce else 'topic'} | records | contender | records/s | CPU s / M records | peak RSS MB | kwire ratio: records/s | CPU/record | RSS |"
        + after,
        "|---|---:|---|---:|---:|---:|---:|---:|---:|" + ("---:|---:|" if join else ""),
    ]
    ceilings = []
    for name, n, size, codec, parts in specs:
        n = int(n)
        med = {}
        for who in contenders:
            r = rows.get((name, who))
            if not r:
                continue
            med[who] = {
                "rec_s": [x[3] for x in r],
                "cpu_m": [x[1] / (n / 1e6) for x in r],
                "rss": [x[2] / 1024 for x in r],
            }
            if who in join:
                med[who]["after"] = [n / max(x[0] - join[who], 1e-3) for x in r]
        k = med.get("kwire")
        for who, m in med.items():
            ratios = ["", "", ""]
            if k and who == "broker-ceiling":
                # Not a client: only the share of the ceiling kwire reaches.
                ratios[0] = f"{statistics.median(k['rec_s']) / statistics.median(m['rec_s']):.2f}x"
            elif k and who != "kwire":
                ratios = [
                    f"{statistics.median(k['rec_s']) / statistics.median(m['rec_s']):.2f}x",
                    f"{statistics.median(k['cpu_m']) / statistics.median(m['cpu_m']):.2f}x",
                    f"{statistics.median(k['rss']) / statistics.median(m['rss']):.2f}x",
                ]
            row = (
                f"| {name} | {n:,} | {who} | {med_range(m['rec_s'], lambda v: f'{v:,.0f}')} | "
                f"{med_range(m['cpu_m'], lambda v: f'{v:.2f}')} | {med_range(m['rss'], lambda v: f'{v:.0f}')} | "
                + " | ".join(ratios)
                + " |"
            )
            if join:
                ratio = ""
                if k and who != "kwire" and "after" in k and "after" in m:
                    ratio = f"{statistics.median(k['after']) / statistics.median(m['after']):.2f}x"
                row += f" {med_range(m['after'], lambda v: f'{v:,.0f}') if 'after' in m else ''} | {ratio} |"
            out.append(row)
        ceiling = med.get("broker-ceiling")
        if ceiling and k and "franz-go" in med:
            ceilings.append(
                f"- {name}: the broker's ceiling is "
                f"{statistics.median(ceiling['rec_s']) / statistics.median(med['franz-go']['rec_s']):.2f}x franz-go's "
                f"records/s; kwire reaches {statistics.median(k['rec_s']) / statistics.median(ceiling['rec_s']):.2f} "
                "of it"
            )
    out.append("")
    if ceilings:
        out += [
            "broker-ceiling is not a client: one Produce request (a 1 MB batch per partition, no compression, no "
            "producer id) encoded once and written again and again, at most 5 unanswered. Its records/s is what the "
            "broker on this host takes from one connection when the client does no work per record; its ratio "
            "column is kwire's share of it. The broker works on one request per connection at a time, so no client "
            "with one connection per broker (every Kafka client) can go past it on this host:",
            "",
        ] + ceilings + [""]
    if produce and a.txn_raw:
        out += transactions_table(a.txn_raw, a.txn_failed)

    drows = {}
    for line in open(a.decode):
        label, who, kv = line.rstrip("\n").split("\t")
        d = dict(x.split("=", 1) for x in kv.split())
        drows.setdefault(label, {}).setdefault(who, []).append(d)
    if drows:
        out += [
            "## Decode micro-benchmark (one captured Fetch v12 response, one thread)",
            "",
            "The capture is cut after its last complete batch. kwire: decode_records (CRC-32C checked, "
            "decompression, every record parsed; its DecodedRecords reused as the fetcher does) and ConsumerRecords "
            "handed out as Consumer::poll does (a fresh vector per poll of at most max.poll.records = 500). "
            "franz-go: the response parsed once with kmsg (untimed), then kgo.ProcessFetchPartition (CRC checked, "
            "decompression, one *kgo.Record per record in one slice per partition, no pools) with "
            "GOMAXPROCS=1. records per CPU second = per core.",
            "",
            "| capture | records in it | decoder | records per CPU s | records/s wall | kwire/franz-go (per CPU s) |",
            "|---|---:|---|---:|---:|---:|",
        ]
        for label, by in drows.items():
            per_cpu = {w: [float(d["records_per_cpu_s"]) for d in ds] for w, ds in by.items()}
            for who, ds in by.items():
                ratio = ""
                if who == "franz-go" and "kwire" in per_cpu:
                    ratio = f"{statistics.median(per_cpu['kwire']) / statistics.median(per_cpu[who]):.2f}x"
                out.append(
                    f"| {label} | {ds[0]['records']} | {who} | "
                    f"{med_range(per_cpu[who], lambda v: f'{v:,.0f}')} | "
                    f"{med_range([float(d['records_per_s']) for d in ds], lambda v: f'{v:,.0f}')} | {ratio} |"
                )
        out.append("")
    text = "\n".join(out) + "\n"
    with open(a.out, "w") as f:
        f.write(text)
    print(text)
    print(f"written to {a.out}", file=os.sys.stderr)


if __name__ == "__main__":
    main()
