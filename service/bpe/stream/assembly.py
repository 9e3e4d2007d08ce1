"""Assembling a model's streamed output: stop strings, priming with the prompt, special tokens.

`Assembler` has the shape of httpx's incremental decoders (`decode(ids) -> str`, `flush() -> str`)
and wraps the UTF-8 `StreamDecoder`. On top of whole characters it

- drops the ids of special tokens when asked (added tokens that are not special stay, as in the
  family's reference decode);
- is primed with the prompt's last ids (`prime`): their text is never emitted, but a character
  they leave unfinished is completed by the first generated ids, and a decoder's rule for the
  start of a sequence (SentencePiece-style decoders drop the first token's leading space: the
  tokenizer's `text_step`) applies to the prompt, not to the output;
- ends at the first stop string: text leaves as soon as it cannot be the start of a stop string,
  holding back only the longest suffix that is a proper prefix of one (`StopMatcher`, in
  stops.py). Each chunk's text is searched together with the held text only, which is shorter
  than the longest stop string, so the work is linear in the text.

The stream where several stop strings could end stops at the earliest end, the longest string
among those ending there. For stateless serving, `state()` packs the held bytes and text and a
digest of the stop options; `Assembler.resume` refuses a state that this class could not have
produced for the same options.
"""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Callable, Collection, Sequence

from service.bpe.stream.stops import LONG, StopMatcher
from service.bpe.stream.utf8 import StreamDecoder, TextStep
from service.errors import StreamOptionError, StreamStateError

_STATE_PREFIX = "as1."


class Assembler:
    def __init__(
        self,
        decoder: StreamDecoder,
        to_bytes: Callable[[Sequence[int]], bytes],
        *,
        stops: Sequence[str] = (),
        include_stop: bool = False,
        skip_ids: Collection[int] = frozenset(),
        kept_bytes: Callable[[Sequence[int]], bytes] | None = None,
        started: bool = False,
    ) -> None:
        """`decoder` holds the unfinished character; `to_bytes` gives the ids' bytes; `skip_ids`
        are dropped (`kept_bytes`, if given, is `to_bytes` leaving their bytes out, cheaper than
        filtering the ids); `started`: the stream's first ids are already fed (a resumed one)."""
        self.decoder = decoder
        self._feed = decoder.feed
        self._to_bytes = to_bytes
        self.matcher = StopMatcher(stops) if stops else None
        self.include_stop = include_stop
        self._skip = frozenset(skip_ids)
        self._kept_bytes = kept_bytes or (self._filtered_bytes if self._skip else to_bytes)
        self._started = started
        self.held = ""  # text that may begin a stop string
        self.stopped: str | None = None  # the stop string that ended the stream
        self.decode: Callable[[Sequence[int]], str] = self._decode
        """The text that is whole and cannot begin a stop string."""
        # a format v2 decoder's text steps need the first token's bytes (`first_of`)
        self._first_of = decoder.first_of if decoder.steps_text else None
        if self.matcher is None and not self._skip:  # what the common cases use, bound once
            self.decode = decoder.decode
        elif self._first_of is None:
            self.decode = self._bound_decode()

    def prime(self, prompt_ids: Sequence[int]) -> None:
        """Feed the prompt's last ids: their whole characters are dropped, not emitted."""
        ids = [i for i in prompt_ids if i not in self._skip]
        first = self._first_of(ids) if self._first_of else None
        data = self._to_bytes(ids)
        self._feed(data if self._started or not data else self._start(data), first=first)

    def _decode(self, ids: Sequence[int]) -> str:
        """`decode` until the first bytes have passed the family's start rule."""
        if self.stopped is not None:
            return ""
        skip = self._skip
        if skip and not skip.isdisjoint(ids):
            ids = [i for i in ids if i not in skip]
        first = self._first_of(ids) if self._first_of else None
        data = self._to_bytes(ids)
        if not self._started and data:
            data = self._start(data)
        text = self._feed(data, first=first)
        if self.matcher is None or not (self.held or self.matcher.gate(text)):
            return text  # nothing held, and nothing here can begin a stop string
        return self._emit(text)

    def _bound_decode(self) -> Callable[[Sequence[int]], str]:
        """`decode` once started: one call per generated id is the common case, so what it uses
        is bound once, and a chunk with nothing held costs one C search (the matcher's gate)."""
        kept_bytes, feed, take = self._kept_bytes, self._feed, self._take
        if self.matcher is None:
            return lambda ids: feed(kept_bytes(ids))
        search, find = self.matcher.regex.search, self.matcher.find  # `gate`, inlined

        def decode(ids: Sequence[int]) -> str:
            text = feed(kept_bytes(ids))
            held = self.held
            if held:  # searched together (the held text holds no stop string)
                text, self.held = held + text, ""
            found = search(text) if len(text) <= LONG else True
            return text if found is None else take(text, find(text, found))

        return decode

    def _filtered_bytes(self, ids: Sequence[int]) -> bytes:
        """`to_bytes` of the ids not in `skip_ids` (without a `kept_bytes`)."""
        skip = self._skip
        return self._to_bytes(ids if skip.isdisjoint(ids) else [i for i in ids if i not in skip])

    def _end(self, stop: str) -> None:
        self.stopped, self.held = stop, ""
        self.decode = _nothing

    def flush(self) -> str:
        """The end of the stream: held bytes are decoded (or replaced), held text emitted."""
        if self.stopped is not None:
            return ""
        text = self._emit(self.decoder.flush())
        rest, self.held = self.held, ""
        return text + rest

    def _start(self, data: bytes) -> bytes:
        self._started = True
        if self._first_of is None:
            self.decode = self._bound_decode()
        return data

    def _emit(self, text: str) -> str:
        """The held text and `text` are searched together (the held text holds no stop string)."""
        if self.matcher is None or not text:
            return text
        window = self.held + text
        return self._take(window, self.matcher.find(window))

    def _take(self, window: str, found: tuple[int, int]) -> str:
        """What may leave of `window` leaves, a suffix that may begin a stop string is held."""
        cut, index = found
        if index < 0:
            self.held = window[cut:]
            return window[:cut]
        stop = self.matcher.stops[index]  # type: ignore[union-attr]
        self._end(stop)
        return window[: cut if self.include_stop else cut - len(stop)]

    # --- stateless streams ---------------------------------------------------------------------

    def state(self) -> str:
        """An opaque string from which `resume` continues, given the same stop options."""
        if self.matcher is None:
            return self.decoder.state()
        pending = _b64(self.decoder.pending)
        held = _b64(self.held.encode("utf-8"))
        if self.stopped is not None:
            flags = f"s{self.matcher.stops.index(self.stopped)}"
        else:
            fed = self._started or self.decoder.offset > 0 or bool(self.decoder.pending)
            flags = "p" if fed else "n"
        digest = _digest(self.matcher.stops, self.include_stop)
        return f"{_STATE_PREFIX}{self.decoder.offset}.{pending}.{held}.{flags}.{digest}"

    @classmethod
    def resume(
        cls,
        to_bytes: Callable[[Sequence[int]], bytes],
        state: str | None,
        errors: str = "replace",
        *,
        stops: Sequence[str] = (),
        include_stop: bool = False,
        skip_ids: Collection[int] = frozenset(),
        kept_bytes: Callable[[Sequence[int]], bytes] | None = None,
        text_step: TextStep | None = None,
    ) -> Assembler:
        """Continue a stream from `state` (None: start one). A state made with stop strings needs
        the same `stop` and `include_stop_str_in_output` on every step. `text_step`: a format v2
        decoder's text steps (`Tokenizer.text_step`)."""
        options = {
            "stops": stops,
            "include_stop": include_stop,
            "skip_ids": skip_ids,
            "kept_bytes": kept_bytes,
        }
        if not state or not state.startswith(_STATE_PREFIX):
            if state and stops:
                raise StreamOptionError("stop", "the stream was started without stop strings")
            decoder = StreamDecoder.resume(to_bytes, state, errors, text_step)
            started = decoder.offset > 0 or bool(decoder.pending)
            return cls(decoder, to_bytes, **options, started=started)  # type: ignore[arg-type]
        if not stops:
            raise StreamOptionError("stop", "the stream was started with stop strings; send them")
        offset, pending, held, flags, digest = _unpack(state)
        if digest != _digest(list(dict.fromkeys(stops)), include_stop):
            raise StreamOptionError(
                "stop", "stop and include_stop_str_in_output must be the stream's first ones"
            )
        decoder = StreamDecoder(
            to_bytes, errors, pending=pending, offset=offset, text_step=text_step
        )
        out = cls(decoder, to_bytes, **options, started=flags != "n")  # type: ignore[arg-type]
        assert out.matcher is not None
        node = out.matcher.walk(held)
        stopped = flags[0] == "s"
        if node < 0 or out.matcher.depth[node] != len(held) or (stopped and held):
            raise _bad_state()
        out.held = held
        if stopped:
            index = int(flags[1:])
            if index >= len(out.matcher.stops):
                raise _bad_state()
            out._end(out.matcher.stops[index])
        return out


def _nothing(ids: Sequence[int]) -> str:
    return ""


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode("ascii")


def _digest(stops: Sequence[str], include_stop: bool) -> str:
    text = "\x00".join([str(int(include_stop)), *stops])
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=6).hexdigest()


def _bad_state() -> StreamStateError:
    return StreamStateError(
        "state is not one this service returned; pass the `state` of the previous step "
        "unchanged, or null to start a stream"
    )


def _unpack(state: str) -> tuple[int, bytes, str, str, str]:
    try:
        offset_text, pending_text, held_text, flags, digest = state[len(_STATE_PREFIX) :].split(".")
        if not (offset_text.isascii() and offset_text.isdigit()) or len(offset_text) > 18:
            raise ValueError
        if not re.fullmatch(r"[pn]|s[0-9]{1,3}", flags) or not re.fullmatch(
            r"[0-9a-f]{12}", digest
        ):
            raise ValueError
        pending = base64.b64decode(pending_text.encode("ascii"), altchars=b"-_", validate=True)
        held = base64.b64decode(held_text.encode("ascii"), altchars=b"-_", validate=True)
        StreamDecoder.resume(lambda ids: b"", f"u8.{offset_text}.{pending_text}")  # checks both
        return int(offset_text), pending, held.decode("utf-8"), flags, digest
    except (ValueError, UnicodeError, StreamStateError):
        raise _bad_state() from None
