"""The HTTP edges over real uvicorn: how the server reads Content-Length for its large-request
budget, HEAD on GET routes, the parser's own refusals, and the output limit on every answer that
returns text or ids."""

from __future__ import annotations

import contextlib
import json
import socket
import time
from collections.abc import Iterator

import httpx
import pytest

from tests.support.server import Server, start_server, stop_server

OUTPUT_BYTES = 4 * 1024 * 1024
LIMITS = {
    "TOKSVC_MAX_LARGE_REQUESTS": "1",
    "TOKSVC_LARGE_REQUEST_BYTES": "2000000",
    "TOKSVC_MAX_OUTPUT_BYTES": str(OUTPUT_BYTES),
}
T = "/v1/tokenizers/cl100k_base"


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    s = start_server(1, **LIMITS)
    yield s
    stop_server(s)


def connect(port: int, data: bytes, body: bytes = b"", timeout: float = 15) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    sock.sendall(data + body)
    return sock


def response_of(sock: socket.socket) -> bytes:
    """What the server sends on `sock` until it closes it (or stops sending for the timeout)."""
    answer = b""
    with contextlib.suppress(OSError):
        while chunk := sock.recv(65536):
            answer += chunk
    sock.close()
    return answer


def post_head(path: str, length: str) -> bytes:
    return (
        f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        f"Content-Length:{length}\r\nConnection: close\r\n\r\n"
    ).encode()


@pytest.mark.parametrize("length", [" 3000000 ", " 3000000\t", "\t3000000 \t "])
def test_content_length_with_whitespace_is_counted_by_the_large_request_budget(
    server: Server, length: str
) -> None:
    """The parser takes `Content-Length: N ` (optional whitespace after the value) as N: so does
    the budget. With the worker's only large slot held, such a request is refused at once."""
    first = connect(server.port, post_head(f"{T}/count", " 3000000"), b'{"text": "')
    try:
        time.sleep(0.3)  # the first request holds the slot before the second arrives
        second = response_of(connect(server.port, post_head(f"{T}/count", length), timeout=5))
        assert second.startswith(b"HTTP/1.1 503"), second[:200]
        assert b"too-many-large-requests" in second
        first.sendall(b"a" * (3_000_000 - 12) + b'"}')
        assert response_of(first).startswith(b"HTTP/1.1 200")
    finally:
        first.close()


def head_and_body(port: int, method: str, path: str) -> tuple[int, dict[str, str], bytes]:
    """One request on its own connection: the status, headers and whatever bytes follow them."""
    request = f"{method} {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    answer = response_of(connect(port, request.encode()))
    head, _, body = answer.partition(b"\r\n\r\n")
    status_line, *lines = head.decode("latin-1").split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, _, v in (x.partition(":") for x in lines)}
    return int(status_line.split()[1]), headers, body


@pytest.mark.parametrize("path", ["/healthz", "/readyz", "/metrics", T, "/v1/tokenizers"])
def test_head_answers_as_get_without_the_body(server: Server, path: str) -> None:
    status, headers, body = head_and_body(server.port, "GET", path)
    assert status == 200 and body
    head_status, head_headers, head_body = head_and_body(server.port, "HEAD", path)
    assert head_status == 200 and head_body == b""
    assert head_headers["content-type"] == headers["content-type"]
    if path != "/metrics":  # the metrics change between the two requests
        assert head_headers["content-length"] == headers["content-length"] == str(len(body))


def test_head_on_a_route_without_get_is_405(server: Server) -> None:
    r = httpx.head(f"{server.base}{T}/encode", timeout=10)
    assert r.status_code == 405 and r.content == b""
    assert r.headers["content-type"] == "application/problem+json"


@pytest.mark.parametrize(
    "request_head",
    [
        b"GARBAGE\r\n\r\n",  # no method, path or version
        b"GET / HTTP/1.1\r\nHost: x\r\nBad Header: 1\r\n\r\n",  # a space in a header name
        b"POST /v1/tokenizers/gpt2/count HTTP/1.1\r\nHost: x\r\nContent-Length: x\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
    ],
)
def test_what_the_parser_refuses_gets_a_problem_document(
    server: Server, request_head: bytes
) -> None:
    reply = response_of(connect(server.port, request_head))
    head, _, body = reply.partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    assert lines[0] == b"HTTP/1.1 400 Bad Request", reply[:200]
    headers = dict(line.lower().split(b": ", 1) for line in lines[1:])
    assert headers[b"content-type"] == b"application/problem+json"
    problem = json.loads(body)
    assert problem["status"] == 400 and problem["type"] == "/problems/invalid-body"
    assert problem["detail"].startswith("the request is not valid HTTP/1.1")
    assert problem["request_id"] == headers[b"x-request-id"].decode()
    assert httpx.get(f"{server.base}/healthz").status_code == 200
