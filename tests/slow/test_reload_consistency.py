"""A reload ends with every worker on one store state, or says it did not (issue 23, medium and
low): the admin reload reloads each worker once and answers with the state they all serve, and
/readyz says so while workers serve different states."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import time
from pathlib import Path

import httpx

from tests.slow.test_supervisor import wait_for
from tests.support.server import Server, start_server, stop_server, worker_pids

TOKEN = {"authorization": "Bearer s3cret"}


def reloads_ok(server: Server) -> float:
    for line in httpx.get(f"{server.base}/metrics", timeout=5).text.splitlines():
        if line.startswith('toksvc_store_reloads_total{result="ok"}'):
            return float(line.split()[-1])
    return 0.0


def manifest_sha256(store: Path) -> str:
    return hashlib.sha256((store / "manifest.json").read_bytes()).hexdigest()


def readyz_bodies(server: Server, tries: int = 8) -> list[dict[str, object]]:
    """/readyz from fresh connections (so both workers answer some)."""
    return [httpx.get(f"{server.base}/readyz", timeout=5).json() for _ in range(tries)]


def disagree(body: dict[str, object]) -> bool:
    """A 503 from /readyz that names the workers' different store states."""
    failures: list[str] = body.get("failures") or []  # type: ignore[assignment]
    return body["status"] == 503 and any("different store states" in f for f in failures)


def drop_a_version(store: Path) -> None:
    manifest = json.loads((store / "manifest.json").read_text())
    dropped = next(e for e in manifest["tokenizers"] if not e["default"])
    manifest["tokenizers"].remove(dropped)
    (store / "manifest.json").write_text(json.dumps(manifest))


def test_the_admin_reload_reloads_each_worker_once_and_names_the_state(store: Path) -> None:
    server = start_server(2, TOKSVC_STORE=str(store), TOKSVC_ADMIN_TOKEN="s3cret")
    try:
        before = reloads_ok(server)
        r = httpx.post(f"{server.base}/admin/reload", headers=TOKEN, timeout=90)
        assert r.status_code == 202, r.text
        assert wait_for(lambda: reloads_ok(server) >= before + 2, 30)
        time.sleep(2)  # a second reload of the answering worker would have been counted by now
        assert reloads_ok(server) == before + 2
        assert r.json()["store_sha256"] == manifest_sha256(store)
        assert r.json()["workers"] == 2
    finally:
        stop_server(server)


def test_workers_on_different_store_states_are_named_until_a_reload_ends_it(store: Path) -> None:
    server = start_server(2, TOKSVC_STORE=str(store), TOKSVC_ADMIN_TOKEN="s3cret")
    try:
        old = manifest_sha256(store)
        assert not any(disagree(body) for body in readyz_bodies(server))
        drop_a_version(store)
        new = manifest_sha256(store)
        os.kill(min(worker_pids(server)), signal.SIGHUP)  # one worker reloads alone
        assert wait_for(lambda: all(disagree(b) for b in readyz_bodies(server)), 30)
        named = " ".join(readyz_bodies(server, 1)[0]["failures"])  # type: ignore[arg-type]
        assert old[:12] in named and new[:12] in named, named
        r = httpx.post(f"{server.base}/admin/reload", headers=TOKEN, timeout=90)
        assert r.status_code == 202, r.text
        assert r.json()["store_sha256"] == new and r.json()["workers"] == 2
        bodies = readyz_bodies(server, 16)
        assert not any(disagree(body) for body in bodies)
        assert {body["store_sha256"] for body in bodies} == {new}
    finally:
        stop_server(server)
    assert server.process.returncode == 0


def test_a_replaced_worker_does_not_serve_a_store_its_sibling_does_not(store: Path) -> None:
    """The store changes on disk (complete, not reloaded) and a worker dies: its replacement
    would load the new state while its sibling serves the old one. It is refused (and retried)
    instead: every answer meanwhile comes from the old state and /readyz stays 200; a reload
    moves the sibling on, and then the replacement starts on the same state."""
    server = start_server(2, TOKSVC_STORE=str(store))
    try:
        old = manifest_sha256(store)
        drop_a_version(store)
        new = manifest_sha256(store)
        os.kill(min(worker_pids(server)), signal.SIGKILL)
        time.sleep(4)  # the replacement has tried to start (and been refused) by now
        bodies = readyz_bodies(server, 16)
        assert {b["status"] for b in bodies} == {"ready"}, bodies
        assert {b["store_sha256"] for b in bodies} == {old}
        assert {b["workers_loaded"] for b in bodies} == {1}
        server.process.send_signal(signal.SIGHUP)
        assert wait_for(lambda: {b.get("workers_loaded") for b in readyz_bodies(server)} == {2}, 60)
        assert {b["store_sha256"] for b in readyz_bodies(server, 16)} == {new}
    finally:
        stop_server(server)
    assert server.process.returncode == 0
