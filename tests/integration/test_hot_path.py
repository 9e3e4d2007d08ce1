"""The hot path of encode and count answers exactly what their handlers answer: every body is
sent to two apps built by the same factory over real uvicorn on 127.0.0.1, one with the hot path
(as served) and one without it (`create_app(..., hot_path=False)`: the handlers alone), and the
status, headers and body bytes must be equal. The hot-path requests are counted in /metrics."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest
import uvicorn

from service.api.app import create_app
from service.settings import Settings
from service.store.registry import Registry
from tests.support.server import Server, free_port

ORIGIN = "http://app.example"
SETTINGS = Settings(max_body_bytes=65536, max_batch_items=16, body_seconds=2, cors_origins=ORIGIN)
RID = {"x-request-id": "hot-path-test"}  # echoed by both apps, so their answers can be equal
JSON = {"content-type": "application/json", **RID}
EOT = "<|endoftext|>"
LONG = "The quick brown fox, 狐狸 🦊, jumps. " * 600  # ~24 KB: the work runs in a thread

# bodies both operations take (count refuses pieces/offsets: an unknown field)
BODIES: list[Any] = [
    {"text": "Hello, world"},
    {"text": ""},
    {"texts": ["Hello", "world 🎉", "", "你好, 世界"]},
    {"texts": []},
    {"text": LONG},
    {"texts": [LONG, "short"]},
    {"text": f"a{EOT}b", "allowed_special": "all"},
    {"text": f"a{EOT}b", "allowed_special": [EOT]},
    {"text": f"a{EOT}b", "disallowed_special": []},
    {"text": f"a{EOT}b", "disallowed_special": ["<|fim_prefix|>"]},
    {"texts": ["x", f"a{EOT}b"], "allowed_special": "all", "disallowed_special": []},
    {"text": "a", "pieces": True, "offsets": "utf16"},
    {"texts": ["你好 🎉", "ab"], "pieces": True, "offsets": "codepoints"},
    # every kind of error
    b'{"text": ',  # malformed JSON
    b'{"text": "a\\ud800b"}',  # lone surrogate escape
    b"",  # empty body
    b"[]",  # not an object
    {"text": "a", "x": 1},  # unknown field
    {"text": 5},  # wrong type
    {"text": "a", "allowed_special": 3},
    {"text": "a", "offsets": "bytes"},
    {"text": "a", "texts": ["b"]},  # both
    {},  # neither
    {"texts": ["a"] * 17},  # too many items (> 16)
    {"text": f"a{EOT}b"},  # disallowed special (default policy)
    {"texts": ["ok", f"a{EOT}"], "disallowed_special": "all"},
    {"text": "a", "allowed_special": ["<|not-special|>"]},
    {"text": "a" * 70_000},  # body over the limit (content-length says so)
]
PATHS = [
    f"/v1/tokenizers/{ref}/{op}"
    for op in ("count", "encode")
    for ref in ("cl100k_base", "gpt2@1", "o200k_base", "nope", "gpt2@9")
]


class ThreadedServer:
    """uvicorn serving `app` on 127.0.0.1 from a thread of the test process."""

    def __init__(self, app: Any) -> None:
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        config = uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started and time.monotonic() < deadline:
            time.sleep(0.05)
        assert self.server.started

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(10)


@pytest.fixture(scope="module")
def apps(registry: Registry) -> Iterator[tuple[ThreadedServer, ThreadedServer]]:
    hot = ThreadedServer(create_app(SETTINGS, registry))
    full = ThreadedServer(create_app(SETTINGS, registry, hot_path=False))
    yield hot, full
    hot.stop()
    full.stop()


def answer(base: str, path: str, body: Any, headers: dict[str, str] = JSON) -> Any:
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    r = httpx.post(base + path, content=content, headers={**headers, **RID}, timeout=30)
    return r.status_code, without_date(r.headers), r.content


def without_date(headers: httpx.Headers) -> list[tuple[str, str]]:
    return [(k, v) for k, v in headers.multi_items() if k not in ("date", "server")]


@pytest.mark.parametrize("path", PATHS)
def test_every_body_gets_the_handlers_answer(apps: Any, path: str) -> None:
    hot, full = apps
    statuses = set()
    for body in BODIES:
        got = answer(hot.base, path, body)
        assert got == answer(full.base, path, body), (path, body)
        statuses.add(got[0])
    if "nope" in path or "@9" in path:
        assert 200 not in statuses and 404 in statuses
    else:
        assert {200, 400, 413, 422} <= statuses


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded"])
def test_any_content_type_is_judged_alike(apps: Any, content_type: str) -> None:
    hot, full = apps
    for body in ({"text": "hi"}, b"text=hi"):
        path = "/v1/tokenizers/gpt2/count"
        headers = {"content-type": content_type}
        assert answer(hot.base, path, body, headers) == answer(full.base, path, body, headers)


def test_options_and_cors_are_answered_alike(apps: Any) -> None:
    hot, full = apps
    path = "/v1/tokenizers/gpt2/encode"
    preflight = {"origin": ORIGIN, "access-control-request-method": "POST"}
    for headers in ({}, preflight):
        got = [httpx.options(s.base + path, headers={**headers, **RID}) for s in (hot, full)]
        assert got[0].status_code == got[1].status_code == 204
        assert without_date(got[0].headers) == without_date(got[1].headers)
    for body in ({"text": "hi"}, {"text": 1}):
        headers = {**JSON, "origin": ORIGIN}
        got = answer(hot.base, path, body, headers)
        assert ("access-control-allow-origin", ORIGIN) in got[1]
        assert got == answer(full.base, path, body, headers)


def chunks(*parts: bytes) -> Iterator[bytes]:
    yield from parts  # httpx sends a generator chunked, without a content-length


def test_a_body_in_chunks_and_one_over_the_limit_without_a_length(apps: Any) -> None:
    hot, full = apps
    for parts in (
        [b'{"te', b'xt": "Hello', b', world"}'],
        [b'{"text": "', b"a" * 40_000, b"a" * 40_000, b'"}'],
    ):
        got = [
            httpx.post(
                s.base + "/v1/tokenizers/cl100k_base/encode", content=chunks(*parts), headers=RID
            )
            for s in (hot, full)
        ]
        assert got[0].status_code == got[1].status_code in (200, 413)
        assert without_date(got[0].headers) == without_date(got[1].headers)
        assert got[0].content == got[1].content


def trickle(port: int) -> bytes:
    """A body that stops half way: the answer once the body deadline (2 s) has passed."""
    with socket.create_connection(("127.0.0.1", port), timeout=15) as sock:
        sock.sendall(
            b"POST /v1/tokenizers/gpt2/count HTTP/1.1\r\nHost: x\r\n"
            b"Content-Type: application/json\r\nContent-Length: 100\r\n"
            b"X-Request-ID: hot-path-test\r\n\r\n"
            b'{"text": '
        )
        reply = b""
        while b"request-timeout" not in reply and (more := sock.recv(65536)):
            reply += more
    head, _, body = reply.partition(b"\r\n\r\n")
    lines = [x for x in head.split(b"\r\n") if not x.lower().startswith((b"date:", b"server:"))]
    return b"\r\n".join(lines) + b"\r\n\r\n" + body


def test_a_body_that_trickles_in_gets_the_same_408(apps: Any) -> None:
    hot, full = apps
    with ThreadPoolExecutor(2) as pool:
        got, expected = pool.map(trickle, (hot.port, full.port))
    assert got.startswith(b"HTTP/1.1 408") and b"/problems/request-timeout" in got
    assert got == expected


def metric(text: str, name: str, **labels: str) -> float:
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith(name + "{") and all(f'{k}="{v}"' in line for k, v in labels.items())
    )


def test_hot_path_requests_are_counted(server: Server) -> None:
    texts = ["Hello, world", "你好 🎉", "token " * 50]
    before = httpx.get(f"{server.base}/metrics").text
    count = f"{server.base}/v1/tokenizers/gpt2/count"
    counts = [httpx.post(count, json={"text": t}).json()["count"] for t in texts]
    ids = httpx.post(f"{server.base}/v1/tokenizers/gpt2/encode", json={"texts": texts}).json()
    after = httpx.get(f"{server.base}/metrics").text

    def grew(name: str, **labels: str) -> float:
        return metric(after, name, **labels) - metric(before, name, **labels)

    route = "/v1/tokenizers/{ref}/"
    assert grew("toksvc_requests_total", route=route + "count", status="200") == 3
    assert grew("toksvc_requests_total", route=route + "encode", status="200") == 1
    assert grew("toksvc_tokens_total", tokenizer="gpt2@1", operation="count") == sum(counts)
    assert grew("toksvc_tokens_total", tokenizer="gpt2@1", operation="encode") == sum(
        r["count"] for r in ids["results"]
    )
    utf8 = sum(len(t.encode()) for t in texts)
    assert grew("toksvc_text_bytes_total", tokenizer="gpt2@1", operation="count") == utf8
