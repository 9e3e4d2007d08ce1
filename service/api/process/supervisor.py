"""One supervisor that survives its workers, and workers that do not outlive it.

uvicorn's own supervisor stops everything (and exits 0) when one replacement worker fails its
start-up, e.g. a store with a failure after one had served: one OOM kill became an outage that a
restart-on-failure policy never saw. `Supervisor` instead:

- restarts a worker that died at once, and retries one that could not start (exit status 3)
  with a doubling back-off (1 s .. 30 s) while the others keep serving;
- exits with status 3 only when no worker can serve: every slot is waiting for a retry, or no
  worker has been ready across `2 x workers` failed starts in a row;
- forgets a dead worker's live gauges (`mark_process_dead`), so `toksvc_active_streams` does not
  count the streams of a killed worker forever;
- on SIGHUP reloads the store inside every worker (replacing workers was measured to fail a
  request now and then); SIGTTIN adds a worker slot, SIGTTOU removes one (a slot waiting for a
  retry first, so a scale-down never leaves only waiting slots while a worker serves).

One owner for process life. A worker slot is one record (`Slot`: its process, or none while it
waits for a retry, the retry time and the back-off), and every signal is queued by one handler
and served by the loop through the methods below. Nothing of uvicorn's `Multiprocess` is
inherited: its SIGTTOU handler popped a process but left the slot's retry state behind (a slot
waiting to restart plus a scale-down exited 3 with a healthy worker serving). From uvicorn this
uses `Config` and the worker `Process` (start, healthcheck, terminate, kill, join); the contract
tests (tests/unit/api/test_contracts.py) check that the installed uvicorn still has them. The
current
slot count is published in the state directory (`WorkerProcess.publish_workers`) for `/readyz`.

Each worker listens on its own socket, all bound to the same address with SO_REUSEPORT, so the
kernel spreads new connections over the workers by a hash of the client's address and port.
With one shared socket, the worker that wakes first accepts every pending connection at once:
under keep-alive clients (wrk, a proxy's pool) one worker served all of them while the other
idled, at random from run to run. A worker's socket is made just before it starts and only the
worker holds it: when the worker dies the socket goes with it, so no connection waits in the
queue of a worker that is not there (the others take them all until the replacement listens).

A worker watches its parent (`service.api.lifecycle.watch_supervisor`): when the supervisor is
gone it shuts down gracefully instead of serving on as an orphan that nobody restarts or reloads.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import socket
import sys
import threading
import time
from dataclasses import dataclass
from types import FrameType

from uvicorn.config import Config
from uvicorn.supervisors.multiprocess import Process

from service.api.process.handoff import WorkerProcess

REUSEPORT = sys.platform == "linux" and hasattr(socket, "SO_REUSEPORT")
STARTUP_FAILURE = 3  # uvicorn's exit status when the app's start-up fails
FIRST_BACKOFF = 1.0
MAX_BACKOFF = 30.0
# served by the loop; the others uvicorn's supervisor queued (and ignored) are ignored here too
SIGNALS = ("INT", "TERM", "HUP", "TTIN", "TTOU", "QUIT", "USR1", "USR2", "WINCH")
log = logging.getLogger("uvicorn.error")


def check_port(config: Config) -> None:
    """Bind a plain socket to the address and close it: if the port is taken (by anything, another
    toksvc included), uvicorn logs it and exits with its start-up failure status, as with one
    shared socket. (While our workers listen, a later process of this user cannot join them
    without SO_REUSEPORT, and the kernel lets no other user join.)"""
    config.bind_socket().close()  # logs "running on ...", or exits if the port is taken


def worker_socket(config: Config) -> socket.socket:
    """A socket bound to `config`'s host and port with SO_REUSEPORT, for one worker."""
    family = socket.AF_INET6 if config.host and ":" in config.host else socket.AF_INET
    sock = socket.socket(family=family)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind((config.host, config.port))
    sock.set_inheritable(True)
    return sock


@dataclass(eq=False)
class Slot:
    """One worker slot: its process (None while it waits for a retry), whether that worker has
    been seen ready, when the retry is due, and the back-off before the next one (0 once its
    worker has been ready)."""

    process: Process | None = None
    ready: bool = False
    retry_at: float = 0.0
    backoff: float = 0.0

    @property
    def waiting(self) -> bool:
        return self.process is None


class Supervisor:
    def __init__(self, config: Config, process: WorkerProcess) -> None:
        # SO_REUSEPORT spreads connections on Linux only (elsewhere: one shared socket, as uvicorn)
        self.sockets = [] if REUSEPORT else [config.bind_socket()]
        if REUSEPORT:
            check_port(config)
        self.config = config
        self.worker_process = process  # what the workers are handed (state dir, roster)
        self.slots = [Slot() for _ in range(config.workers)]
        self.exit_code = 0
        self.failed_starts = 0  # failed starts since a worker was last seen ready
        self.should_exit = threading.Event()
        self.signal_queue: list[signal.Signals] = []
        for name in SIGNALS:
            if hasattr(signal, f"SIG{name}"):
                signal.signal(getattr(signal, f"SIG{name}"), self._queue)

    def _queue(self, signum: int, frame: FrameType | None) -> None:
        self.signal_queue.append(signal.Signals(signum))

    # --- the loop ------------------------------------------------------------------------------

    def run(self) -> None:
        log.info("Started parent process [%d]", os.getpid())
        self.start_all()
        while not self.should_exit.wait(0.5):
            self.handle_signals()
            self.keep_subprocess_alive()
        live = [slot.process for slot in self.slots if slot.process is not None]
        for process in live:
            process.terminate()
        for process in live:
            self._retire(process)
        log.info("Stopping parent process [%d]", os.getpid())

    def start_all(self) -> None:
        self.worker_process.publish_workers(len(self.slots))
        for slot in self.slots:
            self._start(slot)

    def handle_signals(self) -> None:
        while self.signal_queue:
            sig = self.signal_queue.pop(0)
            handler = getattr(self, f"handle_{sig.name[3:].lower()}", None)
            if handler is None:
                log.info("Received %s; ignored.", sig.name)
            else:
                handler()

    def keep_subprocess_alive(self) -> None:
        if self.should_exit.is_set():
            return
        now = time.monotonic()
        any_ready = False
        for slot in list(self.slots):
            if slot.process is None:
                if now >= slot.retry_at:
                    self._start(slot)
                continue
            started = _healthcheck(slot.process, self.config.timeout_worker_healthcheck)
            if started is None:
                self._bury(slot, now)
            elif started:
                any_ready = True
                slot.ready, slot.backoff = True, 0.0
        if any_ready:
            self.failed_starts = 0
        if self.should_exit.is_set():
            return
        waiting = all(slot.waiting for slot in self.slots)
        if waiting or self.failed_starts >= 2 * len(self.slots):
            log.error(
                "No worker can serve (%d failed starts in a row): exiting with status %d.",
                self.failed_starts,
                STARTUP_FAILURE,
            )
            self.exit_code = STARTUP_FAILURE
            self.should_exit.set()

    # --- the signals ---------------------------------------------------------------------------

    def handle_int(self) -> None:
        log.info("Received SIGINT, exiting.")
        self.should_exit.set()

    def handle_term(self) -> None:
        log.info("Received SIGTERM, exiting.")
        self.should_exit.set()

    def handle_hup(self) -> None:
        log.info("Received SIGHUP, reloading the store in workers.")
        for slot in self.slots:
            process = slot.process
            if process is not None and process.pid is not None and process.exitcode is None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(process.pid, signal.SIGHUP)

    def handle_ttin(self) -> None:
        log.info("Received SIGTTIN, adding a worker.")
        slot = Slot()
        self.slots.append(slot)
        self.worker_process.publish_workers(len(self.slots))
        self._start(slot)

    def handle_ttou(self) -> None:
        if len(self.slots) <= 1:
            log.info("Received SIGTTOU; one worker slot is left, it stays.")
            return
        # a slot waiting for its retry goes first, then one still starting: the workers that
        # serve keep serving
        slot = min(reversed(self.slots), key=lambda s: (not s.waiting, s.ready))
        self.slots.remove(slot)
        self.worker_process.publish_workers(len(self.slots))
        what = "waiting for a retry" if slot.waiting else "serving" if slot.ready else "starting"
        log.info("Received SIGTTOU, removing a worker slot (%s); %d left.", what, len(self.slots))
        if slot.process is not None:
            slot.process.terminate()
            self._retire(slot.process)

    # --- one slot's life -----------------------------------------------------------------------

    def _bury(self, slot: Slot, now: float) -> None:
        """The slot's worker is dead or hung: make sure, reap it, then start it again (at once
        if it died, after the back-off if it could not start)."""
        process = slot.process
        assert process is not None
        process.kill()
        self._retire(process)
        slot.process = None
        if self.should_exit.is_set():
            return
        if process.exitcode == STARTUP_FAILURE:
            why = f"Worker [{process.pid}] could not start (exit status {STARTUP_FAILURE})"
            self._retry_later(slot, now, why)
            return
        log.warning(
            "Worker [%s] died (exit status %s); starting a replacement.",
            process.pid,
            process.exitcode,
        )
        self._start(slot)

    def _retire(self, process: Process) -> None:
        """Wait for a stopped (or stopping) worker and forget it: roster and live gauges."""
        process.join()
        if process.pid is None:
            return
        self.worker_process.forget(process.pid)
        # imported here: prometheus_client must first see PROMETHEUS_MULTIPROC_DIR, which
        # `serve` sets after importing this module (a single worker runs in this process)
        from prometheus_client import multiprocess  # noqa: PLC0415

        with contextlib.suppress(OSError, TypeError):
            multiprocess.mark_process_dead(process.pid)  # type: ignore[no-untyped-call]

    def _retry_later(self, slot: Slot, now: float, why: str) -> None:
        """Start `slot` again after its next back-off (1 s, doubling up to 30 s)."""
        self.failed_starts += 1
        slot.process = None
        slot.backoff = min(max(slot.backoff * 2, FIRST_BACKOFF), MAX_BACKOFF)
        slot.retry_at = now + slot.backoff
        serving = sum(not s.waiting for s in self.slots)
        log.error(
            "%s; retrying in %.0fs, %d of %d worker slots still up.",
            why,
            slot.backoff,
            serving,
            len(self.slots),
        )

    def _start(self, slot: Slot) -> None:
        slot.ready = False
        try:
            slot.process = self._process()
        except OSError as exc:  # no socket for it: out of file descriptors, the port taken...
            self._retry_later(slot, time.monotonic(), f"A worker slot could not listen ({exc})")

    def _process(self) -> Process:
        """A started worker on a socket of its own (see the module docstring)."""
        if not REUSEPORT:
            process = Process(self.config, self.sockets)
            process.start()
            return process
        with worker_socket(self.config) as sock:
            process = Process(self.config, [sock])
            process.start()  # the worker has its own copy of the socket now
        return process


def _healthcheck(process: Process, timeout: float) -> bool | None:
    """None if the worker is dead or hung, else whether it has finished starting."""
    if not process.process.is_alive():
        return None
    return process._healthcheck(timeout)
