"""Load on first use: start-up checks hashes and heads and builds nothing; the first use builds
once (whatever the number of threads asking); a file that fails its full check then is a failure
of the registry, `/readyz` says so, and `toksvc verify` (which builds everything) finds it at once.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import shutil
import threading
from pathlib import Path
from typing import Any

import pytest
from litestar.testing import TestClient

from service.api.app import create_app
from service.cli import main
from service.errors import FormatError, TokenizerUnavailableError
from service.runtime import engine_factory
from service.settings import BUNDLED_STORE, Settings
from service.store.loader import load_store
from service.store.manifest import MANIFEST


@pytest.fixture
def small(tmp_path: Path) -> Path:
    """The bundled store without its large vocabularies and models."""
    copy = tmp_path / "store"
    shutil.copytree(
        BUNDLED_STORE,
        copy,
        ignore=shutil.ignore_patterns("o200k*", "qwen*", "cl*", "phi*", "tekken*", "deepseek*"),
    )
    manifest = json.loads((copy / MANIFEST).read_text())
    manifest["tokenizers"] = [e for e in manifest["tokenizers"] if (copy / e["path"]).exists()]
    manifest["models"] = manifest["prices"] = []
    (copy / MANIFEST).write_text(json.dumps(manifest))
    return copy


def break_merges(store: Path, ref: str) -> None:
    """A merge that names an undefined child, with the manifest re-pinned to the new bytes (as a
    hand edit that updates the hash would): the head is still fine."""
    manifest = json.loads((store / MANIFEST).read_text())
    entry = next(e for e in manifest["tokenizers"] if f"{e['name']}@{e['version']}" == ref)
    path = store / entry["path"]
    data = json.loads(path.read_text())
    data["merges"][5][0] = 999_999
    path.write_text(json.dumps(data))
    entry["sha256"] = hashlib.sha256(path.read_bytes()).hexdigest()
    (store / MANIFEST).write_text(json.dumps(manifest))


def test_start_up_builds_nothing_and_knows_every_file(small: Path) -> None:
    lazy = load_store(small, engine_factory("auto"), first_use=True)
    eager = load_store(small, engine_factory("auto"))
    assert not lazy.failures and [t.ref for t in lazy] == [t.ref for t in eager]
    for t in lazy:
        assert t.built.built is None
        assert t.known_self_consistent is (True if t.rule == "ranks" else None)
        built = eager.resolve(t.ref)
        facts = (built.defined_ids, built.tokenizer.special_tokens, built.added_tokens)
        assert (t.defined_ids, t.special_tokens, t.added_tokens) == facts
        assert (t.pattern, t.normalization, t.metadata) == (
            built.pattern,
            built.normalization,
            built.metadata,
        )
    text = "Hello, world — 中文 😀"
    for t in lazy:
        assert t.tokenizer.encode(text) == eager.resolve(t.ref).tokenizer.encode(text)
        assert t.self_consistent == eager.resolve(t.ref).self_consistent
        assert t.known_self_consistent == t.self_consistent


def test_many_threads_one_build(small: Path) -> None:
    lazy = load_store(small, engine_factory("auto"), first_use=True)
    t = lazy.resolve("p50k_base")
    start = threading.Barrier(8)
    seen: list[object] = []

    def use() -> None:
        start.wait()
        seen.append(t.tokenizer)

    threads = [threading.Thread(target=use) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(seen) == 8 and all(s is seen[0] for s in seen)


def test_a_file_that_fails_its_full_check_on_first_use(small: Path) -> None:
    break_merges(small, "gpt2@1")
    eager = load_store(small)
    assert any(isinstance(f, FormatError) and "merges[5]" in str(f) for f in eager.failures)
    lazy = load_store(small, first_use=True)
    assert lazy.complete and "gpt2@1" in {t.ref for t in lazy}
    for _ in range(2):  # and again: the failure is kept, not retried
        with pytest.raises(TokenizerUnavailableError, match="merges"):
            _ = lazy.resolve("gpt2").tokenizer
    assert not lazy.complete and len(lazy.failures) == 1
    assert lazy.resolve("p50k_base").tokenizer.encode("hi") == [5303]


def test_readyz_and_verify_see_it(small: Path, capsys: pytest.CaptureFixture[str]) -> None:
    break_merges(small, "gpt2@1")
    with TestClient(create_app(Settings(stores=(small,)))) as client:
        assert client.get("/readyz").status_code == 200
        listed: Any = client.get("/v1/tokenizers").json()["tokenizers"]
        assert {t["ref"]: t["self_consistent"] for t in listed}["bard@2"] is None
        r = client.post("/v1/tokenizers/gpt2/count", json={"text": "x"})
        assert r.status_code == 503 and r.json()["type"] == "/problems/tokenizer-unavailable"
        doc = client.get("/readyz").json()
        assert doc["status"] == 503 and any("merges[5]" in f for f in doc["failures"])
        assert client.post("/v1/tokenizers/p50k_base/count", json={"text": "hi"}).status_code == 200
    assert main(["verify", "--store", str(small)]) == 1
    assert "merges[5]" in capsys.readouterr().out


def test_a_preloaded_file_that_fails_is_not_ready_before_any_request(small: Path) -> None:
    """TOKSVC_PRELOAD builds before the worker serves: the broken file is on /readyz at once."""
    break_merges(small, "gpt2@1")
    with TestClient(create_app(Settings(stores=(small,), preload="gpt2"))) as client:
        doc = client.get("/readyz").json()
        assert doc["status"] == 503 and any("merges[5]" in f for f in doc["failures"])
    with TestClient(create_app(Settings(stores=(small,), preload="p50k_base"))) as client:
        assert client.get("/readyz").status_code == 200  # gpt2 is not built until it is used
        listed: Any = client.get("/v1/tokenizers").json()["tokenizers"]
        built = {t["ref"] for t in listed if t.get("n_vocab") is not None}
        assert built == {"p50k_base@1"}


def test_a_file_edited_after_start_up_does_not_change_its_first_use(small: Path) -> None:
    """First use builds from the bytes verified at start-up: a store edited on disk meanwhile
    (a rollout, or a file no longer matching its pin) neither breaks nor changes a running
    worker's tokenizer; a reload is what takes a new store in."""
    lazy = load_store(small, first_use=True)
    gpt2 = small / "gpt2" / "1.json"
    gpt2.write_bytes(gpt2.read_bytes().replace(b"[", b"{", 1))  # no longer matches its pin
    assert lazy.resolve("gpt2").tokenizer.encode("hello world") == [31373, 995]
    assert lazy.complete
    assert not load_store(small, first_use=True).complete  # a new load sees the broken file


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/v1/models/gpt-4o/count", {"messages": [{"role": "user", "content": "hi"}]}),
        ("/v1/models/gpt-4o/estimate", {"text": "hi"}),
        (
            "/v1/messages/count_tokens",
            {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]},
        ),
        ("/v1/responses/input_tokens", {"model": "gpt-4o", "input": "hi"}),
        ("/tokenize", {"model": "gpt-4o", "prompt": "hi"}),
        ("/detokenize", {"model": "gpt-4o", "tokens": [5]}),
    ],
)
def test_a_model_route_builds_its_tokenizer_off_the_event_loop(
    path: str, body: dict[str, Any]
) -> None:
    registry = load_store(BUNDLED_STORE, first_use=True)
    holder = registry.resolve("o200k_base@1").built
    build = holder._build
    assert build is not None
    on_loop: list[bool] = []

    def watched() -> Any:
        try:
            asyncio.get_running_loop()
            on_loop.append(True)
        except RuntimeError:  # no loop in this thread: a worker thread
            on_loop.append(False)
        return build()

    holder._build = watched
    with TestClient(create_app(Settings(), registry)) as client:
        r = client.post(path, json=body)
    assert r.status_code == 200, r.text
    assert on_loop == [False]
