"""The provider-shaped count routes: a conversation sent in Anthropic's or OpenAI Responses'
shape counts as the same conversation sent to `/v1/models/{model}/count` (random conversations
from tests/support/chatgen.py, rewritten into each shape by the inverse mapping written here),
vLLM's
tokenize/detokenize agree with encode/decode and frame a prompt as transformers does, and bad
shapes, and fields that would change a count unheard, are 422s naming the field."""

from __future__ import annotations

import json
import os
import random
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from litestar.testing import TestClient

from service.api.app import create_app
from service.models.billing import count_conversation
from service.settings import Settings
from service.store.registry import Registry
from tests.support.chatgen import conversation
from tests.support.testdata import vocab_bytes
from tests.unit.models.test_chat_oracle import HF_FILES, hf_messages, hf_tokenizer

MODELS = ["gpt-4o", "qwen2.5", "qwen3", "gpt-oss"]
N = 40


@pytest.fixture(scope="module")
def client(registry: Registry) -> Iterator[TestClient[Any]]:
    with TestClient(create_app(Settings(), registry)) as c:
        yield c


def openai_style(rng: random.Random, reasoning: bool) -> tuple[list[dict[str, Any]], Any]:
    """A conversation as an OpenAI client sends it: a tool-calling turn has `content: null`."""
    messages, tools = conversation(rng, reasoning=reasoning)
    for m in messages:
        if m.get("tool_calls"):
            m["content"] = None
    return messages, tools


def to_anthropic(messages: list[dict[str, Any]], tools: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"messages": []}
    if messages and messages[0]["role"] == "system":
        body["system"] = [{"type": "text", "text": messages[0]["content"]}]
        messages = messages[1:]
    for m in messages:
        if m["role"] == "tool":
            block = {
                "type": "tool_result",
                "tool_use_id": m["tool_call_id"],
                "content": m["content"],
            }
            body["messages"].append({"role": "user", "content": [block]})
        elif m.get("tool_calls") or "reasoning_content" in m:
            blocks: list[dict[str, Any]] = []
            if "reasoning_content" in m:
                blocks.append({"type": "thinking", "thinking": m["reasoning_content"]})
            if m["content"] is not None:
                blocks.append({"type": "text", "text": m["content"]})
            for call in m.get("tool_calls", []):
                function = call["function"]
                blocks.append(
                    {
                        "type": "tool_use",
                        "id": call["id"],
                        "name": function["name"],
                        "input": json.loads(function["arguments"]),
                    }
                )
            body["messages"].append({"role": m["role"], "content": blocks})
        else:
            body["messages"].append({"role": m["role"], "content": m["content"]})
    if tools is not None:
        names = {"name": "name", "description": "description", "parameters": "input_schema"}
        body["tools"] = [{names[k]: v for k, v in t["function"].items()} for t in tools]
    return body


def to_responses(messages: list[dict[str, Any]], tools: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"input": []}
    if messages and messages[0]["role"] == "system":
        body["instructions"] = messages[0]["content"]
        messages = messages[1:]
    for m in messages:
        if m["role"] == "tool":
            body["input"].append(
                {
                    "type": "function_call_output",
                    "call_id": m["tool_call_id"],
                    "output": m["content"],
                }
            )
        elif m.get("tool_calls"):
            for call in m["tool_calls"]:
                body["input"].append(
                    {
                        "type": "function_call",
                        "call_id": call["id"],
                        "name": call["function"]["name"],
                        "arguments": call["function"]["arguments"],
                    }
                )
        else:
            parts = [
                {
                    "type": "input_text" if m["role"] == "user" else "output_text",
                    "text": m["content"],
                }
            ]
            body["input"].append({"type": "message", "role": m["role"], "content": parts})
    if tools is not None:
        body["tools"] = [{"type": "function", **t["function"]} for t in tools]
    return body


@pytest.mark.parametrize("model", MODELS)
def test_anthropic_shape_counts_as_the_same_conversation(
    client: TestClient[Any], registry: Registry, model: str
) -> None:
    rng = random.Random(f"anthropic-{model}")
    for _ in range(N):
        messages, tools = openai_style(rng, reasoning=True)
        want = count_conversation(registry, model, messages, tools, breakdown=False)
        body = {"model": model, "max_tokens": 99, **to_anthropic(messages, tools)}
        r = client.post("/v1/messages/count_tokens", json=body)
        assert r.status_code == 200, r.text
        assert r.json() == {"input_tokens": want.count.input_tokens}, messages


@pytest.mark.parametrize("model", MODELS)
def test_responses_shape_counts_as_the_same_conversation(
    client: TestClient[Any], registry: Registry, model: str
) -> None:
    rng = random.Random(f"responses-{model}")
    for _ in range(N):
        messages, tools = openai_style(rng, reasoning=False)
        want = count_conversation(registry, model, messages, tools, breakdown=False)
        body = {"model": model, "temperature": 0.2, **to_responses(messages, tools)}
        r = client.post("/v1/responses/input_tokens", json=body)
        assert r.status_code == 200, r.text
        assert r.json() == {
            "object": "response.input_tokens",
            "input_tokens": want.count.input_tokens,
        }, messages


@pytest.mark.parametrize("model", ["qwen2.5", "qwen3"])
def test_a_tool_call_with_null_content_renders_as_vllm_hands_it_on(
    registry: Registry, model: str
) -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "now", "arguments": "{}"}}
    messages = [
        {"role": "user", "content": "time?"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "noon"},
    ]
    ours = count_conversation(registry, model, messages).count.ids
    messages[1]["content"] = ""  # what vLLM hands the template for null content
    theirs = hf_tokenizer(model).apply_chat_template(
        hf_messages(messages), tokenize=True, add_generation_prompt=True, return_dict=False
    )
    assert ours == list(theirs)


def test_vllm_tokenize_and_detokenize_agree_with_encode_and_decode(
    client: TestClient[Any], registry: Registry
) -> None:
    text = "Hello <|im_end|> 你好"
    ids = registry.resolve("qwen2.5").tokenizer.encode(text, allowed_special="all")
    body = {
        "model": "qwen2.5",
        "prompt": text,
        "add_special_tokens": True,
        "return_token_strs": True,
    }
    r = client.post("/tokenize", json=body)
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["tokens"] == ids and body["count"] == len(ids)
    assert body["max_model_len"] == registry.resolve_model("qwen2.5").profile.context_window
    assert "".join(body["token_strs"]) == text and len(body["token_strs"]) == len(ids)
    r = client.post("/detokenize", json={"model": "qwen2.5", "tokens": ids})
    assert r.json() == {"prompt": text}
    messages = [{"role": "user", "content": "Hi"}]
    r = client.post("/tokenize", json={"model": "qwen3", "messages": messages})
    assert r.json()["tokens"] == count_conversation(registry, "qwen3", messages).count.ids


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        (
            "/v1/messages/count_tokens",
            {
                "model": "qwen3",
                "messages": [
                    {
                        "role": "user",
                        "content": [
                            {"type": "image", "source": {"type": "url", "url": "http://x"}}
                        ],
                    }
                ],
            },
            "content[0].source.url",
        ),
        (
            "/v1/messages/count_tokens",
            {
                "model": "qwen3",
                "messages": [
                    {
                        "role": "user",
                        "content": [{"type": "document", "source": {"type": "text", "data": "x"}}],
                    }
                ],
            },
            "content[0].type",
        ),
        (
            "/v1/messages/count_tokens",
            {"model": "qwen3", "messages": [{"role": "system", "content": "x"}]},
            "role",
        ),
        (
            "/v1/messages/count_tokens",
            {
                "model": "qwen3",
                "messages": [
                    {
                        "role": "assistant",
                        "content": [{"type": "tool_use", "id": "a", "name": "f", "input": [1]}],
                    }
                ],
            },
            "content[0].input",
        ),
        (
            "/v1/responses/input_tokens",
            {
                "model": "qwen3",
                "input": [{"type": "function_call", "call_id": "a", "name": "f", "arguments": "{"}],
            },
            "arguments",
        ),
        (
            "/v1/responses/input_tokens",
            {"model": "qwen3", "input": [{"type": "web_search_call"}]},
            "type",
        ),
        (
            "/v1/responses/input_tokens",
            {"model": "qwen3", "input": "x", "tools": [{"type": "web_search"}]},
            "tools[0].type",
        ),
        ("/tokenize", {"model": "qwen3"}, "prompt"),
        (
            "/tokenize",
            {"model": "gpt-4o", "messages": [{"role": "user", "content": "x"}]},
            "messages",
        ),
    ],
)
def test_bad_shapes_are_422_naming_the_field(
    client: TestClient[Any], path: str, body: dict[str, Any], field: str
) -> None:
    r = client.post(path, json=body)
    assert r.status_code == 422, r.text
    assert r.headers["content-type"].startswith("application/problem+json")
    assert r.json()["field"] == field


def test_an_unknown_model_names_the_closest(client: TestClient[Any]) -> None:
    r = client.post("/v1/messages/count_tokens", json={"model": "qwen-3", "messages": []})
    assert r.status_code == 404
    assert r.json()["type"] == "/problems/unknown-model"
    assert r.json()["closest"][0] == "qwen3"  # the plain name, as it was asked for


# --- whole OpenAI chat-completions requests on the model routes --------------------------------

OPENAI_REQUEST = {
    "model": "gpt-4o",
    "messages": [{"role": "user", "content": "Hi"}],
    "temperature": 0.7,
    "stream": True,
    "tool_choice": "auto",
    "n": 1,
}


def test_a_whole_openai_request_is_counted_and_its_parameters_listed(
    client: TestClient[Any], registry: Registry
) -> None:
    r = client.post("/v1/models/qwen3/count", json={**OPENAI_REQUEST, "max_tokens": 50})
    assert r.status_code == 200, r.text
    doc = r.json()
    want = count_conversation(registry, "qwen3", OPENAI_REQUEST["messages"]).count.input_tokens
    assert doc["input_tokens"] == want
    assert doc["ignored"] == ["model", "temperature", "n", "stream", "tool_choice", "max_tokens"]
    plain = client.post("/v1/models/qwen3/count", json={"messages": OPENAI_REQUEST["messages"]})
    assert "ignored" not in plain.json()


def test_a_typo_is_still_refused(client: TestClient[Any]) -> None:
    r = client.post("/v1/models/qwen3/count", json={**OPENAI_REQUEST, "temprature": 1})
    assert r.status_code == 400 and "temprature" in r.json()["detail"]


@pytest.mark.parametrize("limit", ["max_tokens", "max_completion_tokens", "max_output_tokens"])
def test_the_request_output_limit_prices_the_output(client: TestClient[Any], limit: str) -> None:
    doc = client.post("/v1/models/gpt-4o/estimate", json={**OPENAI_REQUEST, limit: 500}).json()
    assert doc["output_tokens"] == 500 and doc["cost"]["output"] == "0.005"  # $10 per million
    assert "max_tokens" not in doc["ignored"] and "max_completion_tokens" not in doc["ignored"]


def test_an_estimate_without_output_prices_the_input_alone(
    client: TestClient[Any], registry: Registry
) -> None:
    """Not the cost of the model's longest reply (gpt-4's maximum output is its whole window,
    which made every default estimate a context overflow): that is given apart."""
    for model in ("gpt-4o", "gpt-4"):
        doc = client.post(f"/v1/models/{model}/estimate", json={"text": "Hello"}).json()
        profile = registry.resolve_model(model).profile
        assert doc["output_tokens"] == 0 and doc["cost"]["output"] == "0.0"
        assert doc["cost"]["total"] == doc["cost"]["input"]
        assert doc["remaining_context"] == profile.context_window - doc["input_tokens"]
        rate = Decimal(registry.models.prices[model].price.output_per_million) / 1_000_000
        assert doc["max_output"] == {
            "tokens": profile.max_output_tokens,
            "cost": str(profile.max_output_tokens * rate),
        }


# --- a model's name wherever a tokenizer is expected -------------------------------------------


def test_a_model_name_serves_as_its_tokenizer(client: TestClient[Any], registry: Registry) -> None:
    """On the hot path (one text) and the full path (a batch) alike."""
    want = registry.resolve("o200k_base").tokenizer.encode("Hello, world")
    one = client.post("/v1/tokenizers/gpt-4o/encode", json={"text": "Hello, world"}).json()
    assert one["ids"] == want and one["tokenizer"]["name"] == "o200k_base"
    batch = client.post("/v1/tokenizers/gpt-4o/count", json={"texts": ["Hello, world"]}).json()
    assert batch["counts"] == [len(want)] and batch["tokenizer"]["name"] == "o200k_base"
    assert client.get("/v1/tokenizers/gpt-4o").json()["name"] == "o200k_base"


def test_an_unknown_name_suggests_tokenizers_and_models(client: TestClient[Any]) -> None:
    doc = client.post("/v1/tokenizers/gpt-4oo/count", json={"text": "x"}).json()
    assert doc["type"] == "/problems/unknown-tokenizer"
    assert "gpt-4o@1" in doc["closest"] and "o200k_base@1" in doc["available"]


def test_the_cli_takes_a_model_name_and_truncates_and_chunks(
    capsys: pytest.CaptureFixture[str], registry: Registry
) -> None:
    from service.bpe.text import budgets  # noqa: PLC0415
    from service.cli import main  # noqa: PLC0415

    text = "Hello, world. How are you?"
    tok = registry.resolve("o200k_base").tokenizer
    assert main(["count", "gpt-4o", text]) == 0
    out, err = capsys.readouterr()
    assert out == f"{tok.count(text)}\n" and "gpt-4o@1 counts with o200k_base@1" in err
    assert main(["truncate", "gpt-4o", "3", text, "--keep", "end"]) == 0
    assert capsys.readouterr().out == budgets.truncate(tok, text, 3, "end").text + "\n"
    assert main(["chunk", "gpt-4o", "4", text, "--overlap", "1"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(c["text"], c["count"]) for c in lines] == [
        (c.text, c.count) for c in budgets.chunk(tok, text, 4, 1)
    ]
    assert main(["count", "gpt-4oo", "x"]) != 0
    assert "did you mean 'gpt-4o' or " in capsys.readouterr().err  # the plain name first


# --- fields that change a count are honoured or refused, never dropped -------------------------


def auto_tokenizer(model: str, folder: Path) -> Any:
    """transformers' `AutoTokenizer` on the model's own two files, as vLLM loads a model folder."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    from transformers import AutoTokenizer  # noqa: PLC0415 (after HF_HUB_OFFLINE)

    for name, kind in zip(
        HF_FILES[model], ("tokenizer.json", "tokenizer_config.json"), strict=True
    ):
        (folder / kind).write_bytes(vocab_bytes(name))
    return AutoTokenizer.from_pretrained(str(folder))


@pytest.mark.parametrize("model", ["qwen2.5", "qwen3", "deepseek-v3"])
def test_tokenize_frames_a_prompt_as_the_reference_tokenizer_does(
    client: TestClient[Any], model: str, tmp_path: Path
) -> None:
    text = "Hello, world"
    reference = auto_tokenizer(model, tmp_path)  # as vLLM loads it
    for add in (True, False):
        r = client.post(
            "/tokenize", json={"model": model, "prompt": text, "add_special_tokens": add}
        )
        assert r.json()["tokens"] == reference(text, add_special_tokens=add)["input_ids"]
    default = client.post("/tokenize", json={"model": model, "prompt": text}).json()["tokens"]
    assert default == reference(text)["input_ids"]  # vLLM's default for a prompt: true


def test_tokenize_puts_mistral_bos_before_a_prompt(
    client: TestClient[Any], registry: Registry
) -> None:
    tok = registry.resolve(registry.resolve_model("mistral-nemo").tokenizer_ref).tokenizer
    plain = tok.encode("Hello, world", allowed_special="all")
    r = client.post("/tokenize", json={"model": "mistral-nemo", "prompt": "Hello, world"})
    assert r.json()["tokens"] == [tok.special_tokens["<s>"], *plain]  # mistral-common's bos=True
    messages = [{"role": "user", "content": "Hi"}]
    r = client.post("/tokenize", json={"model": "qwen3", "messages": messages})
    assert r.json()["tokens"] == count_conversation(registry, "qwen3", messages).count.ids


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/tokenize", {"prompt": "x"}, "model"),
        ("/v1/messages/count_tokens", {"messages": []}, "model"),
        (
            "/tokenize",
            {
                "model": "qwen3",
                "messages": [{"role": "assistant", "content": "Hel"}],
                "continue_final_message": True,
            },
            "continue_final_message",
        ),
        (
            "/tokenize",
            {"model": "qwen3", "prompt": "x", "chat_template": "{{ 1 }}"},
            "chat_template",
        ),
        (
            "/v1/responses/input_tokens",
            {"model": "qwen3", "input": "x", "previous_response_id": "resp_1"},
            "previous_response_id",
        ),
        (
            "/v1/responses/input_tokens",
            {"model": "qwen3", "input": "x", "conversation": "conv_1"},
            "conversation",
        ),
        (
            "/v1/responses/input_tokens",
            {
                "model": "qwen3",
                "input": [{"type": "reasoning", "id": "rs_1", "encrypted_content": "gAAA"}],
            },
            "type",
        ),
        (
            "/v1/messages/count_tokens",
            {
                "model": "qwen3",
                "messages": [{"role": "user", "content": "x"}],
                "tools": [{"type": "web_search_20250305", "name": "web_search"}],
            },
            "tools[0].type",
        ),
        (
            "/v1/messages/count_tokens",
            {
                "model": "qwen3",
                "messages": [{"role": "user", "content": "x"}],
                "tools": [{"type": "bash_20250124", "name": "bash"}],
            },
            "tools[0].type",
        ),
    ],
)
def test_a_field_that_would_change_the_count_is_refused_by_name(
    client: TestClient[Any], path: str, body: dict[str, Any], field: str
) -> None:
    r = client.post(path, json=body)
    assert r.status_code == 422, r.text
    assert r.json()["field"] == field


def test_a_custom_anthropic_tool_is_still_counted(client: TestClient[Any]) -> None:
    messages = [{"role": "user", "content": "x"}]
    tool = {"name": "f", "description": "d", "input_schema": {"type": "object"}}
    counts = [
        client.post(
            "/v1/messages/count_tokens", json={"model": "qwen3", "messages": messages, **extra}
        ).json()["input_tokens"]
        for extra in ({}, {"tools": [tool]}, {"tools": [{**tool, "type": "custom"}]})
    ]
    assert counts[0] < counts[1] == counts[2]


def test_an_estimate_gives_its_breakdown_by_default_as_documented(client: TestClient[Any]) -> None:
    messages = [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello there"}]
    doc = client.post("/v1/models/gpt-4o/count", json={"messages": messages}).json()
    assert [m["index"] for m in doc["messages"]] == [0, 1]
    parts = sum(m["tokens"] for m in doc["messages"]) + sum(doc["overhead"].values())
    assert parts + doc["tools_tokens"] == doc["input_tokens"]
    exact = client.post("/v1/models/qwen3/count", json={"messages": messages}).json()
    assert exact["messages"] == [] and exact["overhead"] == {"unattributed": exact["input_tokens"]}
