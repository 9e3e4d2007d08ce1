"""A minimal HTTP/1.1 client over a socket that streams a chunked request body and reads the
response while the body is still open (what an LLM producer does; httpx sends the body first)."""

from __future__ import annotations

import json
import socket
from typing import Any


class NdjsonStream:
    def __init__(self, port: int, path: str, timeout: float = 15.0) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        head = (
            f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-ndjson\r\n"
            "Transfer-Encoding: chunked\r\n\r\n"
        )
        self.sock.sendall(head.encode())
        self.reader = self.sock.makefile("rb")
        self.status: int | None = None
        self.headers: dict[str, str] = {}
        self._pending = b""
        self._ended = False

    def send_raw(self, data: bytes) -> None:
        if data:
            self.sock.sendall(b"%x\r\n%s\r\n" % (len(data), data))

    def send(self, obj: Any) -> None:
        self.send_raw(json.dumps(obj).encode() + b"\n")

    def end_body(self) -> None:
        self.sock.sendall(b"0\r\n\r\n")

    def _read_head(self) -> None:
        status_line = self.reader.readline().decode()
        self.status = int(status_line.split()[1])
        while (line := self.reader.readline().decode().strip()) != "":
            name, _, value = line.partition(":")
            self.headers[name.strip().lower()] = value.strip()

    def _read_chunk(self) -> bytes:
        if self.headers.get("transfer-encoding") != "chunked":
            self._ended = True
            return self.reader.read(int(self.headers.get("content-length", "0")))
        size = int(self.reader.readline().strip(), 16)
        data = self.reader.read(size)
        self.reader.readline()
        if size == 0:
            self._ended = True
        return data

    def read_line(self) -> dict[str, Any] | None:
        """The next NDJSON line of the response (None at its end); blocks until it arrives."""
        if self.status is None:
            self._read_head()
        while b"\n" not in self._pending:
            if self._ended:
                rest, self._pending = self._pending, b""
                return json.loads(rest) if rest.strip() else None
            self._pending += self._read_chunk()
        line, self._pending = self._pending.split(b"\n", 1)
        parsed: dict[str, Any] = json.loads(line)
        return parsed

    def read_all(self) -> list[dict[str, Any]]:
        lines = []
        while (line := self.read_line()) is not None:
            lines.append(line)
        return lines

    def close(self) -> None:
        self.reader.close()
        self.sock.close()
