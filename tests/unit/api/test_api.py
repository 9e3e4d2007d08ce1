"""The HTTP contract, through Litestar's in-process test client."""

from __future__ import annotations

import base64
import shutil
import traceback
from collections.abc import Iterator
from typing import Any

import pytest
from litestar.testing import TestClient

from service.api import traits
from service.api.app import create_app
from service.settings import BUNDLED_STORE, Settings
from service.store.registry import Registry
from tests.conftest import tiktoken_oracle

LIMITS = Settings(max_batch_items=4, max_ids_per_request=50, max_body_bytes=64 * 1024)


@pytest.fixture(scope="module")
def client(registry: Registry) -> Iterator[TestClient[Any]]:
    with TestClient(create_app(LIMITS, registry)) as c:
        yield c


def problem(response: Any, status: int, kind: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    doc: dict[str, Any] = response.json()
    assert doc["type"] == f"/problems/{kind}"
    assert doc["status"] == status and doc["title"] and doc["detail"]
    return doc


def test_list_and_get_tokenizers(client: TestClient[Any], registry: Registry) -> None:
    listed = client.get("/v1/tokenizers").json()["tokenizers"]
    assert {t["ref"] for t in listed} == {t.ref for t in registry}
    one = client.get("/v1/tokenizers/cl100k_base").json()
    assert one["ref"] == "cl100k_base@1" and one["default"] is True and one["rule"] == "ranks"
    assert one["vocab_size"] == 100261 and one["special_tokens"]["<|endoftext|>"] == 100257
    assert one["n_vocab"] == tiktoken_oracle(registry, "cl100k_base").n_vocab  # 100277
    assert client.get("/v1/tokenizers/bard@1").json()["default"] is False


def test_a_tokenizer_lists_its_added_tokens_beside_its_special_ones(
    client: TestClient[Any], registry: Registry
) -> None:
    """DeepSeek's User marker is an added token, not a special one: every literal the tokenizer
    matches whole is in one of the two lists, with the id it encodes to."""
    deepseek = client.get("/v1/tokenizers/deepseek-v3").json()
    assert deepseek["added_tokens"]["<\uff5cUser\uff5c>"] == 128803
    assert deepseek["special_tokens"]["<\uff5cbegin\u2581of\u2581sentence\uff5c>"] == 0
    assert not deepseek["added_tokens"].keys() & deepseek["special_tokens"].keys()
    tok = registry.resolve("deepseek-v3").tokenizer
    for literal, tid in deepseek["added_tokens"].items():
        assert tok.encode(literal) == [tid]  # whole, with no special token allowed
    assert client.get("/v1/tokenizers/cl100k_base").json()["added_tokens"] == {}


def test_encode_single_and_batch(client: TestClient[Any], registry: Registry) -> None:
    tok = registry.resolve("o200k_base")
    r = client.post("/v1/tokenizers/o200k_base/encode", json={"text": "Hello, world"}).json()
    assert r["ids"] == tok.tokenizer.encode("Hello, world") and r["count"] == len(r["ids"])
    assert r["tokenizer"] == {"name": "o200k_base", "version": "1", "sha256": tok.sha256}
    r = client.post(
        "/v1/tokenizers/o200k_base@1/encode", json={"texts": ["a b", "", "中文"]}
    ).json()
    assert [x["ids"] for x in r["results"]] == [
        tok.tokenizer.encode(t) for t in ["a b", "", "中文"]
    ]


def test_encode_offsets_follow_the_decoder(client: TestClient[Any]) -> None:
    """mistral-v7's tokens are `▁Hello`, `▁world`, ...: each token's piece and span are what it
    adds to the decoded text (`▁` a space, the first one dropped), in both units, in a batch too."""
    text = "Hello world, how are you"
    words = ["Hello", " world", ",", " how", " are", " you"]
    url = "/v1/tokenizers/mistral-v7/encode"
    for unit in ("codepoints", "utf16"):
        r = client.post(url, json={"text": text, "pieces": True, "offsets": unit}).json()
        assert r["pieces"] == words
        assert r["offsets"] == [[0, 5], [5, 11], [11, 12], [12, 16], [16, 20], [20, 24]]
        assert [text[s:e] for s, e in r["offsets"]] == words
    r = client.post(url, json={"texts": ["🎉 x", text], "offsets": "utf16"}).json()
    assert r["results"][0]["offsets"] == [[0, 0], [0, 2], [2, 4]]  # `▁`, 🎉 (two units), `▁x`
    assert r["results"][1]["offsets"][:2] == [[0, 5], [5, 11]]


def test_special_token_policy(client: TestClient[Any]) -> None:
    url = "/v1/tokenizers/cl100k_base/encode"
    doc = problem(
        client.post(url, json={"text": "hi <|endoftext|>"}), 422, "disallowed-special-token"
    )
    assert doc["token"] == "<|endoftext|>" and doc["position"] == 3
    allowed = client.post(url, json={"text": "hi <|endoftext|>", "allowed_special": "all"}).json()
    assert allowed["ids"][-1] == 100257
    as_text = client.post(url, json={"text": "<|endoftext|>", "disallowed_special": []}).json()
    assert 100257 not in as_text["ids"]
    problem(
        client.post(url, json={"text": "x", "allowed_special": ["<|nope|>"]}),
        422,
        "unknown-special-token",
    )


def test_count(client: TestClient[Any], registry: Registry) -> None:
    tok = registry.resolve("qwen2").tokenizer
    r = client.post("/v1/tokenizers/qwen2/count", json={"text": "Hello 世界"}).json()
    assert r["count"] == len(tok.encode("Hello 世界")) and "ids" not in r
    r = client.post("/v1/tokenizers/qwen2/count", json={"texts": ["a", "bb cc"]}).json()
    assert r["counts"] == [1, len(tok.encode("bb cc"))] and r["total"] == sum(r["counts"])
    assert r["tokenizer"]["name"] == "qwen2"


def test_decode_text_bytes_and_batch(client: TestClient[Any]) -> None:
    url = "/v1/tokenizers/cl100k_base/decode"
    assert client.post(url, json={"ids": [15339, 1917]}).json()["text"] == "hello world"
    r = client.post(url, json={"ids": [15339, 1917], "output": "base64"}).json()
    assert base64.b64decode(r["base64"]) == b"hello world" and "text" not in r
    r = client.post(url, json={"batch": [[15339], [1917]]}).json()
    assert [x["text"] for x in r["results"]] == ["hello", " world"]
    half = client.post("/v1/tokenizers/gpt2/decode", json={"ids": [19526], "errors": "replace"})
    assert "\ufffd" in half.json()["text"]


def test_decode_errors_name_what_was_wrong(client: TestClient[Any]) -> None:
    doc = problem(
        client.post("/v1/tokenizers/gpt2/decode", json={"ids": [31373, -1, 99999999]}),
        422,
        "unknown-token-id",
    )
    assert doc["ids"] == [-1, 99999999]
    doc = problem(
        client.post("/v1/tokenizers/gpt2/decode", json={"ids": [31373, 19526]}),
        422,
        "undecodable-bytes",
    )
    assert doc["offset"] == 5 and doc["bytes"]


def test_lone_surrogate_is_422_naming_the_offset(client: TestClient[Any]) -> None:
    body = b'{"text": "ab\\ud800c"}'
    r = client.post(
        "/v1/tokenizers/gpt2/encode", content=body, headers={"content-type": "application/json"}
    )
    assert problem(r, 422, "lone-surrogate")["position"] == body.index(b"\\ud800")
    pair = client.post(
        "/v1/tokenizers/gpt2/count",
        content=b'{"text": "\\ud83d\\ude00"}',
        headers={"content-type": "application/json"},
    )
    assert pair.status_code == 200 and pair.json()["count"] >= 1
    escaped = client.post(
        "/v1/tokenizers/gpt2/count",
        content=b'{"text": "\\\\ud800"}',
        headers={"content-type": "application/json"},
    )
    assert escaped.status_code == 200


@pytest.mark.parametrize(
    "body",
    [
        b"{",
        b'{"text": 5}',
        b'{"text": "a", "texts": ["b"]}',
        b"{}",
        b'{"text": "a", "x": 1}',
        b'{"texts": "not a list"}',
        b"[]",
        b"",
    ],
)
def test_malformed_and_invalid_bodies_are_400(client: TestClient[Any], body: bytes) -> None:
    r = client.post(
        "/v1/tokenizers/gpt2/encode", content=body, headers={"content-type": "application/json"}
    )
    doc = problem(r, 400, "invalid-body")
    # the body's JSON path, never the handler's argument name
    assert all(e["key"].startswith("$") for e in doc["errors"]), doc


def test_unknown_tokenizer_lists_what_exists(client: TestClient[Any]) -> None:
    for ref in ("nope", "gpt2@9", "gpt2%00", "gpt2@1%00", "gpt2@"):
        doc = problem(
            client.post(f"/v1/tokenizers/{ref}/count", json={"text": "x"}), 404, "unknown-tokenizer"
        )
        assert "gpt2@1" in doc["available"]
    for path in ("..%2Fgpt2", "gpt2%2F..", "../gpt2", ".."):  # no route matches these
        problem(client.post(f"/v1/tokenizers/{path}/count", json={"text": "x"}), 404, "not-found")


def test_an_unknown_name_lists_every_name_that_works_plain_ones_too(
    client: TestClient[Any], registry: Registry
) -> None:
    """`available` names what resolves: each `name@version`, each name with a default version
    (`gpt2`, a model's `gpt-4o`) and each model alias; every one of them answers."""
    tokenizers = problem(
        client.post("/v1/tokenizers/nope/count", json={"text": "x"}), 404, "unknown-tokenizer"
    )["available"]
    models = problem(
        client.post("/v1/models/nope/count", json={"messages": []}), 404, "unknown-model"
    )["available"]
    assert {"gpt2", "gpt2@1", "cl100k_base", "gpt-4o", "gpt-4o@1"} <= set(tokenizers)
    assert {"gpt-4o", "gpt-4o@1", "mistral-large-2411"} <= set(models)
    assert set(models) == set(registry.models.names) and set(models) < set(tokenizers)
    for name in tokenizers:
        assert client.get(f"/v1/tokenizers/{name}").status_code == 200, name
    for name in models:
        assert client.get(f"/v1/models/{name}").status_code == 200, name


def test_limits_are_413(client: TestClient[Any]) -> None:
    problem(
        client.post("/v1/tokenizers/gpt2/count", json={"texts": ["a"] * 5}), 413, "limit-exceeded"
    )
    problem(
        client.post("/v1/tokenizers/gpt2/decode", json={"ids": [1] * 51}), 413, "limit-exceeded"
    )
    problem(
        client.post("/v1/tokenizers/gpt2/count", json={"text": "a" * 70_000}), 413, "limit-exceeded"
    )
    # ids and batch both given: all their ids count against the limit, before the 400
    doc = problem(
        client.post("/v1/tokenizers/gpt2/decode", json={"ids": [1] * 40, "batch": [[1] * 20]}),
        413,
        "limit-exceeded",
    )
    assert "(got 60)" in doc["detail"]


def test_decode_step_carries_held_back_bytes(client: TestClient[Any], registry: Registry) -> None:
    url = "/v1/tokenizers/cl100k_base/decode/step"
    byte_ids = registry.resolve("cl100k_base").tokenizer.vocab.byte_ids
    ids = [byte_ids[b] for b in "中文".encode()]  # one id per byte: every step cuts a character
    texts, state = [], None
    for i in ids:
        r = client.post(url, json={"ids": [i], "state": state}).json()
        texts.append(r["text"])
        state = r["state"]
    last = client.post(url, json={"ids": [], "state": state, "final": True}).json()
    assert [*texts, last["text"]] == ["", "", "中", "", "", "文", ""]
    problem(client.post(url, json={"ids": [], "state": "forged"}), 422, "invalid-stream-state")
    r = client.post(url, json={"ids": ids[:2], "final": True, "errors": "replace"}).json()
    assert r["text"] == "\ufffd"
    r = client.post(url, json={"ids": ids[:2], "final": True, "errors": "strict"})
    assert problem(r, 422, "undecodable-bytes")["offset"] == 0


def test_probes_and_schema(client: TestClient[Any]) -> None:
    assert client.get("/healthz").json() == {"status": "ok"}
    ready = client.get("/readyz").json()
    assert ready["status"] == "ready"
    assert "workers" not in ready and "workers_loaded" not in ready  # a lone app counts no others
    schema = client.get("/schema/openapi.json").json()
    assert "/v1/tokenizers/{ref}/encode" in schema["paths"]
    assert client.get("/schema").status_code == 200


def test_a_store_that_loads_nothing_refuses_to_start_and_says_why(tmp_path: Any) -> None:
    app = create_app(Settings(stores=(tmp_path,)))  # no manifest at all
    with pytest.raises(BaseException) as err, TestClient(app):  # anyio wraps it in a group
        pass
    message = "".join(traceback.format_exception(err.value))
    assert "no tokenizer loaded" in message and "manifest.json" in message


def test_a_partly_loaded_store_serves_but_is_not_ready(tmp_path: Any) -> None:
    store = tmp_path / "store"
    shutil.copytree(BUNDLED_STORE, store, ignore=shutil.ignore_patterns("o200k_base", "qwen*"))
    (store / "gpt2" / "1.json").write_bytes(b"{}")  # no longer matches its pin
    with TestClient(create_app(Settings(stores=(store,)))) as c:
        assert c.post("/v1/tokenizers/cl100k_base/count", json={"text": "hi"}).status_code == 200
        problem(c.post("/v1/tokenizers/gpt2/count", json={"text": "x"}), 404, "unknown-tokenizer")
        r = c.get("/readyz")
        doc = problem(r, 503, "not-ready")
        assert r.headers["retry-after"] == "1"
        assert any("gpt2/1.json" in f and "sha256" in f for f in doc["failures"]), doc


def test_strict_mode_refuses_to_start_on_a_bad_store(tmp_path: Any) -> None:
    store = tmp_path / "store"
    shutil.copytree(BUNDLED_STORE, store, ignore=shutil.ignore_patterns("o200k_base", "qwen*"))
    (store / "gpt2" / "1.json").write_bytes(b"{}")
    app = create_app(Settings(stores=(store,), strict=True))
    with pytest.raises(BaseException) as err, TestClient(app):  # anyio wraps it in a group
        pass
    assert "TOKSVC_STRICT is on" in "".join(traceback.format_exception(err.value))


def test_metrics_count_tokens_and_utf8_bytes(client: TestClient[Any]) -> None:
    def sample(name: str, **labels: str) -> float:
        for line in client.get("/metrics").text.splitlines():
            if line.startswith(name + "{") and all(f'{k}="{v}"' in line for k, v in labels.items()):
                return float(line.rsplit(" ", 1)[1])
        return 0.0

    labels = {"tokenizer": "p50k_base@1", "operation": "encode"}
    before = sample("toksvc_tokens_total", **labels), sample("toksvc_text_bytes_total", **labels)
    ids = client.post("/v1/tokenizers/p50k_base/encode", json={"text": "中 a"}).json()["ids"]
    after = sample("toksvc_tokens_total", **labels), sample("toksvc_text_bytes_total", **labels)
    assert after[0] - before[0] == len(ids)
    assert after[1] - before[1] == len("中 a".encode())
    text = client.get("/metrics").text
    assert 'toksvc_tokenizer_info{default="true",name="p50k_base"' in text
    assert (
        'toksvc_requests_total{method="POST",operation="encode",'
        'route="/v1/tokenizers/{ref}/encode",status="200"}' in text
    )
    assert 'toksvc_request_duration_seconds_bucket{le="0.001",operation="encode"' in text


def test_readyz_says_which_engine_serves_and_warns_without_the_native_one(
    client: TestClient[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    body = client.get("/readyz").json()
    assert body["engine"] == "native" and "warnings" not in body
    monkeypatch.setattr("service.bpe.engine.native.AVAILABLE", False)
    body = client.get("/readyz").json()
    assert body["status"] == "ready" and body["engine"] == "python"
    assert "native engine is NOT built" in body["warnings"][0]


def test_every_route_that_reads_a_body_declares_its_budget(client: TestClient[Any]) -> None:
    """The request budget reads routes' traits, not paths (issue 23): a route with a body is
    either counted against the worker's large-request slots or is a stream with its own."""
    with_body = [
        h
        for h in client.app.route_handler_method_map.values()
        for h in h.values()
        if "data" in h.parsed_fn_signature.parameters
    ]
    assert len(with_body) > 10
    for handler in with_body:
        assert traits.has(handler, traits.LARGE_BODY) != traits.has(handler, traits.STREAMING), (
            handler.paths
        )
    handlers = client.app.route_handler_method_map
    assert all(traits.has(handlers[p]["GET"], traits.AUTH_EXEMPT) for p in ("/healthz", "/readyz"))
    assert not traits.has(handlers["/v1/tokenizers"]["GET"], traits.AUTH_EXEMPT)
