"""The native engine alone on three corpora, for an A/B of two builds: run it in each checkout in
turn, several rounds, and compare the best MB/s per cell (CPU time of this process, best of 3
passes), so a machine loaded by other work skews both sides alike.

Without --cache-mb the piece cache is off and each cell is one pass over the corpus. With
--cache-mb N each cell is three figures with a piece cache of N MiB made anew: cold (a new engine
reads the corpus), warm (a new engine reads the first half, the second half is timed) and again
(the third read of the corpus by one engine: every piece it keeps is kept by then).

    for i in 1 2 3 4 5; do for d in ../main ../branch; do (cd $d && python -m bench.bench_engine_ab $d); done; done
    python -m bench.bench_engine_ab main --cache-mb 32 --only cl100k_base
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
Encode = Callable[[str], list[int]]


def new_engine(name: str) -> Encode:
    registry = load_store(BUNDLED_STORE, engine_factory("auto"), only=name)
    return registry.resolve(name).tokenizer.engine.encode_ordinary


def best_mb_s(text: str, run: Callable[[], float]) -> float:
    return len(text.encode()) / 1e6 / min(run() for _ in range(3))


def timed(encode: Encode, text: str) -> float:
    started = time.process_time()
    encode(text)
    return time.process_time() - started


def cached_cell(name: str, text: str, nbytes: int) -> str:
    def fresh() -> Encode:
        native.configure_piece_cache(0)
        native.configure_piece_cache(nbytes)
        return new_engine(name)

    def warm() -> float:
        encode = fresh()
        encode(text[: len(text) // 2])
        return timed(encode, text[len(text) // 2 :])

    def again() -> float:
        encode = fresh()
        encode(text)
        encode(text)
        return timed(encode, text)

    half = text[len(text) // 2 :]
    cold = best_mb_s(text, lambda: timed(fresh(), text))
    return f"{cold:.1f}/{best_mb_s(half, warm):.1f}/{best_mb_s(text, again):.1f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("label", nargs="?", default="")
    ap.add_argument("--cache-mb", type=int, default=0, help="cold/warm/again with this piece cache")
    ap.add_argument("--only", default="cl100k_base,o200k_base,qwen2")
    args = ap.parse_args()
    native.configure_piece_cache(0)
    native.configure_hot_pieces(Settings().hot_piece_bytes)
    cells = []
    for name in args.only.split(","):
        encode = new_engine(name)
        for corpus in ("en_shakespeare", "code_python", "zh_manpages"):
            text = (SHARED / "corpus" / f"{corpus}.txt").read_text("utf-8")
            if args.cache_mb:
                cell = cached_cell(name, text, args.cache_mb << 20)
            else:
                cell = f"{best_mb_s(text, lambda: timed(encode, text)):.1f}"
            cells.append(f"{name}/{corpus}={cell}")
    print(args.label, " ".join(cells), flush=True)


if __name__ == "__main__":
    main()
