"""Streaming decode over real HTTP: NDJSON with a chunked body, the WebSocket, and limits."""

from __future__ import annotations

import json

import httpx
import pytest
from websockets.exceptions import ConnectionClosed
from websockets.frames import Frame, Opcode
from websockets.sync.client import connect

from service.store.registry import Registry
from tests.integration.rawhttp import NdjsonStream
from tests.support.server import Server

PATH = "/v1/tokenizers/cl100k_base/decode/stream"


def byte_ids(registry: Registry, text: str) -> list[int]:
    table = registry.resolve("cl100k_base").tokenizer.vocab.byte_ids
    return [table[b] for b in text.encode()]


def test_each_line_is_answered_before_the_body_ends(server: Server, registry: Registry) -> None:
    ids = byte_ids(registry, "a中")  # 'a', then three bytes of one character
    stream = NdjsonStream(server.port, PATH)
    try:
        stream.send({"ids": ids[:2]})
        assert stream.read_line() == {"text": "a"}  # the body is still open
        assert stream.status == 200
        assert stream.headers["content-type"].startswith("application/x-ndjson")
        stream.send({"ids": ids[2:3]})
        assert stream.read_line() == {"text": ""}  # half a character is held back
        stream.send({"ids": ids[3:]})
        assert stream.read_line() == {"text": "中"}
        stream.end_body()
        assert stream.read_all() == [{"text": "", "done": True}]
    finally:
        stream.close()


def test_a_line_split_across_chunks_and_a_last_line_without_newline(server: Server) -> None:
    stream = NdjsonStream(server.port, PATH)
    try:
        stream.send_raw(b'{"ids": [153')
        stream.send_raw(b'39]}\n{"ids": [1917]}')
        stream.end_body()
        assert stream.read_all() == [
            {"text": "hello"},
            {"text": " world"},
            {"text": "", "done": True},
        ]
    finally:
        stream.close()


def test_strict_mode_ends_the_stream_with_a_typed_error(server: Server, registry: Registry) -> None:
    ids = byte_ids(registry, "中")
    stream = NdjsonStream(server.port, PATH + "?errors=strict")
    try:
        stream.send({"ids": ids[:1]})
        assert stream.read_line() == {"text": ""}
        stream.send({"ids": byte_ids(registry, "x")})
        error = stream.read_line()
        assert error is not None and error["error"]["type"] == "/problems/undecodable-bytes"
        assert error["error"]["offset"] == 0 and error["error"]["bytes"] == "e4"
    finally:
        stream.close()


def test_a_bad_line_ends_the_stream_with_400_problem(server: Server) -> None:
    stream = NdjsonStream(server.port, PATH)
    try:
        stream.send_raw(b"not json\n")
        line = stream.read_line()
        assert line is not None and line["error"]["type"] == "/problems/invalid-body"
    finally:
        stream.close()


def test_lines_before_a_bad_line_in_the_same_chunk_are_answered(server: Server) -> None:
    stream = NdjsonStream(server.port, PATH)
    try:
        stream.send_raw(b'{"ids": [15339]}\nnot json\n{"ids": [1917]}\n')
        assert stream.read_line() == {"text": "hello"}
        line = stream.read_line()
        assert line is not None and line["error"]["type"] == "/problems/invalid-body"
        assert stream.read_line() is None
    finally:
        stream.close()


def test_unknown_tokenizer_before_streaming_is_a_404_problem(server: Server) -> None:
    r = httpx.post(f"{server.base}/v1/tokenizers/nope/decode/stream", content=b'{"ids": []}\n')
    assert r.status_code == 404 and r.json()["type"] == "/problems/unknown-tokenizer"


def test_websocket_round_trip(server: Server, registry: Registry) -> None:
    ids = byte_ids(registry, "é!")
    url = f"ws://127.0.0.1:{server.port}/v1/tokenizers/cl100k_base/decode/ws"
    with connect(url) as ws:
        ws.send(json.dumps({"ids": ids[:1]}))
        assert json.loads(ws.recv(timeout=10)) == {"text": ""}
        ws.send(json.dumps({"ids": ids[1:]}))
        assert json.loads(ws.recv(timeout=10)) == {"text": "é!"}
        ws.send(json.dumps({"ids": ids[:1], "final": True}))
        assert json.loads(ws.recv(timeout=10)) == {"text": "\ufffd", "done": True}
        with pytest.raises(ConnectionClosed) as closed:
            ws.recv(timeout=10)
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1000


def test_websocket_bad_message_and_idle_timeout(server: Server) -> None:
    url = f"ws://127.0.0.1:{server.port}/v1/tokenizers/cl100k_base/decode/ws"
    with connect(url) as ws:
        ws.send("not json")
        assert json.loads(ws.recv(timeout=10))["error"]["type"] == "/problems/invalid-body"
        with pytest.raises(ConnectionClosed) as closed:
            ws.recv(timeout=10)
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1007
    with connect(url) as ws:  # the test server closes idle sockets after 2 s
        message = json.loads(ws.recv(timeout=10))
        assert message["error"]["type"] == "/problems/limit-exceeded"


def test_an_idle_ndjson_stream_ends_with_a_line_that_says_why(
    server: Server, registry: Registry
) -> None:
    """The same idle limit as a WebSocket's (the test server sets TOKSVC_WS_IDLE_SECONDS=2)."""
    stream = NdjsonStream(server.port, PATH)
    try:
        stream.send({"ids": byte_ids(registry, "a")})
        assert stream.read_line() == {"text": "a"}
        line = stream.read_line()  # nothing more is sent: the stream ends after 2 s
        assert line is not None and line["error"]["type"] == "/problems/limit-exceeded"
        assert "idle seconds" in line["error"]["detail"]
        assert stream.read_line() is None
    finally:
        stream.close()


def test_a_ping_flood_is_closed_with_1008_and_a_normal_rate_is_answered(
    server: Server, registry: Registry
) -> None:
    url = f"ws://127.0.0.1:{server.port}/v1/tokenizers/cl100k_base/decode/ws"
    with connect(url) as ws:  # a few pings a second: each answered, the stream goes on
        for n in range(5):
            assert ws.ping(b"%d" % n).wait(timeout=10)
        ws.send(json.dumps({"ids": byte_ids(registry, "ok")}))
        assert json.loads(ws.recv(timeout=10)) == {"text": "ok"}
    flood = b"".join(
        Frame(Opcode.PING, b"%d" % n).serialize(mask=True, extensions=[]) for n in range(200)
    )
    with connect(url) as ws:  # 200 pings at once (one write: all read before the close)
        ws.socket.sendall(flood)
        with pytest.raises(ConnectionClosed) as closed:
            ws.recv(timeout=10)
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1008


def test_too_many_streams_get_503_with_retry_after(server: Server) -> None:
    open_streams = [NdjsonStream(server.port, PATH) for _ in range(4)]  # the server allows 4
    try:
        for s in open_streams:
            s.send({"ids": [15339]})
            assert s.read_line() == {"text": "hello"}
        r = httpx.post(f"{server.base}{PATH}", content=b'{"ids": [15339]}\n', timeout=10)
        assert r.status_code == 503 and r.headers["retry-after"] == "1"
        assert r.json()["type"] == "/problems/too-many-streams"
    finally:
        for s in open_streams:
            s.close()
