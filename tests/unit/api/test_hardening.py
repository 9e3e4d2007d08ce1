"""Unit-level bounds of issue 14: line splitting, store reads, the manifest cap, the engine
boundary, output sizes, the piece cache and the lone-surrogate scan."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tracemalloc
from pathlib import Path
from typing import Any

import msgspec
import pytest
from litestar.exceptions import ValidationException

from service.api.bodies import _refuse_lone_surrogates, decode_body
from service.api.wire.lines import LineDecoder
from service.api.wire.models import ChatCountRequest, EstimateRequest
from service.bpe import PythonEngine, Tokenizer
from service.bpe.engine.python import MAX_CACHED_PIECE
from service.errors import (
    EngineFailureError,
    HashMismatchError,
    LimitExceededError,
    ManifestError,
    StoreError,
    SurrogateError,
    UnknownIdError,
)
from service.runtime import engine_factory
from service.settings import BUNDLED_STORE, Settings
from service.store.loader import load_store
from service.store.manifest import MAX_ENTRIES, Manifest, ManifestEntry, check_manifest
from service.store.reading import read_bounded, read_verified

# --- NDJSON lines ----------------------------------------------------------------------------


@pytest.mark.parametrize("size", [1, 2, 3, 7, 1024])
def test_line_decoder_gives_the_lines_whatever_the_chunking(size: int) -> None:
    body = b'{"ids": [1]}\n\n{"ids": [2, 3]}\nlast'
    decoder = LineDecoder(100)
    lines = []
    for i in range(0, len(body), size):
        lines += decoder.decode(body[i : i + size])
    lines += decoder.flush()
    assert lines == body.split(b"\n")


def test_line_decoder_refuses_a_line_over_the_limit_before_joining_it() -> None:
    decoder = LineDecoder(10)
    assert decoder.decode(b"12345") == []
    with pytest.raises(LimitExceededError):
        decoder.decode(b"678901")
    assert LineDecoder(10).decode(b"1234567890\n") == [b"1234567890"]


def test_line_decoder_keeps_one_part_per_chunk_not_a_growing_buffer() -> None:
    decoder = LineDecoder(1 << 30)
    for _ in range(1000):
        decoder.decode(b"x" * 1000)
    assert decoder.decode(b"\n") == [b"x" * 1_000_000]


# --- store reads -----------------------------------------------------------------------------


def test_read_verified_checks_the_hash_and_the_size(tmp_path: Path) -> None:
    (tmp_path / "a.json").write_bytes(b"data")
    good = hashlib.sha256(b"data").hexdigest()
    assert read_verified(tmp_path, "a.json", good) == b"data"
    with pytest.raises(HashMismatchError):
        read_verified(tmp_path, "a.json", "0" * 64)
    with pytest.raises(StoreError, match="over the limit"):
        read_verified(tmp_path, "a.json", good, max_bytes=3)
    with pytest.raises(StoreError, match="cannot be read"):
        read_verified(tmp_path, "missing.json", good)


def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "fifo.json")
    with pytest.raises(StoreError, match="not a regular file"):
        read_bounded(tmp_path, "fifo.json")


def test_a_symlink_out_of_the_store_is_refused(tmp_path: Path) -> None:
    store, outside = tmp_path / "store", tmp_path / "secret.json"
    store.mkdir()
    outside.write_bytes(b"secret")
    (store / "a.json").symlink_to(outside)
    with pytest.raises(StoreError, match="outside the store"):
        read_bounded(store, "a.json")
    (store / "b.json").write_bytes(b"inside")
    (store / "c.json").symlink_to(store / "b.json")  # inside the store: fine
    assert read_bounded(store, "c.json") == b"inside"


def test_a_manifest_with_too_many_entries_is_refused() -> None:
    entries = [
        ManifestEntry(name="t", version=str(i), path=f"t/{i}.json", sha256="0" * 64, default=i == 0)
        for i in range(MAX_ENTRIES + 1)
    ]
    with pytest.raises(ManifestError, match="over the limit"):
        check_manifest(Manifest(tokenizers=entries), "manifest.json")
    check_manifest(Manifest(tokenizers=entries[:MAX_ENTRIES]), "manifest.json")


def test_a_store_file_replaced_by_a_fifo_fails_that_file_only(tmp_path: Path) -> None:
    store = tmp_path / "store"
    shutil.copytree(BUNDLED_STORE, store)
    (store / "gpt2" / "1.json").unlink()
    os.mkfifo(store / "gpt2" / "1.json")
    registry = load_store(store, engine_factory("python"), only="gpt2")
    assert len(registry) == 0 and "not a regular file" in str(registry.failures[0])


# --- the engine boundary and output sizes -----------------------------------------------------


class NativePanic(BaseException):
    """What pyo3 raises when Rust code panics: not an Exception."""


class PanickingEngine:
    def encode_ordinary(self, text: str) -> list[int]:
        raise NativePanic("stack overflow")

    def count_ordinary(self, text: str) -> int:
        raise NativePanic("stack overflow")


def small_tokenizer(engine: object | None = None) -> Tokenizer:
    registry = load_store(BUNDLED_STORE, engine_factory("python"), only="gpt2")
    t = registry.resolve("gpt2").tokenizer
    return Tokenizer(t.vocab, engine or t.engine, t.special_tokens)  # type: ignore[arg-type]


def test_a_native_panic_becomes_a_typed_error() -> None:
    t = small_tokenizer(PanickingEngine())
    for call in (t.encode, t.count):
        with pytest.raises(EngineFailureError, match="NativePanic"):
            call("  x")


def test_the_process_exits_pass_the_engine_boundary() -> None:
    class Interrupted:
        def encode_ordinary(self, text: str) -> list[int]:
            raise KeyboardInterrupt

        count_ordinary = encode_ordinary

    with pytest.raises(KeyboardInterrupt):
        small_tokenizer(Interrupted()).encode("x")


def test_decoded_size_is_the_length_of_the_decoded_bytes() -> None:
    t = small_tokenizer()
    ids = t.encode("héllo wörld, 🙂 " * 10)
    assert t.decoded_size(ids) == len(t.decode_bytes(ids))
    assert t.decoded_size([]) == 0
    with pytest.raises(UnknownIdError):
        t.decoded_size([1, 10**9])
    with pytest.raises(UnknownIdError):
        t.decoded_size([-1])
    far = max(t.special_tokens.values()) + 10  # the ids between are no tokens
    gapped = Tokenizer(t.vocab, t.engine, {**t.special_tokens, "<|far|>": far})
    assert gapped.decoded_size([*ids, far]) == len(gapped.decode_bytes([*ids, far]))
    with pytest.raises(UnknownIdError):
        gapped.decoded_size([*ids, far - 1])


def test_the_piece_cache_keeps_no_long_piece() -> None:
    t = small_tokenizer()
    engine = PythonEngine(t.vocab, r"\S+|\s+", cache_size=1000)
    engine.encode_ordinary("a" * (MAX_CACHED_PIECE + 1))
    assert engine.cache_info()[2] == 0
    engine.encode_ordinary("a" * MAX_CACHED_PIECE)
    assert engine.cache_info()[2] == 1


# --- lone surrogate escapes --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "offset"),
    [
        (rb'{"t": "\ud83d\ude00 \ud800 x"', 20),  # a pair, then a lone high one
        (rb'{"t": "\udc00"', 7),  # a lone low one
        (rb'{"t": "\ud83d"', 7),  # a high one at the end
        (rb'{"t": "\ud83d\u0041"', 7),  # a high one followed by no low one
        (rb'{"t": "\ud83d\\\udc00"', 7),  # a literal backslash between: both lone (was a pair)
        (rb'{"t": "\\\ud800"', 9),  # an escaped backslash, then an escape
        (rb'{"t": "\\\\ud83d\udc00"', 16),  # a literal "\ud83d", then a lone low one
    ],
)
def test_a_lone_surrogate_escape_is_named(body: bytes, offset: int) -> None:
    with pytest.raises(SurrogateError) as found:
        _refuse_lone_surrogates(body)
    assert found.value.position == offset


def test_pairs_and_non_surrogate_escapes_pass() -> None:
    _refuse_lone_surrogates(rb'{"t": "\ud7ff \ud83d\ude00 \\ud800"' * 1000)
    _refuse_lone_surrogates(rb'{"t": "\\\\\ud83d\ude00 \\\\ud800"')  # escaped backslashes


@pytest.mark.parametrize("kind", [ChatCountRequest, EstimateRequest])
def test_ignored_openai_parameters_are_not_built_into_objects(kind: type[Any]) -> None:
    """`stop` of 300,000 empty lists and a `logit_bias` of 100,000 keys (2 MB, ignored by the
    count): kept as raw JSON, not ~20 MB of Python objects that the event loop allocated and
    the garbage collector walked (a 5 MB body: 2 s of /healthz stall). They are still listed
    in `ignored`, and still well-formed JSON or a 400."""
    body = json.dumps(
        {
            "messages": [{"role": "user", "content": "hi"}],
            "stop": [[]] * 300_000,
            "logit_bias": {str(i): 1 for i in range(100_000)},
            "seed": None,
            "temperature": 0,
        }
    ).encode()
    decoder = msgspec.json.Decoder(kind)
    tracemalloc.start()
    try:
        data = decode_body(decoder, body, Settings())
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < len(body), peak  # 300,000 lists alone are ~17 MB
    assert sorted(data.ignored()) == ["logit_bias", "stop", "temperature"]
    with pytest.raises(ValidationException):
        decode_body(decoder, body.replace(b'"temperature": 0', b'"temperature": [0,]'), Settings())
