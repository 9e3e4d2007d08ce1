"""The three streaming forms over real HTTP (NDJSON, WebSocket, stateless step), on every bundled
tokenizer: for every way of cutting ids into chunks, the joined output equals the one-shot decode
with the same errors mode."""

from __future__ import annotations

import json

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from websockets.sync.client import connect

from service.bpe import Tokenizer
from service.errors import UndecodableBytesError
from service.store.registry import Registry
from tests.conftest import bundled_refs
from tests.integration.rawhttp import NdjsonStream
from tests.property.test_stream_chunks import chunked, id_streams
from tests.support.server import Server

SETTINGS = settings(
    max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def one_shot(tok: Tokenizer, ids: list[int], errors: str) -> str | None:
    """The one-shot decode, or None where strict decoding fails."""
    try:
        return tok.decode(ids, errors)  # type: ignore[arg-type]
    except UndecodableBytesError:
        return None


def via_ndjson(server: Server, ref: str, chunks: list[list[int]], errors: str) -> str | None:
    stream = NdjsonStream(server.port, f"/v1/tokenizers/{ref}/decode/stream?errors={errors}")
    try:
        out = []
        for chunk in chunks:
            stream.send({"ids": chunk})
            line = stream.read_line()  # answered before the next line is sent
            assert line is not None
            if "error" in line:
                return None
            out.append(line["text"])
        stream.end_body()
        last = stream.read_all()
        if "error" in last[-1]:
            return None
        assert last[-1]["done"] is True
        return "".join(out) + last[-1]["text"]
    finally:
        stream.close()


def via_websocket(server: Server, ref: str, chunks: list[list[int]], errors: str) -> str | None:
    url = f"ws://127.0.0.1:{server.port}/v1/tokenizers/{ref}/decode/ws?errors={errors}"
    out = []
    with connect(url) as ws:
        for i, chunk in enumerate(chunks):
            ws.send(json.dumps({"ids": chunk, "final": i == len(chunks) - 1}))
            message = json.loads(ws.recv(timeout=10))
            if "error" in message:
                return None
            out.append(message["text"])
        if not chunks:
            ws.send(json.dumps({"final": True}))
            out.append(json.loads(ws.recv(timeout=10))["text"])
    return "".join(out)


def via_step(server: Server, ref: str, chunks: list[list[int]], errors: str) -> str | None:
    out, state = [], None
    with httpx.Client(base_url=server.base, timeout=10) as c:
        for i, chunk in enumerate([*chunks, []]):
            body = {"ids": chunk, "state": state, "final": i == len(chunks), "errors": errors}
            r = c.post(f"/v1/tokenizers/{ref}/decode/step", json=body)
            if r.status_code == 422:
                assert r.json()["type"] == "/problems/undecodable-bytes"
                return None
            out.append(r.json()["text"])
            state = r.json()["state"]
    return "".join(out)


@pytest.mark.parametrize("ref", bundled_refs())
@SETTINGS
@given(data=st.data())
def test_every_form_equals_the_one_shot_decode(
    server: Server, registry: Registry, ref: str, data: st.DataObject
) -> None:
    tok = registry.resolve(ref).tokenizer
    ids = data.draw(id_streams(tok))
    chunks = chunked(ids, data.draw(st.lists(st.integers(0, 10_000), max_size=6)))
    errors = data.draw(st.sampled_from(["replace", "strict"]))
    expected = one_shot(tok, ids, errors)
    for form in (via_ndjson, via_websocket, via_step):
        got = form(server, ref, chunks, errors)
        assert got == expected, form.__name__
        if errors == "replace" and expected is not None and "\ufffd" not in expected:
            assert "\ufffd" not in (got or "")
