"""Request and response bodies: strict msgspec Structs (unknown fields and wrong types refused).

Every field carries a description (and an example where one helps) for the OpenAPI document;
whole example bodies are in `examples.py`.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec
from msgspec import Meta, Struct

from service.bpe.stream.options import AssemblyOptions

SpecialList = list[str] | Literal["all"]
Ids = list[int]
ErrorsMode = Literal["strict", "replace"]

_TEXT = "one text to encode; give exactly one of `text` or `texts`"
_TEXTS = "several texts, one result each, in order; give exactly one of `text` or `texts`"
_ALLOWED = (
    'special-token literals to encode as their special ids, or "all"; default none '
    "(tiktoken's `allowed_special`)"
)
_DISALLOWED = (
    'special-token literals that are an error (422) when they appear in the text, or "all" '
    "(the default); `[]` encodes them as ordinary text (tiktoken's `disallowed_special`)"
)
_ERRORS = (
    "what to do with bytes that are not valid UTF-8: `strict` answers 422 naming them, `replace` "
    "puts U+FFFD in their place"
)
_IDS_OUT = "the token ids, in order"
_RESUME = (
    "first message only: resume a stream that a stopping server ended, from the `state` of its "
    "last line (send the same `stop` and `include_stop_str_in_output` again)"
)
_STATE = "opaque stream state: pass the previous step's `state` back, null to start"
_SPACES = (
    "transformers' option; the shipped (byte-level) families' reference decode puts no spaces "
    "around special or added tokens, so neither does this one"
)
_STOP = (
    "stop strings: the stream ends at the first one completed, which is not emitted (unless "
    "`include_stop_str_in_output`); text that may begin one is held back until it cannot"
)
_PROMPT = (
    "the prompt's last ids: never emitted, but a character they leave unfinished is completed "
    "by the first generated ids"
)


class StreamOptions(Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """The assembly options of a stream (null: not sent)."""

    stop: Annotated[list[str] | None, doc(_STOP, ["\nUser:", "</answer>"])] = None
    include_stop_str_in_output: Annotated[
        bool | None, doc("also emit the stop string that ended the stream (default false)")
    ] = None
    prompt_ids: Annotated[Ids | None, doc(_PROMPT, [9468])] = None
    skip_special_tokens: Annotated[
        bool | None, doc("drop special tokens (added tokens that are not special stay)")
    ] = None
    spaces_between_special_tokens: Annotated[bool | None, doc(_SPACES)] = None

    def sent(self) -> str | None:
        """The first option this message carries, if any."""
        for name in (
            "stop",
            "include_stop_str_in_output",
            "prompt_ids",
            "skip_special_tokens",
            "spaces_between_special_tokens",
        ):
            if getattr(self, name) is not None:
                return name
        return None

    def assembly(self) -> AssemblyOptions:
        return AssemblyOptions(
            stop=self.stop or (),
            include_stop_str_in_output=bool(self.include_stop_str_in_output),
            prompt_ids=self.prompt_ids or (),
            skip_special_tokens=bool(self.skip_special_tokens),
            spaces_between_special_tokens=self.spaces_between_special_tokens is not False,
        )


class RequestBody(Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    def size(self) -> tuple[int, int]:
        """(items, ids) the body asks to work on: checked against the batch limits as it is
        decoded, before any work (`service.api.bodies`)."""
        return 1, 0


class ResponseBody(Struct, frozen=True, omit_defaults=True, kw_only=True):
    pass


def doc(description: str, *examples: Any) -> Meta:
    """OpenAPI description (and examples) of one field."""
    return Meta(description=description, examples=list(examples) if examples else None)


class TokenizerRef(ResponseBody, frozen=True):
    """Which exact vocabulary produced a result: name, version and the file's sha256."""

    name: Annotated[str, doc("tokenizer name", "cl100k_base")]
    version: Annotated[str, doc("tokenizer version", "1")]
    sha256: Annotated[
        str,
        doc(
            "sha256 of the tokenizer file, hex",
            "55e31bb263f2e9df55cd1b3ffc5c8c962897b61e777f12340ee97ab79ecfdbaf",
        ),
    ]


_PIECES = 'each token\'s text, or `{"base64"}` where its bytes are not valid UTF-8 alone'
_OFFSETS = "each token's [start, end) in the text (code points, or UTF-16 units on request)"


class TextsRequest(RequestBody, frozen=True):
    """Exactly one of `text` or `texts`. Special tokens follow tiktoken's policy."""

    text: Annotated[str | None, doc(_TEXT, "Hello, world")] = None
    texts: Annotated[list[str] | None, doc(_TEXTS, ["Hello, world", "How are you?"])] = None
    allowed_special: Annotated[SpecialList, doc(_ALLOWED, ["<|endoftext|>"], "all")] = (
        msgspec.field(default_factory=list)
    )
    disallowed_special: Annotated[SpecialList, doc(_DISALLOWED, "all", [])] = "all"
    add_special_tokens: Annotated[
        bool,
        doc(
            "also put the model's BOS/EOS ids around each text, as its tokenizer.json's "
            "post-processor does (tokenizers imported from one; no effect on others); never "
            "implied, so counts stay those of the text alone unless asked"
        ),
    ] = False

    def size(self) -> tuple[int, int]:
        return (1 if self.texts is None else len(self.texts)), 0


class EncodeRequest(TextsRequest, frozen=True):
    """Exactly one of `text` or `texts`; optionally each token's piece and offsets."""

    pieces: Annotated[
        bool, doc('also return each token\'s text (`{"base64"}` where not valid UTF-8 alone)')
    ] = False
    offsets: Annotated[
        Literal["none", "codepoints", "utf16"],
        doc("also return each token's [start, end) in the text, in code points or UTF-16 units"),
    ] = "none"


class CountRequest(TextsRequest, frozen=True):
    """Exactly one of `text` or `texts`, as for encode; only the number of ids is returned."""


class PieceBytes(ResponseBody, frozen=True):
    """A token's bytes that are not valid UTF-8 on their own."""

    base64: Annotated[str, doc("the token's bytes, base64", "8J8=")]


class EncodeResult(ResponseBody, frozen=True):
    """The ids of one of the `texts`."""

    ids: Annotated[Ids, doc(_IDS_OUT, [9906, 11, 1917])]
    count: Annotated[int, doc("number of ids", 3)]
    pieces: Annotated[list[str | PieceBytes] | None, doc(_PIECES)] = None
    offsets: Annotated[list[tuple[int, int]] | None, doc(_OFFSETS)] = None


class EncodeResponse(ResponseBody, frozen=True):
    """`ids` and `count` for `text`; `results` (one per text, in order) for `texts`."""

    tokenizer: TokenizerRef  # described by TokenizerRef (a field description would wrap the $ref)
    ids: Annotated[Ids | None, doc("the ids of `text`", [9906, 11, 1917])] = None
    count: Annotated[int | None, doc("number of ids of `text`", 3)] = None
    results: Annotated[list[EncodeResult] | None, doc("one result per entry of `texts`")] = None
    pieces: Annotated[list[str | PieceBytes] | None, doc(_PIECES)] = None
    offsets: Annotated[list[tuple[int, int]] | None, doc(_OFFSETS)] = None


class CountResponse(ResponseBody, frozen=True):
    """`count` for `text`; `counts` (one per text, in order) and their `total` for `texts`."""

    tokenizer: TokenizerRef  # described by TokenizerRef (a field description would wrap the $ref)
    count: Annotated[int | None, doc("number of ids of `text`", 3)] = None
    counts: Annotated[list[int] | None, doc("number of ids of each of `texts`", [3, 4])] = None
    total: Annotated[int | None, doc("sum of `counts`", 7)] = None


class DecodeRequest(RequestBody, frozen=True):
    """Exactly one of `ids` or `batch`; `output: "base64"` returns the raw bytes instead of text."""

    ids: Annotated[
        Ids | None, doc("ids to decode; give exactly one of `ids` or `batch`", [9906, 11, 1917])
    ] = None
    batch: Annotated[
        list[Ids] | None,
        doc(
            "several id lists, one result each; give exactly one of `ids` or `batch`",
            [[9906, 11, 1917], [4438, 527, 499, 30]],
        ),
    ] = None
    errors: Annotated[ErrorsMode, doc(_ERRORS + " (ignored for `base64`)")] = "strict"
    output: Annotated[
        Literal["text", "base64"], doc("`text` (UTF-8 decoded) or `base64` (the raw bytes, base64)")
    ] = "text"
    skip_special_tokens: Annotated[
        bool, doc("drop the ids of special tokens (added tokens that are not special stay)")
    ] = False
    spaces_between_special_tokens: Annotated[bool, doc(_SPACES)] = True

    def size(self) -> tuple[int, int]:
        lists = [*(self.batch or []), *([self.ids] if self.ids is not None else [])]
        return max(len(lists), 1), sum(map(len, lists))


class DecodeResult(ResponseBody, frozen=True):
    """One decoded entry of `batch`: `text`, or `base64` with `output: "base64"`."""

    text: Annotated[str | None, doc("the decoded text", "Hello, world")] = None
    base64: Annotated[bytes | None, doc("the raw bytes, base64", "SGVsbG8sIHdvcmxk")] = None


class DecodeResponse(ResponseBody, frozen=True):
    """`text` (or `base64`) for `ids`; `results` (one per list, in order) for `batch`."""

    tokenizer: TokenizerRef  # described by TokenizerRef (a field description would wrap the $ref)
    text: Annotated[str | None, doc("the decoded text of `ids`", "Hello, world")] = None
    base64: Annotated[bytes | None, doc("the raw bytes of `ids`, base64", "SGVsbG8sIHdvcmxk")] = (
        None
    )
    results: Annotated[list[DecodeResult] | None, doc("one result per entry of `batch`")] = None


class DecodeStepRequest(RequestBody, StreamOptions, frozen=True):
    """One step of a stateless stream: pass back the previous step's `state` (null to start).
    `stop` and `include_stop_str_in_output` go with every step (the state holds their digest);
    `prompt_ids` only with the first."""

    ids: Annotated[Ids, doc("the ids generated since the last step", [9468])] = msgspec.field(
        default_factory=list
    )
    state: Annotated[str | None, doc(_STATE, "u8.0.8J8=")] = None
    final: Annotated[bool, doc("last step: flush the held-back bytes")] = False
    errors: Annotated[ErrorsMode, doc(_ERRORS)] = "replace"

    def size(self) -> tuple[int, int]:
        return 1, len(self.ids) + len(self.prompt_ids or ())


class DecodeStepResponse(ResponseBody, frozen=True):
    """The text that became whole with this step, and the state for the next one."""

    text: Annotated[str, doc("text completed by this step (held-back bytes excluded)", "")]
    state: Annotated[str, doc("pass this back with the next step", "u8.0.8J8=")]
    tokenizer: TokenizerRef  # described by TokenizerRef (a field description would wrap the $ref)
    stopped: Annotated[bool, doc("true once a stop string has ended the stream")] = False
    stop: Annotated[str | None, doc("the stop string that ended the stream", "</answer>")] = None


class StreamChunkRequest(RequestBody, StreamOptions, frozen=True):
    """One NDJSON line of `decode/stream`, or one WebSocket message of `decode/ws`; the options
    go on the first one only."""

    ids: Annotated[Ids, doc("the ids generated since the last line", [9468])] = msgspec.field(
        default_factory=list
    )
    final: Annotated[bool, doc("WebSocket only: flush, answer with `done` and close")] = False
    state: Annotated[str | None, doc(_RESUME, "u8.0.8J8=")] = None

    def sent(self) -> str | None:
        """The first option (or the `state`) this message carries, if any."""
        return "state" if self.state is not None else super().sent()


class StreamUsage(ResponseBody, frozen=True):
    """A stream's metering, on its last line: ids received, and their cost as output tokens
    when a model was named (decimal string)."""

    output_tokens: Annotated[int, doc("ids received over the stream", 42)]
    model: Annotated[str | None, doc("the model named with ?model=", "gpt-4o")] = None
    cost: Annotated[str | None, doc("their cost as output tokens (decimal string)", "0.00042")] = (
        None
    )
    currency: Annotated[str | None, doc("currency of `cost`", "USD")] = None
    price_file: Annotated[str | None, doc("the price file used, name@version", "openai@1")] = None


class StreamTextResponse(ResponseBody, frozen=True):
    """One NDJSON line (or WebSocket message) of decoded text."""

    text: Annotated[str, doc("text completed by this line", "Hello")]
    done: Annotated[bool, doc("true on the last line, after the held-back bytes are flushed")] = (
        False
    )
    reason: Annotated[str | None, doc("why a stream ended early (the server is shutting down)")] = (
        None
    )
    state: Annotated[
        str | None,
        doc(
            "with `reason`: the stream's state, held bytes included (not flushed); send it as the "
            "first message's `state` of a new stream, or to `decode/step`, to resume exactly",
            "u8.0.8J8=",
        ),
    ] = None
    stopped: Annotated[bool, doc("true on the last line when a stop string ended the stream")] = (
        False
    )
    stop: Annotated[str | None, doc("the stop string that ended the stream", "</answer>")] = None
    count: Annotated[int | None, doc("ids received so far (with ?usage=true or ?model=)")] = None
    usage: Annotated[
        StreamUsage | None,
        doc("on the last line, with ?usage=true or ?model=: the stream's metering"),
    ] = None
