"""Shared fixtures: the bundled store, the test data in tests/data, and tiktoken oracles."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import tiktoken
from mistral_common.tokens.tokenizers.tekken import Tekkenizer

from service.bpe import Tokenizer
from service.bpe.engine import native
from service.runtime import engine_factory
from service.settings import BUNDLED_STORE, Settings
from service.store.loader import load_store
from service.store.registry import Registry
from tests.support.sentencepiece_like import SYNTHETIC, build_store
from tests.support.server import Server, start_server, stop_server
from tests.support.testdata import tiktoken_ranks, vocab_file

# shipped tokenizer -> the .tiktoken file it must match exactly
TIKTOKEN_SOURCES = {
    "gpt2": "r50k_base",
    "p50k_base": "p50k_base",
    "cl100k_base": "cl100k_base",
    "o200k_base": "o200k_base",
    "qwen2": "qwen",
    "qwen3": "qwen",
    "qwen3.6": "qwen3_6",
    "phi-4": "cl100k_base",
    "tekken": "tekken_240911.json",  # a tekken file: its ranks as mistral-common loads them
}


@pytest.fixture(scope="session")
def server() -> Iterator[Server]:
    """One real server for the whole run, with small stream limits the tests can reach."""
    s = start_server(1, TOKSVC_MAX_STREAMS_PER_WORKER="4", TOKSVC_WS_IDLE_SECONDS="2")
    yield s
    stop_server(s)


@pytest.fixture(scope="session")
def registry() -> Registry:
    """The bundled store as the service runs it: the fast engine wherever it is exact, each
    native engine with its table of hot pieces at the default size."""
    native.configure_hot_pieces(Settings().hot_piece_bytes)
    reg = load_store(BUNDLED_STORE, engine_factory("auto"))
    assert not reg.failures, reg.failures
    return reg


def bundled_refs() -> list[str]:
    """Every tokenizer of the bundled store, `name@version`, from its manifest (known before
    any fixture, for parametrizing)."""
    manifest = json.loads((BUNDLED_STORE / "manifest.json").read_text("utf-8"))
    return [f"{e['name']}@{e['version']}" for e in manifest["tokenizers"]]


# every bundled tokenizer, and the SentencePiece-style constructions whose files are not shipped
EVERY_TOKENIZER = [*bundled_refs(), *SYNTHETIC]


@pytest.fixture(scope="session")
def synthetic(tmp_path_factory: pytest.TempPathFactory) -> Registry:
    """The tokenizers of tests/support/sentencepiece_like.py, trained and loaded once."""
    reg = load_store([build_store(tmp_path_factory.mktemp("synthetic"))], engine_factory("auto"))
    assert not reg.failures, reg.failures
    return reg


@pytest.fixture(scope="session")
def tokenizer_of(registry: Registry, synthetic: Registry) -> Callable[[str], Tokenizer]:
    """A ref of `EVERY_TOKENIZER` -> its tokenizer (each built once per session)."""
    return lambda ref: (synthetic if ref in SYNTHETIC else registry).resolve(ref).tokenizer


@pytest.fixture(scope="session")
def reference() -> Registry:
    """The bundled store on the pure-Python reference engine only."""
    reg = load_store(BUNDLED_STORE, engine_factory("python"))
    assert not reg.failures, reg.failures
    return reg


_oracles: dict[str, object] = {}


def tiktoken_oracle(registry: Registry, name: str):  # type: ignore[no-untyped-def]
    """tiktoken's Encoding built from the same source file, pattern and special tokens."""
    if name not in _oracles:
        loaded = registry.resolve(name)
        source = TIKTOKEN_SOURCES[name]
        ranks = tekken_ranks(source) if source.endswith(".json") else tiktoken_ranks(source)
        _oracles[name] = tiktoken.Encoding(
            f"oracle_{name}",
            pat_str=loaded.pattern,
            mergeable_ranks=ranks,
            special_tokens=loaded.tokenizer.special_tokens,
        )
    return _oracles[name]


def tekken(name: str):  # type: ignore[no-untyped-def]
    """mistral-common's own tokenizer for a tekken file in tests/data/vocab."""
    if name not in _oracles:
        _oracles[name] = Tekkenizer.from_file(vocab_file(name))
    return _oracles[name]


def tekken_ranks(name: str) -> dict[bytes, int]:
    """The ranks mistral-common's tiktoken runs on, moved up by its special-token offset (the ids
    it returns): the same merges, so tiktoken with these gives mistral-common's ids."""
    oracle = tekken(name)
    offset = oracle.num_special_tokens
    return {token: rank + offset for token, rank in oracle._tekken_token2id_nospecial.items()}


@pytest.fixture
def store(tmp_path: Path) -> Path:
    """A copy of the bundled store with the small tokenizers only (fast to load), and no models
    (their tokenizers are left out)."""
    copy = tmp_path / "store"
    shutil.copytree(
        BUNDLED_STORE,
        copy,
        ignore=shutil.ignore_patterns("o200k*", "qwen*", "cl*", "phi*", "tekken*", "deepseek*"),
    )
    manifest = json.loads((copy / "manifest.json").read_text())
    manifest["tokenizers"] = [e for e in manifest["tokenizers"] if (copy / e["path"]).exists()]
    manifest["models"] = manifest["prices"] = []
    (copy / "manifest.json").write_text(json.dumps(manifest))
    return copy


# (hot pieces per engine, piece cache per process) in bytes: both off; the defaults (hot pieces
# only); both on, the piece cache at 32 MiB behind hot pieces of 4 KiB (two ways of 32 sets, so
# evictions are frequent and the piece cache sees the misses)
CACHE_CONFIGS = [(0, 0), (Settings().hot_piece_bytes, 0), (4096, 32 * 1024 * 1024)]


@pytest.fixture(params=CACHE_CONFIGS, ids=["caches-off", "hot-pieces", "both-caches"])
def piece_cache(request: pytest.FixtureRequest) -> Iterator[int]:
    """The native engine's caches: hot pieces and the piece cache off, at their defaults, then
    both on (the piece cache empty at the start of each test); the defaults again afterwards.
    The value is the piece cache's size in bytes."""
    hot, cache = request.param
    native.configure_piece_cache(0)
    native.configure_piece_cache(cache)
    native.configure_hot_pieces(hot)
    yield cache
    native.configure_piece_cache(0)
    native.configure_hot_pieces(Settings().hot_piece_bytes)
