"""The shipped ranks families (qwen3.6, phi-4, tekken) against tiktoken running the same ranks and
pattern: one cold pass over the test corpora each, in a new process per figure, timed in CPU
seconds of the calling thread (both engines encode there), so a machine loaded by other work
skews the figures less than wall time would. Ids are compared on the way.

    python loadtests/bench_families.py
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CODE = """
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


def main() -> None:
    print(f"{'family':8} {'corpus':22} {'ours MB/s':>8} {'tiktoken':>9}")
    for name in ("qwen3.6", "phi-4", "tekken"):
        for corpus in ("all", "en_shakespeare.txt", "zh_manpages.txt", "code_python.txt"):
            subprocess.run([sys.executable, "-c", CODE, name, corpus], cwd=ROOT, check=True)


if __name__ == "__main__":
    main()
