"""Splitting a streamed request body into lines in linear time.

The old loop appended each chunk to one buffer and split the whole buffer again: an 8 MB line sent
in 1 KB chunks cost 8.9 s of CPU. `LineDecoder` scans each byte once and joins a line's parts only
when its newline arrives (the interface of httpx's `LineDecoder`: `decode(data)`, then `flush()`).
"""

from __future__ import annotations

from service.errors import LimitExceededError


class LineDecoder:
    def __init__(self, max_line_bytes: int) -> None:
        self.max_line_bytes = max_line_bytes
        self._parts: list[bytes] = []  # the unfinished line, in pieces
        self._size = 0

    def decode(self, data: bytes) -> list[bytes]:
        """The lines that `data` completes (without their newline)."""
        lines: list[bytes] = []
        start = 0
        while (end := data.find(b"\n", start)) != -1:
            self._add(data, start, end)
            lines.append(b"".join(self._parts))
            self._parts, self._size = [], 0
            start = end + 1
        self._add(data, start, len(data))
        return lines

    def flush(self) -> list[bytes]:
        """The last line, if the body did not end with a newline."""
        rest = b"".join(self._parts)
        self._parts, self._size = [], 0
        return [rest] if rest else []

    def _add(self, data: bytes, start: int, end: int) -> None:
        if end > start:
            self._size += end - start
            if self._size > self.max_line_bytes:
                raise LimitExceededError("bytes per NDJSON line", self.max_line_bytes)
            self._parts.append(data[start:end])
