"""Streaming decode: ids arrive in chunks, text leaves without ever showing half a character.

`StreamDecoder` has the shape of httpx's incremental decoders: `decode(ids)` returns the text that
is complete so far and holds back the bytes of an unfinished UTF-8 character; `flush()` ends the
stream and returns what is left. The standard library's incremental UTF-8 decoder does the byte
work, so for every way of cutting the ids into chunks the joined output equals the one-shot decode
with the same `errors` mode.

A format v2 tokenizer's decoder text steps (`▁` to space, the leading space dropped) are applied
to each piece of text as it leaves: `text_step(text, first)` gets `first`, the bytes of the
stream's first token when this step's ids begin the stream, `b""` while nothing has left yet
(the output still begins here), None later. Byte-fallback pieces need nothing more: their bytes
wait in the UTF-8 decoder until their character is whole.

For stateless serving, `state()` packs the held-back bytes (at most three) and the byte offset into
an opaque string, and `StreamDecoder.resume()` continues from it on any replica.
"""

from __future__ import annotations

import base64
import codecs
from collections.abc import Callable, Sequence

from service.errors import StreamStateError, UndecodableBytesError

_STATE_PREFIX = "u8."
TextStep = Callable[[str, bytes | None], str]


class StreamDecoder:
    def __init__(
        self,
        to_bytes: Callable[[Sequence[int]], bytes],
        errors: str = "replace",
        *,
        pending: bytes = b"",
        offset: int = 0,
        text_step: TextStep | None = None,
    ) -> None:
        self._to_bytes = to_bytes
        self._text_step = text_step
        self._utf8 = codecs.getincrementaldecoder("utf-8")(errors)
        self._utf8.setstate((pending, 0))
        self._offset = offset  # bytes fed before `pending`: error offsets count from the start

    def decode(self, ids: Sequence[int]) -> str:
        first = self._first(ids)
        return self._stepped(self._feed(self._to_bytes(ids), final=False), first)

    def flush(self) -> str:
        return self._stepped(self._feed(b"", final=True), self._first(()))

    def _first(self, ids: Sequence[int]) -> bytes | None:
        if self._text_step is None or self._offset > 0:
            return None
        return self._to_bytes(ids[:1]) if ids and not self.pending else b""

    def _stepped(self, text: str, first: bytes | None) -> str:
        return text if self._text_step is None or not text else self._text_step(text, first)

    @property
    def pending(self) -> bytes:
        """The held-back bytes of an unfinished character."""
        return bytes(self._utf8.getstate()[0])

    def state(self) -> str:
        """An opaque string from which `resume` continues this stream."""
        packed = base64.urlsafe_b64encode(self.pending).decode("ascii")
        return f"{_STATE_PREFIX}{self._offset}.{packed}"

    @classmethod
    def resume(
        cls,
        to_bytes: Callable[[Sequence[int]], bytes],
        state: str | None,
        errors: str = "replace",
        text_step: TextStep | None = None,
    ) -> StreamDecoder:
        if not state:
            return cls(to_bytes, errors, text_step=text_step)
        pending, offset = _unpack(state)
        return cls(to_bytes, errors, pending=pending, offset=offset, text_step=text_step)

    def _feed(self, data: bytes, *, final: bool) -> str:
        held = len(self.pending)
        try:
            text: str = self._utf8.decode(data, final)
        except UnicodeDecodeError as exc:
            bad = exc.object[exc.start : exc.end]
            raise UndecodableBytesError(self._offset + exc.start, bytes(bad)) from None
        self._offset += held + len(data) - len(self.pending)
        return text


def _unpack(state: str) -> tuple[bytes, int]:
    """Check a state string: it must be one `state()` could have produced."""
    try:
        prefix, rest = state[: len(_STATE_PREFIX)], state[len(_STATE_PREFIX) :]
        offset_text, packed = rest.split(".")
        if prefix != _STATE_PREFIX or not (offset_text.isascii() and offset_text.isdigit()):
            raise ValueError
        if len(offset_text) > 18 or len(packed) > 8:
            raise ValueError
        pending = base64.b64decode(packed.encode("ascii"), altchars=b"-_", validate=True)
        probe = codecs.getincrementaldecoder("utf-8")("strict")
        if probe.decode(pending) or probe.getstate()[0] != pending or len(pending) > 3:
            raise ValueError
    except (ValueError, UnicodeError):
        raise StreamStateError(
            "state is not one this service returned; pass the `state` of the previous step "
            "unchanged, or null to start a stream"
        ) from None
    return pending, int(offset_text)
