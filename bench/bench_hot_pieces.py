"""The native engines' hot pieces (service/bpe/csrc/hot_pieces.h): their hit rate and what they
buy, measured side by side in one process.

For each tokenizer and corpus: the hit rate of the second half of the corpus after the first
(encode and count; counts of look-ups, not timings), then MB/s of CPU time with the tables off
and at the size asked, alternating rounds (best of them), in three regimes: cold (a new engine
reads the corpus), warm (a new engine reads the first half, the second is timed) and again (the
same engine reads the corpus a second time).

    python -m bench.bench_hot_pieces
    python -m bench.bench_hot_pieces --only cl100k_base --corpora en_shakespeare --rounds 8
    python -m bench.bench_hot_pieces --bytes 524288
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable
from pathlib import Path

from service.bpe.engine import native
from service.runtime import engine_factory
from service.settings import BUNDLED_STORE, Settings
from service.store.loader import load_store

ROOT = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("TOKSVC_SHARED", ROOT.parent / "shared"))
CORPORA = "en_shakespeare,code_python,zh_manpages,ja_debian_reference,hi_devanagari"


def engine(name: str, hot: int) -> object:
    native.configure_hot_pieces(hot)
    return (
        load_store(BUNDLED_STORE, engine_factory("auto"), only=name).resolve(name).tokenizer.engine
    )


def hit_rate(name: str, text: str, hot: int, read: str) -> float:
    call = getattr(engine(name, hot), read)
    call(text[: len(text) // 2])
    before = native.hot_pieces_stats()
    call(text[len(text) // 2 :])
    after = native.hot_pieces_stats()
    hits, misses = (after[k] - before[k] for k in ("hits", "misses"))
    return hits / max(1, hits + misses)


def seconds(run: Callable[[str], object], text: str) -> float:
    start = time.process_time()
    run(text)
    return time.process_time() - start


def regimes(name: str, text: str, hot: int) -> dict[str, float]:
    """Seconds per MB in each regime, one pass each, with new engines."""
    half = text[len(text) // 2 :]
    per_mb = {"cold": len(text.encode()) / 1e6, "warm": len(half.encode()) / 1e6}
    cold = engine(name, hot).encode_ordinary  # type: ignore[attr-defined]
    out = {
        "cold": seconds(cold, text) / per_mb["cold"],
        "again": seconds(cold, text) / per_mb["cold"],
    }
    warm = engine(name, hot).encode_ordinary  # type: ignore[attr-defined]
    warm(text[: len(text) // 2])
    out["warm"] = seconds(warm, half) / per_mb["warm"]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--only", default="cl100k_base,o200k_base")
    ap.add_argument("--corpora", default=CORPORA)
    ap.add_argument("--bytes", type=int, default=Settings().hot_piece_bytes)
    ap.add_argument("--rounds", type=int, default=6)
    args = ap.parse_args()
    native.configure_piece_cache(0)
    print(
        f"hot pieces at {args.bytes} bytes a table; MB/s off -> on (x on/off), best of {args.rounds}"
    )
    for name in args.only.split(","):
        for corpus in args.corpora.split(","):
            text = (SHARED / "corpus" / f"{corpus}.txt").read_text("utf-8")
            rates = [
                hit_rate(name, text, args.bytes, r) for r in ("encode_ordinary", "count_ordinary")
            ]
            best: dict[tuple[int, str], float] = {}
            for r in range(args.rounds):
                for hot in (0, args.bytes) if r % 2 == 0 else (args.bytes, 0):
                    for regime, s in regimes(name, text, hot).items():
                        best[hot, regime] = min(best.get((hot, regime), s), s)
            cells = [
                f"{k} {1 / best[0, k]:5.1f} -> {1 / best[args.bytes, k]:5.1f} "
                f"({best[0, k] / best[args.bytes, k]:.2f}x)"
                for k in ("cold", "warm", "again")
            ]
            print(
                f"{name:12} {corpus:20} hit rate {rates[0]:.3f} (count {rates[1]:.3f}) | "
                + " | ".join(cells),
                flush=True,
            )
    native.configure_hot_pieces(Settings().hot_piece_bytes)


if __name__ == "__main__":
    main()
