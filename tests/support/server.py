"""Start and stop a real `toksvc serve` process on a free loopback port (127.0.0.1 only), through
the one helper the load scripts use too (`tests/support/serving.py`): it returns once /readyz says
every worker has loaded the store."""

from __future__ import annotations

import os
from pathlib import Path

from tests.support.serving import ROOT, Server, free_port, start, stop

__all__ = ["ROOT", "Server", "free_port", "start_server", "stop_server", "worker_pids"]


def start_server(workers: int = 1, **env: str) -> Server:
    """Start `toksvc serve` with these TOKSVC_* variables; return once every worker has loaded."""
    return start(workers=workers, env={**os.environ, **env}, seconds=90)


def stop_server(server: Server) -> None:
    stop(server)


def worker_pids(server: Server) -> set[int]:
    """The supervisor's worker processes now (not multiprocessing's resource tracker).

    A child that exits between the listing of children and the read of its command line is not a
    worker any more, and is left out rather than failing the read."""
    pid = server.process.pid
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    workers = set()
    for child in map(int, children):
        try:
            cmdline = Path(f"/proc/{child}/cmdline").read_bytes()
        except (FileNotFoundError, ProcessLookupError):
            continue
        if b"spawn_main" in cmdline:
            workers.add(child)
    return workers
