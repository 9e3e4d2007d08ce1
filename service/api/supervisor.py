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
  request now and then).

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
import time

from uvicorn.config import Config
from uvicorn.supervisors.multiprocess import Multiprocess, Process

from service.api.handoff import WorkerProcess

REUSEPORT = sys.platform == "linux" and hasattr(socket, "SO_REUSEPORT")
STARTUP_FAILURE = 3  # uvicorn's exit status when the app's start-up fails
FIRST_BACKOFF = 1.0
MAX_BACKOFF = 30.0
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


class Supervisor(Multiprocess):
    def __init__(self, config: Config, process: WorkerProcess) -> None:
        # SO_REUSEPORT spreads connections on Linux only (elsewhere: one shared socket, as uvicorn)
        shared = [] if REUSEPORT else [config.bind_socket()]
        if REUSEPORT:
            check_port(config)
        super().__init__(config, shared)
        self.worker_process = process  # what the workers are handed (state dir, roster)
        self.exit_code = 0
        self.retry_at: dict[int, float] = {}  # slot -> when its next start is due
        self.backoff: dict[int, float] = {}  # slot -> the delay before its next retry
        self.failed_starts = 0  # failed starts since a worker was last seen ready

    def handle_hup(self) -> None:
        log.info("Received SIGHUP, reloading the store in workers.")
        for process in self.processes:
            if process.pid is not None and process.exitcode is None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(process.pid, signal.SIGHUP)

    def keep_subprocess_alive(self) -> None:
        if self.should_exit.is_set():
            return
        now = time.monotonic()
        any_ready = False
        for idx, process in enumerate(self.processes):
            if idx in self.retry_at:
                if now >= self.retry_at[idx]:
                    del self.retry_at[idx]
                    self._start(idx)
                continue
            started = _healthcheck(process, self.config.timeout_worker_healthcheck)
            if started is not None:
                if started:
                    any_ready = True
                    self.backoff.pop(idx, None)
                continue
            self._bury(idx, process, now)
        if any_ready:
            self.failed_starts = 0
        if self.should_exit.is_set():
            return
        waiting = len(self.retry_at) == len(self.processes)
        if waiting or self.failed_starts >= 2 * len(self.processes):
            log.error("No worker can serve (%d failed starts in a row): exiting with status %d.",
                      self.failed_starts, STARTUP_FAILURE)  # fmt: skip
            self.exit_code = STARTUP_FAILURE
            self.should_exit.set()

    def _bury(self, idx: int, process: Process, now: float) -> None:
        process.kill()  # hung or dead: make sure, then reap it
        process.join()
        if process.pid is not None:
            self.worker_process.forget(process.pid)
            # imported here: prometheus_client must first see PROMETHEUS_MULTIPROC_DIR, which
            # `serve` sets after importing this module (a single worker runs in this process)
            from prometheus_client import multiprocess  # noqa: PLC0415

            with contextlib.suppress(OSError, TypeError):
                multiprocess.mark_process_dead(process.pid)  # type: ignore[no-untyped-call]
        if self.should_exit.is_set():
            return
        if process.exitcode == STARTUP_FAILURE:
            why = f"Worker [{process.pid}] could not start (exit status {STARTUP_FAILURE})"
            self._retry_later(idx, now, why)
            return
        log.warning("Worker [%s] died (exit status %s); starting a replacement.",
                    process.pid, process.exitcode)  # fmt: skip
        self._start(idx)

    def init_processes(self) -> None:
        self.processes = [self._process() for _ in range(self.processes_num)]

    def handle_ttin(self) -> None:
        # uvicorn's would start the worker on self.sockets: none under REUSEPORT, so it listened
        # nowhere (Server.startup takes an empty list as "no listeners")
        log.info("Received SIGTTIN, adding a worker.")
        self.processes_num += 1
        self.processes.append(self._process())

    def _retry_later(self, idx: int, now: float, why: str) -> None:
        """Start slot `idx` again after its next back-off (1 s, doubling up to 30 s)."""
        self.failed_starts += 1
        delay = self.backoff.get(idx, FIRST_BACKOFF / 2) * 2
        self.backoff[idx] = min(delay, MAX_BACKOFF)
        self.retry_at[idx] = now + self.backoff[idx]
        serving = len(self.processes) - len(self.retry_at)
        log.error("%s; retrying in %.0fs, %d of %d worker slots still up.", why,
                  self.backoff[idx], serving, len(self.processes))  # fmt: skip

    def _start(self, idx: int) -> None:
        try:
            self.processes[idx] = self._process()
        except OSError as exc:  # no socket for it: out of file descriptors, the port taken...
            self._retry_later(idx, time.monotonic(), f"Worker slot {idx} could not listen ({exc})")

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
