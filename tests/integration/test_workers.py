"""Two uvicorn workers behind one port: both serve, and /metrics sums what both did."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from tests.support.server import Server, start_server, stop_server, worker_pids

REQUESTS = 120


@pytest.fixture(scope="module")
def two_workers() -> Iterator[Server]:
    s = start_server(2)
    yield s
    stop_server(s)


def metric(text: str, name: str, **labels: str) -> float:
    total = 0.0
    for line in text.splitlines():
        if line.startswith(name + "{") and all(f'{k}="{v}"' in line for k, v in labels.items()):
            total += float(line.rsplit(" ", 1)[1])
    return total


def test_metrics_cover_all_workers(two_workers: Server) -> None:
    pids = worker_pids(two_workers)
    assert len(pids) == 2  # uvicorn's supervisor runs two worker processes

    def one(i: int) -> int:
        with httpx.Client(base_url=two_workers.base, timeout=30) as c:  # a new connection each
            r = c.post("/v1/tokenizers/gpt2/count", json={"text": "hello world " * (i % 7 + 1)})
            assert r.status_code == 200
            return int(r.json()["count"])

    with ThreadPoolExecutor(8) as pool:
        expected = sum(pool.map(one, range(REQUESTS)))
    # both workers served (each has its own counter file) ...
    served = {pid for pid in pids if (metrics_dir(pid) / f"counter_{pid}.db").exists()}
    assert len(served) == 2, (pids, served)
    # ... and whichever worker answers /metrics reports the sum over both
    for _ in range(6):
        text = httpx.get(f"{two_workers.base}/metrics", timeout=10).text
        assert (
            metric(text, "toksvc_tokens_total", tokenizer="gpt2@1", operation="count") == expected
        )
        assert metric(text, "toksvc_requests_total", operation="count", status="200") == REQUESTS


def metrics_dir(pid: int) -> Path:
    environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    found = [v.split(b"=", 1)[1] for v in environ if v.startswith(b"PROMETHEUS_MULTIPROC_DIR=")]
    return Path(found[0].decode()) if found else Path("/nonexistent")
