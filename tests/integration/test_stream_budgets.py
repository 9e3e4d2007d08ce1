"""WebSocket streams within the memory budget (issue 23, medium): a message is bounded in size and
in frames, and a client that sends pings without reading the pongs gets no unbounded buffer."""

from __future__ import annotations

import base64
import contextlib
import json
import os
import socket
import struct
from collections.abc import Iterator

import httpx
import pytest

from tests.support.server import Server, start_server, stop_server

WS = "/v1/tokenizers/cl100k_base/decode/ws"
TEXT, CONT, PING, PONG, CLOSE = 0x1, 0x0, 0x9, 0xA, 0x8


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    s = start_server(1)  # default limits: 1 MiB messages, 30 s write deadline
    yield s
    stop_server(s)


def frame(opcode: int, payload: bytes, fin: bool = True) -> bytes:
    """One masked frame, as a client sends it (RFC 6455)."""
    n, mask = len(payload), os.urandom(4)
    head = bytes([(0x80 if fin else 0) | opcode])
    if n < 126:
        head += bytes([0x80 | n])
    elif n < 65536:
        head += bytes([0x80 | 126]) + struct.pack("!H", n)
    else:
        head += bytes([0x80 | 127]) + struct.pack("!Q", n)
    key = (mask * (n // 4 + 1))[:n]
    return head + mask + bytes(a ^ b for a, b in zip(payload, key, strict=True))


def opened(server: Server, rcvbuf: int = 0) -> socket.socket:
    sock = socket.socket()
    if rcvbuf:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    sock.settimeout(20)
    sock.connect(("127.0.0.1", server.port))
    key = base64.b64encode(os.urandom(16)).decode()
    sock.sendall(
        (
            f"GET {WS} HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n"
            f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
            "Sec-WebSocket-Version: 13\r\n\r\n"
        ).encode()
    )
    head = b""
    while b"\r\n\r\n" not in head:
        head += sock.recv(1)
    assert head.startswith(b"HTTP/1.1 101"), head
    return sock


def frames_until_closed(sock: socket.socket) -> list[tuple[int, bytes]]:
    """Every frame the server sends (unmasked) until it closes the connection."""
    data = bytearray()
    with contextlib.suppress(OSError):
        while chunk := sock.recv(1 << 16):
            data += chunk
    out, at = [], 0
    while at + 2 <= len(data):
        opcode, n = data[at] & 0x0F, data[at + 1] & 0x7F
        at += 2
        if n == 126:
            n, at = struct.unpack("!H", data[at : at + 2])[0], at + 2
        elif n == 127:
            n, at = struct.unpack("!Q", data[at : at + 8])[0], at + 8
        out.append((opcode, bytes(data[at : at + n])))
        at += n
    return out


def close_code(frames: list[tuple[int, bytes]]) -> int | None:
    closes = [payload for opcode, payload in frames if opcode == CLOSE]
    return struct.unpack("!H", closes[0][:2])[0] if closes else None


def healthy(server: Server) -> bool:
    return httpx.get(f"{server.base}/healthz", timeout=10).status_code == 200


def test_a_message_over_the_size_limit_closes_the_socket(server: Server) -> None:
    sock = opened(server)
    with contextlib.suppress(OSError):
        sock.sendall(frame(TEXT, b'{"ids": [' + b"1," * 800_000 + b"1]}"))  # 1.6 MB
    assert close_code(frames_until_closed(sock)) == 1009
    sock.close()
    assert healthy(server)


def test_a_message_in_tiny_frames_is_refused_after_a_few(server: Server) -> None:
    """A message in 2-byte frames (7 MB of them once stalled the loop for seconds): the socket
    closes with 1009 once the message has more frames than allowed."""
    sock = opened(server)
    with contextlib.suppress(OSError):
        sock.sendall(frame(TEXT, b'{"', fin=False) + frame(CONT, b"id", fin=False) * 50_000)
    assert close_code(frames_until_closed(sock)) == 1009
    sock.close()
    assert healthy(server)


def test_pings_from_a_client_that_does_not_read_do_not_pile_up(server: Server) -> None:
    """100,000 pings (13 MB of pongs) from a client that reads nothing until it has sent them
    all: at most what the buffers hold is answered, not every ping."""
    sock = opened(server, rcvbuf=4096)
    ping = frame(PING, b"p" * 125)
    with contextlib.suppress(OSError):
        for _ in range(100):
            sock.sendall(ping * 1000)
        sock.sendall(frame(CLOSE, struct.pack("!H", 1000)))
    pongs = sum(opcode == PONG for opcode, _ in frames_until_closed(sock))
    sock.close()
    assert pongs < 50_000, pongs
    assert healthy(server)


def test_an_ndjson_line_over_the_message_limit_is_refused(server: Server) -> None:
    """One budget for both stream forms: an NDJSON line is bounded as a WebSocket message is
    (it was the 8 MiB body limit)."""
    line = b'{"ids": [' + b"1," * 800_000 + b"1]}\n"  # 1.6 MB

    def body() -> Iterator[bytes]:
        for at in range(0, len(line), 65536):
            yield line[at : at + 65536]

    r = httpx.post(
        f"{server.base}/v1/tokenizers/cl100k_base/decode/stream",
        content=body(),
        headers={"content-type": "application/x-ndjson"},
        timeout=30,
    )
    problem = r.json() if r.status_code != 200 else json.loads(r.text.splitlines()[-1])["error"]
    assert problem["type"] == "/problems/limit-exceeded" and problem["limit"] == 1024 * 1024
    assert healthy(server)
