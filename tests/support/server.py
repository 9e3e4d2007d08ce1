"""Start and stop a real `toksvc serve` process on a free loopback port (127.0.0.1 only), through
the one helper the load scripts use too (`tests/support/serving.py`): it returns once /readyz says
every worker has loaded the store."""

from __future__ import annotations

import os

from tests.support.serving import ROOT, Server, free_port, start, stop

__all__ = ["ROOT", "Server", "free_port", "start_server", "stop_server"]


def start_server(workers: int = 1, **env: str) -> Server:
    """Start `toksvc serve` with these TOKSVC_* variables; return once every worker has loaded."""
    return start(workers=workers, env={**os.environ, **env}, seconds=90)


def stop_server(server: Server) -> None:
    stop(server)
