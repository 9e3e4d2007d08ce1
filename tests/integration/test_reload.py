"""Hot reload under load: a new tokenizer version appears with zero failed requests; a corrupted
new file is refused and the old registry keeps serving; the admin endpoint is off by default."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from service.cli import main as toksvc
from service.store.manifest import MANIFEST
from tests.support.server import Server, start_server, stop_server
from tests.support.testdata import corpus_text


class Load:
    """Counts on gpt2 from 3 threads, fresh connections, until stopped (at most 60 s)."""

    def __init__(self, base: str) -> None:
        self.base, self.codes, self.stop = base, [], threading.Event()
        self.threads = [threading.Thread(target=self.run) for _ in range(3)]

    def run(self) -> None:
        deadline = time.monotonic() + 60
        while not self.stop.is_set() and time.monotonic() < deadline:
            try:
                r = httpx.post(
                    f"{self.base}/v1/tokenizers/gpt2/count", json={"text": "reload"}, timeout=10
                )
                self.codes.append(r.status_code)
            except httpx.HTTPError:
                self.codes.append(0)

    def __enter__(self) -> Load:
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stop.set()
        for t in self.threads:
            t.join()


def train(store: Path, version: str) -> None:
    corpus = str(store.parent / "bard.txt")
    Path(corpus).write_text(corpus_text("en_shakespeare.txt"), "utf-8")
    assert (
        toksvc(
            [
                "train",
                corpus,
                "--vocab-size",
                "300",
                "--name",
                "bard",
                "--version",
                version,
                "--no-default",
                "--store",
                str(store),
            ]
        )
        == 0
    )


def served_everywhere(server: Server, ref: str, tries: int = 8) -> bool:
    codes = {
        httpx.get(f"{server.base}/v1/tokenizers/{ref}", timeout=5).status_code for _ in range(tries)
    }
    return codes == {200}


def wait_for(predicate, seconds: float = 60) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.5)
    return False


def corrupt_new_version(store: Path) -> None:
    """A new version whose file does not match the hash the manifest pins."""
    train(store, "corrupt")
    path = store / "bard" / "corrupt.json"
    path.write_bytes(path.read_bytes().replace(b"[", b"{", 1))


def remove_version(store: Path, version: str) -> None:
    manifest = json.loads((store / MANIFEST).read_text())
    manifest["tokenizers"] = [e for e in manifest["tokenizers"] if e["version"] != version]
    (store / MANIFEST).write_text(json.dumps(manifest))


def reloads(server: Server, result: str) -> float:
    for line in httpx.get(f"{server.base}/metrics").text.splitlines():
        if line.startswith(f'toksvc_store_reloads_total{{result="{result}"}}'):
            return float(line.split()[-1])
    return 0.0


@pytest.mark.parametrize("workers", [1, 2])
def test_sighup_reload_under_load(store: Path, workers: int) -> None:
    server = start_server(workers, TOKSVC_STORE=str(store))
    try:
        with Load(server.base) as load:
            train(store, "9")
            server.process.send_signal(signal.SIGHUP)
            assert wait_for(lambda: served_everywhere(server, "bard@9"))
            corrupt_new_version(store)
            server.process.send_signal(signal.SIGHUP)
            assert wait_for(lambda: reloads(server, "refused") >= 1)
            time.sleep(2)
            assert served_everywhere(server, "bard@9")  # the old registry keeps serving
            assert httpx.get(f"{server.base}/v1/tokenizers/bard@corrupt").status_code == 404
            ready = httpx.get(f"{server.base}/readyz")  # ready, and saying the reload was refused
            assert ready.status_code == 200 and "corrupt" in " ".join(ready.json()["failures"])
            assert any("reload was refused" in w for w in ready.json()["warnings"])
            remove_version(store, "corrupt")
            server.process.send_signal(signal.SIGHUP)
            assert wait_for(lambda: "failures" not in httpx.get(f"{server.base}/readyz").json())
        failed = sum(1 for c in load.codes if c != 200)
        print(
            f"\n{workers} worker(s): {len(load.codes)} requests during two reloads, {failed} failed"
        )
        assert failed == 0 and len(load.codes) > 50
    finally:
        stop_server(server)


def test_admin_reload_is_off_by_default_and_wants_the_token(store: Path) -> None:
    off = start_server(1, TOKSVC_STORE=str(store))
    try:
        assert httpx.post(f"{off.base}/admin/reload").status_code == 404
    finally:
        stop_server(off)
    on = start_server(1, TOKSVC_STORE=str(store), TOKSVC_ADMIN_TOKEN="s3cret")
    try:
        url = f"{on.base}/admin/reload"
        assert httpx.post(url).status_code == 401
        r = httpx.post(url, headers={"authorization": "Bearer nope"})
        assert r.status_code == 401 and r.json()["type"] == "/problems/unauthorized"
        train(store, "9")
        r = httpx.post(url, headers={"authorization": "Bearer s3cret"}, timeout=30)
        assert r.status_code == 202 and r.json()["status"] == "reloaded"
        assert httpx.get(f"{on.base}/v1/tokenizers/bard@9").status_code == 200
    finally:
        stop_server(on)


@pytest.fixture(autouse=True)
def _no_inherited_admin_token() -> Iterator[None]:
    token = os.environ.pop("TOKSVC_ADMIN_TOKEN", None)
    yield
    if token is not None:
        os.environ["TOKSVC_ADMIN_TOKEN"] = token
