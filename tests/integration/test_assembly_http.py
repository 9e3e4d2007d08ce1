"""Stream assembly over real HTTP: stop strings end each form with `stopped`, special tokens
decode as transformers decodes them, and bad options are typed errors naming their field."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from service.store.registry import Registry
from tests.integration.rawhttp import NdjsonStream
from tests.support.server import Server
from tests.support.testdata import vocab_bytes

TEXT = "<think>plan</think> Answer: 42<|im_end|><|im_start|>more<tool_call>x<|endoftext|>"


@pytest.fixture(scope="module")
def transformers_qwen() -> Iterator[dict[str, Any]]:
    """transformers' own tokenizers for Qwen2.5 and Qwen3 (Qwen2Tokenizer), from the files in
    tests/data."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    from transformers import AutoTokenizer  # noqa: PLC0415 (after HF_HUB_OFFLINE)

    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        for ref, stem in (("qwen2.5", "qwen2_5"), ("qwen3", "qwen3")):
            folder = Path(tmp, stem)
            folder.mkdir()
            (folder / "tokenizer.json").write_bytes(vocab_bytes(f"{stem}_tokenizer.json"))
            config = vocab_bytes(f"{stem}_tokenizer_config.json")
            (folder / "tokenizer_config.json").write_bytes(config)
            out[ref] = AutoTokenizer.from_pretrained(str(folder))
        yield out


FLAGS = [
    (ref, skip, spaces)
    for ref in ("qwen2.5", "qwen3")
    for skip in (False, True)
    for spaces in (False, True)
]


@pytest.mark.parametrize("flags", FLAGS)
def test_special_tokens_decode_as_transformers_does(
    server: Server,
    registry: Registry,
    transformers_qwen: dict[str, Any],
    flags: tuple[str, bool, bool],
) -> None:
    ref, skip, spaces = flags
    oracle = transformers_qwen[ref]
    ids = oracle.encode(TEXT, add_special_tokens=False)
    assert ids == registry.resolve(ref).tokenizer.encode(TEXT, allowed_special="all")
    want = oracle.decode(ids, skip_special_tokens=skip, spaces_between_special_tokens=spaces)
    options = {"skip_special_tokens": skip, "spaces_between_special_tokens": spaces}
    r = httpx.post(f"{server.base}/v1/tokenizers/{ref}/decode", json={"ids": ids, **options})
    assert r.status_code == 200 and r.json()["text"] == want
    url = f"ws://127.0.0.1:{server.port}/v1/tokenizers/{ref}/decode/ws"
    with connect(url) as ws:
        got = []
        for i, tid in enumerate(ids):
            ws.send(
                json.dumps(
                    {"ids": [tid], "final": i == len(ids) - 1, **(options if i == 0 else {})}
                )
            )
            got.append(json.loads(ws.recv(timeout=10))["text"])
    assert "".join(got) == want


def test_ndjson_ends_at_the_stop_string(server: Server, registry: Registry) -> None:
    ids = registry.resolve("cl100k_base").tokenizer.encode("Hello wor🙂ld STOP more text")
    stream = NdjsonStream(server.port, "/v1/tokenizers/cl100k_base/decode/stream")
    try:
        lines = []
        for i, tid in enumerate(ids):
            stream.send({"ids": [tid], **({"stop": ["STOP", "zz"]} if i == 0 else {})})
            lines.append(stream.read_line())
            if lines[-1] and lines[-1].get("done"):
                break
        last = lines[-1]
        assert last == {"text": " ", "done": True, "stopped": True, "stop": "STOP"}
        assert "".join(line["text"] for line in lines if line) == "Hello wor🙂ld "
        assert stream.read_line() is None  # nothing after the stop: the response has ended
    finally:
        stream.close()


def test_websocket_closes_normally_at_the_stop_string(server: Server, registry: Registry) -> None:
    ids = registry.resolve("gpt2").tokenizer.encode("a b</answer> c")
    url = f"ws://127.0.0.1:{server.port}/v1/tokenizers/gpt2/decode/ws"
    with connect(url) as ws:
        ws.send(json.dumps({"ids": ids, "stop": ["</answer>"], "include_stop_str_in_output": True}))
        message = json.loads(ws.recv(timeout=10))
        assert message == {
            "text": "a b</answer>",
            "done": True,
            "stopped": True,
            "stop": "</answer>",
        }
        with pytest.raises(ConnectionClosed) as closed:
            ws.recv(timeout=10)
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1000


def test_step_carries_the_held_text_and_stays_stopped(server: Server, registry: Registry) -> None:
    tok = registry.resolve("cl100k_base").tokenizer
    path = "/v1/tokenizers/cl100k_base/decode/step"
    body: dict[str, Any] = {"stop": ["\n\nUser:"], "state": None}
    out = []
    with httpx.Client(base_url=server.base, timeout=10) as c:
        for piece in ["Sure.", "\n", "\nUs", "er: hi", " more"]:
            r = c.post(path, json={**body, "ids": tok.encode(piece)})
            assert r.status_code == 200, r.text
            out.append(r.json()["text"])
            body["state"] = r.json()["state"]
        assert out == ["Sure.", "", "", "", ""]
        assert r.json()["stopped"] is True and r.json()["stop"] == "\n\nUser:"
        other = c.post(path, json={**body, "stop": ["other"], "ids": []})
        assert other.status_code == 422 and other.json()["field"] == "stop"


def test_step_primes_on_its_first_step_only(server: Server, registry: Registry) -> None:
    tok = registry.resolve("qwen3").tokenizer
    char = "日".encode()
    prompt = [*tok.encode("Q: "), tok.vocab.byte_ids[char[0]]]
    path = "/v1/tokenizers/qwen3/decode/step"
    with httpx.Client(base_url=server.base, timeout=10) as c:
        rest = [tok.vocab.byte_ids[b] for b in char[1:]]
        r = c.post(path, json={"ids": rest, "prompt_ids": prompt, "final": True})
        assert r.status_code == 200 and r.json()["text"] == "日"
        again = c.post(path, json={"ids": [], "prompt_ids": prompt, "state": r.json()["state"]})
        assert again.status_code == 422
        assert again.json()["type"] == "/problems/invalid-stream-option"
        assert again.json()["field"] == "prompt_ids"


BAD_OPTIONS = [
    ({"stop": [f"s{i}" for i in range(17)]}, "stop"),
    ({"stop": ["ok", ""]}, "stop"),
    ({"stop": ["x" * 257]}, "stop"),
    ({"prompt_ids": list(range(65))}, "prompt_ids"),
    ({"prompt_ids": [99_999_999]}, "prompt_ids"),
]


@pytest.mark.parametrize(("options", "field"), BAD_OPTIONS)
def test_bad_options_are_typed_errors_in_every_form(
    server: Server, options: dict[str, Any], field: str
) -> None:
    base = "/v1/tokenizers/cl100k_base/decode"
    r = httpx.post(f"{server.base}{base}/step", json={"ids": [9906], **options})
    assert r.status_code == 422 and r.json()["field"] == field
    assert r.json()["type"] == "/problems/invalid-stream-option"
    stream = NdjsonStream(server.port, f"{base}/stream")
    try:
        stream.send({"ids": [9906], **options})
        line = stream.read_line()
        assert line is not None and line["error"]["field"] == field
        assert stream.read_line() is None
    finally:
        stream.close()
    with connect(f"ws://127.0.0.1:{server.port}{base}/ws") as ws:
        ws.send(json.dumps({"ids": [9906], **options}))
        assert json.loads(ws.recv(timeout=10))["error"]["field"] == field
        with pytest.raises(ConnectionClosed) as closed:
            ws.recv(timeout=10)
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1008


def test_options_after_the_stream_started_are_refused(server: Server) -> None:
    base = "/v1/tokenizers/cl100k_base/decode"
    stream = NdjsonStream(server.port, f"{base}/stream")
    try:
        stream.send({"ids": [9906], "stop": ["x"]})
        assert stream.read_line() == {"text": "Hello"}
        stream.send({"ids": [11], "skip_special_tokens": True})
        line = stream.read_line()
        assert line is not None and line["error"]["field"] == "skip_special_tokens"
    finally:
        stream.close()
    with connect(f"ws://127.0.0.1:{server.port}{base}/ws") as ws:
        ws.send(json.dumps({"ids": [9906]}))
        assert json.loads(ws.recv(timeout=10)) == {"text": "Hello"}
        ws.send(json.dumps({"ids": [11], "stop": ["x"]}))
        assert json.loads(ws.recv(timeout=10))["error"]["field"] == "stop"
    assert httpx.get(f"{server.base}/healthz").status_code == 200
