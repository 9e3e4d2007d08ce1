"""Stop strings and priming, for every way of cutting ids into chunks: in process (the assembler,
kept or resumed from its state each step) and over the three stream forms on a real server
(NDJSON, WebSocket, stateless step), against the reference built from the full decode."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import httpx
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from websockets.sync.client import connect

from service.bpe import Tokenizer
from service.bpe.stream.options import AssemblyLimits, AssemblyOptions, assembler_for
from service.store.registry import Registry
from tests.integration.rawhttp import NdjsonStream
from tests.property.test_stream_chunks import chunked
from tests.support.assembly_reference import expected
from tests.support.server import Server

ALPHABET = "ab \n.<>/:é日本🙂"
LOCAL = settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
REMOTE = settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@dataclass
class Case:
    prompt: list[int]
    generated: list[int]
    chunks: list[list[int]]
    stops: list[str]
    include: bool

    def options(self) -> dict[str, Any]:
        out: dict[str, Any] = {"stop": self.stops, "include_stop_str_in_output": self.include}
        return {**out, "prompt_ids": self.prompt} if self.prompt else out


@st.composite
def cases(draw: st.DrawFn, tok: Tokenizer) -> Case:
    """A text that contains its stop strings (substrings of it, and some that may not occur),
    its ids, sometimes with raw bytes that split a character, a prompt that may end mid-character,
    and a chunking."""
    text = draw(st.text(alphabet=ALPHABET, min_size=1, max_size=24))
    bounds = st.tuples(st.integers(0, len(text)), st.integers(1, 6))
    stops = [text[a : a + n] for a, n in draw(st.lists(bounds, max_size=3))]
    stops += draw(st.lists(st.text(alphabet=ALPHABET, min_size=1, max_size=4), max_size=2))
    stops = [s for s in stops if s][:4] or ["\x00"]
    generated = tok.encode(text)
    prompt = tok.encode(draw(st.text(alphabet=ALPHABET, max_size=6)))
    if draw(st.booleans()):  # the prompt ends inside 🙂, the output starts with its other bytes
        cut = draw(st.integers(1, 3))
        char = "🙂".encode()
        prompt += [tok.vocab.byte_ids[b] for b in char[:cut]]
        generated = [tok.vocab.byte_ids[b] for b in char[cut:]] + generated
    cuts = draw(st.lists(st.integers(0, 10_000), max_size=8))
    return Case(prompt, generated, chunked(generated, cuts), stops, draw(st.booleans()))


@given(data=st.data())
@LOCAL
def test_the_assembler_equals_the_reference(registry: Registry, data: st.DataObject) -> None:
    tok = registry.resolve(data.draw(st.sampled_from(["cl100k_base", "qwen3", "gpt2"]))).tokenizer
    case = data.draw(cases(tok))
    stateless = data.draw(st.booleans())
    options = AssemblyOptions(
        stop=case.stops, include_stop_str_in_output=case.include, prompt_ids=case.prompt
    )
    limits = AssemblyLimits()
    assembler = assembler_for(tok, options, limits)
    out = []
    for chunk in case.chunks:
        if stateless:
            later = AssemblyOptions(stop=case.stops, include_stop_str_in_output=case.include)
            assembler = assembler_for(tok, later, limits, state=assembler.state())
        out.append(assembler.decode(chunk))
    out.append(assembler.flush())
    want, stop = expected(tok, case.generated, case.stops, prompt=case.prompt, include=case.include)
    assert ("".join(out), assembler.stopped) == (want, stop)


REF = "qwen3"


def via_ndjson(server: Server, case: Case) -> tuple[str, str | None]:
    stream = NdjsonStream(server.port, f"/v1/tokenizers/{REF}/decode/stream")
    out = []
    try:
        for i, chunk in enumerate(case.chunks):
            stream.send({"ids": chunk, **(case.options() if i == 0 else {})})
            line = stream.read_line()
            assert line is not None and "error" not in line, line
            out.append(line["text"])
            if line.get("done"):
                assert line["stopped"] is True
                return "".join(out), line["stop"]
        if not case.chunks:
            stream.send({"ids": [], **case.options()})
            out.append(stream.read_line()["text"])  # type: ignore[index]
        stream.end_body()
        last = stream.read_all()[-1]
        assert last["done"] is True
        return "".join(out) + last["text"], last.get("stop")
    finally:
        stream.close()


def via_websocket(server: Server, case: Case) -> tuple[str, str | None]:
    url = f"ws://127.0.0.1:{server.port}/v1/tokenizers/{REF}/decode/ws"
    out = []
    with connect(url) as ws:
        chunks = case.chunks or [[]]
        for i, chunk in enumerate(chunks):
            first = case.options() if i == 0 else {}
            ws.send(json.dumps({"ids": chunk, "final": i == len(chunks) - 1, **first}))
            message = json.loads(ws.recv(timeout=10))
            assert "error" not in message, message
            out.append(message["text"])
            if message.get("done"):
                return "".join(out), message.get("stop")
    raise AssertionError("the last message did not say done")


def via_step(server: Server, case: Case) -> tuple[str, str | None]:
    out, state, stop = [], None, None
    with httpx.Client(base_url=server.base, timeout=10) as c:
        for i, chunk in enumerate([*case.chunks, []]):
            body = {
                "ids": chunk,
                "state": state,
                "final": i == len(case.chunks),
                "stop": case.stops,
                "include_stop_str_in_output": case.include,
            }
            if i == 0 and case.prompt:
                body["prompt_ids"] = case.prompt
            r = c.post(f"/v1/tokenizers/{REF}/decode/step", json=body)
            assert r.status_code == 200, r.text
            out.append(r.json()["text"])
            state, stop = r.json()["state"], r.json().get("stop")
            if r.json().get("stopped"):
                break
    return "".join(out), stop


@given(data=st.data())
@REMOTE
def test_every_form_equals_the_reference(
    server: Server, registry: Registry, data: st.DataObject
) -> None:
    tok = registry.resolve(REF).tokenizer
    case = data.draw(cases(tok))
    want = expected(tok, case.generated, case.stops, prompt=case.prompt, include=case.include)
    for form in (via_ndjson, via_websocket, via_step):
        assert form(server, case) == want, form.__name__
