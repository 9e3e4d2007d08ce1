"""A JSON body over `INLINE_DECODE_BYTES` is decoded, and a rejected one scanned for lone
surrogate escapes, in a thread, not on the event loop (an 8 MB body of surrogate pairs held the
loop 0.39 s): on the hot path of encode and count, and on every other route through
`BodyRequest` and `StrictBody`. The answers, problem documents included, are those of an inline
decode; the scan, now chunk by chunk, names the same offsets as one search over the body."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import msgspec
import pytest
from litestar.testing import TestClient

from service.api import bodies
from service.api.app import create_app
from service.api.budget import INLINE_DECODE_BYTES
from service.errors import SurrogateError
from service.settings import Settings
from service.store.registry import Registry

PAIR = b"\\ud83d\\ude00"  # one emoji as a JSON surrogate pair: 12 bytes
PAIRS = PAIR * (INLINE_DECODE_BYTES // len(PAIR) + 1)  # just over the inline size
JSON = {"content-type": "application/json"}
T = "/v1/tokenizers/gpt2"


@pytest.fixture(scope="module")
def client(registry: Registry) -> Iterator[TestClient[Any]]:
    with TestClient(create_app(Settings(max_batch_items=4), registry)) as c:
        yield c


@pytest.fixture
def loops(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """For each `decode_body` and lone-surrogate scan: whether it ran where an event loop runs."""
    seen: list[bool] = []

    def on_loop() -> bool:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return False
        return True

    def spy(real: Any) -> Any:
        def recorded(*args: Any, **kwargs: Any) -> Any:
            seen.append(on_loop())
            return real(*args, **kwargs)

        return recorded

    monkeypatch.setattr(bodies, "decode_body", spy(bodies.decode_body))
    monkeypatch.setattr(bodies, "_refuse_lone_surrogates", spy(bodies._refuse_lone_surrogates))
    return seen


def problem(response: Any, status: int, kind: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    doc: dict[str, Any] = response.json()
    assert doc["type"] == f"/problems/{kind}"
    return doc


@pytest.mark.parametrize("op", ["encode", "count"])
def test_a_large_malformed_body_of_surrogate_pairs_is_decoded_off_the_loop(
    client: TestClient[Any], loops: list[bool], op: str
) -> None:
    body = b'{"text": "' + PAIRS + b'"'  # no closing brace: the parser rejects it at the end
    problem(client.post(f"{T}/{op}", content=body, headers=JSON), 400, "invalid-body")
    assert len(loops) >= 3, loops  # the hot path's decode, the full path's decode, the scan
    assert not any(loops), loops


def test_a_lone_surrogate_in_a_large_body_is_named_as_before(
    client: TestClient[Any], loops: list[bool]
) -> None:
    body = b'{"text": "' + PAIRS + b'\\ud800"}'
    doc = problem(client.post(f"{T}/encode", content=body, headers=JSON), 422, "lone-surrogate")
    assert doc["position"] == body.index(b"\\ud800")
    assert loops and not any(loops), loops


def test_large_bodies_of_other_routes_are_decoded_off_the_loop(
    client: TestClient[Any], loops: list[bool]
) -> None:
    ids = msgspec.json.encode({"ids": [31373] * (INLINE_DECODE_BYTES // 6 + 1)})
    decoded = client.post(f"{T}/decode", content=ids, headers=JSON)
    assert decoded.status_code == 200, decoded.text
    assert decoded.json()["text"] == "hello" * (INLINE_DECODE_BYTES // 6 + 1)
    batch = msgspec.json.encode({"batch": [[1]] * 2, "pad": "x" * INLINE_DECODE_BYTES})
    problem(client.post(f"{T}/decode", content=batch, headers=JSON), 400, "invalid-body")
    over = b'{"batch": [' + b",".join([b"[31373]"] * (INLINE_DECODE_BYTES // 8 + 1)) + b"]}"
    problem(client.post(f"{T}/decode", content=over, headers=JSON), 413, "limit-exceeded")
    assert len(loops) == 3 and not any(loops), loops


def test_a_large_body_that_decodes_is_answered_as_inline(
    client: TestClient[Any], loops: list[bool], registry: Registry
) -> None:
    gpt2 = registry.resolve("gpt2").tokenizer
    for text in ("hello " * (INLINE_DECODE_BYTES // 6 + 1), "hello " * 10):
        r = client.post(f"{T}/count", json={"text": text})
        assert r.status_code == 200 and r.json()["count"] == len(gpt2.encode_ordinary(text))
    assert loops == [False, True], loops  # the large one in a thread, the small one inline


@pytest.mark.parametrize("shift", range(-14, 3))
def test_the_chunked_scan_names_what_one_search_names(shift: int) -> None:
    """Lone escapes and pairs placed across the boundary of two chunks of the scan."""
    chunk = bodies._SCAN_CHUNK
    for escapes in (b"\\ud800", b"\\udc00", PAIR, b"\\ud83d\\\\\\ude00", b"\\ud83d" + PAIR):
        body = b"x" * (chunk + shift) + escapes + b"y" * 20
        blanked = body.replace(b"\\\\", b"__")
        whole = bodies._LONE_SURROGATE.search(blanked)
        try:
            bodies._refuse_lone_surrogates(body)
        except SurrogateError as error:
            assert whole is not None and error.position == whole.start()
        else:
            assert whole is None, (shift, escapes)
