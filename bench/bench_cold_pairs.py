"""Cold, side by side in one process: ours against one peer, a ratio per round.

Each round builds a new engine of each (ours as `bench_engine.py` builds it, the peer as
`peers.py` does) and lets it read a whole corpus once, the order alternating between rounds; the
figure is the median over the rounds of the peer's CPU time over ours within one round (above 1:
ours faster). A shared machine moves single passes by 10-40%, and the full run's cells are one
sample each; a ratio within a round cancels most of that.

    python -m bench.bench_cold_pairs                       # zh and ja, quicktok-v1, 8 rounds
    python -m bench.bench_cold_pairs --peer fastokens --corpora en_shakespeare --rounds 4
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

from bench.bench_engine import SHARED, ours, ranks_of
from bench.bench_engine import fresh as fresh_tokenizer
from bench.support.peers import makers


def cpu_seconds(encode: Callable[[str], object], text: str) -> float:
    start = time.process_time()
    encode(text)
    return time.process_time() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--names", default="cl100k_base,o200k_base")
    ap.add_argument("--corpora", default="zh_manpages,ja_debian_reference")
    ap.add_argument("--peer", default="quicktok-v1")
    ap.add_argument("--rounds", type=int, default=8)
    args = ap.parse_args()
    for name in args.names.split(","):
        pattern = fresh_tokenizer(name, "python").pattern or ""
        peer = makers(name, pattern, ranks_of(name), SHARED / "vocab")[args.peer]
        make = {"ours": ours(name), args.peer: peer}
        for corpus in args.corpora.split(","):
            text = (SHARED / "corpus" / f"{corpus}.txt").read_text("utf-8")
            ratios = []
            for r in range(args.rounds):
                order = ("ours", args.peer) if r % 2 == 0 else (args.peer, "ours")
                took = {key: cpu_seconds(make[key](), text) for key in order}
                ratios.append(took[args.peer] / took["ours"])
            print(
                f"{name:12} {corpus:20} ours over {args.peer}: median "
                f"{statistics.median(ratios):.2f}x (rounds {min(ratios):.2f}-{max(ratios):.2f}x)",
                flush=True,
            )


if __name__ == "__main__":
    main()
