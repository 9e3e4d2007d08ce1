"""Real text for load runs and benchmarks.

By default the slices that ship with the repository (`tests/data/corpus/*.txt.xz`, about 450 KB in
seven scripts), so a fresh clone can load-test itself; when `TOKSVC_SHARED` names the larger shared
folder, its `corpus/*.txt` (about 1 MB per script) instead. `TOKSVC_TEXTS` may name another folder
of `*.txt.xz` slices (the compose `load` profile mounts tests/data/corpus there).
"""

from __future__ import annotations

import base64
import lzma
import os
import random
from pathlib import Path

REPO_TEXTS = Path(__file__).resolve().parents[2] / "tests" / "data" / "corpus"


def corpus_files() -> dict[str, str]:
    """corpus name (e.g. `en_shakespeare`) -> its text."""
    shared = os.environ.get("TOKSVC_SHARED")
    if shared:
        files = sorted((Path(shared) / "corpus").glob("*.txt"))
        if not files:
            raise SystemExit(f"TOKSVC_SHARED={shared}: no corpus/*.txt there")
        return {p.stem: p.read_text("utf-8") for p in files}
    folder = Path(os.environ.get("TOKSVC_TEXTS", REPO_TEXTS))
    files = sorted(folder.glob("*.txt.xz"))
    if not files:
        raise SystemExit(f"no *.txt.xz texts in {folder}")
    return {p.name.removesuffix(".txt.xz"): lzma.decompress(p.read_bytes()).decode() for p in files}


def corpus() -> str:
    """Every text joined."""
    return "".join(corpus_files().values())


def worst_cases(prose: str, code: str, size: int = 1_000_000) -> dict[str, str]:
    """Texts of `size` characters that make BPE engines slow, English `prose` first (the
    baseline of the worst-case tables): one character repeated, random digits, random base64,
    CJK without punctuation, and `code` with its whitespace removed (one long line)."""
    rng = random.Random(0)
    one_line = "".join(code.split())
    return {
        "english prose": prose[:size],
        "one repeated character": "a" * size,
        "digits only": "".join(rng.choices("0123456789", k=size)),
        "random base64": base64.b64encode(rng.randbytes(size * 3 // 4)).decode(),
        "CJK, no punctuation": "".join(chr(rng.randint(0x4E00, 0x9FFF)) for _ in range(size // 3)),
        "one line, no whitespace": (one_line * 2)[:size],
    }
