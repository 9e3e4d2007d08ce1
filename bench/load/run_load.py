"""Start `toksvc serve` on 127.0.0.1, run Locust headless against it for a bounded number of users
and seconds, save the CSV and HTML reports, print a summary, and fail on any failed request or
a p99 above the threshold.

    python -m bench.load.run_load --workers 2 --users 20 --seconds 60 --p99-ms 2000
"""

from __future__ import annotations

import argparse
import csv
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

from tests.support import serving

ROOT = Path(__file__).resolve().parents[2]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--users", type=int, default=20)
    parser.add_argument("--spawn-rate", type=float, default=10)
    parser.add_argument("--seconds", type=int, default=30)
    parser.add_argument(
        "--p99-ms", type=float, default=2000, help="fail if any task's p99 is above"
    )
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "load")
    parser.add_argument(
        "--rss-every",
        type=float,
        default=0,
        help="sample the workers' resident memory every N seconds (soak runs)",
    )
    parser.add_argument(
        "--warmup",
        type=float,
        default=60,
        help="seconds of the run that count as warm-up for memory growth",
    )
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    try:
        server = serving.start(workers=args.workers)
    except RuntimeError as exc:
        sys.exit(f"the service did not become ready: {exc}")
    base = server.base
    sampler = RssSampler(server.process.pid, args.rss_every, args.out / "rss.csv")
    try:
        if args.rss_every:
            sampler.start()
        subprocess.run(
            [
                sys.executable,
                "-m",
                "locust",
                "-f",
                str(ROOT / "bench" / "load" / "locustfile.py"),
                "--headless",
                "--users",
                str(args.users),
                "--spawn-rate",
                str(args.spawn_rate),
                "--run-time",
                f"{args.seconds}s",
                "--stop-timeout",
                "10",
                "--host",
                base,
                "--csv",
                str(args.out / "run"),
                "--html",
                str(args.out / "report.html"),
                "--only-summary",
                "--loglevel",
                "WARNING",
            ],
            cwd=ROOT,
            check=False,
            timeout=args.seconds + 120,
            env={**os.environ, "PYTHONWARNINGS": "ignore", "PYTHONPATH": str(ROOT)},
        )
    finally:
        sampler.stop()
        serving.stop(server, 30)
    code = summarize(args.out / "run_stats.csv", args.p99_ms, args.workers, args.users)
    if args.rss_every:
        sampler.report(args.warmup)
    return code


class RssSampler(threading.Thread):
    """Sums the resident memory of the service's processes every `every` seconds."""

    def __init__(self, pid: int, every: float, path: Path) -> None:
        super().__init__(daemon=True)
        self.pid, self.every, self.path = pid, every, path
        self.samples: list[tuple[float, float]] = []
        self._stop = threading.Event()

    def run(self) -> None:
        start = time.monotonic()
        while not self._stop.wait(self.every):
            self.samples.append((time.monotonic() - start, self.rss_mb()))

    def rss_mb(self) -> float:
        pids = [self.pid]
        children = Path(f"/proc/{self.pid}/task/{self.pid}/children")
        if children.exists():
            pids += [int(p) for p in children.read_text().split()]
        total = 0
        for pid in pids:
            try:
                status = Path(f"/proc/{pid}/status").read_text()
            except OSError:
                continue
            total += int(status.split("VmRSS:")[1].split()[0]) if "VmRSS:" in status else 0
        return total / 1024

    def stop(self) -> None:
        self._stop.set()

    def report(self, warmup: float) -> None:
        self.path.write_text(
            "seconds,rss_mb\n" + "".join(f"{t:.1f},{m:.1f}\n" for t, m in self.samples)
        )
        after = [m for t, m in self.samples if t >= warmup]
        if len(after) < 2:
            print("memory: too few samples after warm-up")
            return
        first, last, peak = after[0], after[-1], max(after)
        print(
            f"memory (all service processes): {first:.0f} MB after {warmup:.0f} s warm-up, "
            f"{last:.0f} MB at the end, peak {peak:.0f} MB: growth {100 * (last / first - 1):+.1f}% "
            f"({len(self.samples)} samples every {self.every:g} s, in {self.path})"
        )


def summarize(stats: Path, p99_limit: float, workers: int, users: int) -> int:
    rows = list(csv.DictReader(stats.open()))
    print(f"\nload run: {workers} workers, {users} users; reports in {stats.parent}")
    print(
        f"{'task':<16} {'requests':>9} {'failures':>9} {'req/s':>8} {'p50 ms':>8} {'p95 ms':>8} "
        f"{'p99 ms':>8}"
    )
    failures, slow = 0, []
    for r in rows:
        name = r["Name"] if r["Type"] else "total"
        if r["Name"] == "Aggregated":
            name = "total"
        print(
            f"{name:<16} {r['Request Count']:>9} {r['Failure Count']:>9} "
            f"{float(r['Requests/s']):>8.1f} {r['50%']:>8} {r['95%']:>8} {r['99%']:>8}"
        )
        if r["Name"] != "Aggregated":
            failures += int(r["Failure Count"])
            if r["99%"] not in ("", "N/A") and float(r["99%"]) > p99_limit:
                slow.append(name)
    if not rows or int(rows[-1]["Request Count"]) == 0:
        print("FAIL: no requests were made")
        return 1
    if failures:
        print(f"FAIL: {failures} failed requests")
    if slow:
        print(f"FAIL: p99 above {p99_limit:.0f} ms for {', '.join(slow)}")
    return 1 if failures or slow else 0


if __name__ == "__main__":
    sys.exit(main())
