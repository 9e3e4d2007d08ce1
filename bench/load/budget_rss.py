"""Peak RSS of one `toksvc serve` worker under the largest decodes its budget allows.

Starts `toksvc serve --workers 1` on 127.0.0.1 (the bundled store), then sends, 1 and then
`--concurrency` at once: the issue's attack (`{"ids": [<128 spaces>] * 1000000}`, refused now), and
the largest decode the output budget admits, both in 128-byte tokens and in short tokens (a million
ids). Prints the worker's idle RSS and the peak while each runs (sampled every 20 ms).

    python -m bench.load.budget_rss --concurrency 4
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

from tests.support import serving

T = "/v1/tokenizers/cl100k_base"


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def peak_during(pid: int, work: object, n: int) -> tuple[float, list[int]]:
    peak, done = 0.0, threading.Event()

    def sample() -> None:
        nonlocal peak
        while not done.is_set():
            peak = max(peak, rss_mb(pid))
            time.sleep(0.02)

    sampler = threading.Thread(target=sample)
    sampler.start()
    with ThreadPoolExecutor(n) as pool:
        codes = list(pool.map(lambda _: work(), range(n)))  # type: ignore[operator]
    done.set()
    sampler.join()
    return peak, codes


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--concurrency", type=int, default=4)
    args = parser.parse_args()
    server = serving.start(workers=1)
    base, proc = server.base, server.process
    try:
        limit = int(os.environ.get("TOKSVC_MAX_OUTPUT_BYTES", str(16 * 1024 * 1024)))
        spaces = httpx.post(f"{base}{T}/encode", json={"text": " " * 128}).json()["ids"][0]
        short = httpx.post(f"{base}{T}/encode", json={"text": "hello"}).json()["ids"][0]
        n_short = min(1_000_000, limit // 5)
        cases = {
            "attack: 1,000,000 x 128 spaces (128 MB)": [spaces] * 1_000_000,
            f"budget: {limit // 128:,} x 128 spaces": [spaces] * (limit // 128),
            f"budget: {n_short:,} x 'hello'": [short] * n_short,
        }
        print(f"idle worker RSS: {rss_mb(proc.pid):.0f} MB")
        for name, ids in cases.items():
            body = httpx.Request("POST", "/", json={"ids": ids}).content

            def work(body: bytes = body) -> int:
                r = httpx.post(
                    f"{base}{T}/decode",
                    content=body,
                    timeout=120,
                    headers={"content-type": "application/json"},
                )
                return r.status_code

            for n in (1, args.concurrency):
                before = rss_mb(proc.pid)
                peak, codes = peak_during(proc.pid, work, n)
                print(
                    f"{name}, {n} at once: statuses {sorted(set(codes))}, RSS {before:.0f} -> "
                    f"peak {peak:.0f} MB"
                )
    finally:
        serving.stop(server, 30)
    return 0


if __name__ == "__main__":
    sys.exit(main())
