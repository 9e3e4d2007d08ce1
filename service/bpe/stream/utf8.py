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
an opaque string, and `StreamDecoder.resume()` continues from it on any replica. `resume` takes
only a string `state()` could have written, byte for byte (canonical decimal and base64); the
offset saturates at `MAX_OFFSET`, so every state it returns is one it takes back.
"""

from __future__ import annotations

import base64
import codecs
from collections.abc import Callable, Sequence

from service.errors import StreamStateError, UndecodableBytesError

_STATE_PREFIX = "u8."
MAX_OFFSET = 2**53 - 1  # bytes before the held-back ones a state records (then it saturates)
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
        return self.feed(self._to_bytes(ids), first=self.first_of(ids))

    def flush(self) -> str:
        return self.feed(b"", final=True, first=self.first_of(()))

    def first_of(self, ids: Sequence[int]) -> bytes | None:
        """What `feed` hands the text steps with the bytes of `ids`: the first token's bytes when
        they begin the stream, `b""` while nothing has left yet, None later (or no text steps)."""
        if self._text_step is None or self._offset > 0:
            return None
        return self._to_bytes(ids[:1]) if ids and not self.pending else b""

    @property
    def steps_text(self) -> bool:
        """Whether a decoder's text steps (format v2) apply to what leaves."""
        return self._text_step is not None

    @property
    def offset(self) -> int:
        """Bytes decoded so far, not counting the held-back ones."""
        return self._offset

    @property
    def pending(self) -> bytes:
        """The held-back bytes of an unfinished character."""
        return bytes(self._utf8.getstate()[0])

    def state(self) -> str:
        """An opaque string from which `resume` continues this stream."""
        return _pack(self.pending, min(self._offset, MAX_OFFSET))

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

    def feed(self, data: bytes, final: bool = False, first: bytes | None = None) -> str:
        """Like `decode`, for bytes already looked up (the assembler applies its rules first);
        `first` is `first_of` the ids they came from."""
        held = len(self.pending)
        try:
            text: str = self._utf8.decode(data, final)
        except UnicodeDecodeError as exc:
            bad = exc.object[exc.start : exc.end]
            raise UndecodableBytesError(self._offset + exc.start, bytes(bad)) from None
        self._offset += held + len(data) - len(self.pending)
        return text if self._text_step is None or not text else self._text_step(text, first)


def _pack(pending: bytes, offset: int) -> str:
    return f"{_STATE_PREFIX}{offset}.{base64.urlsafe_b64encode(pending).decode('ascii')}"


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
        offset = int(offset_text)
        if offset > MAX_OFFSET or _pack(pending, offset) != state:  # e.g. "007", "8J9="
            raise ValueError
    except (ValueError, UnicodeError):
        raise StreamStateError(
            "state is not one this service returned; pass the `state` of the previous step "
            "unchanged, or null to start a stream"
        ) from None
    return pending, offset
