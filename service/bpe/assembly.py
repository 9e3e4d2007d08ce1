"""Assembling a model's streamed output: stop strings, priming with the prompt, special tokens.

`Assembler` has the shape of httpx's incremental decoders (`decode(ids) -> str`, `flush() -> str`)
and wraps the UTF-8 `StreamDecoder`. On top of whole characters it

- drops the ids of special tokens when asked (added tokens that are not special stay, as in the
  family's reference decode);
- is primed with the prompt's last ids (`prime`): their text is never emitted, but a character
  they leave unfinished is completed by the first generated ids, and a family's rule for the
  start of a sequence (SentencePiece drops the first leading space) applies to the prompt, not to
  the output;
- ends at the first stop string: text leaves as soon as it cannot be the start of a stop string,
  holding back only the longest suffix that is a proper prefix of one. `StopMatcher` is an
  Aho-Corasick automaton, so each character is looked at a bounded number of times; while no
  prefix is pending, a regex (C speed) skips to the next character that can begin a stop string.

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
from dataclasses import dataclass

from service.bpe.stream import StreamDecoder
from service.bpe.tokenizer import Tokenizer
from service.errors import StreamOptionError, StreamStateError, UnknownIdError

_STATE_PREFIX = "as1."
Lead = Callable[[bytes], bytes]  # what the start of a sequence makes of its first bytes


class StopMatcher:
    """Aho-Corasick over the stop strings. A node is the longest suffix of the text read so far
    that is a prefix of some stop string; `depth[node]` is its length."""

    def __init__(self, stops: Sequence[str]) -> None:
        self.stops = list(dict.fromkeys(stops))
        goto: list[dict[str, int]] = [{}]
        depth, own = [0], [-1]
        for index, stop in enumerate(self.stops):
            node = 0
            for char in stop:
                nxt = goto[node].get(char)
                if nxt is None:
                    nxt = goto[node][char] = len(goto)
                    goto.append({})
                    depth.append(depth[node] + 1)
                    own.append(-1)
                node = nxt
            own[node] = index
        fail, out = [0] * len(goto), list(own)
        queue = list(goto[0].values())
        for node in queue:  # breadth first: a node's failure link is shallower, so already done
            for char, child in goto[node].items():
                link = fail[node]
                while link and char not in goto[link]:
                    link = fail[link]
                fail[child] = goto[link].get(char, 0) if node else 0
                if out[child] < 0:
                    out[child] = out[fail[child]]  # the longest stop string ending here
                queue.append(child)
        self._goto, self._fail, self._out, self.depth = goto, fail, out, depth
        firsts = sorted({stop[0] for stop in self.stops})
        self._first = re.compile("[" + "".join(map(re.escape, firsts)) + "]")

    def scan(self, text: str, node: int) -> tuple[int, int, int]:
        """Read `text` from `node`: (node, end, stop index) at the first stop string that ends
        in it (end: the index in `text` just after it), else (node after text, -1, -1)."""
        goto, fail, out, first = self._goto, self._fail, self._out, self._first
        i, n = 0, len(text)
        while i < n:
            if not node:
                found = first.search(text, i)
                if found is None:
                    return 0, -1, -1
                i = found.start()
            char = text[i]
            while node and char not in goto[node]:
                node = fail[node]
            node = goto[node].get(char, 0)
            i += 1
            if out[node] >= 0:
                return node, i, out[node]
        return node, -1, -1

    def walk(self, text: str) -> int:
        """The node after reading `text` from the start, or -1 if a stop string ends in it."""
        node, end, _ = self.scan(text, 0)
        return -1 if end >= 0 else node


class Assembler:
    def __init__(
        self,
        decoder: StreamDecoder,
        to_bytes: Callable[[Sequence[int]], bytes],
        *,
        stops: Sequence[str] = (),
        include_stop: bool = False,
        skip_ids: Collection[int] = frozenset(),
        lead: Lead | None = None,
        started: bool = False,
    ) -> None:
        """`decoder` holds the unfinished character; `to_bytes` gives the ids' bytes; `skip_ids`
        are dropped; `lead` applies to the first bytes of the sequence (unless `started`)."""
        self.decoder = decoder
        self._to_bytes = to_bytes
        self.matcher = StopMatcher(stops) if stops else None
        self.include_stop = include_stop
        self._skip = frozenset(skip_ids)
        self._lead = lead
        self._started = started
        self.held = ""  # text that may begin a stop string
        self._node = 0
        self.stopped: str | None = None  # the stop string that ended the stream

    def prime(self, prompt_ids: Sequence[int]) -> None:
        """Feed the prompt's last ids: their whole characters are dropped, not emitted."""
        self._bytes_text(prompt_ids)

    def decode(self, ids: Sequence[int]) -> str:
        if self.stopped is not None:
            return ""
        return self._emit(self._bytes_text(ids))

    def flush(self) -> str:
        """The end of the stream: held bytes are decoded (or replaced), held text emitted."""
        if self.stopped is not None:
            return ""
        text = self._emit(self.decoder.flush())
        rest, self.held, self._node = self.held, "", 0
        return text + rest

    def _bytes_text(self, ids: Sequence[int]) -> str:
        if self._skip:
            ids = [i for i in ids if i not in self._skip]
        data = self._to_bytes(ids)
        if not self._started and data:
            self._started = True
            if self._lead is not None:
                data = self._lead(data)
        return self.decoder.feed(data)

    def _emit(self, text: str) -> str:
        matcher = self.matcher
        if matcher is None or not text:
            return text
        node, end, index = matcher.scan(text, self._node)
        window = self.held + text
        if end < 0:
            keep = matcher.depth[node]
            self._node, self.held = node, window[len(window) - keep :]
            return window[: len(window) - keep]
        stop = matcher.stops[index]
        cut = len(self.held) + end
        self.stopped, self.held, self._node = stop, "", 0
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
            flags = "p" if self._started else "n"
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
        lead: Lead | None = None,
    ) -> Assembler:
        """Continue a stream from `state` (None: start one). A state made with stop strings needs
        the same `stop` and `include_stop_str_in_output` on every step."""
        options = {"stops": stops, "include_stop": include_stop, "skip_ids": skip_ids,
                   "lead": lead}  # fmt: skip
        if not state or not state.startswith(_STATE_PREFIX):
            if state and stops:
                raise StreamOptionError("stop", "the stream was started without stop strings")
            decoder = StreamDecoder.resume(to_bytes, state, errors)
            started = decoder.offset > 0 or bool(decoder.pending)
            return cls(decoder, to_bytes, **options, started=started)  # type: ignore[arg-type]
        if not stops:
            raise StreamOptionError("stop", "the stream was started with stop strings; send them")
        offset, pending, held, flags, digest = _unpack(state)
        if digest != _digest(list(dict.fromkeys(stops)), include_stop):
            raise StreamOptionError(
                "stop", "stop and include_stop_str_in_output must be the stream's first ones"
            )
        decoder = StreamDecoder(to_bytes, errors, pending=pending, offset=offset)
        out = cls(decoder, to_bytes, **options, started=flags != "n")  # type: ignore[arg-type]
        assert out.matcher is not None
        node = out.matcher.walk(held)
        stopped = flags[0] == "s"
        if node < 0 or out.matcher.depth[node] != len(held) or (stopped and held):
            raise _bad_state()
        out.held, out._node = held, node
        if stopped:
            index = int(flags[1:])
            if index >= len(out.matcher.stops):
                raise _bad_state()
            out.stopped = out.matcher.stops[index]
        return out


@dataclass(frozen=True, slots=True)
class AssemblyLimits:
    max_stops: int = 16
    max_stop_chars: int = 256
    max_prompt_ids: int = 64


@dataclass(frozen=True, slots=True)
class AssemblyOptions:
    """A stream's options, as a request names them (checked by `assembler_for`)."""

    stop: Sequence[str] = ()
    include_stop_str_in_output: bool = False
    prompt_ids: Sequence[int] = ()
    skip_special_tokens: bool = False
    spaces_between_special_tokens: bool = True  # the byte-level families' reference ignores it


def assembler_for(
    tokenizer: Tokenizer,
    options: AssemblyOptions,
    limits: AssemblyLimits,
    errors: str = "replace",
    state: str | None = None,
) -> Assembler:
    """An assembler for `tokenizer` (resumed from `state` for a stateless step), primed with the
    prompt's ids when the stream starts. Options out of bounds are a `StreamOptionError`."""
    stops = list(options.stop)
    if len(stops) > limits.max_stops:
        raise StreamOptionError(
            "stop", f"at most {limits.max_stops} stop strings (got {len(stops)})"
        )
    for stop in stops:
        if not stop:
            raise StreamOptionError("stop", "a stop string cannot be empty")
        if len(stop) > limits.max_stop_chars:
            raise StreamOptionError("stop", f"a stop string has at most {limits.max_stop_chars} "
                                            f"characters (got {len(stop)})")  # fmt: skip
        if not stop.isascii() and _has_surrogate(stop):
            raise StreamOptionError("stop", "a stop string cannot hold a lone surrogate")
    prompt = list(options.prompt_ids)
    if len(prompt) > limits.max_prompt_ids:
        raise StreamOptionError("prompt_ids", f"at most the prompt's last {limits.max_prompt_ids} "
                                              f"ids (got {len(prompt)})")  # fmt: skip
    if prompt and state:
        raise StreamOptionError("prompt_ids", "the stream has started: prime it on its first step")
    skip = tokenizer.skipped_ids if options.skip_special_tokens else frozenset()
    out = Assembler.resume(tokenizer.decode_bytes, state, errors, stops=stops,
                           include_stop=options.include_stop_str_in_output, skip_ids=skip,
                           lead=tokenizer.lead)  # fmt: skip
    if prompt:
        try:
            out.prime(prompt)
        except UnknownIdError as exc:
            raise StreamOptionError("prompt_ids", str(exc)) from None
    return out


def _has_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


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
