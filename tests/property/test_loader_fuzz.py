"""Fuzzing the store loader with mutated tokenizer files and manifests: every outcome is the same
tokenizer or a typed load error naming the file; never a crash, never a silently different one."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from service.bpe import train
from service.errors import StoreError
from service.runtime import engine_factory
from service.store.formats.tokenizer import TokenizerFile
from service.store.loader import load_store
from service.store.manifest import MANIFEST, add_to_store

SAMPLE = "Fuzzing the loader: 中文, émoji 🙂, code() and <|end|>."
SETTINGS = settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    store = tmp_path_factory.mktemp("pristine")
    model = train(
        [Path(__file__).read_text("utf-8") * 2], 400, r" ?\w+| ?[^\w\s]+|\s+", ["<|end|>"]
    )
    tf = TokenizerFile(
        name="fuzz",
        version="1",
        rule="pairs",
        pattern=model.pattern,
        special_tokens=model.special_tokens,
        merges=model.merges,
    )
    add_to_store(store, tf)
    return store


def ids(store: Path) -> list[int] | None:
    registry = load_store(store, engine_factory("python"))
    for failure in registry.failures:
        assert isinstance(failure, StoreError)
        assert str(store) in str(failure)  # names the file (or the manifest)
    if not len(registry):
        return None
    return registry.resolve("fuzz").tokenizer.encode(SAMPLE, allowed_special="all")


mutations = st.lists(
    st.tuples(
        st.floats(0, 1, exclude_max=True),
        st.sampled_from(["flip", "delete", "insert"]),
        st.integers(0, 255),
    ),
    min_size=1,
    max_size=4,
)


def mutate(data: bytes, edits: list[tuple[float, str, int]]) -> bytes:
    buf = bytearray(data)
    for where, how, value in edits:
        i = int(where * len(buf))
        if how == "flip":
            buf[i] ^= value or 1
        elif how == "delete":
            del buf[i]
        else:
            buf.insert(i, value)
    return bytes(buf)


@SETTINGS
@given(edits=mutations, rehash=st.booleans())
def test_a_mutated_tokenizer_file(
    pristine: Path, tmp_path: Path, edits: list[tuple[float, str, int]], rehash: bool
) -> None:
    store = tmp_path / f"s{abs(hash((tuple(edits), rehash)))}"
    shutil.copytree(pristine, store)
    path = store / "fuzz" / "1.json"
    original = path.read_bytes()
    changed = mutate(original, edits)
    path.write_bytes(changed)
    if rehash:  # the manifest blesses the new bytes: only validation stands between them and use
        manifest = json.loads((store / MANIFEST).read_text())
        manifest["tokenizers"][0]["sha256"] = hashlib.sha256(changed).hexdigest()
        (store / MANIFEST).write_text(json.dumps(manifest))
    got = ids(store)
    if changed != original and not rehash:
        assert got is None  # the hash check refuses any change the manifest does not pin
    elif changed != original:
        try:
            same_meaning = json.loads(changed) == json.loads(original)
        except (ValueError, UnicodeDecodeError):
            same_meaning = False
            assert got is None  # not JSON: refused
        if same_meaning:  # e.g. whitespace: the same tokenizer
            assert got == ids(pristine)
    shutil.rmtree(store)


@SETTINGS
@given(edits=mutations)
def test_a_mutated_manifest(
    pristine: Path, tmp_path: Path, edits: list[tuple[float, str, int]]
) -> None:
    store = tmp_path / f"m{abs(hash(tuple(edits)))}"
    shutil.copytree(pristine, store)
    manifest = store / MANIFEST
    manifest.write_bytes(mutate(manifest.read_bytes(), edits))
    got = ids(store)
    assert got is None or got == ids(pristine)
    shutil.rmtree(store)
