"""A bounded chaos run against `toksvc serve --workers 2` on 127.0.0.1.

Mixed load (count, encode, decode, decode/step, NDJSON streams) from a few threads while, in turn:
a worker is SIGKILLed, a reload is refused (a file no longer matches its pin; admin reload and
SIGHUP), the file is restored and a reload accepted, clients open streams and never read them,
and a slow reader trickles through a stream. A probe asks /readyz on a fresh connection every
0.1 s. Prints requests, failed requests (connection errors), 5xx, the longest time without a
successful probe, peak RSS of the service's processes, and its exit status after SIGTERM.

    python -m bench.load.chaos --seconds 60

`--attacks` runs instead the adversarial attacks of issue 23 (`attacks.py`: every High and
Medium finding), against 1 and then 2 workers, and prints a table per attack: outcomes, the
longest /healthz answer, the peak RSS of a worker (`attack_run.py`).

    python -m bench.load.chaos --attacks [--workers-list 1,2] [--scale 1.0] [--only H1,M6]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

import httpx

from tests.support import serving

TOKEN = "chaos-admin-token"


def rss_mb(pid: int) -> float:
    pids = [pid, *map(int, Path(f"/proc/{pid}/task/{pid}/children").read_text().split())]
    total = 0
    for p in pids:
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except OSError:
            pass
    return total / 1024


def workers(pid: int) -> list[int]:
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return []
    found = []
    for p in children:
        try:
            if b"spawn_main" in Path(f"/proc/{p}/cmdline").read_bytes():
                found.append(int(p))
        except OSError:  # gone meanwhile
            pass
    return found


class Run:
    def __init__(self, base: str, port: int, seconds: float) -> None:
        self.base, self.port = base, port
        self.deadline = time.monotonic() + seconds
        self.codes: Counter[int] = Counter()
        self.errors: Counter[str] = Counter()
        self.longest_gap = 0.0
        self.events: list[str] = []
        self.lock = threading.Lock()

    def live(self) -> bool:
        return time.monotonic() < self.deadline

    def load(self, seed: int) -> None:
        rng = random.Random(seed)
        t = "/v1/tokenizers/cl100k_base"
        with httpx.Client(base_url=self.base, timeout=30) as client:
            while self.live():
                kind = rng.choice(["count", "encode", "decode", "step", "stream"])
                try:
                    if kind == "count":
                        r = client.post(f"{t}/count", json={"text": "chaos " * rng.randint(1, 500)})
                    elif kind == "encode":
                        r = client.post(f"{t}/encode", json={"texts": ["a b c", "déjà vu 🙂"]})
                    elif kind == "decode":
                        r = client.post(f"{t}/decode", json={"ids": [9906, 11, 1917] * 50})
                    elif kind == "step":
                        r = client.post(f"{t}/decode/step", json={"ids": [9468], "final": True})
                    else:
                        lines = b"".join(b'{"ids": [9906, 11]}\n' for _ in range(5))
                        r = client.post(f"{t}/decode/stream", content=lines)
                    with self.lock:
                        self.codes[r.status_code] += 1
                except httpx.HTTPError as exc:
                    with self.lock:
                        self.errors[type(exc).__name__] += 1

    def probe(self) -> None:
        last_ok = time.monotonic()
        while self.live():
            try:
                if httpx.get(f"{self.base}/readyz", timeout=2).status_code == 200:
                    last_ok = time.monotonic()
            except httpx.HTTPError:
                pass
            self.longest_gap = max(self.longest_gap, time.monotonic() - last_ok)
            time.sleep(0.1)

    def non_reader(self, hold: float) -> None:
        """A stream whose client sends big outputs and never reads."""
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.settimeout(5)
        try:
            sock.connect(("127.0.0.1", self.port))
            sock.sendall(
                b"POST /v1/tokenizers/cl100k_base/decode/stream HTTP/1.1\r\nHost: x\r\n"
                b"Transfer-Encoding: chunked\r\n\r\n"
            )
            line = json.dumps({"ids": [58040] * 20_000}).encode() + b"\n"
            for _ in range(5):
                sock.sendall(b"%x\r\n%s\r\n" % (len(line), line))
            time.sleep(hold)
        except OSError:
            pass
        finally:
            sock.close()

    def slow_reader(self) -> None:
        with httpx.Client(base_url=self.base, timeout=30) as client:
            body = b"".join(b'{"ids": [9906, 11]}\n' for _ in range(2000))
            try:
                with client.stream(
                    "POST", "/v1/tokenizers/cl100k_base/decode/stream", content=body
                ) as r:
                    for _ in r.iter_bytes(256):
                        time.sleep(0.01)
                        if not self.live():
                            break
            except httpx.HTTPError:
                pass


def start(store: Path, log_path: Path) -> serving.Server:
    env = {
        **os.environ,
        "TOKSVC_STORE": str(store),
        "TOKSVC_ADMIN_TOKEN": TOKEN,
        "TOKSVC_WRITE_SECONDS": "3",
        "TOKSVC_MAX_STREAM_SECONDS": "20",
    }
    try:
        return serving.start(workers=2, env=env, log=log_path.open("w+b"))
    except RuntimeError:
        sys.exit(f"the service did not start; see {log_path}")


class Chaos:
    """One action every 5 s, in turn."""

    ACTIONS = ("kill", "refuse", "restore", "non-readers", "slow-reader", "kill")

    def __init__(self, run: Run, proc: subprocess.Popen[bytes], store: Path) -> None:
        self.run, self.proc = run, proc
        self.file = store / "cl100k_base" / "1.json"
        self.good = self.file.read_bytes()
        self.side: list[threading.Thread] = []

    def act(self, action: str) -> None:
        run, proc = self.run, self.proc
        if action == "kill":
            serving.wait_ready(run.base, 60)  # one kill at a time, as an OOM kill: both loaded
            os.kill(random.choice(workers(proc.pid)), signal.SIGKILL)
        elif action == "refuse":  # the file no longer matches its pin
            self.file.write_bytes(self.good.replace(b"[", b"{", 1))
            r = httpx.post(
                f"{run.base}/admin/reload", timeout=60, headers={"authorization": f"Bearer {TOKEN}"}
            )
            run.events.append(f"admin reload answered {r.status_code}")
            proc.send_signal(signal.SIGHUP)
        elif action == "restore":
            self.file.write_bytes(self.good)
            proc.send_signal(signal.SIGHUP)
        elif action == "non-readers":
            self.spawn(*[(run.non_reader, (8,)) for _ in range(4)])
        elif action == "slow-reader":
            self.spawn((run.slow_reader, ()))
        run.events.append(action)

    def spawn(self, *targets: tuple[object, tuple[object, ...]]) -> None:
        for target, args in targets:
            thread = threading.Thread(target=target, args=args)  # type: ignore[arg-type]
            thread.start()
            self.side.append(thread)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--threads", type=int, default=6)
    parser.add_argument("--attacks", action="store_true", help="run the issue 23 attacks")
    parser.add_argument("--workers-list", default="1,2", help="with --attacks: worker counts")
    parser.add_argument("--scale", type=float, default=1.0, help="with --attacks: size factor")
    parser.add_argument("--rss-guard", type=float, default=6000, help="MB of one worker")
    parser.add_argument("--only", default="", help="with --attacks: name prefixes, e.g. H1,M6")
    args = parser.parse_args()
    if args.attacks:
        from bench.attacks import attack_run

        workers = [int(w) for w in args.workers_list.split(",")]
        return attack_run.run(workers, args.scale, args.rss_guard, args.only)
    tmp = Path(tempfile.mkdtemp(prefix="toksvc-chaos-"))
    server = start(serving.small_store(tmp), tmp / "server.log")
    proc = server.process
    run = Run(server.base, server.port, args.seconds)
    chaos = Chaos(run, proc, tmp / "store")
    threads = [threading.Thread(target=run.load, args=(i,)) for i in range(args.threads)]
    threads.append(threading.Thread(target=run.probe))
    for t in threads:
        t.start()
    peak, step = 0.0, 0
    while run.live():
        chaos.act(Chaos.ACTIONS[step % len(Chaos.ACTIONS)])
        step += 1
        until = time.monotonic() + 5
        while time.monotonic() < until and run.live():
            peak = max(peak, rss_mb(proc.pid))
            time.sleep(0.25)
    for t in threads + chaos.side:
        t.join(timeout=30)
    chaos.file.write_bytes(chaos.good)
    alive = proc.poll() is None
    status = serving.stop(server, 30)
    text = (tmp / "server.log").read_text(errors="replace")
    total = sum(run.codes.values()) + sum(run.errors.values())
    five = sum(n for code, n in run.codes.items() if code >= 500)
    print(f"actions: {', '.join(run.events)}")
    print(f"requests: {total}, statuses {dict(sorted(run.codes.items()))}")
    print(f"failed requests (connection errors): {sum(run.errors.values())} {dict(run.errors)}")
    print(f"5xx: {five}")
    print(f"longest time without a successful /readyz: {run.longest_gap:.2f} s")
    print(f"peak RSS (supervisor + workers): {peak:.0f} MB")
    print(f"service alive at the end: {alive}; exit status after SIGTERM: {status}")
    print(f"tracebacks in the server log: {text.count('Traceback')}")
    if "Traceback" in text:
        at = text.index("Traceback")
        print(text[at : at + 2000])
    shutil.rmtree(tmp, ignore_errors=True)
    return 1 if five or not alive or run.longest_gap > 5 else 0


if __name__ == "__main__":
    sys.exit(main())
