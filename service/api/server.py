"""`toksvc serve`: uvicorn with one or more worker processes, metrics summed across workers."""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
from pathlib import Path

import uvicorn

from service.settings import Settings


def serve(settings: Settings, *, store: Path, host: str, port: int, workers: int) -> None:
    # Workers read their settings from the environment, so pass the command line's choices on.
    os.environ["TOKSVC_STORE"] = str(store)
    # prometheus_client's multiprocess mode: every worker writes its samples to files in this
    # directory and /metrics sums them; it must be set before any worker imports the client.
    metrics_dir = tempfile.mkdtemp(prefix="toksvc-metrics-")
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = metrics_dir
    # uvicorn shuts down gracefully on SIGTERM/SIGINT, then re-raises the signal to the handler
    # that was there before it: make that a normal exit, so the metrics directory is removed and
    # a stop that went well exits 0.
    signal.signal(signal.SIGTERM, _exit_normally)
    signal.signal(signal.SIGINT, _exit_normally)
    try:
        uvicorn.run(
            "service.api.app:create_app",
            factory=True,
            host=host,
            port=port,
            workers=workers,
            timeout_graceful_shutdown=10,
            timeout_keep_alive=5,
            ws_max_size=settings.max_body_bytes,  # a bigger WebSocket message closes with 1009
            log_level="info",
            access_log=False,
        )
    except SystemExit as exc:
        if exc.code not in (0, None):
            raise  # e.g. uvicorn's 3 when start-up failed (strict mode and a bad store)
    finally:
        shutil.rmtree(metrics_dir, ignore_errors=True)


def _exit_normally(signum: int, frame: object) -> None:
    raise SystemExit(0)
