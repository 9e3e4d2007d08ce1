"""The Python client's overhead over raw httpx: counting a 2 KB text, one request at a time.

    python -m bench.bench_client [--url http://127.0.0.1:8000] [--rounds 7] [--requests 300]

Without --url it starts `toksvc serve` (one worker) on a free port and stops it after. Raw httpx
is what a caller writes by hand: a pooled `httpx.Client`, `post(json=...)`, `.json()["count"]`.
The client is `Client(...).encoding("cl100k_base").count(text)` (its policy check, msgspec bodies,
the problem handling and the whole-answer deadline included). The two alternate, round by round,
so both see the same machine; prints the median microseconds per request of each and their ratio
(the goal: at most 1.3).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "clients" / "python"))

from toksvc_client import Client

from tests.support.serving import start, stop
from tests.support.testdata import corpus_text


def two_kb() -> str:
    text = corpus_text("en_python_docs.txt")
    return text.encode()[:2048].decode("utf-8", "ignore")


def per_request(fn: Callable[[], int], n: int) -> float:
    started = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - started) / n * 1e6


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", help="a running server (default: start one)")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--requests", type=int, default=300)
    args = parser.parse_args()
    server = None if args.url else start(workers=1, seconds=90)
    base = args.url or (server.base if server else "")
    text = two_kb()
    try:
        raw = httpx.Client(base_url=base, timeout=10)
        client = Client(base, timeout=10)
        enc = client.encoding("cl100k_base")
        path = "/v1/tokenizers/cl100k_base@1/count"

        def by_hand() -> int:
            return int(raw.post(path, json={"text": text}).json()["count"])

        def by_client() -> int:
            return enc.count(text)

        assert by_hand() == by_client()
        for fn in (by_hand, by_client):  # warm both
            per_request(fn, 50)
        hand, ours = [], []
        for _ in range(args.rounds):
            hand.append(per_request(by_hand, args.requests))
            ours.append(per_request(by_client, args.requests))
        raw.close()
        client.close()
    finally:
        if server is not None:
            stop(server)
    h, c = statistics.median(hand), statistics.median(ours)
    print(
        f"count of {len(text.encode())} bytes, {args.rounds} rounds x {args.requests} "
        f"requests, one at a time"
    )
    print(f"  raw httpx     {h:8.0f} us/request (median of rounds)")
    print(f"  toksvc_client {c:8.0f} us/request (median of rounds)")
    print(f"  ratio         {c / h:8.2f}  (goal: at most 1.3)")


if __name__ == "__main__":
    main()
