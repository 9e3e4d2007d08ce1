"""Answers that repeat or return what was counted are held to TOKSVC_MAX_OUTPUT_BYTES: a chunk
answer of small overlapping chunks (a 1 MB text gave 25.9 MB) and a model count's `return_text`
and `return_ids` (8 MB of text gave 24 MB) are 413s past it, before the answer is built."""

from __future__ import annotations

from typing import Any

import pytest
from litestar.testing import TestClient

from service.api.app import create_app
from service.settings import Settings
from service.store.registry import Registry

LIMIT = 300_000


@pytest.fixture(scope="module")
def client(registry: Registry) -> Any:
    with TestClient(create_app(Settings(max_output_bytes=LIMIT), registry)) as c:
        yield c


def test_small_overlapping_chunks_are_refused_past_the_output_limit(client: Any) -> None:
    text = "a " * 50_000  # 100 KB, each chunk "a a" or so: about 50,000 chunks of 68 bytes
    r = client.post(
        "/v1/tokenizers/cl100k_base/chunk", json={"text": text, "max_tokens": 2, "overlap": 1}
    )
    assert r.status_code == 413, r.text[:300]
    assert r.json()["type"] == "/problems/limit-exceeded" and r.json()["limit"] == LIMIT
    r = client.post("/v1/tokenizers/cl100k_base/chunk", json={"text": text, "max_tokens": 5000})
    assert r.status_code == 200
    chunks = r.json()["chunks"]
    assert "".join(c["text"] for c in chunks) == text and len(r.content) < LIMIT


@pytest.mark.parametrize("field", ["return_text", "return_ids"])
def test_a_count_returns_what_it_counted_only_within_the_output_limit(
    client: Any, field: str
) -> None:
    messages = [{"role": "user", "content": "word " * 80_000}]  # 400 KB, 80,000 ids
    r = client.post("/v1/models/qwen3/count", json={"messages": messages, field: True})
    assert r.status_code == 413, r.text[:300]
    assert r.json()["limit"] == LIMIT
    r = client.post("/v1/models/qwen3/count", json={"messages": messages})
    assert r.status_code == 200 and r.json()["input_tokens"] > 80_000
    small = [{"role": "user", "content": "word " * 100}]
    r = client.post("/v1/models/qwen3/count", json={"messages": small, field: True})
    assert r.status_code == 200 and r.json()[field.removeprefix("return_")]
