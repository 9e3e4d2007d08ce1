"""`toksvc import sentencepiece` on models built here from Mistral's v1 model: a very long piece
imports and encodes to its id (its merges are found without making every split of it), and
pieces the importer cannot read exactly (a score that is not finite, an unknown type) are
refused naming the piece."""

from __future__ import annotations

import math
import struct
import tracemalloc
from pathlib import Path

import pytest

from service.errors import StoreError
from service.runtime import engine_factory
from service.store.importers.imports import import_files
from service.store.importers.sentencepiece_proto import NORMAL, read_model
from service.store.importers.sources import Naming
from service.store.loader import load_store
from service.store.manifest import add_to_store
from tests.support.testdata import vocab_bytes

V1 = "tokenizer.model.v1"


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        low, n = n & 0x7F, n >> 7
        out.append(low | 0x80 if n else low)
        if not n:
            return bytes(out)


def _field(number: int, payload: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def piece(text: str, score: float, kind: int = NORMAL) -> bytes:
    """A ModelProto `pieces` entry; appended to a model it is the last piece."""
    body = _field(1, text.encode("utf-8")) + bytes([2 << 3 | 5]) + struct.pack("<f", score)
    return _field(1, body + bytes([3 << 3]) + _varint(kind & 0xFFFFFFFFFFFFFFFF))


def test_a_very_long_piece_imports_and_encodes_to_its_id(tmp_path: Path) -> None:
    """A run of 2**15 copies of one character, reached by doubling (each power of two is a piece,
    scored above every piece of the model). Making every split of these pieces took 2.8 GB."""
    v1 = vocab_bytes(V1)
    base = read_model(v1, V1)
    assert not any("ꙮ" in p.piece for p in base.pieces)
    chain = ["ꙮ" * 2**j for j in range(16)]
    path = tmp_path / "long.model"
    path.write_bytes(v1 + b"".join(piece(p, 100.0 - len(p)) for p in chain))
    tracemalloc.start()
    try:
        imported = import_files("sentencepiece", [path], Naming("m", "1"))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 500 * 2**20  # every split of every piece of the chain: about 2.8 GB
    add_to_store(tmp_path / "store", imported)
    tok = load_store([tmp_path / "store"], engine_factory("auto")).resolve("m").tokenizer
    space = next(i for i, p in enumerate(base.pieces) if p.piece == "▁")
    longest = len(base.pieces) + len(chain) - 1
    assert tok.encode(chain[-1]) == [space, longest]
    assert tok.decode([space, longest]) == chain[-1]


@pytest.mark.parametrize(
    ("added", "named"),
    [
        (piece("ꙮ", math.nan), "score nan"),
        (piece("ꙮ", math.inf), "score inf"),
        (piece("ꙮ", -math.inf), "score -inf"),
        (piece("ꙮ", 0.0, kind=7), "type 7"),
        (piece("ꙮ", 0.0, kind=-1), "type -1"),
    ],
)
def test_pieces_that_cannot_be_read_exactly_are_refused(
    tmp_path: Path, added: bytes, named: str
) -> None:
    path = tmp_path / "bad.model"
    path.write_bytes(vocab_bytes(V1) + added)
    index = len(read_model(vocab_bytes(V1), V1).pieces)
    with pytest.raises(StoreError, match=rf"pieces\[{index}\]: .*{named}"):
        import_files("sentencepiece", [path], Naming("m", "1"))
