"""A self-consistent `pairs` vocabulary under each merge rule: the native engine built from the
same vocabulary as `pairs` (merging every piece) and as `ranks` (a piece that is one token is
one look-up; the same ids, docs/format.md), in one process, interleaved, engines built anew each
round with hot pieces on (as served). Cold: a new engine reads the corpus; warm: a new engine
reads the first half, the second is timed. MB/s of CPU time, best of --rounds.

    python -m bench.bench_rules                  # qwen3
    python -m bench.bench_rules --only bard --rounds 6
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

from service.bpe.engine import native
from service.bpe.engine.native import NativeEngine
from service.runtime import engine_factory
from service.settings import BUNDLED_STORE, Settings
from service.store.loader import load_store

ROOT = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("TOKSVC_SHARED", ROOT.parent / "shared"))
CORPORA = "en_python_docs,en_shakespeare,code_python,zh_manpages,ja_debian_reference,hi_devanagari"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--only", default="qwen3")
    ap.add_argument("--corpora", default=CORPORA)
    ap.add_argument("--rounds", type=int, default=4)
    args = ap.parse_args()
    loaded = load_store(BUNDLED_STORE, engine_factory("python"), only=args.only).resolve(args.only)
    vocab, pattern = loaded.tokenizer.vocab, loaded.pattern
    if vocab.rule != "pairs" or not loaded.self_consistent:
        raise SystemExit(f"{args.only} is not a self-consistent pairs vocabulary")
    scanner = native.scanner_of(pattern)
    hot = Settings().hot_piece_bytes

    def engine(as_ranks: bool) -> NativeEngine:
        native.configure_hot_pieces(0)  # a new, empty table
        native.configure_hot_pieces(hot)
        return NativeEngine(vocab, pattern, scanner, as_ranks=as_ranks)

    print(f"{args.only}: MB/s under pairs -> ranks (x ranks/pairs), best of {args.rounds}")
    for corpus in args.corpora.split(","):
        text = (SHARED / "corpus" / f"{corpus}.txt").read_text("utf-8")
        half = len(text) // 2
        size = {"cold": len(text.encode()) / 1e6, "warm": len(text[half:].encode()) / 1e6}
        best: dict[tuple[bool, str], float] = {}
        for r in range(args.rounds):
            for as_ranks in (False, True) if r % 2 == 0 else (True, False):
                e = engine(as_ranks)
                start = time.process_time()
                e.encode_ordinary(text)
                cold = time.process_time() - start
                e = engine(as_ranks)
                e.encode_ordinary(text[:half])
                start = time.process_time()
                e.encode_ordinary(text[half:])
                warm = time.process_time() - start
                for regime, t in (("cold", cold), ("warm", warm)):
                    best[as_ranks, regime] = min(best.get((as_ranks, regime), t), t)
        cells = []
        for regime in ("cold", "warm"):
            pairs, ranks = (size[regime] / best[k, regime] for k in (False, True))
            cells.append(f"{regime} {pairs:6.1f} -> {ranks:6.1f} ({ranks / pairs:.2f}x)")
        print(f"{corpus:<20} " + "   ".join(cells), flush=True)


if __name__ == "__main__":
    main()
