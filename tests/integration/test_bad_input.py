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
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from tests.integration.rawhttp import NdjsonStream
from tests.serverproc import Server, start_server, stop_server

LIMITS = {"TOKSVC_MAX_BODY_BYTES": "65536", "TOKSVC_MAX_BATCH_ITEMS": "16",
          "TOKSVC_MAX_IDS_PER_REQUEST": "1000", "TOKSVC_MAX_STREAM_SECONDS": "2",
          "TOKSVC_MAX_STREAM_IDS": "100", "TOKSVC_WS_IDLE_SECONDS": "2",
          "TOKSVC_BODY_SECONDS": "2"}  # fmt: skip
JSON = {"content-type": "application/json"}
T = "/v1/tokenizers/cl100k_base"

# (what, method, path, body bytes, headers, expected status, expected problem type)
CASES: list[tuple[str, str, str, bytes, dict[str, str], int, str]] = [
    ("malformed JSON", "POST", f"{T}/encode", b'{"text": ', JSON, 400, "invalid-body"),
    ("wrong type", "POST", f"{T}/encode", b'{"text": 5}', JSON, 400, "invalid-body"),
    ("unknown field", "POST", f"{T}/count", b'{"text": "a", "x": 1}', JSON, 400, "invalid-body"),
    ("both text and texts", "POST", f"{T}/count", b'{"text": "a", "texts": []}', JSON, 400,
     "invalid-body"),
    ("empty body", "POST", f"{T}/encode", b"", JSON, 400, "invalid-body"),
    ("body over the limit (70 KB > 64 KiB)", "POST", f"{T}/count",
     json.dumps({"text": "a" * 70_000}).encode(), JSON, 413, "limit-exceeded"),
    ("batch over the limit (17 > 16)", "POST", f"{T}/count",
     json.dumps({"texts": ["a"] * 17}).encode(), JSON, 413, "limit-exceeded"),
    ("ids over the limit (1001 > 1000)", "POST", f"{T}/decode",
     json.dumps({"ids": [1] * 1001}).encode(), JSON, 413, "limit-exceeded"),
    ("negative id", "POST", f"{T}/decode", b'{"ids": [9906, -1]}', JSON, 422, "unknown-token-id"),
    ("too large id", "POST", f"{T}/decode", b'{"ids": [1099511627776]}', JSON, 422,
     "unknown-token-id"),
    ("id beyond 64 bits", "POST", f"{T}/decode", b'{"ids": [36893488147419103232]}', JSON, 422,
     "unknown-token-id"),
    ("non-integer id", "POST", f"{T}/decode", b'{"ids": [1.5]}', JSON, 400, "invalid-body"),
    ("string id", "POST", f"{T}/decode", b'{"ids": ["1"]}', JSON, 400, "invalid-body"),
    ("lone surrogate", "POST", f"{T}/encode", b'{"text": "a\\ud800b"}', JSON, 422,
     "lone-surrogate"),
    ("invalid UTF-8, strict decode", "POST", f"{T}/decode", b'{"ids": [9468]}', JSON, 422,
     "undecodable-bytes"),
    ("disallowed special token", "POST", f"{T}/encode", b'{"text": "<|endoftext|>"}', JSON, 422,
     "disallowed-special-token"),
    ("unknown special token allowed", "POST", f"{T}/encode",
     b'{"text": "a", "allowed_special": ["<|x|>"]}', JSON, 422, "unknown-special-token"),
    ("forged stream state", "POST", f"{T}/decode/step", b'{"ids": [], "state": "u8.0.gA=="}',
     JSON, 422, "invalid-stream-state"),
    ("unknown tokenizer", "POST", "/v1/tokenizers/nope/count", b'{"text": "a"}', JSON, 404,
     "unknown-tokenizer"),
    ("unknown version", "POST", "/v1/tokenizers/gpt2@9/count", b'{"text": "a"}', JSON, 404,
     "unknown-tokenizer"),
    ("path trick ../", "POST", "/v1/tokenizers/../../etc/passwd/count", b'{"text": "a"}', JSON,
     404, "not-found"),
    ("path trick, encoded slash", "POST", "/v1/tokenizers/..%2F..%2Fetc/count", b'{"text": "a"}',
     JSON, 404, "not-found"),
    ("path trick, NUL", "POST", "/v1/tokenizers/gpt2%00/count", b'{"text": "a"}', JSON, 404,
     "unknown-tokenizer"),
    ("wrong content type", "POST", f"{T}/count", b"text=hello",
     {"content-type": "application/x-www-form-urlencoded"}, 400, "invalid-body"),
    ("wrong method", "GET", f"{T}/count", b"", {}, 405, "method-not-allowed"),
    ("bad query value", "POST", f"{T}/decode/stream?errors=maybe", b'{"ids": []}\n', {}, 400,
     "invalid-body"),
    ("image URL without its size", "POST", "/v1/models/gpt-4o/count", json.dumps({"messages": [
        {"role": "user", "content": [{"type": "image_url", "image_url": {
            "url": "http://127.0.0.1:9/never-fetched.png"}}]}]}).encode(), JSON, 422,
     "invalid-image"),
    ("image that is not base64", "POST", "/v1/models/gpt-4o/count", json.dumps({"messages": [
        {"role": "user", "content": [{"type": "image_url", "image_url": {
            "url": "data:image/png;base64," + "%" * 60_000}}]}]}).encode(), JSON, 422,
     "invalid-image"),
    ("image for a model without an image rule", "POST", "/v1/models/qwen3/count", json.dumps({
        "messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {
            "url": "x"}, "width": 8, "height": 8}]}]}).encode(), JSON, 422, "images-not-counted"),
]  # fmt: skip


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
        sock.sendall(f"POST {T}/count HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     "Content-Length: 100\r\n\r\n{\"text\": ".encode())  # fmt: skip
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
