"""The independent sources the tests compare against, shipped in `tests/data/` (xz-compressed).

Each file's sha256 (of the uncompressed bytes) is listed in `tests/data/README.md`, next to its
source and licence; it is checked before a file is used, so a damaged copy fails loudly instead
of testing against the wrong truth. Tests never read `../shared`.
"""

from __future__ import annotations

import base64
import hashlib
import lzma
import os
import re
import tempfile
from functools import cache
from pathlib import Path

DATA = Path(__file__).resolve().parents[1] / "data"


@cache
def _pinned() -> dict[str, str]:
    """file name -> sha256, read from the tables in tests/data/README.md."""
    rows = re.findall(
        r"^\| ([\w.]+) \|.*\| ([0-9a-f]{64}) \|$", (DATA / "README.md").read_text("utf-8"), re.M
    )
    return dict(rows)


@cache
def _read(folder: str, name: str) -> bytes:
    data = lzma.decompress((DATA / folder / f"{name}.xz").read_bytes())
    expected = _pinned().get(name)
    actual = hashlib.sha256(data).hexdigest()
    assert expected == actual, f"tests/data/{folder}/{name}.xz: sha256 {actual}, README: {expected}"
    return data


def vocab_bytes(name: str) -> bytes:
    """An upstream vocabulary file, e.g. `cl100k_base.tiktoken` or `encoder.json`."""
    return _read("vocab", name)


@cache
def vocab_file(name: str) -> Path:
    """The same file uncompressed on disk (for importers and the CLI, which take paths)."""
    data = vocab_bytes(name)
    folder = Path(tempfile.gettempdir()) / f"toksvc-testdata-{os.getuid()}"
    folder.mkdir(exist_ok=True)
    path = folder / name
    if (
        not path.exists()
        or hashlib.sha256(path.read_bytes()).digest() != hashlib.sha256(data).digest()
    ):
        tmp = folder / f".{name}.{os.getpid()}"
        tmp.write_bytes(data)
        tmp.replace(path)
    return path


@cache
def tiktoken_ranks(name: str) -> dict[bytes, int]:
    """The ranks of a `.tiktoken` file (`base64(token) rank` per line), as tiktoken loads them."""
    ranks: dict[bytes, int] = {}
    for line in vocab_bytes(f"{name}.tiktoken").splitlines():
        if line:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    return ranks


def image_bytes(name: str) -> bytes:
    """A real image file, e.g. `python.jpg`."""
    return _read("images", name)


CORPUS_NAMES = sorted(p.name.removesuffix(".xz") for p in (DATA / "corpus").glob("*.txt.xz"))


def corpus_text(name: str) -> str:
    """One slice of real text, e.g. `en_shakespeare.txt`."""
    return _read("corpus", name).decode("utf-8")


def all_text() -> str:
    """Every corpus slice, joined (about 450 KB in seven scripts)."""
    return "".join(corpus_text(n) for n in CORPUS_NAMES)
