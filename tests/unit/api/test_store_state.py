"""Which store state each worker serves (issue 23, medium): the roster records it after every load
and reload, a reload round ends when every worker has answered, and disagreement is named."""

from __future__ import annotations

import asyncio
import hashlib
import os
import time
from pathlib import Path

from service.api import store_state
from service.api.process.handoff import WorkerProcess
from service.store.loader import load_store
from service.store.loader import store_state as combined_state
from service.store.manifest import MANIFEST

A, B = "a" * 64, "b" * 64


def test_a_registry_names_the_store_state_by_its_manifests_hash(store: Path) -> None:
    registry = load_store(store)
    assert registry.store_sha256 == hashlib.sha256((store / MANIFEST).read_bytes()).hexdigest()
    two = load_store([store, store.parent / "nowhere"])
    assert two.store_sha256 == combined_state([registry.store_sha256, "-"])
    assert two.store_sha256 != registry.store_sha256


def test_the_roster_keeps_what_each_worker_serves(tmp_path: Path) -> None:
    process = WorkerProcess(state_dir=str(tmp_path), workers=2)
    process.mark_loaded(1, A)
    process.mark_loaded(2, B, ["x.json: sha256 mismatch"])
    roster = process.roster()
    assert {pid: e.store for pid, e in roster.items()} == {1: A, 2: B}
    assert roster[2].failures == ["x.json: sha256 mismatch"] and roster[1].failures == []
    assert process.loaded() == 2
    process.forget(2)
    assert process.loaded() == 1 and list(process.roster()) == [1]


def test_the_workers_disagreement_is_named(tmp_path: Path) -> None:
    process = WorkerProcess(state_dir=str(tmp_path), workers=2)
    process.mark_loaded(1, A)
    process.mark_loaded(2, A)
    assert store_state.disagreement(process) is None
    process.mark_loaded(2, B)
    warning = store_state.disagreement(process)
    assert warning is not None and "2 different store states" in warning
    assert A[:12] in warning and B[:12] in warning


def test_a_round_ends_when_every_worker_has_answered(tmp_path: Path) -> None:
    process = WorkerProcess(state_dir=str(tmp_path), workers=2)
    me, other = os.getpid(), 1
    process.mark_loaded(me, A)
    process.mark_loaded(other, A)
    since = time.time()

    async def round_with_answers() -> dict[int, object]:
        waiting = asyncio.create_task(store_state.await_round(process, since, seconds=30))
        await asyncio.sleep(0.2)
        assert not waiting.done()  # nobody has answered since the round began
        process.mark_loaded(other, B)
        process.mark_loaded(me, B)
        return dict(await waiting)

    answered = asyncio.run(round_with_answers())
    assert store_state.agreed(answered) == B  # type: ignore[arg-type]


def test_a_round_says_who_disagrees_refused_or_did_not_answer(tmp_path: Path) -> None:
    process = WorkerProcess(state_dir=str(tmp_path), workers=3)
    since = time.time()
    process.mark_loaded(os.getpid(), A)
    process.mark_loaded(1, B)
    answered = asyncio.run(store_state.await_round(process, since, seconds=0))
    assert store_state.agreed(answered) is None
    assert store_state.states(answered) == {str(os.getpid()): A, "1": B}
    process.mark_loaded(1, A, ["bad.json: not a regular file"])
    answered = asyncio.run(store_state.await_round(process, since, seconds=0))
    assert store_state.refusal(answered) == ["bad.json: not a regular file"]
    late = time.time()
    process.mark_loaded(os.getpid(), A)
    answered = asyncio.run(store_state.await_round(process, late, seconds=0))
    assert store_state.states(answered)["1"] == store_state.NO_ANSWER
    assert store_state.agreed(answered) is None
