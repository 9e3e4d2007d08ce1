"""One gate for store reads (issue 23, high 7): the manifest goes through the same bounded reader
as every tokenizer file, so a FIFO is refused at once and an oversize file before it is read."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import threading
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import pytest

from service.errors import ManifestError, StoreError
from service.store import manifest as manifest_module
from service.store.loader import load_store
from service.store.manifest import MANIFEST, read_manifest
from service.store.reading import MAX_MANIFEST_BYTES
from service.store.registry import Registry

HANG_SECONDS = 20  # far beyond any real read of these tiny files: past it, the read is stuck


def without_hanging(fifo: Path, work: Callable[[], Registry]) -> Registry:
    """Run `work` in a thread; if it is still blocked on `fifo` after HANG_SECONDS, unblock it
    (open and close the writer's end) and fail, instead of hanging the test run."""
    result: list[Registry] = []
    thread = threading.Thread(target=lambda: result.append(work()), daemon=True)
    thread.start()
    thread.join(HANG_SECONDS)
    if thread.is_alive():
        with contextlib.suppress(OSError):
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        thread.join(HANG_SECONDS)
        pytest.fail(f"reading {fifo.name} waited for a writer")
    return result[0]


def test_a_fifo_manifest_is_refused_without_waiting(store: Path) -> None:
    (store / MANIFEST).unlink()
    os.mkfifo(store / MANIFEST)
    registry = without_hanging(store / MANIFEST, lambda: load_store(store))
    assert len(registry) == 0
    [failure] = registry.failures
    assert isinstance(failure, ManifestError)
    assert failure.path == str(store / MANIFEST) and "not a regular file" in failure.reason


def test_a_fifo_tokenizer_file_is_refused_and_the_others_load(store: Path) -> None:
    entry = json.loads((store / MANIFEST).read_text())["tokenizers"][0]
    (store / entry["path"]).unlink()
    os.mkfifo(store / entry["path"])
    registry = without_hanging(store / entry["path"], lambda: load_store(store))
    [failure] = registry.failures
    assert isinstance(failure, StoreError) and "not a regular file" in failure.reason
    assert failure.path == str(store / entry["path"])
    assert len(registry) > 0 and f"{entry['name']}@{entry['version']}" not in registry.tokenizers


def test_an_oversize_manifest_is_refused_before_it_is_read(store: Path) -> None:
    with (store / MANIFEST).open("r+b") as f:
        f.truncate(MAX_MANIFEST_BYTES + 1)  # sparse: costs no disk, would cost memory to read
    tracemalloc.start()
    try:
        with pytest.raises(ManifestError, match="over the limit") as caught:
            read_manifest(store)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert caught.value.path == str(store / MANIFEST)
    assert peak < MAX_MANIFEST_BYTES // 16, f"{peak} bytes allocated to refuse it"


def test_the_manifest_hash_is_the_hash_of_its_bytes(store: Path) -> None:
    manifest, sha256 = manifest_module.load_manifest(store)
    assert sha256 == hashlib.sha256((store / MANIFEST).read_bytes()).hexdigest()
    assert manifest == read_manifest(store)


def test_a_missing_store_still_says_what_to_check(tmp_path: Path) -> None:
    with pytest.raises(ManifestError, match=r"cannot be read .*is this a store"):
        read_manifest(tmp_path / "nowhere")
