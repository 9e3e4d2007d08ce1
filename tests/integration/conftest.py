"""A real `toksvc serve` process on a free loopback port, for everything that depends on HTTP."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import pytest

from tests.conftest import ROOT


@dataclass
class Server:
    base: str
    port: int
    process: subprocess.Popen[bytes]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(workers: int = 1, **env: str) -> Server:
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "service", "serve", "--host", "127.0.0.1", "--port", str(port),
         "--workers", str(workers)],
        cwd=ROOT, env={**os.environ, **env}, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"server exited: {process.stderr.read().decode()}")  # type: ignore[union-attr]
        try:
            ready = [httpx.get(f"{base}/readyz", timeout=2).status_code for _ in range(workers * 3)]
            if all(code == 200 for code in ready):
                return Server(base, port, process)
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    stop_server(Server(base, port, process))
    raise RuntimeError("server did not become ready in 90 s")


def stop_server(server: Server) -> None:
    server.process.send_signal(signal.SIGTERM)
    try:
        server.process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        server.process.kill()
        server.process.wait()


@pytest.fixture(scope="session")
def server() -> Iterator[Server]:
    s = start_server(1, TOKSVC_MAX_STREAMS_PER_WORKER="4", TOKSVC_WS_IDLE_SECONDS="2")
    yield s
    stop_server(s)
