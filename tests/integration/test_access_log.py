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


def test_the_request_id_is_echoed_and_made_when_missing_or_unsafe(served: Server) -> None:
    url = served.base + "/healthz"
    assert httpx.get(url, headers={"x-request-id": "abc.DEF-1:2"}).headers["x-request-id"] == (
        "abc.DEF-1:2"
    )
    for unsafe in ("", "x" * 129, "two words", 'quote"d', "tab\tbed"):
        made = httpx.get(url, headers={"x-request-id": unsafe}).headers["x-request-id"]
        assert made != unsafe and len(made) == 32 and made.isalnum()
    made = httpx.get(url).headers["x-request-id"]
    assert _line_of(served, made)["route"] == "/healthz"


@pytest.mark.parametrize(
    ("method", "path", "body", "status"),
    [
        ("GET", "/v1/tokenizers/no-such", None, 404),  # a handler's domain error
        ("POST", "/v1/tokenizers/gpt2/count", {"txt": "x"}, 400),  # an invalid body
        ("GET", "/no/such/route", None, 404),  # no route matched
        ("POST", "/v1/tokenizers/gpt2/encode", {"text": "<|endoftext|>"}, 422),  # the hot path
    ],
)
def test_every_problem_carries_the_request_id(
    served: Server, method: str, path: str, body: object, status: int
) -> None:
    r = httpx.request(
        method, served.base + path, json=body, headers={"x-request-id": f"p-{status}"}
    )
    assert r.status_code == status
    assert r.headers["content-type"] == "application/problem+json"
    assert r.json()["request_id"] == r.headers["x-request-id"] == f"p-{status}"
