"""Start-up and memory of a worker with load on first use: a new process loads the bundled store
as a worker does (hashes and heads only), then uses each tokenizer once, alone in its own new
process: the first-use latency and what it adds to the RSS (the per-family figures of
docs/scaling.md). Then the whole store built at once, for comparison. `--worker`: one real
`toksvc serve` worker on 127.0.0.1: its RSS when ready, after the first `count` of each
tokenizer in turn (what each added family costs on top of the ones before, files that share
tables included), and after one `decode` of each.

    python -m bench.bench_first_use            # medians of 3 processes per figure
    python -m bench.bench_first_use --worker   # one worker, every tokenizer in turn
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import httpx

from service.settings import Settings
from service.store.loader import listed_refs
from tests.support import serving

CODE = """
import json, sys, time
t = time.perf_counter()
from service.settings import Settings
from service.runtime import load_registry
def rss():
    s = dict(l.split(':', 1) for l in open('/proc/self/status'))
    return int(s['VmRSS'].split()[0]) / 1024
r = load_registry(Settings(), first_use=sys.argv[1] == 'lazy')
assert not r.failures
ready, base = time.perf_counter() - t, rss()
out = {'ready_s': ready, 'rss_mb': base, 'n': len(r)}
if len(sys.argv) > 2:
    t, c = time.perf_counter(), time.process_time()
    r.resolve(sys.argv[2]).tokenizer.encode('Hello, world')
    out.update(first_use_s=time.perf_counter() - t, first_use_cpu_s=time.process_time() - c,
               added_mb=rss() - base)
print(json.dumps(out))
"""


def run(*args: str, runs: int = 3) -> dict[str, float]:
    samples = []
    for _ in range(runs):
        done = subprocess.run(
            [sys.executable, "-c", CODE, *args], capture_output=True, text=True, check=True
        )
        samples.append(json.loads(done.stdout))
    return {k: statistics.median(s[k] for s in samples) for k in samples[0]}


def worker_rss(pid: int) -> float:
    """MB resident in the server process and its children (one worker: the same process)."""
    found = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True, check=False)
    children = found.stdout
    total = 0.0
    for one in [pid, *map(int, children.split())]:
        status = Path(f"/proc/{one}/status").read_text()
        total += int(status.split("VmRSS:")[1].split()[0]) / 1024
    return total


def bench_worker() -> None:
    started = time.perf_counter()
    server = serving.start(workers=1)
    try:
        ready = time.perf_counter() - started
        pid = server.process.pid
        print(f"load average {os.getloadavg()[0]:.1f} (2 cores shared: a loaded machine)")
        print(f"one worker ready (/readyz) in {ready:.2f} s: RSS {worker_rss(pid):.0f} MB")
        refs = [t["ref"] for t in httpx.get(f"{server.base}/v1/tokenizers").json()["tokenizers"]]
        print(
            f"{'tokenizer (first count)':<24} {'wall (s)':>8} {'worker RSS (MB)':>16} {'added':>6}"
        )
        before = worker_rss(pid)
        for ref in refs:
            t = time.perf_counter()
            httpx.post(
                f"{server.base}/v1/tokenizers/{ref}/count",
                json={"text": "Hello, world"},
                timeout=60,
            ).raise_for_status()
            wall, now = time.perf_counter() - t, worker_rss(pid)
            print(f"{ref:<24} {wall:>8.2f} {now:>16.0f} {now - before:>+6.0f}")
            before = now
        for ref in refs:
            httpx.post(
                f"{server.base}/v1/tokenizers/{ref}/decode", json={"ids": [1, 2, 3]}, timeout=60
            ).raise_for_status()
        print(f"after one decode per tokenizer: RSS {worker_rss(pid):.0f} MB")
    finally:
        serving.stop(server)


def main() -> None:
    if "--worker" in sys.argv[1:]:
        bench_worker()
        return
    load = os.getloadavg()[0]
    lazy, eager = run("lazy"), run("eager")
    print(f"load average {load:.1f} (2 cores shared: figures from a loaded machine)")
    print(
        f"first use: {lazy['n']:.0f} tokenizers ready in {lazy['ready_s']:.2f} s, "
        f"RSS {lazy['rss_mb']:.0f} MB"
    )
    print(f"all built at start-up: ready in {eager['ready_s']:.2f} s, RSS {eager['rss_mb']:.0f} MB")
    print(f"{'tokenizer':<20} {'first use (s)':>14} {'(CPU s)':>8} {'adds RSS (MB)':>14}")
    for ref in listed_refs(list(Settings().stores)):
        one = run("lazy", ref)
        print(
            f"{ref:<20} {one['first_use_s']:>14.2f} {one['first_use_cpu_s']:>8.2f} "
            f"{one['added_mb']:>14.0f}"
        )


if __name__ == "__main__":
    main()
