"""Engine benchmark: the project's engine side by side with tiktoken, bpe-openai and HF tokenizers.

Prints tables and writes JSON (--out) and a bar chart (--chart). Every figure of one run is measured
on the same machine in the same process, so the ratios are what to read, not the absolute MB/s.
Times are CPU seconds of this process (time.process_time; every engine timed runs in the calling
thread), which other load on a shared machine disturbs far less than wall time. Every timed text is
new to the tokenizer: a counter is prefixed to it, so no cache can answer.

    python loadtests/bench_engine.py                    # everything (about 3 minutes)
    python loadtests/bench_engine.py --quick            # two corpora, fewer repetitions
    python loadtests/bench_engine.py --startup          # only start-up time and RSS (5 processes)
    python loadtests/bench_engine.py --worst            # only the worst-case table
"""

from __future__ import annotations

import argparse
import base64
import os
import random
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import msgspec
import tiktoken
from tiktoken.load import load_tiktoken_bpe

from service.bpe.cache import TextCache
from service.runtime import engine_factory
from service.settings import BUNDLED_STORE
from service.store.fileformat import parse
from service.store.manifest import read_manifest
from service.store.registry import LoadedTokenizer, build

ROOT = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("TOKSVC_SHARED", ROOT.parent / "shared"))
SOURCES = {"gpt2": "r50k_base", "cl100k_base": "cl100k_base", "o200k_base": "o200k_base",
           "qwen2": "qwen", "qwen3": "qwen", "bard": ""}  # fmt: skip
Encoder = Callable[[str], list[int]]


def fresh(name: str, engine: str = "auto") -> LoadedTokenizer:
    """A newly built tokenizer: new engine, empty piece cache, empty text cache."""
    store = BUNDLED_STORE
    entry = next(e for e in read_manifest(store).tokenizers if e.name == name and e.default)
    tf = parse((store / entry.path).read_bytes())
    return build(entry, tf, engine_factory(engine), TextCache(64 << 20))  # type: ignore[arg-type]


def peers(name: str, pattern: str) -> dict[str, Encoder]:
    if SOURCES[name]:
        ranks = load_tiktoken_bpe(str(SHARED / "vocab" / f"{SOURCES[name]}.tiktoken"))
    else:  # a trained, self-consistent `pairs` tokenizer: tiktoken's rule gives the same ids
        ranks = {data: tid for tid, data in fresh(name, "python").tokenizer.vocab.items()}
    enc = tiktoken.Encoding(f"tt_{name}", pat_str=pattern, mergeable_ranks=ranks, special_tokens={})
    out: dict[str, Encoder] = {"tiktoken": enc.encode_ordinary}
    if name in ("cl100k_base", "o200k_base"):
        from bpe_openai import _bindings  # the Rust core; the Python wrapper caps tokens per call

        out["bpe-openai"] = _bindings.tokenizer_for_encoding(name).encode
    if name in ("qwen2", "qwen3"):
        from tokenizers import Tokenizer

        hf = Tokenizer.from_file(str(SHARED / "vocab" / "qwen3_tokenizer.json"))
        out["hf-tokenizers"] = lambda text: hf.encode(text, add_special_tokens=False).ids
    return out


def seconds(fn: Callable[[], object], repeat: int) -> float:
    """Best of `repeat` runs, CPU seconds (the least disturbed by other load on a shared machine)."""
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        fn()
        best = min(best, time.process_time() - start)
    return best


def bench_corpora(corpora: list[Path], repeat: int) -> list[dict[str, object]]:
    rows = []
    for name in SOURCES:
        tok = fresh(name).tokenizer
        pattern = fresh(name, "python").pattern
        assert pattern is not None
        others = peers(name, pattern)
        for corpus in corpora:
            text = corpus.read_text("utf-8")
            mb = len(text.encode()) / 1e6
            row: dict[str, object] = {"tokenizer": name, "corpus": corpus.stem, "mb": round(mb, 3)}
            # each repetition times every engine on the same new text (a counter prefixed), so
            # each ratio is a median of pairs measured under the same machine load
            times: dict[str, list[float]] = {}
            engines: dict[str, Encoder | Callable[[str], int]] = {
                "ours_encode": tok.encode_ordinary,
                "ours_count": lambda t: tok.count(t, disallowed_special=()),
                **others,
            }
            for rep in range(repeat):
                fresh_text = f"{rep} {text}"
                for key, fn in engines.items():
                    times.setdefault(key, []).append(seconds(lambda f=fn: f(fresh_text), 1))
            for key, ts in times.items():
                row[key] = mb / min(ts)
            for ours in ("encode", "count"):
                for peer in ("tiktoken", "bpe-openai"):
                    if peer in times:
                        pairs = zip(times[peer], times[f"ours_{ours}"], strict=True)
                        row[f"{ours}_vs_{peer}"] = statistics.median(p / o for p, o in pairs)
            rows.append(row)
            print(_fmt_row(row), flush=True)
    return rows


COLUMNS = ["ours_encode", "ours_count", "tiktoken", "bpe-openai", "hf-tokenizers",
           "encode_vs_tiktoken", "count_vs_tiktoken", "encode_vs_bpe-openai",
           "count_vs_bpe-openai"]  # fmt: skip


def _fmt_row(row: dict[str, object]) -> str:
    cells = [f"{row['tokenizer']:<12}", f"{row['corpus']:<24}"]
    for c in COLUMNS:
        v = row.get(c)
        cells.append(f"{v:>8.2f}" if isinstance(v, float) else f"{'-':>8}")
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
    tt = peers("cl100k_base", fresh("cl100k_base", "python").pattern or "")["tiktoken"]
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
    result = {"requests": len(requests), "tokens": tokens, "ours_tokens_per_s": tokens / t_ours,
              "tiktoken_tokens_per_s": tokens / t_tt, "ratio": t_tt / t_ours}  # fmt: skip
    print(f"\nchat replay: {len(requests)} requests, {tokens:,} tokens counted: ours "
          f"{tokens / t_ours:,.0f} tokens/s, tiktoken {tokens / t_tt:,.0f} tokens/s, "
          f"ratio {t_tt / t_ours:.1f}x")  # fmt: skip
    return result


def worst_cases(prose: str) -> dict[str, str]:
    rng = random.Random(0)
    code = (SHARED / "corpus" / "code_python.txt").read_text("utf-8")
    one_line = "".join(code.split())
    size = 1_000_000
    return {
        "english prose": prose[:size],
        "one repeated character": "a" * size,
        "digits only": "".join(rng.choices("0123456789", k=size)),
        "random base64": base64.b64encode(rng.randbytes(size * 3 // 4)).decode(),
        "CJK, no punctuation": "".join(chr(rng.randint(0x4E00, 0x9FFF)) for _ in range(size // 3)),
        "one line, no whitespace": (one_line * 2)[:size],
    }


def bench_worst(prose: str) -> list[dict[str, object]]:
    """1 MB texts that make BPE engines slow, on cl100k; then tiktoken's crash input on r50k."""
    rows = []
    ours = fresh("cl100k_base").tokenizer
    others = peers("cl100k_base", fresh("cl100k_base", "python").pattern or "")
    engines: dict[str, Encoder] = {"ours": ours.encode_ordinary, **others}
    base: dict[str, float] = {}
    print(f"\n{'worst case (cl100k_base, 1 MB)':<28} " + " ".join(
        f"{k + ' s/MB':>16} {'x prose':>8}" for k in engines))  # fmt: skip
    cases = worst_cases(prose)
    r50k = fresh("gpt2").tokenizer
    for label, text in [*cases.items(), ("1,000,000 '^' (r50k)", "^" * 1_000_000)]:
        if label.endswith("(r50k)"):
            engines = {"ours": r50k.encode_ordinary,
                       "tiktoken": peers("gpt2", fresh("gpt2", "python").pattern or "")["tiktoken"]}  # fmt: skip
        mb = len(text.encode()) / 1e6
        row: dict[str, object] = {"case": label, "mb": round(mb, 3)}
        cells = []
        for key, fn in engines.items():
            try:
                # best of 3, each a new text (a counter prefixed: no cache answers)
                per_mb = min(seconds(lambda f=fn, i=i: f(f"{i}{text}"), 1) for i in range(3)) / mb
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
    code = ("import time; t = time.perf_counter();"
            "from service.settings import Settings; from service.runtime import load_registry;"
            "r = load_registry(Settings(), first_use=False); assert not r.failures;"
            "s = dict(l.split(':', 1) for l in open('/proc/self/status'));"
            "print(time.perf_counter() - t, time.process_time(), r.load_seconds, len(r),"
            " int(s['VmRSS'].split()[0]) / 1024, int(s['VmHWM'].split()[0]) / 1024)")  # fmt: skip
    samples = []
    for _ in range(runs):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             check=True)  # fmt: skip
        samples.append([float(x) for x in out.stdout.split()])
    total, cpu, load, n, rss, peak = (statistics.median(col) for col in zip(*samples, strict=True))
    result = {"tokenizers": int(n), "startup_s": total, "startup_cpu_s": cpu, "load_s": load,
              "rss_mb": rss, "peak_rss_mb": peak, "runs": runs}  # fmt: skip
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

    names = list(SOURCES)
    fig, axes = plt.subplots(len(names), 1, figsize=(11, 3.2 * len(names)))
    for ax, name in zip(axes, names, strict=True):
        mine = [r for r in rows if r["tokenizer"] == name]
        series = [s for s in ["ours_encode", "ours_count", "tiktoken", "bpe-openai",
                              "hf-tokenizers"] if s in mine[0]]  # fmt: skip
        width = 0.8 / len(series)
        for i, s in enumerate(series):
            ax.bar([x + i * width for x in range(len(mine))], [float(r[s]) for r in mine],  # type: ignore[arg-type]
                   width, label=s)  # fmt: skip
        ax.set_xticks([x + 0.4 - width / 2 for x in range(len(mine))],
                      [str(r["corpus"]) for r in mine], fontsize=8)  # fmt: skip
        ax.set_ylabel("MB/s")
        ax.set_title(f"{name}: cold encode throughput, 1 MB corpora, CPU time (higher is better)")
        ax.legend(fontsize=7, ncol=3)
    fig.tight_layout()
    fig.savefig(path, dpi=80)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--startup", action="store_true", help="only the start-up figures")
    parser.add_argument("--worst", action="store_true", help="only the worst-case table")
    parser.add_argument(
        "--out", type=Path, default=ROOT / "loadtests" / "results" / "bench_engine.json"
    )
    parser.add_argument("--chart", type=Path, default=ROOT / "docs" / "bench_engine.png")
    args = parser.parse_args()
    if args.startup:
        bench_startup()
        return
    if args.worst:
        bench_worst((SHARED / "corpus" / "en_shakespeare.txt").read_text("utf-8"))
        return
    corpora = sorted((SHARED / "corpus").glob("*.txt"))
    if args.quick:
        corpora = [c for c in corpora if c.stem in ("en_shakespeare", "zh_manpages")]
    repeat = 3 if args.quick else 5
    print(f"{'tokenizer':<12} {'corpus':<24} " + " ".join(f"{c[:8]:>8}" for c in COLUMNS))
    print(
        "(MB/s of CPU time, best of the repetitions; the ratios are medians of paired runs: "
        "peer time / our time, above 1 = ours faster)"
    )
    rows = bench_corpora(corpora, repeat)
    for name in SOURCES:
        mine = [r for r in rows if r["tokenizer"] == name]
        for key in ("encode_vs_tiktoken", "count_vs_tiktoken", "encode_vs_bpe-openai"):
            vals = [float(r[key]) for r in mine if key in r]  # type: ignore[arg-type]
            if vals:
                print(f"{name}: {key} min {min(vals):.2f}x median {statistics.median(vals):.2f}x")
    results = {"corpora": rows, "chat": bench_chat(sorted((SHARED / "corpus").glob("*.txt"))),
               "worst": bench_worst((SHARED / "corpus" / "en_shakespeare.txt").read_text("utf-8")),
               "startup": bench_startup()}  # fmt: skip
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_bytes(msgspec.json.format(msgspec.json.encode(results)))
    chart(rows, args.chart)
    print(f"\nwrote {args.out} and {args.chart}")


if __name__ == "__main__":
    main()
