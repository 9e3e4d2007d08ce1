"""The cost of a piece an engine has never seen, ours beside the peers: what the warm regime of
`bench_engine.py` pays for on every piece its first half did not have.

The distinct word pieces of a corpus (a letter run, with its leading space if any: ` ?\\p{L}+`),
either those that are one token (`--kind one`) or those that are several (`--kind multi`), each
once, one to a line. Every round builds a new engine of each kind (ours as `bench_engine.py` builds
it, with and without hot pieces, the peers as `peers.py` does), lets it read 200,000 characters
of other text (so that what is timed is no engine's first call), then times one read of the
pieces; the figure is the median over the rounds of CPU nanoseconds per piece (the line feed
between pieces included). The engines take turns within a round.

    python -m bench.bench_new_pieces                      # cl100k, Shakespeare, both kinds
    python -m bench.bench_new_pieces --names o200k_base --corpora zh_manpages --rounds 9
    python -m bench.bench_new_pieces --reread     # ours alone: first read, second, evicted

--reread shows where a new piece's time goes: one engine of ours (no hot pieces, so nothing is
kept from call to call) counts each eighth of the pieces three times: once new, once again, and
once more after 128 MB have been written elsewhere (which evicts the core's caches). If the
third read is as slow as the first, a new piece waits for memory, not for work.
"""

from __future__ import annotations

import argparse
import statistics
import time

import regex

from bench.bench_engine import SHARED, ours, ranks_of
from bench.bench_engine import fresh as fresh_tokenizer
from bench.support.peers import Maker, makers
from service.bpe.engine import native

WORD = regex.compile(r" ?\p{L}+")
OTHER = "mixed_emoji_test"  # what every engine reads before the timed call


def new_pieces(pattern: str, ranks: dict[bytes, int], text: str, kind: str) -> list[str]:
    """The distinct word pieces of `text`, in the order they first appear, that are one token
    (`one`) or several (`multi`)."""
    pieces = dict.fromkeys(regex.findall(pattern, text))
    return [p for p in pieces if WORD.fullmatch(p) and (p.encode() in ranks) == (kind == "one")]


def ns_per_piece(engines: dict[str, Maker], text: str, count: int, rounds: int) -> dict[str, float]:
    other = (SHARED / "corpus" / f"{OTHER}.txt").read_text("utf-8")[:200_000]
    times: dict[str, list[float]] = {key: [] for key in engines}
    for r in range(rounds):
        order = list(engines) if r % 2 == 0 else list(reversed(engines))
        for key in order:
            encode = engines[key]()
            encode(other)
            start = time.process_time()
            encode(text)
            times[key].append(time.process_time() - start)
    return {key: statistics.median(t) / count * 1e9 for key, t in times.items()}


def reread(name: str, pieces: list[str]) -> str:
    """Medians over eighths of `pieces` of ns per piece: first read, second, after eviction."""
    engine = fresh_tokenizer(name).tokenizer.engine
    engine.count_ordinary((SHARED / "corpus" / f"{OTHER}.txt").read_text("utf-8")[:200_000])
    junk = bytearray(128 << 20)
    reads: list[list[float]] = [[], [], []]
    for part in range(8):
        chunk = "\n".join(pieces[part::8])
        for i in range(3):
            if i == 2:
                junk[::64] = b"\x01" * (len(junk) // 64)
            start = time.process_time()
            engine.count_ordinary(chunk)
            reads[i].append((time.process_time() - start) / len(pieces[part::8]) * 1e9)
    first, second, evicted = (statistics.median(r) for r in reads)
    return f"first {first:.0f}, second {second:.0f}, after eviction {evicted:.0f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--names", default="cl100k_base")
    ap.add_argument("--corpora", default="en_shakespeare")
    ap.add_argument("--kinds", default="one,multi")
    ap.add_argument("--peers", default="gigatoken,fastokens,quicktok-v1")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--reread", action="store_true", help="ours alone, each piece read 3 times")
    args = ap.parse_args()
    for name in args.names.split(","):
        pattern = fresh_tokenizer(name, "python").pattern or ""
        ranks = ranks_of(name)
        theirs = makers(name, pattern, ranks, SHARED / "vocab")
        engines = {"ours": ours(name), "ours (no hot pieces)": ours(name, 0)}
        engines |= {p: theirs[p] for p in args.peers.split(",") if p in theirs}
        for corpus in args.corpora.split(","):
            text = (SHARED / "corpus" / f"{corpus}.txt").read_text("utf-8")
            for kind in args.kinds.split(","):
                pieces = new_pieces(pattern, ranks, text, kind)
                if args.reread:
                    native.configure_hot_pieces(0)
                    print(
                        f"{name} {corpus} {kind}, ours without hot pieces, ns per piece: "
                        f"{reread(name, pieces)}",
                        flush=True,
                    )
                    continue
                joined = "\n".join(pieces)
                # one to a line, every piece is cut as it was in the corpus
                assert [p for p in regex.findall(pattern, joined) if p != "\n"] == pieces
                want = engines["ours"]()(joined)
                for key, make in engines.items():  # every engine exact on what it is timed on
                    assert make()(joined) == want, f"{key} differs on {name} {corpus} {kind}"
                figures = ns_per_piece(engines, joined, len(pieces), args.rounds)
                mean = sum(len(p.encode()) for p in pieces) / len(pieces)
                cells = "  ".join(f"{key} {ns:.0f}" for key, ns in figures.items())
                print(
                    f"{name} {corpus} {kind} ({len(pieces)} pieces, {mean:.1f} bytes): "
                    f"ns per piece: {cells}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
