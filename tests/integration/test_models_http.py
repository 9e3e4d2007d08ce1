"""Models, chat counts, estimates, truncate and chunk over real HTTP (uvicorn on 127.0.0.1)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.chatgen import TOOLS
from tests.support.modelstores import make_store, model
from tests.support.server import Server, start_server, stop_server

CHAT = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "Weather in Paris? 你好 🎉"},
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": '{"temp": 21}'},
    {"role": "assistant", "content": "21 °C."},
    {"role": "user", "content": "Thanks"},
]


JSON = {"content-type": "application/json"}


def problem(r: httpx.Response, status: int, kind: str) -> dict[str, Any]:
    assert r.status_code == status, r.text
    assert r.headers["content-type"].startswith("application/problem+json")
    doc: dict[str, Any] = r.json()
    assert doc["type"] == f"/problems/{kind}", doc
    return doc


def test_list_and_describe_models(server: Server) -> None:
    models = httpx.get(f"{server.base}/v1/models").json()["models"]
    assert {"qwen2.5", "qwen3", "gpt-oss", "gpt-4o", "gpt-4"} <= {m["name"] for m in models}
    info = httpx.get(f"{server.base}/v1/models/gpt-4o-2024-08-06").json()
    assert info["name"] == "gpt-4o" and info["tokenizer"] == "o200k_base@1"
    assert not info["exact"] and info["prices"]["currency"] == "USD"
    assert isinstance(info["prices"]["input_per_million"], str)
    qwen = httpx.get(f"{server.base}/v1/models/qwen3@1").json()
    assert qwen["exact"] and qwen["chat_format"] == "jinja" and len(qwen["template_sha256"]) == 64


@pytest.mark.parametrize("name", ["qwen2.5", "qwen3", "gpt-oss", "gpt-4o"])
def test_count_adds_up_and_matches_its_ids(server: Server, name: str) -> None:
    body = {"messages": CHAT, "tools": TOOLS, "return_ids": True, "return_text": True}
    total = httpx.post(f"{server.base}/v1/models/{name}/count", json=body).json()
    r = httpx.post(f"{server.base}/v1/models/{name}/count", json={**body, "breakdown": True})
    assert r.status_code == 200, r.text
    doc = r.json()
    assert doc["input_tokens"] == total["input_tokens"] and total.get("ids") == doc.get("ids")
    if doc["exact"]:  # the default: the total only
        assert total["messages"] == [] and total["overhead"] == {
            "unattributed": total["input_tokens"]
        }
    parts = doc["tools_tokens"] + sum(m["tokens"] for m in doc["messages"])
    assert parts + sum(doc["overhead"].values()) == doc["input_tokens"]
    assert [m["role"] for m in doc["messages"]] == [m["role"] for m in CHAT]
    if doc["exact"]:
        assert len(doc["ids"]) == doc["input_tokens"] and doc["text"]
        tok = doc["tokenizer"]["name"]
        dec = httpx.post(f"{server.base}/v1/tokenizers/{tok}/decode", json={"ids": doc["ids"]})
        assert dec.json()["text"] == doc["text"]


def test_estimate_costs_are_decimal_strings(server: Server) -> None:
    body = {"messages": CHAT, "output_tokens": 1000}
    doc = httpx.post(f"{server.base}/v1/models/gpt-4o/estimate", json=body).json()
    n = doc["input_tokens"]
    assert doc["cost"]["output"] == "0.01"  # 1000 tokens at 10.00 per 1M
    assert Decimal(doc["cost"]["input"]) == n * Decimal("2.50") / 1_000_000
    assert Decimal(doc["cost"]["total"]) == Decimal(doc["cost"]["input"]) + Decimal("0.01")
    assert doc["remaining_context"] == 128000 - n - 1000 and doc["currency"] == "USD"
    text = httpx.post(
        f"{server.base}/v1/models/gpt-4/estimate", json={"text": "hello world", "output_tokens": 0}
    ).json()
    assert text["input_tokens"] == 2 and text["cost"]["total"] == "0.00006"


def test_unknown_model_lists_models(server: Server) -> None:
    doc = problem(
        httpx.post(f"{server.base}/v1/models/gpt-9/count", json={"messages": []}),
        404,
        "unknown-model",
    )
    assert "gpt-4o@1" in doc["available"]


def test_unknown_role_names_index_and_field(server: Server) -> None:
    body = {"messages": [{"role": "user", "content": "a"}, {"role": "wizard", "content": "b"}]}
    doc = problem(
        httpx.post(f"{server.base}/v1/models/qwen3/count", json=body), 422, "invalid-message"
    )
    assert doc["index"] == 1 and doc["field"] == "role"


def test_malformed_tool_call_names_index_and_field(server: Server) -> None:
    bad = {"role": "assistant", "tool_calls": [{"function": {"name": "f", "arguments": "{oops"}}]}
    body = {"messages": [{"role": "user", "content": "a"}, bad]}
    doc = problem(
        httpx.post(f"{server.base}/v1/models/qwen2.5/count", json=body), 422, "invalid-message"
    )
    assert doc["index"] == 1 and doc["field"] == "tool_calls[0].function.arguments"
    bad = {"role": "assistant", "tool_calls": [{"function": {"arguments": "{}"}}]}
    body = {"messages": [bad]}
    doc = problem(
        httpx.post(f"{server.base}/v1/models/gpt-oss/count", json=body), 422, "invalid-message"
    )
    assert doc["index"] == 0 and "tool_calls[0].function" in doc["field"]


def nested(depth: int) -> Any:
    """`depth` objects inside one another, as a JSON text (no Python recursion to build it)."""
    return json.loads('{"a":' * (depth - 1) + "{}" + "}" * (depth - 1))


def deep_bodies(depth: int) -> dict[str, tuple[dict[str, Any], int | None, str]]:
    """Where a deep value can hide: (body, the message index named, the field named)."""
    args = {"function": {"name": "f", "arguments": nested(depth)}}
    text_args = {"function": {"name": "f", "arguments": json.dumps(nested(depth))}}
    hi = {"role": "user", "content": "hi"}
    return {
        "content": (
            {"messages": [hi, {"role": "user", "content": [nested(depth)]}]},
            1,
            "content[0]",
        ),
        "tools": (
            {
                "messages": [hi],
                "tools": [
                    {"type": "function", "function": {"name": "f", "parameters": nested(depth)}}
                ],
            },
            None,
            "tools[0].function.parameters",
        ),
        "arguments": (
            {"messages": [hi, {"role": "assistant", "tool_calls": [args]}]},
            1,
            "tool_calls[0].function.arguments",
        ),
        "arguments as a string": (
            {"messages": [hi, {"role": "assistant", "tool_calls": [text_args]}]},
            1,
            "tool_calls[0].function.arguments",
        ),
        "template kwargs": (
            {"messages": [hi], "chat_template_kwargs": {"x": nested(depth)}},
            None,
            "chat_template_kwargs.x",
        ),
    }


@pytest.mark.parametrize("where", list(deep_bodies(2)))
@pytest.mark.parametrize("name", ["qwen3", "gpt-oss", "gpt-4o"])
def test_deep_json_is_refused_naming_the_field(server: Server, name: str, where: str) -> None:
    body, index, field = deep_bodies(200)[where]
    for op in ("count", "estimate"):
        r = httpx.post(f"{server.base}/v1/models/{name}/{op}", json=body)
        doc = problem(r, 422, "invalid-message")
        assert doc["index"] == index and doc["field"].startswith(field), doc
    raw = json.dumps(deep_bodies(2)[where][0]).replace("{}", '{"a":' * 3000 + "{}" + "}" * 3000)
    r = httpx.post(f"{server.base}/v1/models/{name}/count", content=raw, headers=JSON)
    assert problem(r, 400, "invalid-body")["detail"].startswith("malformed JSON")  # the decoder's
    shallow = httpx.post(f"{server.base}/v1/models/{name}/count", json=deep_bodies(8)[where][0])
    assert shallow.status_code in (200, 422), shallow.text  # what the format makes of it


# (odd schema, the same schema without the odd part): a count renders them alike, never a 500
ODD_SCHEMAS = [
    ({"type": "object", "properties": ["a", "b"]}, {"type": "object"}),
    (
        {"type": "object", "properties": {"a": {"type": "string", "enum": 5}}},
        {"type": "object", "properties": {"a": {"type": "string"}}},
    ),
    (
        {"type": "object", "properties": {"a": {"type": "array", "items": [1]}}},
        {"type": "object", "properties": {"a": {"type": "array"}}},
    ),
    (
        {"type": "object", "properties": {"a": 5, "b": {"type": "string"}}, "required": 5},
        {"type": "object", "properties": {"a": {}, "b": {"type": "string"}}},
    ),
    (
        {"type": "object", "properties": {"a": {"type": "object", "properties": [1]}}},
        {"type": "object", "properties": {"a": {"type": "object"}}},
    ),
]


@pytest.mark.parametrize("schemas", ODD_SCHEMAS, ids=[str(i) for i in range(len(ODD_SCHEMAS))])
@pytest.mark.parametrize("name", ["qwen3", "gpt-oss", "gpt-4o"])
def test_odd_tool_schemas_render_like_their_plain_part(
    server: Server, name: str, schemas: tuple[dict[str, Any], dict[str, Any]]
) -> None:
    counts = []
    for schema in schemas:
        tools = [{"type": "function", "function": {"name": "f", "parameters": schema}}]
        body = {"messages": [{"role": "user", "content": "hi"}], "tools": tools}
        r = httpx.post(f"{server.base}/v1/models/{name}/count", json=body)
        assert r.status_code in (200, 422), r.text  # a Jinja template may refuse it, typed
        counts.append(r.json().get("input_tokens"))
    if name != "qwen3":  # harmony and the estimate rule: the odd part counts as absent
        assert counts[0] == counts[1] and counts[0] is not None


def test_missing_price_and_overflow(server: Server) -> None:
    body = {"messages": [{"role": "user", "content": "hi"}]}
    doc = problem(
        httpx.post(f"{server.base}/v1/models/qwen3/estimate", json=body), 422, "price-missing"
    )
    assert "qwen3@1" in doc["detail"]
    body = {"text": " hello" * 9000, "output_tokens": 10}
    doc = problem(
        httpx.post(f"{server.base}/v1/models/gpt-4/estimate", json=body), 422, "context-overflow"
    )
    assert doc["needed"] == 9010 and doc["context_window"] == 8192


@pytest.mark.parametrize("name", ["gpt-4", "gpt-4o"])
def test_an_estimate_without_output_fits_and_an_input_too_long_overflows(
    server: Server, name: str
) -> None:
    """The input alone is priced (gpt-4's maximum output is its whole window: with it, every
    default estimate overflowed); the longest reply's cost is given apart."""
    info = httpx.get(f"{server.base}/v1/models/{name}").json()
    window, most = info["context_window"], info["max_output_tokens"]
    r = httpx.post(f"{server.base}/v1/models/{name}/estimate", json={"text": "Hello, world"})
    assert r.status_code == 200, r.text
    doc = r.json()
    assert doc["output_tokens"] == 0 and doc["max_output"]["tokens"] == most
    assert doc["remaining_context"] == window - doc["input_tokens"]
    body = {"text": " hello" * (window + 10)}  # the input alone does not fit
    doc = problem(
        httpx.post(f"{server.base}/v1/models/{name}/estimate", json=body), 422, "context-overflow"
    )
    assert doc["needed"] > window


def test_truncate_and_chunk(server: Server) -> None:
    text = "Hello world, 你好 🎉 " * 50
    r = httpx.post(
        f"{server.base}/v1/tokenizers/cl100k_base/truncate",
        json={"text": text, "max_tokens": 20, "keep": "end"},
    ).json()
    assert r["truncated"] and text.endswith(r["text"]) and r["count"] <= 20
    r = httpx.post(
        f"{server.base}/v1/tokenizers/cl100k_base/chunk",
        json={"text": text, "max_tokens": 50, "overlap": 5},
    ).json()
    assert r["chunks"][0]["start"] == 0 and r["chunks"][-1]["end"] == len(text)
    assert all(c["count"] <= 50 for c in r["chunks"])
    problem(
        httpx.post(
            f"{server.base}/v1/tokenizers/cl100k_base/chunk",
            json={"text": text, "max_tokens": 5, "overlap": 5},
        ),
        422,
        "invalid-input",
    )


# --- templates that raise or run away, in a store of their own -------------------------------

RAISING = (
    "{% for m in messages %}{% if m.role == 'system' %}"
    "{{ raise_exception('System role not supported') }}{% endif %}"
    "{{ m.content }}{% endfor %}"
)
RUNAWAY = (
    "{% for i in range(100000) %}{% for j in range(100000) %}0123456789{% endfor %}{% endfor %}"
)


@pytest.fixture(scope="module")
def own_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    store = make_store(
        tmp_path_factory.mktemp("models"), [model("raising", RAISING), model("runaway", RUNAWAY)]
    )
    s = start_server(1, TOKSVC_STORE=str(store), TOKSVC_MAX_BODY_BYTES="65536")
    yield s
    stop_server(s)


def test_template_that_raises_is_a_422_with_its_message(own_server: Server) -> None:
    body = {"messages": [{"role": "system", "content": "x"}, {"role": "user", "content": "y"}]}
    doc = problem(
        httpx.post(f"{own_server.base}/v1/models/raising/count", json=body), 422, "template-error"
    )
    assert "System role not supported" in doc["detail"] and doc["index"] == 0
    ok = httpx.post(
        f"{own_server.base}/v1/models/raising/count",
        json={"messages": [{"role": "user", "content": "y"}]},
    )
    assert ok.status_code == 200 and ok.json()["input_tokens"] > 0


def test_runaway_template_is_bounded_and_the_worker_keeps_serving(own_server: Server) -> None:
    body = {"messages": [{"role": "user", "content": "y"}]}
    doc = problem(
        httpx.post(f"{own_server.base}/v1/models/runaway/count", json=body, timeout=60),
        413,
        "limit-exceeded",
    )
    assert doc["limit"] == 65536 * 4
    assert httpx.get(f"{own_server.base}/v1/models").status_code == 200


def test_store_path_is_not_shared(tmp_path: Path) -> None:
    """The model files of a store are plain JSON a reader can audit."""
    store = make_store(tmp_path, [model("raising", RAISING)])
    assert json.loads((store / "models" / "raising@1.json").read_text())["name"] == "raising"


def test_decode_can_skip_special_tokens(server: Server) -> None:
    body = {"messages": [{"role": "user", "content": "Hi"}], "return_ids": True}
    ids = httpx.post(f"{server.base}/v1/models/qwen2.5/count", json=body).json()["ids"]
    url = f"{server.base}/v1/tokenizers/qwen2.5/decode"
    full = httpx.post(url, json={"ids": ids}).json()["text"]
    bare = httpx.post(url, json={"ids": ids, "skip_special_tokens": True}).json()["text"]
    assert "<|im_start|>" in full and "<|im_start|>" not in bare
    assert bare == full.replace("<|im_start|>", "").replace("<|im_end|>", "")


def test_encode_pieces_and_offsets(server: Server) -> None:
    url = f"{server.base}/v1/tokenizers/cl100k_base/encode"
    doc = httpx.post(url, json={"text": "Hi 🙂", "pieces": True, "offsets": "utf16"}).json()
    assert doc["pieces"] == ["Hi", " 🙂"]
    assert doc["offsets"] == [[0, 2], [2, 5]]  # 🙂 is 2 UTF-16 units
    split = httpx.post(url, json={"text": "🙂", "pieces": True}).json()["pieces"]
    assert split == [{"base64": "8J8="}, {"base64": "mYI="}]  # its 4 bytes over 2 tokens
    batch = httpx.post(url, json={"texts": ["a", "b c"], "offsets": "codepoints"}).json()
    assert [r["offsets"] for r in batch["results"]] == [[[0, 1]], [[0, 1], [1, 3]]]
    count = httpx.post(
        f"{server.base}/v1/tokenizers/cl100k_base/count", json={"text": "a", "pieces": True}
    )
    assert count.status_code == 400  # count takes no pieces


def test_ndjson_stream_meters_with_a_model(server: Server) -> None:
    body = b'{"ids": [9906]}\n{"ids": [11, 1917]}\n'
    url = f"{server.base}/v1/tokenizers/cl100k_base/decode/stream?model=gpt-4"
    r = httpx.post(url, content=body, headers={"content-type": "application/x-ndjson"})
    lines = [json.loads(line) for line in r.text.splitlines()]
    assert [line.get("count") for line in lines] == [1, 3, 3]
    usage = lines[-1]["usage"]
    assert lines[-1]["done"] and usage["output_tokens"] == 3 and usage["model"] == "gpt-4@1"
    assert Decimal(usage["cost"]) == 3 * Decimal("60.00") / 1_000_000
    plain = httpx.post(
        url.split("?", maxsplit=1)[0],
        content=body,
        headers={"content-type": "application/x-ndjson"},
    )
    assert "count" not in plain.text and "usage" not in plain.text  # off unless asked
    unknown = httpx.post(
        url.replace("gpt-4", "gpt-9"),
        content=body,
        headers={"content-type": "application/x-ndjson"},
    )
    problem(unknown, 404, "unknown-model")


def test_a_metered_stream_that_ends_in_an_error_reports_its_usage(server: Server) -> None:
    body = b'{"ids": [9906]}\n{"ids": [11, 1917]}\n{"ids": [-1]}\n{"ids": [11]}\n'
    url = f"{server.base}/v1/tokenizers/cl100k_base/decode/stream"
    ndjson = {"content-type": "application/x-ndjson"}
    lines = [
        json.loads(x)
        for x in httpx.post(f"{url}?usage=true", content=body, headers=ndjson).text.splitlines()
    ]
    assert [line.get("count") for line in lines[:-1]] == [1, 3]
    last = lines[-1]
    assert last["error"]["type"] == "/problems/unknown-token-id"
    assert last["usage"] == {"output_tokens": 3}  # the ids decoded before the error
    priced = httpx.post(f"{url}?model=gpt-4", content=body, headers=ndjson)
    usage = json.loads(priced.text.splitlines()[-1])["usage"]
    assert usage["model"] == "gpt-4@1" and Decimal(usage["cost"]) == 3 * Decimal("60") / 10**6
    plain = httpx.post(url, content=body, headers=ndjson).text.splitlines()[-1]
    assert "usage" not in json.loads(plain)  # off unless asked


def test_websocket_meters_without_a_price(server: Server) -> None:
    from websockets.sync.client import connect  # noqa: PLC0415

    url = f"ws://127.0.0.1:{server.port}/v1/tokenizers/qwen3/decode/ws?model=qwen3"
    with connect(url) as ws:
        ws.send(json.dumps({"ids": [9707]}))
        assert json.loads(ws.recv())["count"] == 1
        ws.send(json.dumps({"ids": [11, 1879], "final": True}))
        last = json.loads(ws.recv())
    assert last["done"] and last["usage"] == {"output_tokens": 3, "model": "qwen3@1"}


def test_count_without_breakdown_gives_the_same_total(server: Server) -> None:
    url = f"{server.base}/v1/models/qwen3/count"
    full = httpx.post(url, json={"messages": CHAT, "tools": TOOLS}).json()
    once = httpx.post(url, json={"messages": CHAT, "tools": TOOLS, "breakdown": False}).json()
    assert once["input_tokens"] == full["input_tokens"] and once["messages"] == []
    assert once["overhead"] == {"unattributed": full["input_tokens"]}


@pytest.mark.parametrize("name", ["mistral-nemo", "mistral-large-2411"])
def test_mistral_counts_the_same_on_every_route(server: Server, name: str) -> None:
    """The model route, Anthropic's, OpenAI Responses' and vLLM's count one conversation alike;
    what mistral-common refuses (a tool call id not 9 letters or digits) is a 422 naming it."""
    chat = json.loads(json.dumps(CHAT).replace('"c1"', '"call00001"'))
    body = {"messages": chat, "tools": TOOLS, "return_ids": True}
    doc = httpx.post(f"{server.base}/v1/models/{name}/count", json=body).json()
    parts = doc["tools_tokens"] + sum(m["tokens"] for m in doc["messages"])
    assert parts + sum(doc["overhead"].values()) == doc["input_tokens"] == len(doc["ids"])
    assert doc["exact"] and doc["method"] == "mistral"
    plain = [m for m in chat if not m.get("tool_calls") and m["role"] != "tool"]
    want = httpx.post(f"{server.base}/v1/models/{name}/count", json={"messages": plain}).json()
    turns = [{"role": m["role"], "content": m["content"]} for m in plain[1:]]
    anthropic = {"model": name, "max_tokens": 9, "system": plain[0]["content"], "messages": turns}
    r = httpx.post(f"{server.base}/v1/messages/count_tokens", json=anthropic)
    assert r.json() == {"input_tokens": want["input_tokens"]}, r.text
    responses = {"model": name, "instructions": plain[0]["content"], "input": turns}
    r = httpx.post(f"{server.base}/v1/responses/input_tokens", json=responses)
    assert r.json()["input_tokens"] == want["input_tokens"], r.text
    r = httpx.post(f"{server.base}/tokenize", json={"model": name, "messages": plain})
    assert r.json()["count"] == want["input_tokens"], r.text
    refused = problem(
        httpx.post(f"{server.base}/v1/models/{name}/count", json={"messages": CHAT}),
        422,
        "chat-format-refused",
    )
    assert refused["index"] == 2 and "tool_calls[0].id" in refused["detail"]
