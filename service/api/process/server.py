"""`toksvc serve`: uvicorn with one or more worker processes, metrics summed across workers."""

from __future__ import annotations

import os
import shutil
import signal
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

import msgspec
import uvicorn

from service.api.connection import GuardedHttpProtocol, GuardedWebSocketProtocol
from service.api.process.handoff import Handoff, WorkerProcess, hand_on
from service.api.process.supervisor import STARTUP_FAILURE, Supervisor
from service.settings import Settings


def serve(
    settings: Settings,
    *,
    stores: Sequence[Path],
    host: str,
    port: int,
    workers: int,
    preload: str,
) -> None:
    """Serve `settings` with the command line's choices; the workers receive exactly these
    settings, typed (`service.api.process.handoff`), and never read the environment again."""
    settings = msgspec.structs.replace(
        settings, stores=tuple(stores), host=host, port=port, workers=workers, preload=preload
    )
    # prometheus_client's multiprocess mode: every worker writes its samples to files in this
    # directory and /metrics sums them; it must be set before any worker imports the client.
    state_dir = tempfile.mkdtemp(prefix="toksvc-metrics-")
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = state_dir
    process = WorkerProcess(
        state_dir=state_dir, workers=workers, supervisor_pid=os.getpid() if workers > 1 else 0
    )
    hand_on(Handoff(settings=settings, process=process))
    # uvicorn shuts down gracefully on SIGTERM/SIGINT, then re-raises the signal to the handler
    # that was there before it: make that a normal exit, so the state directory is removed and a
    # stop that went well exits 0.
    signal.signal(signal.SIGTERM, _exit_normally)
    signal.signal(signal.SIGINT, _exit_normally)
    config = uvicorn.Config(
        "service.api.app:create_app",
        factory=True,
        host=host,
        port=port,
        workers=workers,
        timeout_graceful_shutdown=10,
        timeout_keep_alive=5,
        ws_max_size=settings.stream_message_bytes(),  # a bigger message closes with 1009
        log_level=settings.log_level,
        access_log=False,  # ours instead: service.api.access_log (TOKSVC_ACCESS_LOG)
        http=GuardedHttpProtocol,  # header size limit, write deadline (service.api.connection)
        ws=GuardedWebSocketProtocol,
    )
    try:
        if workers > 1:
            supervisor = Supervisor(config, process=process)
            supervisor.run()
            if supervisor.exit_code:
                sys.exit(supervisor.exit_code)
        else:
            server = uvicorn.Server(config)
            server.run()
            if not server.started:
                sys.exit(STARTUP_FAILURE)
    except SystemExit as exc:
        if exc.code not in (0, None):
            raise  # e.g. STARTUP_FAILURE (strict mode and a bad store)
    finally:
        shutil.rmtree(state_dir, ignore_errors=True)


def _exit_normally(signum: int, frame: object) -> None:
    raise SystemExit(0)
