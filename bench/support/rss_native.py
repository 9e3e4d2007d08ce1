"""RSS over many encodes of random 64 KB texts with the native engine (a leak shows as growth).

python -m bench.support.rss_native                 # 10,000 encodes (cl100k), RSS every 1,000
python -m bench.support.rss_native --n 2000
"""

from __future__ import annotations

import argparse
import random
import resource
import time
from pathlib import Path


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--name", default="cl100k_base")
    args = ap.parse_args()

    from service.runtime import engine_factory
    from service.settings import BUNDLED_STORE
    from service.store.loader import load_store

    engine = load_store(BUNDLED_STORE, engine_factory("auto"), only=args.name).resolve(args.name)
    encode, count = engine.tokenizer.engine.encode_ordinary, engine.tokenizer.engine.count_ordinary
    rng = random.Random(1)
    # mostly ASCII (so 10,000 texts take seconds, not minutes), every script up to U+3000 mixed in
    alphabet = [chr(c) for c in range(0x20, 0x3000)] + [chr(c) for c in range(0x20, 0x7F)] * 60
    alphabet += [" "] * 1500
    pool = ["".join(rng.choices(alphabet, k=32 * 1024)) for _ in range(32)]
    start, first = time.perf_counter(), None
    for i in range(args.n):
        text = f"{i} " + pool[i % len(pool)] + pool[(i * 7 + 3) % len(pool)]
        encode(text) if i % 2 else count(text)
        if i % 1000 == 0 or i == args.n - 1:
            first = first if first is not None else rss_mb()
            print(f"{i:>6} encodes: RSS {rss_mb():7.1f} MB")
    grown = rss_mb() - (first or 0)
    print(
        f"{args.n} encodes/counts of 64 KB random texts in {time.perf_counter() - start:.1f} s; "
        f"RSS grew {grown:+.1f} MB after the first"
    )


if __name__ == "__main__":
    main()
