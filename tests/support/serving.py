"""`toksvc serve` on 127.0.0.1 for the tests and the load, memory and chaos scripts: a free port,
the process, and ONE readiness rule, the service's own: /readyz answers 200 and says that every
worker has loaded the store (`workers_loaded == workers`). A worker still loading accepts no
connection, so a 200 alone may come from the one worker that is done.

The benchmarks (`python -m bench.<script>` from the repository root) and the tests
(tests/support/server.py) import it as `tests.support.serving`."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import httpx

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Server:
    base: str
    port: int
    process: subprocess.Popen[bytes]
    log: IO[bytes] | None = field(default=None, repr=False)  # the server's output, if kept


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def serve(
    *args: str, env: dict[str, str] | None = None, log: IO[bytes] | None = None
) -> tuple[subprocess.Popen[bytes], str, int]:
    """Start `toksvc serve` with `args` on a free port: (process, base URL, port). Does not wait."""
    port = free_port()
    out = log if log is not None else subprocess.DEVNULL
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "service",
            "serve",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            *args,
        ],
        cwd=ROOT,
        env=env or dict(os.environ),
        stdout=out,
        stderr=out,
    )
    return proc, f"http://127.0.0.1:{port}", port


def ready(base: str) -> bool:
    """The readiness rule: /readyz is 200 and every worker has loaded the store."""
    try:
        r = httpx.get(f"{base}/readyz", timeout=2)
    except httpx.HTTPError:
        return False
    if r.status_code != 200:
        return False
    body = r.json()
    return body.get("workers") is not None and body.get("workers_loaded") == body["workers"]


def wait_ready(
    base: str, seconds: float = 120, process: subprocess.Popen[bytes] | None = None
) -> bool:
    """Poll `ready` until it holds (True), `seconds` pass or `process` exits (False)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            return False
        if ready(base):
            return True
        time.sleep(0.2)
    return False


def start(
    *args: str,
    workers: int = 1,
    env: dict[str, str] | None = None,
    seconds: float = 120,
    log: IO[bytes] | None = None,
) -> Server:
    """Start `toksvc serve --workers N *args` and return once every worker has loaded the store;
    RuntimeError with the server's output if it exits or is not ready within `seconds`. The
    output goes to `log` (a file opened for reading and writing; a temporary file by default)."""
    if log is None:
        log = tempfile.TemporaryFile()  # noqa: SIM115 (lives as long as the server; not a pipe)
    proc, base, port = serve("--workers", str(workers), *args, env=env, log=log)
    server = Server(base, port, proc, log)
    if wait_ready(base, seconds, proc):
        return server
    exited = proc.poll() is not None
    stop(server)
    log.seek(0)
    output = log.read().decode(errors="replace")[-4000:]
    why = "exited" if exited else f"was not ready in {seconds:g} s"
    raise RuntimeError(f"toksvc serve {why}:\n{output}")


def stop(server: Server, seconds: float = 20) -> int:
    """SIGTERM, then SIGKILL after `seconds`; the exit status."""
    server.process.send_signal(signal.SIGTERM)
    try:
        return server.process.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        server.process.kill()
        return server.process.wait()
    finally:
        if server.log is not None:
            server.log.close()


def small_store(into: Path) -> Path:
    """The bundled store without the large vocabularies (and the models that use them), so that
    workers start in seconds."""
    copy = into / "store"
    shutil.copytree(
        ROOT / "tokenizers_store", copy, ignore=shutil.ignore_patterns("o200k*", "qwen*")
    )
    manifest = json.loads((copy / "manifest.json").read_text())
    manifest["tokenizers"] = [e for e in manifest["tokenizers"] if (copy / e["path"]).exists()]
    manifest["models"] = manifest["prices"] = []
    (copy / "manifest.json").write_text(json.dumps(manifest))
    return copy
