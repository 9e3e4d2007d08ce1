"""The hot path of encode and count on its own (`routes.hot_path.HotPath` around a stand-in
for the full path): a plain success is answered without the full path; anything else reaches it
with every message the client sent, and the hot path has sent and recorded nothing."""

from __future__ import annotations

import asyncio
from typing import Any

import msgspec
import pytest
from litestar import Litestar
from litestar.testing import TestClient

from service.api import metrics
from service.api.app import create_app
from service.api.routes.hot_path import HotPath
from service.settings import Settings
from service.store.registry import Registry

EOT = "<|endoftext|>"


@pytest.fixture(scope="module")
def app(registry: Registry) -> Litestar:
    return create_app(Settings(max_batch_items=4, max_body_bytes=1024), registry)


class FullPath:
    """Stands in for the handler: keeps the messages it receives, answers nothing."""

    def __init__(self) -> None:
        self.received: list[list[dict[str, Any]]] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        messages = [await receive()]
        while messages[-1]["type"] == "http.request" and messages[-1].get("more_body"):
            messages.append(await receive())
        self.received.append(messages)


def request(body: bytes, *, more: bool = False) -> dict[str, Any]:
    return {"type": "http.request", "body": body, "more_body": more}


def scope_of(app: Litestar, op: str, ref: str, length: int | None = None) -> dict[str, Any]:
    handler = app.route_handler_method_map[f"/v1/tokenizers/{{ref:str}}/{op}"]["POST"]
    headers = [(b"content-type", b"application/json")]
    if length is not None:
        headers.append((b"content-length", b"%d" % length))
    return {
        "type": "http",
        "method": "POST",
        "litestar_app": app,
        "route_handler": handler,
        "path_params": {"ref": ref},
        "headers": headers,
    }


async def serve(hot: HotPath, scope: dict[str, Any], receive: Any) -> list[dict[str, Any]]:
    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await hot(scope, receive, send)
    return sent


def call(
    app: Litestar, op: str, ref: str, messages: list[dict[str, Any]], length: int | None = None
) -> tuple[list[dict[str, Any]], FullPath]:
    pending = list(messages)

    async def receive() -> dict[str, Any]:
        return pending.pop(0) if pending else {"type": "http.disconnect"}

    full = FullPath()
    sent = asyncio.run(serve(HotPath(full), scope_of(app, op, ref, length), receive))
    return sent, full


def tokens(ref: str, op: str) -> float:
    return float(metrics.TOKENS.labels(ref, op)._value.get())


def test_a_count_is_answered_without_the_full_path(app: Litestar, registry: Registry) -> None:
    text = "Hello, world 🎉"
    before = tokens("gpt2@1", "count")
    body = msgspec.json.encode({"text": text})
    sent, full = call(app, "count", "gpt2", [request(body)], len(body))
    assert full.received == []
    start, answer = sent
    assert start["status"] == 200
    assert dict(start["headers"]) == {
        b"content-type": b"application/json",
        b"content-length": b"%d" % len(answer["body"]),
    }
    expected = registry.resolve("gpt2").tokenizer.count(text)
    assert msgspec.json.decode(answer["body"])["count"] == expected
    assert tokens("gpt2@1", "count") - before == expected


def test_a_body_in_several_messages_is_read_whole(app: Litestar, registry: Registry) -> None:
    parts = [b'{"texts": ["Hel', b'lo", "a', b'b"], "allowed_special": "all"}']
    messages = [request(p, more=True) for p in parts[:-1]] + [request(parts[-1])]
    sent, full = call(app, "encode", "cl100k_base", messages)
    assert full.received == []
    results = msgspec.json.decode(sent[1]["body"])["results"]
    tok = registry.resolve("cl100k_base").tokenizer
    assert [r["ids"] for r in results] == [tok.encode("Hello"), tok.encode("ab")]


ERRORS = [
    ("count", "gpt2", b'{"text": '),
    ("count", "gpt2", b""),
    ("count", "gpt2", b'{"text": "a\\ud800"}'),
    ("count", "gpt2", b'{"text": "a", "texts": ["b"]}'),
    ("count", "gpt2", b'{"texts": ["a", "b", "c", "d", "e"]}'),  # 5 items, the limit is 4
    ("count", "nope", b'{"text": "a"}'),
]
WORK_ERRORS = [  # raised by the work itself
    ("encode", "gpt2", f'{{"text": "a{EOT}"}}'.encode()),
    ("encode", "gpt2", b'{"text": "a", "allowed_special": ["<|x|>"]}'),
    ("encode", "gpt2", b'{"texts": ["ok", "' + EOT.encode() + b'"], "pieces": true}'),
]


@pytest.mark.parametrize(("op", "ref", "body"), ERRORS)
def test_anything_else_reaches_the_full_path_with_the_body_sent(
    app: Litestar, op: str, ref: str, body: bytes
) -> None:
    before = tokens("gpt2@1", op)
    sent, full = call(app, op, ref, [request(body)], len(body))
    assert sent == [] and full.received == [[request(body)]]
    assert tokens("gpt2@1", op) == before  # the full path records what it answers, once


@pytest.mark.parametrize("case", WORK_ERRORS)
def test_an_error_of_the_work_is_answered_once_as_the_full_path_would(
    app: Litestar,
    registry: Registry,
    case: tuple[str, str, bytes],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The work is not done twice (issue 23, low: the full path encoded everything again), and
    the answer is the full path's, compared with the app without the hot path."""
    op, ref, body = case
    tok = registry.resolve(ref).tokenizer
    texts: list[str] = []
    encode = tok.encode

    def counted(text: str, **kwargs: Any) -> list[int]:
        texts.append(text)
        return encode(text, **kwargs)

    monkeypatch.setattr(tok, "encode", counted)
    sent, full = call(app, op, ref, [request(body)], len(body))
    assert full.received == [] and len(texts) == len(set(texts))  # each text encoded once
    full_path = create_app(
        Settings(max_batch_items=4, max_body_bytes=1024), registry, hot_path=False
    )
    with TestClient(full_path) as client:
        expected = client.post(
            f"/v1/tokenizers/{ref}/{op}", content=body, headers={"content-type": "application/json"}
        )
    assert sent[0]["status"] == expected.status_code == 422
    answered = expected.json()
    assert answered.pop("request_id")  # the hot path alone runs outside any request's id
    assert msgspec.json.decode(sent[1]["body"]) == answered
    assert dict(sent[0]["headers"])[b"content-type"].decode() == expected.headers["content-type"]


def test_before_the_store_has_loaded_the_full_path_answers() -> None:
    loading = create_app(Settings())  # no registry: the lifespan (not run here) would load it
    body = request(b'{"text": "a"}')
    sent, full = call(loading, "count", "gpt2", [body])
    assert sent == [] and full.received == [[body]]


def test_a_body_over_the_limit_reaches_the_full_path(app: Litestar) -> None:
    # announced: handed on before anything is read
    big = request(b'{"text": "' + b"a" * 2000 + b'"}')
    assert call(app, "count", "gpt2", [big], 2012)[1].received == [[big]]
    # streamed without a length: what was read, then the rest
    parts = [
        request(b'{"text": "' + b"a" * 600, more=True),
        request(b"a" * 600, more=True),
        request(b'"}'),
    ]
    sent, full = call(app, "count", "gpt2", parts)
    assert sent == [] and full.received == [parts]


def test_a_client_that_leaves_mid_body_reaches_the_full_path(app: Litestar) -> None:
    first = request(b'{"text": "a', more=True)
    sent, full = call(app, "count", "gpt2", [first])
    assert sent == [] and full.received == [[first, {"type": "http.disconnect"}]]


@pytest.fixture(scope="module")
def hasty(registry: Registry) -> Litestar:
    return create_app(Settings(body_seconds=0.2), registry)


def test_bodies_that_do_not_arrive_in_time_get_408_and_the_others_their_answer(
    hasty: Litestar,
) -> None:
    """One clock for all: bodies that stall, started at different times, each time out; a body
    that arrives in time is answered, and is not cancelled later."""
    body = request(b'{"text": "in time"}')

    async def stalls() -> dict[str, Any]:
        await asyncio.Event().wait()
        raise AssertionError

    async def slow() -> dict[str, Any]:
        await asyncio.sleep(0.05)
        return body

    async def later(receive: Any) -> list[dict[str, Any]]:
        await asyncio.sleep(0.1)
        return await serve(hot, scope_of(hasty, "count", "gpt2"), receive)

    async def run() -> list[list[dict[str, Any]]]:
        both = asyncio.gather(
            serve(hot, scope_of(hasty, "count", "gpt2"), stalls), later(stalls), later(slow)
        )
        return list(await asyncio.wait_for(both, 10))  # a clock that never fires fails, not hangs

    full = FullPath()
    hot = HotPath(full)
    first, second, answered = asyncio.run(run())
    for sent in (first, second):
        assert sent[0]["status"] == 408
        assert msgspec.json.decode(sent[1]["body"])["type"] == "/problems/request-timeout"
    assert answered[0]["status"] == 200 and full.received == []


def test_a_reader_cancelled_by_someone_else_is_cancelled(hasty: Litestar) -> None:
    async def stalls() -> dict[str, Any]:
        await asyncio.Event().wait()
        raise AssertionError

    async def run() -> None:
        task = asyncio.ensure_future(
            serve(HotPath(FullPath()), scope_of(hasty, "count", "gpt2"), stalls)
        )
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(run())
