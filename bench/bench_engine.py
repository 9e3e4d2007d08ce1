"""Engine benchmark: the project's engine side by side with the fastest exact engines one can
install (bench/support/peers.py: fastokens, gigatoken, quicktok-v1, splintr-rs, bpe-openai, riptoken,
tiktoken, HF tokenizers), in two regimes:

- cold: every engine newly built (ours: a new engine and an empty piece cache) reads a corpus it
  has never seen;
- warm: every engine newly built reads the first half of the corpus, then the second half is timed
  (new text from the same documents, as a service sees after a minute of traffic).

Prints tables and writes JSON (--out) and a bar chart (--chart). Every figure of one run is measured
on the same machine in the same process, so the ratios are what to read, not the absolute MB/s.
Times are CPU seconds of this process (time.process_time; every engine timed runs in the calling
thread), which other load on a shared machine disturbs far less than wall time; best of --repeat
repetitions, each with new engines. A peer that is not installed is left out with a note.

    python -m bench.bench_engine                    # everything (10-20 minutes)
    python -m bench.bench_engine --quick            # cl100k and o200k, three corpora
    python -m bench.bench_engine --startup          # only start-up time and RSS (5 processes)
    python -m bench.bench_engine --worst            # only the worst-case table
    python -m bench.bench_engine --memory           # only each engine's memory under new text

Memory under new text: each engine (cl100k_base), alone in a new process, reads 2 million random
words (every piece new, as a service meets ids, keys and foreign text); its RSS growth after half
and after all of them tells a bounded cache (flat) from one that keeps every piece it saw. The
goal is read against the fastest peer of either kind, and against the fastest bounded one: a
service's cache must be bounded (issue 22), so a peer whose speed comes from an unbounded one is
shown but marked.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import random
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import msgspec
from tiktoken.load import load_tiktoken_bpe

from bench.support.peers import PACKAGES, TIKTOKEN_FILES, Encoder, Maker, available, makers
from bench.support.texts import worst_cases
from service.bpe.engine import native
from service.bpe.engine.text_cache import TextCache
from service.runtime import engine_factory
from service.settings import BUNDLED_STORE, Settings
from service.store.builder import build
from service.store.formats.tokenizer import parse
from service.store.manifest import read_manifest
from service.store.registry import LoadedTokenizer

ROOT = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("TOKSVC_SHARED", ROOT.parent / "shared"))
NAMES = list(TIKTOKEN_FILES)
PIECE_CACHE = Settings().piece_cache_bytes  # the service's default (0: off)
HOT_PIECES = Settings().hot_piece_bytes  # the service's default, per engine


def fresh(name: str, engine: str = "auto") -> LoadedTokenizer:
    """A newly built tokenizer: new engine, empty text cache."""
    store = BUNDLED_STORE
    entry = next(e for e in read_manifest(store).tokenizers if e.name == name and e.default)
    tf = parse((store / entry.path).read_bytes())
    return build(entry, tf, engine_factory(engine), TextCache(64 << 20))  # type: ignore[arg-type]


def ours(name: str, hot_bytes: int = HOT_PIECES) -> Maker:
    """Our engine, newly built (its table of hot pieces empty, `hot_bytes`; 0: none), with the
    service's default piece cache, empty."""

    def make() -> Encoder:
        native.configure_piece_cache(0)
        native.configure_piece_cache(PIECE_CACHE)
        native.configure_hot_pieces(hot_bytes)
        return fresh(name).tokenizer.encode_ordinary

    return make


def ranks_of(name: str) -> dict[bytes, int]:
    if TIKTOKEN_FILES[name]:
        return load_tiktoken_bpe(str(SHARED / "vocab" / f"{TIKTOKEN_FILES[name]}.tiktoken"))
    # a trained, self-consistent `pairs` tokenizer: tiktoken's rule gives the same ids
    return {data: tid for tid, data in fresh(name, "python").tokenizer.vocab.items()}


def engines(name: str, check: str) -> dict[str, Maker]:
    """Ours (as the service runs it, and without hot pieces) and every installed peer exact on
    `check`."""
    pattern = fresh(name, "python").pattern or ""
    mine = {"ours": ours(name), "ours (no hot pieces)": ours(name, 0)}
    want = mine["ours"]()(check)
    return mine | available(
        name, makers(name, pattern, ranks_of(name), SHARED / "vocab"), check, want
    )


def seconds(fn: Callable[[], object], repeat: int) -> float:
    """Best of `repeat` runs, CPU seconds (the least disturbed by other load on a shared machine)."""
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        fn()
        best = min(best, time.process_time() - start)
    return best


def timed_once(make: Maker, text: str, before: str) -> float:
    """CPU seconds of one call on `text` by a new engine that has read `before` (untimed)."""
    encode = make()
    if before:
        encode(before)
    start = time.process_time()
    encode(text)
    return time.process_time() - start


UNIQUE_WORDS = 2_000_000
GROWS = 16.0  # MB of RSS a reader may add over the second million new words and still be bounded


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1e6


def memory_of(key: str, name: str = "cl100k_base") -> dict[str, float]:
    """In this process (a new one): RSS growth of engine `key` after half and all of
    UNIQUE_WORDS random words, read 200,000 at a time."""
    pattern = fresh(name, "python").pattern or ""
    make = (
        ours(name)
        if key == "ours"
        else makers(name, pattern, ranks_of(name), SHARED / "vocab")[key]
    )
    encode = make()
    encode("warm up")
    rng = random.Random(1)
    start, half = rss_mb(), 0.0
    for chunk in range(UNIQUE_WORDS // 200_000):
        encode(
            " ".join(
                "".join(rng.choices("abcdefghijklmnopqrstuvwxyz", k=rng.randint(3, 12)))
                for _ in range(200_000)
            )
        )
        if chunk == UNIQUE_WORDS // 400_000 - 1:
            half = rss_mb() - start
    return {"half": round(half, 1), "all": round(rss_mb() - start, 1)}


def bench_memory(keys: list[str]) -> dict[str, dict[str, object]]:
    """memory_of each engine, each in a process of its own; `bounded`: the second half of the
    words added at most GROWS MB."""
    out: dict[str, dict[str, object]] = {}
    print(f"\nRSS growth (MB) over {UNIQUE_WORDS:,} random words, cl100k_base, a process each")
    for key in keys:
        run = subprocess.run(
            [sys.executable, "-m", "bench.bench_engine", "--memory-of", key],
            cwd=ROOT,
            check=False,
            capture_output=True,
            text=True,
            timeout=900,
        )
        if run.returncode:
            print(f"note: {key}: no memory figure ({run.stderr.strip()[-120:]})")
            continue
        grew: dict[str, object] = msgspec.json.decode(run.stdout.strip().splitlines()[-1])
        grew["bounded"] = float(grew["all"]) - float(grew["half"]) <= GROWS  # type: ignore[arg-type]
        out[key] = grew
        kind = "bounded" if grew["bounded"] else "grows with every new piece"
        print(f"{key:22} after half {grew['half']:>7} after all {grew['all']:>7}  {kind}")
    return out


def memory_keys(name: str = "cl100k_base") -> list[str]:
    """Ours and every installed peer of `name`."""
    pattern = fresh(name, "python").pattern or ""
    found = makers(name, pattern, {}, SHARED / "vocab")
    return ["ours"] + [k for k in found if importlib.util.find_spec(PACKAGES[k][1]) is not None]


def bench_corpora(
    names: list[str], corpora: list[Path], repeat: int, unbounded: frozenset[str] | None = None
) -> list[dict[str, object]]:
    """A row per tokenizer, corpus and regime: MB/s of each engine, and ours over the fastest
    peer and (when `unbounded` names the peers whose memory grows with every new piece) over the
    fastest of the others."""
    rows = []
    for name in names:
        check = "".join(c.read_text("utf-8")[:20_000] for c in corpora)
        makers_ = engines(name, check)
        for corpus in corpora:
            text = corpus.read_text("utf-8")
            half = len(text) // 2
            for regime, before, timed in (("cold", "", text), ("warm", text[:half], text[half:])):
                mb = len(timed.encode()) / 1e6
                best: dict[str, float] = {}
                order = list(makers_.items())
                for rep in range(repeat):  # every repetition builds every engine anew, and
                    # starts one engine later, so that no engine is always first or last
                    for key, make in order[rep % len(order) :] + order[: rep % len(order)]:
                        t = timed_once(make, timed, before)
                        best[key] = min(best.get(key, float("inf")), t)
                row: dict[str, object] = {
                    "tokenizer": name,
                    "corpus": corpus.stem,
                    "regime": regime,
                    "mb": round(mb, 3),
                }
                row |= {key: mb / t for key, t in best.items()}
                peers_ = {k: v for k, v in row.items() if k in makers_ and not k.startswith("ours")}
                kinds = [("fastest", peers_)]
                if unbounded is not None:
                    kinds.append(
                        ("bounded", {k: v for k, v in peers_.items() if k not in unbounded})
                    )
                for label, among in kinds:
                    if among:
                        top = max(among, key=lambda k: float(among[k]))  # type: ignore[arg-type]
                        row[f"{label}_peer"] = top
                        row[f"ours_vs_{label}"] = float(row["ours"]) / float(among[top])  # type: ignore[arg-type]
                rows.append(row)
                print(_fmt_row(row, list(makers_)), flush=True)
    return rows


def _fmt_row(row: dict[str, object], keys: list[str]) -> str:
    cells = [f"{row['tokenizer']:<12}", f"{row['corpus']:<20}", f"{row['regime']:<5}"]
    cells += [f"{k}={float(row[k]):.1f}" for k in keys if k in row]  # type: ignore[arg-type]
    for label in ("fastest", "bounded"):
        if f"ours_vs_{label}" in row:
            cells.append(f"ours/{row[f'{label}_peer']}={float(row[f'ours_vs_{label}']):.2f}x")  # type: ignore[arg-type]
    return " ".join(cells)


def chat_conversations(corpora: list[Path], per_conversation: int = 50) -> list[list[str]]:
    """Conversations of real paragraphs (several languages), one message per paragraph."""
    conversations = []
    for corpus in corpora:
        paragraphs = [p for p in corpus.read_text("utf-8").split("\n\n") if 40 < len(p) < 4000]
        rng = random.Random(corpus.stem)
        start = rng.randrange(max(1, len(paragraphs) - per_conversation))
        conversations.append(paragraphs[start : start + per_conversation])
    return conversations


def bench_chat(corpora: list[Path]) -> dict[str, object]:
    """Billing estimation: every request counts the whole history so far, message by message."""
    conversations = chat_conversations(corpora)
    tok = fresh("cl100k_base").tokenizer
    tt = makers(
        "cl100k_base",
        fresh("cl100k_base", "python").pattern or "",
        ranks_of("cl100k_base"),
        SHARED / "vocab",
    )["tiktoken"]()
    requests = [conv[:k] for conv in conversations for k in range(1, len(conv) + 1)]

    def ours() -> int:
        return sum(tok.count(m, disallowed_special=()) for req in requests for m in req)

    def theirs() -> int:
        return sum(len(tt(m)) for req in requests for m in req)

    start = time.perf_counter()
    tokens = ours()
    t_ours = time.perf_counter() - start
    start = time.perf_counter()
    assert theirs() == tokens
    t_tt = time.perf_counter() - start
    result = {
        "requests": len(requests),
        "tokens": tokens,
        "ours_tokens_per_s": tokens / t_ours,
        "tiktoken_tokens_per_s": tokens / t_tt,
        "ratio": t_tt / t_ours,
    }
    print(
        f"\nchat replay: {len(requests)} requests, {tokens:,} tokens counted: ours "
        f"{tokens / t_ours:,.0f} tokens/s, tiktoken {tokens / t_tt:,.0f} tokens/s, "
        f"ratio {t_tt / t_ours:.1f}x"
    )
    return result


def bench_worst(prose: str) -> list[dict[str, object]]:
    """1 MB texts that make BPE engines slow, on cl100k; then tiktoken's crash input on r50k.
    Cold: each timed text is new to a newly built engine (ours: an empty piece cache)."""
    rows = []
    cases = worst_cases(prose, (SHARED / "corpus" / "code_python.txt").read_text("utf-8"))
    makers_ = engines("cl100k_base", prose[:50_000])
    base: dict[str, float] = {}
    print(
        f"\n{'worst case (cl100k_base, 1 MB)':<28} "
        + " ".join(f"{k + ' s/MB':>16} {'x prose':>8}" for k in makers_)
    )
    for label, text in [*cases.items(), ("1,000,000 '^' (r50k)", "^" * 1_000_000)]:
        if label.endswith("(r50k)"):
            pattern = fresh("gpt2", "python").pattern or ""
            makers_ = {
                "ours": ours("gpt2"),
                "tiktoken": makers("gpt2", pattern, ranks_of("gpt2"), SHARED / "vocab")["tiktoken"],
            }
        mb = len(text.encode()) / 1e6
        row: dict[str, object] = {"case": label, "mb": round(mb, 3)}
        cells = []
        for key, make in makers_.items():
            try:  # best of 3, each by a new engine
                per_mb = min(timed_once(make, text, "") for _ in range(3)) / mb
            except Exception as exc:  # tiktoken's regex gives up on some inputs
                row[f"{key}_error"] = str(exc)[:80]
                cells.append(f"{'error':>16} {'-':>8}")
                continue
            base.setdefault(key, per_mb)
            row[f"{key}_s_per_mb"] = per_mb
            row[f"{key}_x_prose"] = per_mb / base[key]
            cells.append(f"{per_mb:>16.3f} {per_mb / base[key]:>8.2f}")
        rows.append(row)
        print(f"{label:<28} " + " ".join(cells), flush=True)
    return rows


def bench_startup(runs: int = 5) -> dict[str, float]:
    """New processes load and verify every shipped tokenizer, as a worker does at start-up: wall
    and CPU seconds from the first import (medians of `runs`), RSS after loading and its peak."""
    # (ru_maxrss would carry the forking parent's peak across exec; /proc's VmHWM does not)
    code = (
        "import time; t = time.perf_counter();"
        "from service.settings import Settings; from service.runtime import load_registry;"
        "r = load_registry(Settings(), first_use=False); assert not r.failures;"
        "s = dict(l.split(':', 1) for l in open('/proc/self/status'));"
        "print(time.perf_counter() - t, time.process_time(), r.load_seconds, len(r),"
        " int(s['VmRSS'].split()[0]) / 1024, int(s['VmHWM'].split()[0]) / 1024)"
    )
    samples = []
    for _ in range(runs):
        out = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True
        )
        samples.append([float(x) for x in out.stdout.split()])
    total, cpu, load, n, rss, peak = (statistics.median(col) for col in zip(*samples, strict=True))
    result = {
        "tokenizers": int(n),
        "startup_s": total,
        "startup_cpu_s": cpu,
        "load_s": load,
        "rss_mb": rss,
        "peak_rss_mb": peak,
        "runs": runs,
    }
    print(
        f"\nstart-up (median of {runs} new processes): {int(n)} tokenizers loaded and verified in "
        f"{total:.2f} s wall, {cpu:.2f} s CPU (store load {load:.2f} s wall), "
        f"RSS {rss:.0f} MB (peak {peak:.0f} MB); load average {os.getloadavg()[0]:.1f}"
    )
    return result


def chart(rows: list[dict[str, object]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = sorted({str(r["tokenizer"]) for r in rows}, key=NAMES.index)
    fig, axes = plt.subplots(len(names), 2, figsize=(16, 3.2 * len(names)), squeeze=False)
    for row_axes, name in zip(axes, names, strict=True):
        for ax, regime in zip(row_axes, ("cold", "warm"), strict=True):
            mine = [r for r in rows if r["tokenizer"] == name and r["regime"] == regime]
            skip = {
                "tokenizer",
                "corpus",
                "regime",
                "mb",
                "fastest_peer",
                "ours_vs_fastest",
                "bounded_peer",
                "ours_vs_bounded",
            }
            series = [k for k in mine[0] if k not in skip]
            width = 0.8 / len(series)
            for i, s in enumerate(series):
                ax.bar(
                    [x + i * width for x in range(len(mine))],
                    [float(r.get(s, 0.0)) for r in mine],
                    width,
                    label=s,
                )  # type: ignore[arg-type]
            ax.set_xticks(
                [x + 0.4 - width / 2 for x in range(len(mine))],
                [str(r["corpus"]) for r in mine],
                fontsize=7,
            )
            ax.set_ylabel("MB/s")
            ax.set_title(
                f"{name}, {regime}: encode MB/s of CPU time, loaded machine (higher is better)",
                fontsize=9,
            )
            ax.legend(fontsize=6, ncol=3)
    fig.tight_layout()
    fig.savefig(path, dpi=70)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--startup", action="store_true", help="only the start-up figures")
    parser.add_argument("--worst", action="store_true", help="only the worst-case table")
    parser.add_argument("--memory", action="store_true", help="only the memory under new text")
    parser.add_argument("--memory-of", help=argparse.SUPPRESS)  # one engine, in its own process
    parser.add_argument("--repeat", type=int, default=3, help="repetitions (new engines each)")
    parser.add_argument(
        "--out", type=Path, default=ROOT / "bench" / "results" / "bench_engine.json"
    )
    parser.add_argument("--chart", type=Path, default=ROOT / "docs" / "bench_engine.png")
    args = parser.parse_args()
    if args.memory_of:
        print(msgspec.json.encode(memory_of(args.memory_of)).decode())
        return
    if args.memory:
        bench_memory(memory_keys())
        return
    if args.startup:
        bench_startup()
        return
    if args.worst:
        bench_worst((SHARED / "corpus" / "en_shakespeare.txt").read_text("utf-8"))
        return
    corpora = sorted((SHARED / "corpus").glob("*.txt"))
    names = NAMES
    if args.quick:
        names = ["cl100k_base", "o200k_base"]
        corpora = [c for c in corpora if c.stem in ("en_shakespeare", "code_python", "zh_manpages")]
    print(
        "MB/s of CPU time, best of the repetitions (each with engines built anew); "
        "ours/X = ours over the fastest exact peer (above 1 = ours faster)"
    )
    memory = {} if args.quick else bench_memory(memory_keys())
    unbounded = frozenset(k for k, m in memory.items() if not m["bounded"]) if memory else None
    rows = bench_corpora(names, corpora, args.repeat, unbounded)
    for name in names:
        for regime in ("cold", "warm"):
            for label, what in (("fastest", "exact peer"), ("bounded", "bounded exact peer")):
                vals = [
                    float(r[f"ours_vs_{label}"])
                    for r in rows  # type: ignore[arg-type]
                    if r["tokenizer"] == name and r["regime"] == regime and f"ours_vs_{label}" in r
                ]
                if vals:
                    print(
                        f"{name} {regime}: ours vs the fastest {what} min {min(vals):.2f}x "
                        f"median {statistics.median(vals):.2f}x"
                    )
    if args.quick:
        return
    results = {
        "corpora": rows,
        "memory": memory,
        "chat": bench_chat(sorted((SHARED / "corpus").glob("*.txt"))),
        "worst": bench_worst((SHARED / "corpus" / "en_shakespeare.txt").read_text("utf-8")),
        "startup": bench_startup(),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_bytes(msgspec.json.format(msgspec.json.encode(results)))
    chart(rows, args.chart)
    print(f"\nwrote {args.out} and {args.chart}")


if __name__ == "__main__":
    main()
