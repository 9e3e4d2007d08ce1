"""The Python client (clients/python, `toksvc_client`) against a real `toksvc serve`: tiktoken's own
behaviours side by side with tiktoken built from the same upstream file, the model and text-budget
routes against the raw HTTP answers, streaming decode at every chunking against the one-shot
decode, and the service's problems as typed errors carrying their facts."""

from __future__ import annotations

import asyncio
import re
import sys
import tomllib
from collections.abc import AsyncIterator, Iterator

import httpx
import pytest
import tiktoken
from toksvc_client import AsyncClient, Client, errors
from toksvc_client.transport import post
from toksvc_client.wire import StepAnswer

import service.errors
from service.store.registry import Registry
from tests.conftest import tiktoken_oracle
from tests.support.server import ROOT, Server
from tests.support.testdata import corpus_text
from tests.unit.test_layers import imports_in

NAMES = ["cl100k_base", "o200k_base", "gpt2", "qwen2"]
TEXTS = [
    "Hello, world",
    "héllo 🙂 wörld\n\n   x  ",
    "<|endoftext|> and <|fim_prefix|>",
    "",
    "a\ud800b",  # a lone surrogate: tiktoken encodes U+FFFD in its place
    corpus_text("mixed_emoji_test.txt")[:2000],
    corpus_text("ja_debian_reference.txt")[:1000],
]


@pytest.fixture(scope="module")
def client(server: Server) -> Iterator[Client]:
    with Client(server.base, timeout=30) as c:
        yield c


@pytest.mark.parametrize("name", NAMES)
def test_encoding_behaves_as_tiktoken(client: Client, registry: Registry, name: str) -> None:
    ours = client.encoding(name)
    oracle: tiktoken.Encoding = tiktoken_oracle(registry, name)
    assert ours.n_vocab == oracle.n_vocab and ours.max_token_value == oracle.max_token_value
    assert ours.special_tokens_set == oracle.special_tokens_set
    assert ours.eot_token == oracle.eot_token and ours.name == name
    for text in TEXTS:
        assert ours.encode_ordinary(text) == oracle.encode_ordinary(text)
        assert ours.encode(text, allowed_special="all") == oracle.encode(
            text, allowed_special="all"
        )
        assert ours.count(text, disallowed_special=()) == len(oracle.encode_ordinary(text))
        ids = oracle.encode(text, disallowed_special=())
        assert ours.decode(ids) == oracle.decode(ids)
        assert ours.decode_bytes(ids) == oracle.decode_bytes(ids)
    ids = oracle.encode(TEXTS[1])
    assert ours.decode_tokens_bytes(ids) == oracle.decode_tokens_bytes(ids)
    assert ours.decode_single_token_bytes(ids[0]) == oracle.decode_single_token_bytes(ids[0])
    batch = [t for t in TEXTS if "<|" not in t]
    assert ours.encode_batch(batch) == oracle.encode_batch(batch)
    assert ours.encode_ordinary_batch(TEXTS) == oracle.encode_ordinary_batch(TEXTS)


def test_special_token_policy_and_errors_as_tiktoken(client: Client, registry: Registry) -> None:
    ours, oracle = client.encoding("cl100k_base"), tiktoken_oracle(registry, "cl100k_base")
    text = "a <|endoftext|> b <|fim_prefix|>"
    for kwargs in ({}, {"allowed_special": {"<|endoftext|>"}}, {"disallowed_special": "all"}):
        with pytest.raises(ValueError):
            oracle.encode(text, **kwargs)
        with pytest.raises(errors.DisallowedSpecialTokenError) as caught:
            ours.encode(text, **kwargs)  # a ValueError too, as tiktoken's
        assert caught.value.token in ours.special_tokens_set
    for kwargs in (
        {"allowed_special": "all"},
        {"allowed_special": {"<|endoftext|>", "<|fim_prefix|>", "<|no-such-token|>"}},
        {"disallowed_special": ()},
        {"allowed_special": {"<|endoftext|>"}, "disallowed_special": ()},
        {"disallowed_special": {"<|endofprompt|>"}},
    ):
        assert ours.encode(text, **kwargs) == oracle.encode(text, **kwargs), kwargs
    half = oracle.encode("🙂")[:1]  # half a character: replaced by default, as tiktoken does
    for mode in ("replace", "ignore", "backslashreplace"):
        assert ours.decode(half, errors=mode) == oracle.decode(half, errors=mode)
    with pytest.raises(UnicodeDecodeError):
        oracle.decode(half, errors="strict")
    with pytest.raises(errors.UndecodableBytesError) as bad:
        ours.decode(half, errors="strict")
    assert bad.value.bytes == oracle.decode_bytes(half).hex() and bad.value.offset == 0
    for unknown in ([100261], [oracle.n_vocab]):  # a gap in the ids, and one past the end
        with pytest.raises(KeyError):
            oracle.decode(unknown)
        with pytest.raises(KeyError) as missing:
            ours.decode(unknown)
        assert isinstance(missing.value, errors.UnknownTokenIdError)
        assert missing.value.ids == unknown


def test_model_and_text_budget_routes_match_the_raw_answers(client: Client, server: Server) -> None:
    raw = httpx.Client(base_url=server.base, timeout=30)
    chat = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi 🙂"}]
    assert [m.ref for m in client.models()] == [
        m["ref"] for m in raw.get("/v1/models").json()["models"]
    ]
    counted = client.count_chat("qwen3", chat, chat_template_kwargs={"enable_thinking": False})
    expected = raw.post(
        "/v1/models/qwen3/count",
        json={"messages": chat, "chat_template_kwargs": {"enable_thinking": False}},
    ).json()
    assert counted.input_tokens == expected["input_tokens"] and counted.exact is True
    assert [m.tokens for m in counted.messages] == [m["tokens"] for m in expected["messages"]]
    estimate = client.estimate("gpt-4o", chat, output_tokens=100)
    expected = raw.post(
        "/v1/models/gpt-4o/estimate", json={"messages": chat, "output_tokens": 100}
    ).json()
    assert estimate.cost.total == expected["cost"]["total"] and estimate.exact is False
    assert estimate.input_tokens == expected["input_tokens"]
    text = corpus_text("en_shakespeare.txt")[:3000]
    cut = client.truncate("cl100k_base", text, 50, keep="end")
    assert cut.text == text[cut.start : cut.end] and cut.end == len(text) and cut.count <= 50
    assert cut.count == client.encoding("cl100k_base").count(cut.text, disallowed_special=())
    chunks = client.chunk("o200k_base", text, 100, overlap=10)
    body = {"text": text, "max_tokens": 100, "overlap": 10}
    expected = raw.post("/v1/tokenizers/o200k_base/chunk", json=body).json()["chunks"]
    assert [(c.text, c.start, c.end, c.count) for c in chunks] == [
        (c["text"], c["start"], c["end"], c["count"]) for c in expected
    ]
    raw.close()


def cuts(ids: list[int], sizes: tuple[int, ...]) -> list[list[int]]:
    out, start, n = [], 0, 0
    while start < len(ids):
        size = sizes[n % len(sizes)]
        out.append(ids[start : start + size])
        start, n = start + size, n + 1
    return out


@pytest.mark.parametrize("sizes", [(1,), (2,), (3, 1), (5,)])
def test_decode_stream_joins_to_the_one_shot_decode(
    client: Client, registry: Registry, sizes: tuple[int, ...]
) -> None:
    oracle = tiktoken_oracle(registry, "cl100k_base")
    text = "Grüße 🙂🙂 中文 " + corpus_text("mixed_emoji_test.txt")[:120]
    ids = oracle.encode_ordinary(text)
    stream = client.decode_stream("cl100k_base")
    parts = [stream.feed(chunk) for chunk in cuts(ids, sizes)]
    parts.append(stream.finish())
    assert "".join(parts) == text
    assert all("\ufffd" not in p for p in parts)  # never half a character
    with pytest.raises(errors.StreamClosedError):
        stream.feed([1])
    assembled = client.decode_stream("cl100k_base").assemble(iter(cuts(ids, sizes)))
    assert "".join(assembled) == text


def test_async_client(server: Server, registry: Registry) -> None:
    oracle = tiktoken_oracle(registry, "o200k_base")
    text = "Hello 🙂 " + corpus_text("hi_devanagari.txt")[:300]
    ids = oracle.encode_ordinary(text)

    async def chunks() -> AsyncIterator[list[int]]:
        for chunk in cuts(ids, (2, 1)):
            yield chunk

    async def main() -> None:
        async with AsyncClient(server.base, timeout=30) as client:
            enc = await client.encoding("o200k_base")
            assert enc.n_vocab == oracle.n_vocab
            assert await enc.encode(text) == ids
            assert await enc.count(text) == len(ids)
            assert await enc.decode(ids) == text
            assert await enc.encode_batch([text, "x"]) == oracle.encode_batch([text, "x"])
            got = [t async for t in client.decode_stream("o200k_base").assemble(chunks())]
            assert "".join(got) == text
            counted = await client.count_chat("gpt-4o", [{"role": "user", "content": text}])
            assert counted.exact is False and counted.input_tokens > len(ids)
            with pytest.raises(errors.UnknownModelError) as caught:
                await client.estimate("no-such-model", text="x")
            assert "gpt-4o@1" in (caught.value.available or [])

    asyncio.run(main())


def test_problems_are_typed_errors_with_their_facts(client: Client) -> None:
    with pytest.raises(errors.UnknownTokenizerError) as unknown:
        client.encoding("no_such_tokenizer")
    assert unknown.value.status == 404 and "cl100k_base@1" in (unknown.value.available or [])
    with pytest.raises(errors.ContextOverflowError) as overflow:
        client.estimate("gpt-4", text="hi", output_tokens=10**6)
    assert overflow.value.context_window == 8192 and (overflow.value.needed or 0) > 10**6
    with pytest.raises(errors.PriceMissingError) as price:
        client.estimate("qwen3", text="hi", output_tokens=1)
    assert price.value.missing
    with pytest.raises(errors.InvalidMessageError) as message:
        client.count_chat("qwen3", [{"role": "user", "content": "hi"}, {"role": "robot"}])
    assert message.value.index == 1 and message.value.field == "role"
    with pytest.raises(errors.InvalidInputError):
        client.chunk("cl100k_base", "some text", 2, overlap=2)
    with pytest.raises(errors.InvalidStreamStateError):
        client.run(
            post(
                "/v1/tokenizers/cl100k_base/decode/step",
                {"ids": [1], "state": "u8.0.AAAA"},
                StepAnswer,
            )
        )
    with pytest.raises(errors.InvalidBodyError) as body:
        client.run(post("/v1/tokenizers/cl100k_base/decode", {"ids": ["x"]}, StepAnswer))
    assert body.value.errors and body.value.errors[0]["key"] == "$.ids[0]"
    with pytest.raises(errors.NotFoundError):
        client.run(post("/v1/no-such-route", {}, StepAnswer))


def test_every_problem_type_has_its_error_class() -> None:
    """Every `type` docs/api.md lists and every kind service.errors raises maps to a class."""
    documented = set(re.findall(r"`(/problems/[a-z-]+)`", (ROOT / "docs/api.md").read_text()))
    kinds: set[str] = set()
    pending: list[type[service.errors.ToksvcError]] = [service.errors.ToksvcError]
    while pending:
        cls = pending.pop()
        pending += cls.__subclasses__()
        kinds.add("/problems/" + cls.kind)
    assert documented and kinds
    assert not (documented | kinds) - set(errors.PROBLEM_CLASSES)
    for type_, cls in errors.PROBLEM_CLASSES.items():
        made = errors.problem_error({"type": type_, "status": 422, "detail": "x"})
        assert type(made) is cls and made.type == type_


def test_the_client_depends_on_httpx_and_msgspec_only() -> None:
    """Its own distribution: the standard library, httpx and msgspec; never the service."""
    imported: set[str] = set()
    for source in (ROOT / "clients/python/toksvc_client").glob("*.py"):
        imported |= {imp.split(".")[0] for imp in imports_in(source.read_text(), "toksvc_client")}
    third_party = imported - set(sys.stdlib_module_names) - {"__future__", "toksvc_client"}
    assert third_party == {"httpx", "msgspec"}
    declared = tomllib.loads((ROOT / "clients/python/pyproject.toml").read_text())
    assert [d.split(">")[0] for d in declared["project"]["dependencies"]] == ["httpx", "msgspec"]


def test_api_keys(registry: Registry) -> None:
    from tests.support.server import start_server, stop_server  # noqa: PLC0415

    key = "k" * 24
    server = start_server(1, TOKSVC_API_KEYS=f"ci:{key}")
    try:
        with Client(server.base, api_key=key) as client:
            oracle = tiktoken_oracle(registry, "gpt2")
            assert client.encoding("gpt2").encode("hello world") == oracle.encode("hello world")
        with Client(server.base) as client, pytest.raises(errors.UnauthorizedError):
            client.encoding("gpt2")
    finally:
        stop_server(server)


def test_decode_stream_options_pass_through(client: Client, registry: Registry) -> None:
    """Stop strings, priming and skipped special tokens, each against the one-shot decode."""
    oracle = tiktoken_oracle(registry, "cl100k_base")
    text = "The answer is 42.\nUser: and then?"
    ids = oracle.encode_ordinary(text)
    for sizes in ((1,), (3, 2)):
        stream = client.decode_stream("cl100k_base", stop=["\nUser:", "never"])
        out = "".join(stream.assemble(cuts(ids, sizes)))
        assert out == text[: text.index("\nUser:")] and stream.stopped and stream.stop == "\nUser:"
        with pytest.raises(errors.StreamClosedError):  # assemble finished it
            stream.feed([1])
    kept = client.decode_stream("cl100k_base", stop=["42"], include_stop_str_in_output=True)
    assert "".join(kept.assemble(cuts(ids, (2,)))) == "The answer is 42" and kept.stop == "42"

    full, cut = next(  # a prompt that ends inside a character
        (ids, i)
        for ids in map(oracle.encode, ["say 🙂 ok", "x🙂🦜 ok", "中文 🦜🦩 ok"])
        for i in range(1, len(ids))
        if _unfinished(oracle.decode_bytes(ids[:i]))
    )
    prompt_whole = oracle.decode_bytes(full[:cut]).decode("utf-8", "ignore")
    primed = client.decode_stream("cl100k_base", prompt_ids=full[:cut])
    out = "".join(primed.assemble(cuts(full[cut:], (1,))))
    assert out == oracle.decode(full)[len(prompt_whole) :] and out[0] not in prompt_whole

    eot = oracle.eot_token
    with_special = [*ids[:3], eot, *ids[3:6]]
    skipping = client.decode_stream("cl100k_base", skip_special_tokens=True)
    out = "".join(skipping.assemble(cuts(with_special, (2,))))
    assert out == oracle.decode([i for i in with_special if i != eot])
    keeping = client.decode_stream("cl100k_base")
    assert "".join(keeping.assemble(cuts(with_special, (2,)))) == oracle.decode(with_special)

    with pytest.raises(errors.InvalidStreamOptionError) as caught:
        client.decode_stream("cl100k_base", stop=[""]).feed(ids)
    assert caught.value.field == "stop"
    with pytest.raises(errors.InvalidStreamOptionError) as caught:
        client.decode_stream("cl100k_base", prompt_ids=[oracle.n_vocab + 5]).feed(ids)
    assert caught.value.field == "prompt_ids"


def _unfinished(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False
