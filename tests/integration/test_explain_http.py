"""Explain and playground routes over real HTTP: results, bounds and problem documents."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from litestar.testing import TestClient

from service.api.app import create_app
from service.bpe.text.explain import MAX_EXPLAIN_CHARS, MAX_INLINE_MERGES
from service.settings import Settings
from service.store.registry import Registry
from tests.support.server import Server

TEXTBOOK = [[98, 99, 256], [97, 98, 257], [257, 99, 258]]


def post(server: Server, path: str, body: Any) -> httpx.Response:
    return httpx.post(f"{server.base}{path}", json=body, timeout=60)


def problem(response: httpx.Response, status: int, kind: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    doc: dict[str, Any] = response.json()
    assert doc["type"] == f"/problems/{kind}" and doc["status"] == status and doc["detail"]
    return doc


@pytest.mark.parametrize("ref", ["cl100k_base", "o200k_base@1", "qwen3", "bard@2"])
def test_explain_ends_on_encodes_ids(server: Server, ref: str) -> None:
    text = "Explain me: naïve café 中文 🙂 1234567 <|endoftext|>"
    body = post(server, f"/v1/tokenizers/{ref}/explain", {"text": text}).json()
    encoded = post(
        server, f"/v1/tokenizers/{ref}/encode", {"text": text, "disallowed_special": []}
    ).json()
    assert body["ids"] == encoded["ids"]
    assert body["tokenizer"] == encoded["tokenizer"]
    assert body["steps"] == sum(len(p["steps"]) for p in body["pieces"]) > 0
    for piece in body["pieces"]:
        ids = list(piece["start"])
        assert "".join(piece["start_bytes"]) == piece["text"].encode().hex()
        for step in piece["steps"]:
            if step["kind"] == "merge":
                assert ids[step["at"] : step["at"] + 2] == [step["left"], step["right"]]
                ids[step["at"] : step["at"] + 2] = [step["id"]]
            else:
                ids = [step["id"]]
        assert ids == piece["ids"]


def test_explain_text_too_long_is_413(server: Server) -> None:
    url = "/v1/tokenizers/cl100k_base/explain"
    assert post(server, url, {"text": "é" * MAX_EXPLAIN_CHARS}).status_code == 200
    doc = problem(post(server, url, {"text": "é" * (MAX_EXPLAIN_CHARS + 1)}), 413, "limit-exceeded")
    assert doc["limit"] == MAX_EXPLAIN_CHARS


def test_explain_bad_ref_and_bad_body(server: Server) -> None:
    doc = problem(
        post(server, "/v1/tokenizers/nope@9/explain", {"text": "x"}), 404, "unknown-tokenizer"
    )
    assert "cl100k_base@1" in doc["available"]
    problem(post(server, "/v1/tokenizers/cl100k_base/explain", {"text": 5}), 400, "invalid-body")
    problem(
        post(server, "/v1/tokenizers/cl100k_base/explain", {"text": "x", "rule": "pairs"}),
        400,
        "invalid-body",
    )


def test_inline_textbook_counterexample(server: Server) -> None:
    got = {
        rule: post(
            server, "/v1/playground/explain", {"text": "abc", "rule": rule, "merges": TEXTBOOK}
        ).json()
        for rule in ("pairs", "ranks")
    }
    assert got["pairs"]["ids"] == [97, 256] and got["pairs"]["steps"] == 1
    assert got["ranks"]["ids"] == [258] and got["ranks"]["steps"] == 2
    last = got["ranks"]["pieces"][0]["steps"][-1]
    assert (last["left"], last["right"], last["id"], last["bytes"]) == (97, 256, 258, "616263")
    assert "tokenizer" not in got["pairs"]


def test_inline_problems(server: Server) -> None:
    url = "/v1/playground/explain"
    doc = problem(
        post(server, url, {"text": "abc", "rule": "pairs", "merges": [[97, 98, 300]]}),
        422,
        "invalid-input",
    )
    assert "256" in doc["detail"]
    chain = [[97 if n == 0 else 255 + n, 97, 256 + n] for n in range(MAX_INLINE_MERGES + 1)]
    problem(
        post(server, url, {"text": "a", "rule": "ranks", "merges": chain}), 413, "limit-exceeded"
    )
    problem(
        post(server, url, {"text": "a" * 300, "rule": "ranks", "merges": []}), 413, "limit-exceeded"
    )
    problem(post(server, url, {"text": "a", "rule": "bpe", "merges": []}), 400, "invalid-body")


def test_inline_merges_that_double_a_token_are_refused(server: Server) -> None:
    # merge n joins token 255 + n with itself: 2 ** (n + 1) bytes; 28 of them took +1 GB
    doubling = [[97 if n == 0 else 255 + n] * 2 + [256 + n] for n in range(12)]
    too_long = next(n for n in range(12) if 2 ** (n + 1) > 4 * MAX_EXPLAIN_CHARS)
    for rule in ("pairs", "ranks"):
        body = {"text": "a" * MAX_EXPLAIN_CHARS, "rule": rule, "merges": doubling}
        doc = problem(post(server, "/v1/playground/explain", body), 422, "invalid-input")
        assert doc["detail"].startswith(f"merge {too_long}: ")
        body["merges"] = doubling[:too_long]
        whole = MAX_EXPLAIN_CHARS.bit_length() - 2  # the merge whose token is 256 "a"
        assert post(server, "/v1/playground/explain", body).json()["ids"] == [256 + whole]


def test_train_returns_usable_merges_and_is_bounded(server: Server) -> None:
    text = "low lower lowest newer newest wider widest " * 20
    r = post(server, "/v1/playground/train", {"text": text, "merges": 20}).json()
    assert [m[2] for m in r["merges"]] == list(range(256, 256 + len(r["merges"])))
    assert 0 < len(r["merges"]) <= 20 and r["pattern"] == "gpt2"
    assert bytes.fromhex(r["tokens"][0]) in text.encode()
    explained = post(
        server,
        "/v1/playground/explain",
        {"text": "lowest", "rule": "pairs", "merges": r["merges"], "pattern": "gpt2"},
    ).json()
    assert len(explained["ids"]) < len("lowest")
    url = "/v1/playground/train"
    problem(post(server, url, {"text": "x" * 20_001}), 413, "limit-exceeded")
    problem(post(server, url, {"text": "ab", "merges": 513}), 413, "limit-exceeded")
    problem(post(server, url, {"text": "ab", "merges": 0}), 400, "bad-request")


def test_root_redirects_to_the_page(server: Server) -> None:
    r = httpx.get(f"{server.base}/", timeout=10)
    assert r.status_code in (302, 307) and r.headers["location"] == "/playground"
    page = httpx.get(f"{server.base}/playground", timeout=10)
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert "default-src 'none'" in page.headers["content-security-policy"]
    asset = httpx.get(f"{server.base}/playground/assets/main.js", timeout=10)
    assert asset.status_code == 200 and "javascript" in asset.headers["content-type"]
    problem(httpx.get(f"{server.base}/playground/assets/nope.js", timeout=10), 404, "not-found")


def test_playground_setting_off(registry: Registry) -> None:
    with TestClient(create_app(Settings(playground=False), registry)) as client:
        problem(client.get("/", follow_redirects=False), 404, "not-found")
        problem(client.get("/playground"), 404, "not-found")
        inline = {"text": "abc", "rule": "pairs", "merges": TEXTBOOK}
        assert client.post("/v1/playground/explain", json=inline).status_code in (404, 405)
        # the explain route of the API stays
        assert client.post("/v1/tokenizers/gpt2/explain", json={"text": "hi"}).status_code == 200


def test_explain_refuses_a_tokenizer_json_pipeline_it_cannot_replay(server: Server) -> None:
    """A format v2 tokenizer (its own pre-tokenizers and added tokens) is refused with a 422,
    never explained with steps that would not end on encode's ids; encode still serves it."""
    doc = problem(
        post(server, "/v1/tokenizers/deepseek-v3/explain", {"text": "Hi 123"}), 422, "invalid-input"
    )
    assert "deepseek-v3@1" in doc["detail"]
    encoded = post(server, "/v1/tokenizers/deepseek-v3/encode", {"text": "Hi 123"})
    assert encoded.status_code == 200 and encoded.json()["count"] > 0
