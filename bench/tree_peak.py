"""Runs a command and reports its wall time and the peak resident memory of
its whole process tree (the command and every descendant, summed, sampled
every 50 ms from /proc), so that a JVM started by a Python driver counts:
python tree_peak.py CMD [ARGS...]  ->  last line "wall_s=W peak_tree_rss_mb=M exit=E"."""

import os
import subprocess
import sys
import time


def tree_rss_kb(root):
    children = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % pid) as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except OSError:
            continue
        children.setdefault(ppid, []).append(int(pid))
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        try:
            with open("/proc/%d/status" % pid) as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
                        break
        except OSError:
            pass
        todo.extend(children.get(pid, []))
    return total


def main():
    start = time.monotonic()
    child = subprocess.Popen(sys.argv[1:])
    peak = 0
    while child.poll() is None:
        peak = max(peak, tree_rss_kb(child.pid))
        time.sleep(0.05)
    wall = time.monotonic() - start
    print("wall_s=%.2f peak_tree_rss_mb=%.0f exit=%d" % (wall, peak / 1024, child.returncode), flush=True)


if __name__ == "__main__":
    main()
