"""Hostile requests to the provider-shaped routes and the whole OpenAI requests, over real HTTP:
each is answered with a typed problem or within its budget, and the worker keeps serving (the
attack run of docs/reliability.md, "Provider routes and images")."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.support.server import Server, start_server, stop_server

MAX_OUTPUT = 64 * 1024 * 1024
PAIR = "\u9fa5\u4dff"  # two rare characters: five tokens, three of them half a character


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    s = start_server(1, TOKSVC_MAX_OUTPUT_BYTES=str(MAX_OUTPUT))
    yield s
    stop_server(s)


def post(server: Server, path: str, body: dict[str, Any] | bytes, timeout: float = 60) -> Any:
    content = body if isinstance(body, bytes) else json.dumps(body, ensure_ascii=False).encode()
    return httpx.post(
        server.base + path,
        content=content,
        timeout=timeout,
        headers={"content-type": "application/json"},
    )


def deep(levels: int) -> str:
    """A JSON object `levels` objects deep, as text (json.dumps would recurse)."""
    return '{"a":' * levels + "{}" + "}" * levels


def serves(server: Server) -> bool:
    return httpx.get(server.base + "/healthz", timeout=10).status_code == 200


def test_function_call_arguments_nested_past_the_parser_are_a_422(server: Server) -> None:
    """A Responses `function_call` whose `arguments` string nests 100,000 lists deep: Python's
    JSON parser raises RecursionError (was a 500), now the nesting problem naming the item."""
    arguments = '{"a":' + "[" * 100_000 + "]" * 100_000 + "}"
    for levels_text in (arguments, deep(70)):
        body = {
            "model": "gpt-4o",
            "input": [
                {"type": "function_call", "call_id": "c", "name": "f", "arguments": levels_text}
            ],
        }
        r = post(server, "/v1/responses/input_tokens", body)
        assert r.status_code == 422, r.text[:300]
        problem = r.json()
        assert problem["type"] == "/problems/invalid-message"
        assert problem["index"] == 0 and problem["field"].startswith("arguments")
    assert serves(server)


NESTED = [
    (
        "/v1/messages/count_tokens",
        '{"model": "%s", "messages": [{"role": "assistant", "content": '
        '[{"type": "tool_use", "id": "1", "name": "f", "input": %s}]}]}',
    ),
    (
        "/v1/messages/count_tokens",
        '{"model": "%s", "tools": [{"name": "f", "input_schema": %s}], '
        '"messages": [{"role": "user", "content": "hi"}]}',
    ),
    (
        "/v1/responses/input_tokens",
        '{"model": "%s", "input": "hi", "tools": [{"type": '
        '"function", "name": "f", "parameters": %s}]}',
    ),
    (
        "/tokenize",
        '{"model": "%s", "messages": [{"role": "user", "content": "x"}, {"role": '
        '"assistant", "tool_calls": [{"id": "1", "type": "function", "function": {"name": "f", '
        '"arguments": %s}}]}]}',
    ),
    (
        "/tokenize",
        '{"model": "%s", "messages": [{"role": "user", "content": "x"}], '
        '"chat_template_kwargs": {"k": %s}}',
    ),
]


@pytest.mark.parametrize("model", ["gpt-4o", "qwen3", "gpt-oss"])
@pytest.mark.parametrize(("path", "template"), NESTED)
def test_provider_routes_refuse_nesting_past_the_limit(
    server: Server, model: str, path: str, template: str
) -> None:
    """Objects nested 900 deep (under the body parser's limit) in a tool call's input, a tool's
    schema or template kwargs: the provider routes check nesting as `/v1/models/{m}/count` does,
    a 422 past 64 levels (they rendered them, or not, by how deep the renderer's stack was)."""
    r = post(server, path, (template % (model, deep(900))).encode())
    assert r.status_code == 422, r.text[:300]
    assert "deeper than 64" in r.json()["detail"]
    shallow = post(server, path, (template % (model, deep(3))).encode())
    assert shallow.status_code in (200, 422) and "deeper" not in shallow.text


def test_token_strs_are_refused_past_the_output_limit(server: Server) -> None:
    """`return_token_strs` on 1.1M pairs of rare characters (6.6 MB): half-character tokens are
    `"\\ufffd"` each, and the ids ~8 bytes; the answer was sized as 3 x the decoded bytes (20
    MB, admitted) and came out at ~60 MB. Now the exact size is checked before it is built."""
    body = {"model": "gpt-4o", "prompt": PAIR * 1_100_000, "return_token_strs": True}
    r = post(server, "/tokenize", body, timeout=120)
    assert r.status_code == 413, (r.status_code, len(r.content))
    assert r.json()["type"] == "/problems/limit-exceeded"
    assert serves(server)


def test_token_strs_are_each_tokens_text(server: Server) -> None:
    """Each token's text is its bytes decoded alone, U+FFFD for a split character (the oracle:
    `/detokenize` of each id alone)."""
    r = post(
        server, "/tokenize", {"model": "gpt-4o", "prompt": "Hi " + PAIR, "return_token_strs": True}
    )
    assert r.status_code == 200, r.text[:300]
    answer = r.json()
    alone = [
        post(server, "/detokenize", {"model": "gpt-4o", "tokens": [t]}).json()["prompt"]
        for t in answer["tokens"]
    ]
    assert answer["token_strs"] == alone and "\ufffd" in "".join(alone)
