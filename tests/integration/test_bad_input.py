"""Every kind of bad input, against a real server with small limits: a clear typed problem, and
the process keeps serving. `python -m tests.integration.test_bad_input` prints the table that
docs/reliability.md shows."""

from __future__ import annotations

import json
import socket
import sys
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.sync.client import connect

from service.api.connection import LINGER_BYTES
from tests.integration.rawhttp import NdjsonStream
from tests.support.server import Server, start_server, stop_server

LIMITS = {
    "TOKSVC_MAX_BODY_BYTES": "65536",
    "TOKSVC_MAX_BATCH_ITEMS": "16",
    "TOKSVC_MAX_IDS_PER_REQUEST": "1000",
    "TOKSVC_MAX_STREAM_SECONDS": "2",
    "TOKSVC_MAX_STREAM_IDS": "100",
    "TOKSVC_WS_IDLE_SECONDS": "2",
    "TOKSVC_BODY_SECONDS": "2",
}
JSON = {"content-type": "application/json"}
T = "/v1/tokenizers/cl100k_base"

# (what, method, path, body bytes, headers, expected status, expected problem type)
CASES: list[tuple[str, str, str, bytes, dict[str, str], int, str]] = [
    ("malformed JSON", "POST", f"{T}/encode", b'{"text": ', JSON, 400, "invalid-body"),
    ("wrong type", "POST", f"{T}/encode", b'{"text": 5}', JSON, 400, "invalid-body"),
    ("unknown field", "POST", f"{T}/count", b'{"text": "a", "x": 1}', JSON, 400, "invalid-body"),
    (
        "both text and texts",
        "POST",
        f"{T}/count",
        b'{"text": "a", "texts": []}',
        JSON,
        400,
        "invalid-body",
    ),
    ("empty body", "POST", f"{T}/encode", b"", JSON, 400, "invalid-body"),
    (
        "body over the limit (70 KB > 64 KiB)",
        "POST",
        f"{T}/count",
        json.dumps({"text": "a" * 70_000}).encode(),
        JSON,
        413,
        "limit-exceeded",
    ),
    (
        "batch over the limit (17 > 16)",
        "POST",
        f"{T}/count",
        json.dumps({"texts": ["a"] * 17}).encode(),
        JSON,
        413,
        "limit-exceeded",
    ),
    (
        "ids over the limit (1001 > 1000)",
        "POST",
        f"{T}/decode",
        json.dumps({"ids": [1] * 1001}).encode(),
        JSON,
        413,
        "limit-exceeded",
    ),
    ("a decode body of 60,000 [", "POST", f"{T}/decode", b"[" * 60_000, JSON, 400, "invalid-body"),
    (
        "a decode body of 5,000 nested lists",
        "POST",
        f"{T}/decode",
        b'{"batch": ' + b"[ " * 5_000 + b"]" * 5_000 + b"}",
        JSON,
        400,
        "invalid-body",
    ),
    (
        "ids given as 2,000 lists: never a batch",
        "POST",
        f"{T}/decode",
        json.dumps({"ids": [[]] * 2000}).encode(),
        JSON,
        400,
        "invalid-body",
    ),
    (
        "a batch of 2,000 lists (> 16)",
        "POST",
        f"{T}/decode",
        json.dumps({"batch": [[1]] * 2000}).encode(),
        JSON,
        413,
        "limit-exceeded",
    ),
    ("negative id", "POST", f"{T}/decode", b'{"ids": [9906, -1]}', JSON, 422, "unknown-token-id"),
    (
        "too large id",
        "POST",
        f"{T}/decode",
        b'{"ids": [1099511627776]}',
        JSON,
        422,
        "unknown-token-id",
    ),
    (
        "id beyond 64 bits",
        "POST",
        f"{T}/decode",
        b'{"ids": [36893488147419103232]}',
        JSON,
        422,
        "unknown-token-id",
    ),
    ("non-integer id", "POST", f"{T}/decode", b'{"ids": [1.5]}', JSON, 400, "invalid-body"),
    ("string id", "POST", f"{T}/decode", b'{"ids": ["1"]}', JSON, 400, "invalid-body"),
    (
        "lone surrogate",
        "POST",
        f"{T}/encode",
        b'{"text": "a\\ud800b"}',
        JSON,
        422,
        "lone-surrogate",
    ),
    (
        "invalid UTF-8, strict decode",
        "POST",
        f"{T}/decode",
        b'{"ids": [9468]}',
        JSON,
        422,
        "undecodable-bytes",
    ),
    (
        "disallowed special token",
        "POST",
        f"{T}/encode",
        b'{"text": "<|endoftext|>"}',
        JSON,
        422,
        "disallowed-special-token",
    ),
    (
        "unknown special token allowed",
        "POST",
        f"{T}/encode",
        b'{"text": "a", "allowed_special": ["<|x|>"]}',
        JSON,
        422,
        "unknown-special-token",
    ),
    (
        "forged stream state",
        "POST",
        f"{T}/decode/step",
        b'{"ids": [], "state": "u8.0.gA=="}',
        JSON,
        422,
        "invalid-stream-state",
    ),
    (
        "unknown tokenizer",
        "POST",
        "/v1/tokenizers/nope/count",
        b'{"text": "a"}',
        JSON,
        404,
        "unknown-tokenizer",
    ),
    (
        "unknown version",
        "POST",
        "/v1/tokenizers/gpt2@9/count",
        b'{"text": "a"}',
        JSON,
        404,
        "unknown-tokenizer",
    ),
    (
        "path trick ../",
        "POST",
        "/v1/tokenizers/../../etc/passwd/count",
        b'{"text": "a"}',
        JSON,
        404,
        "not-found",
    ),
    (
        "path trick, encoded slash",
        "POST",
        "/v1/tokenizers/..%2F..%2Fetc/count",
        b'{"text": "a"}',
        JSON,
        404,
        "not-found",
    ),
    (
        "path trick, NUL",
        "POST",
        "/v1/tokenizers/gpt2%00/count",
        b'{"text": "a"}',
        JSON,
        404,
        "unknown-tokenizer",
    ),
    (
        "NUL in a playground file path",
        "GET",
        "/playground/assets/main.js%00",
        b"",
        {},
        404,
        "not-found",
    ),
    (
        "NUL in a docs file path",
        "GET",
        "/schema/assets/swagger-ui/%00.css",
        b"",
        {},
        404,
        "not-found",
    ),
    (
        "form-encoded body",
        "POST",
        f"{T}/count",
        b"text=hello",
        {"content-type": "application/x-www-form-urlencoded"},
        415,
        "unsupported-media-type",
    ),
    (
        "JSON declared as a form",
        "POST",
        f"{T}/decode",
        b'{"ids": [1]}',
        {"content-type": "application/x-www-form-urlencoded"},
        415,
        "unsupported-media-type",
    ),
    (
        "JSON declared as text",
        "POST",
        f"{T}/encode",
        b'{"text": "a"}',
        {"content-type": "text/plain"},
        415,
        "unsupported-media-type",
    ),
    ("wrong method", "GET", f"{T}/count", b"", {}, 405, "method-not-allowed"),
    (
        "bad query value",
        "POST",
        f"{T}/decode/stream?errors=maybe",
        b'{"ids": []}\n',
        {},
        400,
        "invalid-body",
    ),
    (
        "image URL without its size",
        "POST",
        "/v1/models/gpt-4o/count",
        json.dumps(
            {
                "messages": [
                    {
                        "role": "user",
                        "content": [
                            {
                                "type": "image_url",
                                "image_url": {"url": "http://127.0.0.1:9/never-fetched.png"},
                            }
                        ],
                    }
                ]
            }
        ).encode(),
        JSON,
        422,
        "invalid-image",
    ),
    (
        "image that is not base64",
        "POST",
        "/v1/models/gpt-4o/count",
        json.dumps(
            {
                "messages": [
                    {
                        "role": "user",
                        "content": [
                            {
                                "type": "image_url",
                                "image_url": {"url": "data:image/png;base64," + "%" * 60_000},
                            }
                        ],
                    }
                ]
            }
        ).encode(),
        JSON,
        422,
        "invalid-image",
    ),
    (
        "image for a model without an image rule",
        "POST",
        "/v1/models/qwen3/count",
        json.dumps(
            {
                "messages": [
                    {
                        "role": "user",
                        "content": [
                            {
                                "type": "image_url",
                                "image_url": {"url": "x"},
                                "width": 8,
                                "height": 8,
                            }
                        ],
                    }
                ]
            }
        ).encode(),
        JSON,
        422,
        "images-not-counted",
    ),
]


@pytest.fixture(scope="module")
def limited() -> Iterator[Server]:
    s = start_server(1, **LIMITS)
    yield s
    stop_server(s)


def send(server: Server, case: tuple[str, str, str, bytes, dict[str, str], int, str]) -> Any:
    _, method, path, body, headers, _, _ = case
    return httpx.request(method, server.base + path, content=body, headers=headers, timeout=30)


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_bad_input_gets_a_typed_problem(limited: Server, case: Any) -> None:
    r = send(limited, case)
    assert r.status_code == case[5], r.text
    assert r.headers["content-type"].startswith("application/problem+json")
    doc = r.json()
    assert doc["type"] == "/problems/" + case[6] and doc["detail"]
    assert httpx.get(limited.base + "/healthz").status_code == 200  # still serving


LONG = "x" * 20_000  # quoted back whole, each answer below was over 20 KB
ECHOES = [
    ("POST", f"/v1/tokenizers/{LONG}/count", {"text": "a"}),
    ("POST", f"/v1/models/{LONG}/count", {"messages": []}),
    ("POST", f"{T}/encode", {"text": "a", "allowed_special": [LONG, LONG + "y", LONG + "z"]}),
    ("POST", f"{T}/encode", {"text": "a", LONG: 1}),
    ("POST", f"{T}/encode", {"text": "a", "offsets": LONG}),
    ("POST", f"{T}/decode/stream?errors={LONG}", {"ids": [1]}),
    ("POST", "/v1/models/gpt-4o/count", {"messages": [{"role": LONG}]}),
    ("POST", "/v1/models/gpt-4o/count", {"messages": [{"role": "user", LONG: 1}]}),
]


@pytest.mark.parametrize("case", ECHOES, ids=[str(i) for i in range(len(ECHOES))])
def test_input_quoted_back_in_a_problem_is_cut(limited: Server, case: Any) -> None:
    method, path, body = case
    r = httpx.request(method, limited.base + path, json=body, timeout=30)
    assert 400 <= r.status_code < 500 and r.json()["detail"]
    assert len(r.content) < 4_000 and "xxxxx…" in r.text, (r.status_code, len(r.content))


def test_a_stream_that_never_ends_is_cut_at_the_limit(limited: Server) -> None:
    stream = NdjsonStream(limited.port, f"{T}/decode/stream")
    try:
        stream.send({"ids": [9906]})
        assert stream.read_line() == {"text": "Hello"}
        line = stream.read_line()  # no more input: after 2 s the server ends the stream
        assert line is not None and line["error"]["type"] == "/problems/limit-exceeded"
    finally:
        stream.close()


def test_a_body_that_trickles_in_gets_408(limited: Server) -> None:
    with socket.create_connection(("127.0.0.1", limited.port), timeout=15) as sock:
        sock.sendall(
            f"POST {T}/count HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            'Content-Length: 100\r\n\r\n{"text": '.encode()
        )
        started = time.monotonic()
        reply = sock.recv(65536).decode()
        took = time.monotonic() - started
        while "request-timeout" not in reply and (more := sock.recv(65536)):
            reply += more.decode()
    assert reply.startswith("HTTP/1.1 408") and "/problems/request-timeout" in reply
    assert 1.5 < took < 10
    assert httpx.get(limited.base + "/healthz").status_code == 200


def test_too_many_ids_in_one_stream(limited: Server) -> None:
    body = json.dumps({"ids": [9906] * 101}).encode() + b"\n"
    r = httpx.post(limited.base + f"{T}/decode/stream", content=body, timeout=30)
    assert r.json()["error"]["type"] == "/problems/limit-exceeded"


def test_a_client_that_keeps_sending_after_its_stream_ended_is_disconnected(
    limited: Server,
) -> None:
    stream = NdjsonStream(limited.port, f"{T}/decode/stream")
    try:
        stream.send({"ids": [9906] * 101})  # over the 100 ids of a stream: the answer ends
        lines = stream.read_all()
        assert lines[-1]["error"]["type"] == "/problems/limit-exceeded"
        line = json.dumps({"ids": [9906] * 1000}).encode() + b"\n"
        sent, closed = 0, False
        while sent < 256 * LINGER_BYTES and not closed:  # the server reads at most LINGER_BYTES
            try:
                stream.send_raw(line * 10)
                sent += len(line) * 10
            except (BrokenPipeError, ConnectionResetError):
                closed = True
        assert closed, f"still connected after {sent} bytes sent past the end of the answer"
    finally:
        stream.close()
    assert httpx.get(limited.base + "/healthz").status_code == 200


@pytest.mark.parametrize("query", ["errors=maybe", "usage=perhaps"])
def test_a_websocket_with_a_bad_query_gets_a_400_problem(limited: Server, query: str) -> None:
    with pytest.raises(InvalidStatus) as refused:
        connect(f"ws://127.0.0.1:{limited.port}{T}/decode/ws?{query}")
    response = refused.value.response
    assert response.status_code == 400
    assert response.headers["content-type"].startswith("application/problem+json")
    doc = json.loads(response.body or b"{}")
    assert doc["type"] == "/problems/invalid-body"
    assert doc["errors"][0]["key"] == query.split("=", maxsplit=1)[0]
    with connect(f"ws://127.0.0.1:{limited.port}{T}/decode/ws?errors=strict&usage=1") as ws:
        ws.send(json.dumps({"ids": [9906], "final": True}))
        assert json.loads(ws.recv(timeout=10))["text"] == "Hello"


def test_websocket_oversized_message_and_idle_socket(limited: Server) -> None:
    url = f"ws://127.0.0.1:{limited.port}{T}/decode/ws"
    with connect(url, max_size=None) as ws:
        ws.send(json.dumps({"ids": [9906] * 20_000}))  # ~120 KB > the 64 KiB limit
        with pytest.raises(ConnectionClosed) as closed:
            ws.recv(timeout=10)
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1009
    with connect(url) as ws:
        message = json.loads(ws.recv(timeout=10))  # idle for 2 s
        assert message["error"]["type"] == "/problems/limit-exceeded"


if __name__ == "__main__":  # print the table of docs/reliability.md against a fresh server
    server = start_server(1, **LIMITS)
    try:
        print("| bad input | status | problem `type` |\n|---|---|---|")
        for case in CASES:
            r = send(server, case)
            print(f"| {case[0]} | {r.status_code} | `{r.json().get('type', '')}` |")
    finally:
        stop_server(server)
    sys.exit(0)
