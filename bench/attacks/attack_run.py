"""Run the attacks of `attacks.py` against a real `toksvc serve` (1 worker, then 2) and print one
table row per attack: the outcomes seen, the longest /healthz answer during it, and the peak RSS
of one worker (its idle RSS in brackets). `python -m bench.load.chaos --attacks` calls this.

Bounded: every request has a client timeout, every attack a deadline; after an attack the run
waits (at most 45 s) for the workers' CPU to settle, so one attack's leftover work shows in its
own row (`settle`). A worker RSS above `--rss-guard` MB stops the server (the machine is shared)
and the next attack starts a fresh one; so does a supervisor that exited.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import tempfile
import threading
import time
from pathlib import Path

import httpx

from bench.attacks import attacks
from tests.support import serving


def rss_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def cpu_seconds(pids: list[int]) -> float:
    total = 0.0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except OSError:
            pass
    return total


class Watch:
    """/healthz on a fresh connection every 0.1 s (its longest answer; a failure counts as the
    5 s timeout) and every worker's RSS every 0.1 s, while an attack runs."""

    def __init__(self, target: attacks.Target, guard_mb: float) -> None:
        self.target, self.guard_mb = target, guard_mb
        self.worst = 0.0
        self.peak = 0.0
        self.guarded = False
        self.done = threading.Event()
        self.threads = [threading.Thread(target=self._health), threading.Thread(target=self._rss)]

    def __enter__(self) -> Watch:
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.done.set()
        for thread in self.threads:
            thread.join()

    def _health(self) -> None:
        while not self.done.is_set():
            started = time.perf_counter()
            try:
                httpx.get(self.target.base + "/healthz", timeout=5)
                took = time.perf_counter() - started
            except httpx.HTTPError:
                took = max(5.0, time.perf_counter() - started)
            self.worst = max(self.worst, took)
            time.sleep(0.1)

    def _rss(self) -> None:
        while not self.done.is_set():
            for pid in attacks.worker_pids(self.target.pid):
                self.peak = max(self.peak, rss_mb(pid))
            if self.peak > self.guard_mb and not self.guarded:
                self.guarded = True
                for pid in {*attacks.worker_pids(self.target.pid), self.target.pid}:
                    with contextlib.suppress(OSError):
                        os.kill(pid, signal.SIGKILL)
            time.sleep(0.1)


def settle(target: attacks.Target, seconds: float = 45) -> float:
    """Wait until the workers use less than 20% of a core over a second; the time waited."""
    started = time.monotonic()
    while time.monotonic() - started < seconds:
        pids = attacks.worker_pids(target.pid)
        before = cpu_seconds(pids)
        time.sleep(1)
        if cpu_seconds(pids) - before < 0.2:
            break
    return time.monotonic() - started


def launch(workers: int, tmp: Path, scale: float) -> tuple[serving.Server, attacks.Target]:
    store = tmp / f"store-{workers}"
    shutil.rmtree(store, ignore_errors=True)
    shutil.copytree(serving.ROOT / "tokenizers_store", store)
    env = {**os.environ, "TOKSVC_STORE": str(store), "TOKSVC_ADMIN_TOKEN": attacks.TOKEN}
    server = serving.start(
        workers=workers, env=env, seconds=180, log=(tmp / f"server-{workers}.log").open("w+b")
    )
    target = attacks.Target(server.base, server.port, server.process.pid, store, workers, scale)
    return server, target


def run(workers_list: list[int], scale: float, guard_mb: float, only: str = "") -> int:
    tmp = Path(tempfile.mkdtemp(prefix="toksvc-attacks-"))
    rows = []
    try:
        for workers in workers_list:
            server, target = launch(workers, tmp, scale)
            for name, attack in attacks.ATTACKS:
                if only and not name.startswith(tuple(only.split(","))):
                    continue
                if server.process.poll() is not None or not serving.ready(server.base):
                    serving.stop(server, 10)
                    server, target = launch(workers, tmp, scale)
                idle = max((rss_mb(p) for p in attacks.worker_pids(target.pid)), default=0.0)
                outcome: dict[str, str] = {}
                with Watch(target, guard_mb) as watch:
                    thread = threading.Thread(
                        target=lambda: outcome.update(seen=_fmt(attack(target)))
                    )
                    thread.start()
                    thread.join(timeout=180)
                seen = outcome.get("seen", "attack-still-running")
                if watch.guarded:
                    seen += f" RSS-GUARD({guard_mb:.0f} MB): server killed"
                waited = settle(target) if server.process.poll() is None else 0.0
                rows.append((name, workers, seen, watch.worst, watch.peak, idle, waited))
                print(
                    f"  {name} [{workers}w]: {seen}; /healthz max {watch.worst:.2f} s; "
                    f"worker RSS peak {watch.peak:.0f} MB (idle {idle:.0f}); "
                    f"settle {waited:.0f} s",
                    flush=True,
                )
            serving.stop(server, 30)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("\n| attack | workers | outcomes seen | /healthz max | worker RSS peak (idle) | settle |")
    print("|---|---|---|---|---|---|")
    for name, workers, seen, worst, peak, idle, waited in rows:
        print(
            f"| {name} | {workers} | {seen} | {worst:.2f} s | {peak:.0f} ({idle:.0f}) MB "
            f"| {waited:.0f} s |"
        )
    return 0


def _fmt(outcomes: attacks.Outcomes) -> str:
    return " ".join(f"{k}x{v}" if v > 1 else k for k, v in sorted(outcomes.items()))
