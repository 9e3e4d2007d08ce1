"""One owner for process life (issue 23, high 6): a worker slot is one record and every signal goes
through the supervisor's own handlers, so a scale-down never strands a slot's retry state."""

from __future__ import annotations

import itertools
import os
import signal
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from uvicorn.config import Config

from service.api.process import supervisor as supervisor_module
from service.api.process.handoff import WorkerProcess
from service.api.process.supervisor import STARTUP_FAILURE, Supervisor

PIDS = itertools.count(1_000_000)  # never a live process: the supervisor only signals live ones


class Inner:
    def __init__(self, owner: FakeProcess) -> None:
        self.owner = owner

    def is_alive(self) -> bool:
        return self.owner.exitcode is None


class FakeProcess:
    """A worker the test drives: ready or not, and dead with an exit status when told."""

    def __init__(self, config: Config, sockets: list[socket.socket]) -> None:
        self.pid = next(PIDS)
        self.exitcode: int | None = None
        self.ready = True
        self.process = Inner(self)
        self.terminated = False

    def start(self) -> None:
        pass

    def _healthcheck(self, timeout: float) -> bool | None:
        return None if self.exitcode is not None else self.ready

    def terminate(self) -> None:
        self.terminated = True
        if self.exitcode is None:
            self.exitcode = 0

    def kill(self) -> None:
        if self.exitcode is None:
            self.exitcode = -9

    def join(self) -> None:
        assert self.exitcode is not None, "joined a worker that was never stopped"


@pytest.fixture
def supervisor(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Supervisor]:
    monkeypatch.setattr(supervisor_module, "Process", FakeProcess)
    monkeypatch.setattr(supervisor_module, "REUSEPORT", False)  # no port to check or bind
    monkeypatch.setattr(Config, "bind_socket", lambda self: socket.socket())
    saved = {sig: signal.getsignal(sig) for sig in signal.valid_signals()}
    config = Config(app="service.api.app:create_app", host="127.0.0.1", port=1, workers=2)
    try:
        yield Supervisor(config, WorkerProcess(state_dir=str(tmp_path), workers=2))
    finally:
        for sig, handler in saved.items():
            if handler is not None and signal.getsignal(sig) is not handler:
                signal.signal(sig, handler)


def process_of(supervisor: Supervisor, idx: int) -> FakeProcess:
    process = supervisor.slots[idx].process
    assert isinstance(process, FakeProcess)
    return process


def fail_start(supervisor: Supervisor, idx: int) -> None:
    """Slot `idx`'s worker exits with the start-up failure status; the supervisor sees it."""
    process_of(supervisor, idx).exitcode = STARTUP_FAILURE
    supervisor.keep_subprocess_alive()
    assert supervisor.slots[idx].waiting


def test_a_scale_down_removes_the_waiting_slot_and_the_worker_keeps_serving(
    supervisor: Supervisor,
) -> None:
    supervisor.start_all()
    serving = process_of(supervisor, 0)
    fail_start(supervisor, 1)
    supervisor.handle_ttou()
    supervisor.keep_subprocess_alive()
    assert not supervisor.should_exit.is_set() and supervisor.exit_code == 0
    assert [slot.process for slot in supervisor.slots] == [serving]
    assert not serving.terminated


def test_a_scale_down_of_the_serving_slot_keeps_the_waiting_one(supervisor: Supervisor) -> None:
    """Slot 0 waits, slot 1 serves: SIGTTOU takes the waiting slot, not the last (serving) one."""
    supervisor.start_all()
    serving = process_of(supervisor, 1)
    fail_start(supervisor, 0)
    supervisor.handle_ttou()
    supervisor.keep_subprocess_alive()
    assert not supervisor.should_exit.is_set()
    assert [slot.process for slot in supervisor.slots] == [serving]


def test_a_scale_down_takes_a_starting_worker_before_a_serving_one(
    supervisor: Supervisor,
) -> None:
    supervisor.start_all()
    process_of(supervisor, 1).ready = False  # slot 1 still loading its store
    supervisor.keep_subprocess_alive()
    serving, starting = process_of(supervisor, 0), process_of(supervisor, 1)
    supervisor.handle_ttou()
    assert [slot.process for slot in supervisor.slots] == [serving] and starting.terminated


def test_a_slot_added_after_a_scale_down_starts_once(supervisor: Supervisor) -> None:
    """No retry state outlives its slot: a slot added later is watched, not started twice."""
    supervisor.start_all()
    fail_start(supervisor, 1)
    supervisor.handle_ttou()
    supervisor.handle_ttin()
    added = process_of(supervisor, 1)
    for slot in supervisor.slots:
        slot.retry_at = 0.0  # any retry that were due would start now
    supervisor.keep_subprocess_alive()
    assert process_of(supervisor, 1) is added and len(supervisor.slots) == 2


def test_the_supervisor_exits_when_every_slot_waits(supervisor: Supervisor) -> None:
    supervisor.start_all()
    fail_start(supervisor, 0)
    fail_start(supervisor, 1)
    assert supervisor.should_exit.is_set() and supervisor.exit_code == STARTUP_FAILURE


def test_a_removed_worker_is_stopped_and_leaves_the_roster(supervisor: Supervisor) -> None:
    supervisor.start_all()
    removed = process_of(supervisor, 1)
    supervisor.worker_process.mark_loaded(removed.pid)
    supervisor.handle_ttou()
    assert removed.terminated and len(supervisor.slots) == 1
    assert supervisor.worker_process.loaded() == 0
    supervisor.handle_ttou()  # the last slot stays
    assert len(supervisor.slots) == 1


def test_the_slot_count_is_published_for_readyz(supervisor: Supervisor) -> None:
    process = supervisor.worker_process
    supervisor.start_all()
    assert process.current_workers() == 2
    supervisor.handle_ttin()
    assert process.current_workers() == 3
    supervisor.handle_ttou()
    supervisor.handle_ttou()
    assert process.current_workers() == 1


def test_every_signal_goes_through_the_supervisors_own_handlers(supervisor: Supervisor) -> None:
    """The handlers installed are the supervisor's (none inherited from uvicorn), and each
    queued signal is served by one of its methods or logged as ignored."""
    for name in ("INT", "TERM", "HUP", "TTIN", "TTOU", "USR1"):
        handler = signal.getsignal(getattr(signal, f"SIG{name}"))
        assert getattr(handler, "__self__", None) is supervisor, name
    supervisor.start_all()
    os.kill(os.getpid(), signal.SIGTTIN)
    os.kill(os.getpid(), signal.SIGUSR1)
    supervisor.handle_signals()
    assert len(supervisor.slots) == 3 and not supervisor.should_exit.is_set()
    os.kill(os.getpid(), signal.SIGTERM)
    supervisor.handle_signals()
    assert supervisor.should_exit.is_set()
