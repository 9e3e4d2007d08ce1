"""The native engine alone (piece cache off) on three corpora, for an A/B of two builds: run it in
each checkout in turn, several rounds, and compare the best MB/s per cell (CPU time of this
process, best of 3 passes), so a machine loaded by other work skews both sides alike.

    for i in 1 2 3 4 5; do for d in ../main ../branch; do (cd $d && python loadtests/bench_engine_ab.py $d); done; done
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from service.bpe import native
from service.runtime import engine_factory
from service.settings import BUNDLED_STORE
from service.store.registry import load_store

ROOT = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("TOKSVC_SHARED", ROOT.parent / "shared"))


def main() -> None:
    native.configure_piece_cache(0)
    cells = []
    for name in ("cl100k_base", "o200k_base", "qwen2"):
        tok = load_store(BUNDLED_STORE, engine_factory("auto"), only=name).resolve(name).tokenizer
        encode = tok.engine.encode_ordinary
        for corpus in ("en_shakespeare", "code_python", "zh_manpages"):
            text = (SHARED / "corpus" / f"{corpus}.txt").read_text("utf-8")
            best = float("inf")
            for _ in range(3):
                started = time.process_time()
                encode(text)
                best = min(best, time.process_time() - started)
            cells.append(f"{name}/{corpus}={len(text.encode()) / 1e6 / best:.1f}")
    print(sys.argv[1] if len(sys.argv) > 1 else "", " ".join(cells))


if __name__ == "__main__":
    main()
