"""Access lines and request ids over real HTTP: `toksvc serve` writes one JSON line per request on
its stdout, and echoes (or makes) the request id."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.server import Server, start_server, stop_server
from tests.support.serving import small_store

SECRET = "words nobody may read in the log"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    store = small_store(Path(tmp_path_factory.mktemp("access")))
    s = start_server(1, TOKSVC_STORE=str(store), TOKSVC_LOG_FORMAT="json")
    yield s
    stop_server(s)


def _output(server: Server) -> str:
    assert server.log is not None
    server.log.seek(0)
    return server.log.read().decode(errors="replace")


def _line_of(server: Server, request_id: str) -> dict[str, object]:
    for _ in range(50):  # the line is written once the response has ended
        for text in _output(server).splitlines():
            if text.startswith("{") and f'"request_id":"{request_id}"' in text:
                line: dict[str, object] = json.loads(text)
                return line
        time.sleep(0.05)
    raise AssertionError(f"no access line for {request_id}")


def test_a_request_is_one_json_line_on_stdout(served: Server) -> None:
    r = httpx.post(
        served.base + "/v1/tokenizers/gpt2/encode",
        json={"text": SECRET},
        headers={"x-request-id": "it-1"},
    )
    assert r.status_code == 200
    line = _line_of(served, "it-1")
    assert line["route"] == "/v1/tokenizers/{ref}/encode" and line["status"] == 200
    assert line["tokenizer"] == "gpt2" and line["method"] == "POST"
    assert line["bytes_in"] == len(r.request.content) and line["bytes_out"] == len(r.content)
    assert {"time", "level", "duration_ms", "pid"} <= line.keys()
    assert SECRET not in _output(served)
