"""The supervisor hands every worker it starts a listening socket: at start, on a restart and on
SIGTTIN (uvicorn's own handler started that one on the shared sockets, none under SO_REUSEPORT)."""

from __future__ import annotations

import signal
import socket
from collections.abc import Iterator
from typing import ClassVar

import pytest
from uvicorn.config import Config

from service.api.process import supervisor as supervisor_module
from service.api.process.handoff import WorkerProcess
from service.api.process.supervisor import Supervisor


class FakeProcess:
    """Records the sockets a worker would be started with (and their port while still open)."""

    started: ClassVar[list[list[int]]] = []

    def __init__(self, config: Config, sockets: list[socket.socket]) -> None:
        self.ports = [s.getsockname()[1] for s in sockets]
        self.pid = None
        self.exitcode = None

    def start(self) -> None:
        FakeProcess.started.append(self.ports)


@pytest.fixture
def supervisor(monkeypatch: pytest.MonkeyPatch) -> Iterator[Supervisor]:
    monkeypatch.setattr(supervisor_module, "Process", FakeProcess)
    FakeProcess.started = []
    saved = {sig: signal.getsignal(sig) for sig in signal.valid_signals()}
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    config = Config(app="service.api.app:create_app", host="127.0.0.1", port=port, workers=2)
    try:
        yield Supervisor(config, WorkerProcess())
    finally:
        for sig, handler in saved.items():
            if handler is not None and signal.getsignal(sig) is not handler:
                signal.signal(sig, handler)


def test_every_worker_started_gets_a_listening_socket(supervisor: Supervisor) -> None:
    supervisor.start_all()
    supervisor._start(supervisor.slots[0])
    supervisor.handle_ttin()
    assert len(FakeProcess.started) == 4
    assert all(ports == [supervisor.config.port] for ports in FakeProcess.started)
    assert len(supervisor.slots) == 3


def test_a_worker_that_cannot_get_a_socket_is_retried_later(
    supervisor: Supervisor, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Out of file descriptors (or the port taken while every worker was down): the slot waits
    for its back-off and tries again; the supervisor does not end."""
    supervisor.start_all()

    def no_socket(config: Config) -> socket.socket:
        raise OSError(24, "Too many open files")

    monkeypatch.setattr(supervisor_module, "worker_socket", no_socket)
    slot = supervisor.slots[0]
    supervisor._start(slot)
    assert slot.waiting and supervisor.failed_starts == 1
    assert len(FakeProcess.started) == 2  # nothing new started
    monkeypatch.undo()
    monkeypatch.setattr(supervisor_module, "Process", FakeProcess)
    supervisor._start(slot)
    assert len(FakeProcess.started) == 3 and not slot.waiting
