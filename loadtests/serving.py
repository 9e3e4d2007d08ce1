"""`toksvc serve` on 127.0.0.1 for the load and memory scripts: a free port, the process, and
waiting until /readyz answers 200."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import IO

import httpx

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def serve(*args: str, env: dict[str, str] | None = None,
          log: IO[bytes] | None = None) -> tuple[subprocess.Popen[bytes], str, int]:  # fmt: skip
    """Start `toksvc serve` with `args` on a free port: (process, base URL, port)."""
    port = free_port()
    out = log if log is not None else subprocess.DEVNULL
    proc = subprocess.Popen([sys.executable, "-m", "service", "serve", "--host", "127.0.0.1",
                             "--port", str(port), *args], cwd=ROOT, env=env or dict(os.environ),
                            stdout=out, stderr=out)  # fmt: skip
    return proc, f"http://127.0.0.1:{port}", port


def ready(base: str) -> bool:
    try:
        return httpx.get(f"{base}/readyz", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def wait_ready(base: str, seconds: float = 120) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if ready(base):
            return True
        time.sleep(0.5)
    return False


def small_store(into: Path) -> Path:
    """The bundled store without the large vocabularies (and the models that use them), so that
    workers start in seconds."""
    copy = into / "store"
    shutil.copytree(ROOT / "tokenizers_store", copy,
                    ignore=shutil.ignore_patterns("o200k*", "qwen*"))  # fmt: skip
    manifest = json.loads((copy / "manifest.json").read_text())
    manifest["tokenizers"] = [e for e in manifest["tokenizers"] if (copy / e["path"]).exists()]
    manifest["models"] = manifest["prices"] = []
    (copy / "manifest.json").write_text(json.dumps(manifest))
    return copy
