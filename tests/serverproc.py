"""Start and stop a real `toksvc serve` process on a free loopback port (127.0.0.1 only)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent


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
    """Start `toksvc serve` and return once every worker has loaded the store."""
    port = free_port()
    log = tempfile.TemporaryFile()  # noqa: SIM115 (lives as long as the server; not a pipe)
    process = subprocess.Popen(
        [sys.executable, "-m", "service", "serve", "--host", "127.0.0.1", "--port", str(port),
         "--workers", str(workers)],
        cwd=ROOT, env={**os.environ, **env}, stdout=subprocess.DEVNULL, stderr=log,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        if process.poll() is not None:
            log.seek(0)
            raise RuntimeError(f"server exited: {log.read().decode(errors='replace')}")
        try:
            if httpx.get(f"{base}/readyz", timeout=2).status_code == 200 and all_loaded(
                base, process.pid, workers
            ):
                return Server(base, port, process)
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    stop_server(Server(base, port, process))
    raise RuntimeError("server did not become ready in 90 s")


def all_loaded(base: str, pid: int, workers: int) -> bool:
    """Every worker has started (its metrics file exists) and `toksvc_store_loaded`, the minimum
    over the workers, is 1. A worker still loading does not accept connections, so /readyz alone
    can be answered by one worker while the other is still loading."""
    if workers == 1:
        return True
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    started = 0
    for child in children:
        environ = Path(f"/proc/{child}/environ").read_bytes().split(b"\0")
        dirs = [v.split(b"=", 1)[1] for v in environ if v.startswith(b"PROMETHEUS_MULTIPROC_DIR=")]
        if dirs and (Path(dirs[0].decode()) / f"gauge_min_{child}.db").exists():
            started += 1
    text = httpx.get(f"{base}/metrics", timeout=5).text
    return started >= workers and "toksvc_store_loaded 1.0" in text


def stop_server(server: Server) -> None:
    server.process.send_signal(signal.SIGTERM)
    try:
        server.process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        server.process.kill()
        server.process.wait()
