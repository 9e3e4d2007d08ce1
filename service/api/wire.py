"""Request and response bodies: strict msgspec Structs (unknown fields and wrong types refused).

Every field carries a description (and an example where one helps) for the OpenAPI document;
whole example bodies are in `examples.py`.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec
from msgspec import Meta, Struct

SpecialList = list[str] | Literal["all"]
Ids = list[int]
ErrorsMode = Literal["strict", "replace"]

_REF = "a tokenizer reference `name` or `name@version`"
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
_STATE = "opaque stream state: pass the previous step's `state` back, null to start"


class RequestBody(Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    def size(self) -> tuple[int, int]:
        """(items, ids) the body asks to work on: checked against the batch limits as it is
        decoded, before any work (`service.api.bodies`)."""
        return 1, 0


class _Response(Struct, frozen=True, omit_defaults=True, kw_only=True):
    pass


def doc(description: str, *examples: Any) -> Meta:
    """OpenAPI description (and examples) of one field."""
    return Meta(description=description, examples=list(examples) if examples else None)


class TokenizerRef(_Response, frozen=True):
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


class PieceBytes(_Response, frozen=True):
    """A token's bytes that are not valid UTF-8 on their own."""

    base64: Annotated[str, doc("the token's bytes, base64", "8J8=")]


class EncodeResult(_Response, frozen=True):
    """The ids of one of the `texts`."""

    ids: Annotated[Ids, doc(_IDS_OUT, [9906, 11, 1917])]
    count: Annotated[int, doc("number of ids", 3)]
    pieces: Annotated[list[str | PieceBytes] | None, doc(_PIECES)] = None
    offsets: Annotated[list[tuple[int, int]] | None, doc(_OFFSETS)] = None


class EncodeResponse(_Response, frozen=True):
    """`ids` and `count` for `text`; `results` (one per text, in order) for `texts`."""

    tokenizer: TokenizerRef  # described by TokenizerRef (a field description would wrap the $ref)
    ids: Annotated[Ids | None, doc("the ids of `text`", [9906, 11, 1917])] = None
    count: Annotated[int | None, doc("number of ids of `text`", 3)] = None
    results: Annotated[list[EncodeResult] | None, doc("one result per entry of `texts`")] = None
    pieces: Annotated[list[str | PieceBytes] | None, doc(_PIECES)] = None
    offsets: Annotated[list[tuple[int, int]] | None, doc(_OFFSETS)] = None


class CountResponse(_Response, frozen=True):
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
    skip_special_tokens: Annotated[bool, doc("drop the ids of special tokens before decoding")] = (
        False
    )

    def size(self) -> tuple[int, int]:
        batch = self.batch if self.batch is not None else [self.ids or []]
        return len(batch), sum(map(len, batch))


class DecodeResult(_Response, frozen=True):
    """One decoded entry of `batch`: `text`, or `base64` with `output: "base64"`."""

    text: Annotated[str | None, doc("the decoded text", "Hello, world")] = None
    base64: Annotated[bytes | None, doc("the raw bytes, base64", "SGVsbG8sIHdvcmxk")] = None


class DecodeResponse(_Response, frozen=True):
    """`text` (or `base64`) for `ids`; `results` (one per list, in order) for `batch`."""

    tokenizer: TokenizerRef  # described by TokenizerRef (a field description would wrap the $ref)
    text: Annotated[str | None, doc("the decoded text of `ids`", "Hello, world")] = None
    base64: Annotated[bytes | None, doc("the raw bytes of `ids`, base64", "SGVsbG8sIHdvcmxk")] = (
        None
    )
    results: Annotated[list[DecodeResult] | None, doc("one result per entry of `batch`")] = None


class DecodeStepRequest(RequestBody, frozen=True):
    """One step of a stateless stream: pass back the previous step's `state` (null to start)."""

    ids: Annotated[Ids, doc("the ids generated since the last step", [9468])] = msgspec.field(
        default_factory=list
    )
    state: Annotated[str | None, doc(_STATE, "u8.0.8J8=")] = None
    final: Annotated[bool, doc("last step: flush the held-back bytes")] = False
    errors: Annotated[ErrorsMode, doc(_ERRORS)] = "replace"

    def size(self) -> tuple[int, int]:
        return 1, len(self.ids)


class DecodeStepResponse(_Response, frozen=True):
    """The text that became whole with this step, and the state for the next one."""

    text: Annotated[str, doc("text completed by this step (held-back bytes excluded)", "")]
    state: Annotated[str, doc("pass this back with the next step", "u8.0.8J8=")]
    tokenizer: TokenizerRef  # described by TokenizerRef (a field description would wrap the $ref)


class StreamChunkRequest(RequestBody, frozen=True):
    """One NDJSON line of `decode/stream`, or one WebSocket message of `decode/ws`."""

    ids: Annotated[Ids, doc("the ids generated since the last line", [9468])] = msgspec.field(
        default_factory=list
    )
    final: Annotated[bool, doc("WebSocket only: flush, answer with `done` and close")] = False


class StreamUsage(_Response, frozen=True):
    """A stream's metering, on its last line: ids received, and their cost as output tokens
    when a model was named (decimal string)."""

    output_tokens: Annotated[int, doc("ids received over the stream", 42)]
    model: Annotated[str | None, doc("the model named with ?model=", "gpt-4o")] = None
    cost: Annotated[str | None, doc("their cost as output tokens (decimal string)", "0.00042")] = (
        None
    )
    currency: Annotated[str | None, doc("currency of `cost`", "USD")] = None
    price_file: Annotated[str | None, doc("the price file used, name@version", "openai@1")] = None


class StreamTextResponse(_Response, frozen=True):
    """One NDJSON line (or WebSocket message) of decoded text."""

    text: Annotated[str, doc("text completed by this line", "Hello")]
    done: Annotated[bool, doc("true on the last line, after the held-back bytes are flushed")] = (
        False
    )
    reason: Annotated[str | None, doc("why a stream ended early (the server is shutting down)")] = (
        None
    )
    count: Annotated[int | None, doc("ids received so far (with ?usage=true or ?model=)")] = None
    usage: Annotated[
        StreamUsage | None,
        doc("on the last line, with ?usage=true or ?model=: the stream's metering"),
    ] = None


class TokenizerInfoResponse(_Response, frozen=True):
    """A served tokenizer: identity, rule, special tokens and provenance."""

    name: Annotated[str, doc("tokenizer name", "cl100k_base")]
    version: Annotated[str, doc("version of this name", "1")]
    ref: Annotated[str, doc("the `name@version` reference of exactly this file", "cl100k_base@1")]
    default: Annotated[bool, doc("whether plain `name` resolves to this version")]
    sha256: Annotated[str, doc("sha256 of the tokenizer file, hex")]
    rule: Annotated[
        Literal["pairs", "ranks"],
        doc(
            "merge rule: `ranks` (tiktoken style, by the merged token's rank) or `pairs` "
            "(Hugging Face style, by the pair's merge priority)"
        ),
    ]
    vocab_size: Annotated[
        int, Meta(description="defined ids, special tokens included", examples=[100277])
    ]
    special_tokens: Annotated[
        dict[str, int],
        doc(
            "special-token literal -> its id; such a literal in a text is encoded as this id only "
            "when allowed (`allowed_special`)",
            {"<|endoftext|>": 100257, "<|fim_prefix|>": 100258},
        ),
    ]
    normalization: Annotated[
        str, doc("Unicode normalization applied before encoding: `none`, `NFC` or `NFKC`", "none")
    ]
    pattern: Annotated[str | None, doc("the pre-tokenization regular expression, if any")]
    self_consistent: Annotated[
        bool, doc("whether every token's bytes encode to that token alone (always for `ranks`)")
    ]
    description: Annotated[str, doc("what this tokenizer is")]
    source: Annotated[str, doc("where the vocabulary came from")]
    license: Annotated[str, doc("the vocabulary's licence")]
    created: Annotated[str, doc("when this file was written (ISO 8601)")]


class TokenizerListResponse(_Response, frozen=True):
    """Every loaded tokenizer, every version."""

    tokenizers: Annotated[list[TokenizerInfoResponse], doc("the loaded tokenizers")]


class HealthResponse(_Response, frozen=True):
    """Liveness or readiness."""

    status: Annotated[str, doc("`ok` (liveness) or `ready` (readiness)", "ready")]
    tokenizers: Annotated[int | None, doc("number of loaded tokenizer files", 8)] = None
    failures: Annotated[list[str] | None, doc("store files that did not load, and why")] = None
    engine: Annotated[
        str | None, doc("`native`, or `python` when the native engine was not built", "native")
    ] = None
    warnings: Annotated[
        list[str] | None, doc("what an operator should know, e.g. a missing native engine")
    ] = None
    workers: Annotated[
        int | None, doc("worker processes of this `toksvc serve` (absent for a lone app)", 2)
    ] = None
    workers_loaded: Annotated[
        int | None, doc("how many of them have loaded the store and serve", 2)
    ] = None


class ProblemResponse(Struct, frozen=True, kw_only=True, omit_defaults=True):
    """RFC 9457 problem details (`application/problem+json`). Extension members name the facts;
    which ones a problem carries depends on its `type` (listed in docs/api.md)."""

    type: Annotated[str, doc("the kind of problem, a relative URI", "/problems/unknown-tokenizer")]
    title: Annotated[str, doc("short summary of the kind", "Unknown tokenizer")]
    status: Annotated[int, doc("the HTTP status", 404)]
    detail: Annotated[str, doc("what was wrong and how to fix it")]
    errors: Annotated[
        list[dict[str, Any]] | None,
        doc(
            "invalid-body and invalid parameters: one entry per error, `message`, `key` (JSON path "
            "in the body, or the parameter's name) and `source` (`body`, `query`, `path`)",
            [{"message": "Expected `array`, got `str`", "key": "$.texts", "source": "body"}],
        ),
    ] = None
    available: Annotated[
        list[str] | None,
        doc("unknown-tokenizer: the references served", ["cl100k_base@1", "gpt2@1"]),
    ] = None
    limit: Annotated[int | None, doc("limit-exceeded, too-many-streams: the limit", 1024)] = None
    token: Annotated[str | None, doc("disallowed-special-token: the literal", "<|endoftext|>")] = (
        None
    )
    tokens: Annotated[list[str] | None, doc("unknown-special-token: the literals")] = None
    position: Annotated[
        int | None,
        doc(
            "disallowed-special-token: character offset in the text; lone-surrogate: byte offset "
            "in the body"
        ),
    ] = None
    ids: Annotated[list[int] | None, doc("unknown-token-id: the ids (first 100)", [999999])] = None
    offset: Annotated[int | None, doc("undecodable-bytes: byte offset of the bad bytes")] = None
    bytes: Annotated[str | None, doc("undecodable-bytes: the bytes, hex", "f09f")] = None
    failures: Annotated[list[str] | None, doc("not-ready on /readyz: files that failed")] = None
    index: Annotated[
        int | msgspec.UnsetType | None,
        doc("invalid-message: the index of the message (null: the request as a whole)", 1),
    ] = msgspec.UNSET
    field: Annotated[str | None, doc("invalid-message: the field at fault", "role")] = None
    needed: Annotated[int | None, doc("context-overflow: input plus output tokens", 9010)] = None
    context_window: Annotated[int | None, doc("context-overflow: the model's window", 8192)] = None
    missing: Annotated[str | None, doc("price-missing: which price is missing", "output")] = None


class ReloadResponse(_Response, frozen=True):
    """The outcome of a store reload."""

    status: Annotated[str, doc("what happened", "reloaded")]
    tokenizers: Annotated[int | None, doc("number of loaded tokenizer files", 8)] = None


# --- explain and the playground's helpers (service/api/explain.py) ------------------------------

Pattern = Literal["none", "gpt2", "cl100k", "o200k", "qwen2"]
_PATTERN = (
    "pre-tokenization: `none` (the whole text is one piece) or the regex of `gpt2`, `cl100k`, "
    "`o200k` or `qwen2`"
)


class ExplainRequest(RequestBody, frozen=True):
    """A short text to explain, as ordinary text (special-token literals are plain characters)."""

    text: Annotated[str, doc("the text, at most 256 characters (413 beyond)", "cat")]


class InlineExplainRequest(ExplainRequest, frozen=True):
    """A short text and a small vocabulary given inline."""

    rule: Annotated[
        Literal["pairs", "ranks"],
        doc("`pairs`: lowest-ranked listed pair of ids; `ranks`: lowest-ranked token of bytes"),
    ]
    merges: Annotated[
        list[list[int]],
        doc(
            "merges `[left, right, new]` over the single bytes 0..255, new ids 256, 257, ... in "
            "order (at most 512; 413 beyond)",
            [[98, 99, 256], [97, 98, 257], [257, 99, 258]],
        ),
    ]
    pattern: Annotated[Pattern, doc(_PATTERN)] = "none"


class ExplainStep(_Response, frozen=True):
    """One merge: the symbols at `at` and `at + 1` become one token."""

    at: Annotated[int, doc("position of the left symbol in the piece before this step", 1)]
    left: Annotated[int, doc("id of the left symbol (-1 for a `whole` step)", 64)]
    right: Annotated[int, doc("id of the right symbol (-1 for a `whole` step)", 83)]
    id: Annotated[int, doc("the new token's id", 266)]
    rank: Annotated[int, doc("what the rule compared, lowest first (leftmost on ties)", 266)]
    bytes: Annotated[str, doc("the new token's bytes, hex", "6174")]
    kind: Annotated[
        Literal["merge", "whole"],
        doc("`merge`, or `whole`: under `ranks` a piece that is a token is returned whole"),
    ]


class ExplainPiece(_Response, frozen=True):
    """One pre-tokenized piece: its single bytes, then its merges."""

    text: Annotated[str, doc("the piece", "cat")]
    start: Annotated[Ids, doc("the id of each single byte, before any merge", [66, 64, 83])]
    start_bytes: Annotated[list[str], doc("each single byte, hex", ["63", "61", "74"])]
    steps: Annotated[list[ExplainStep], doc("the merges, in the order the rule makes them")]
    ids: Annotated[Ids, doc("the piece's ids after every step", [4719])]


class ExplainResponse(_Response, frozen=True):
    """The merge steps of every piece; `ids` joins the pieces' final ids."""

    rule: Annotated[Literal["pairs", "ranks"], doc("the merge rule applied")]
    ids: Annotated[Ids, doc("the final ids: what encode gives for the text", [4719])]
    steps: Annotated[int, doc("number of steps over all pieces", 2)]
    pieces: Annotated[list[ExplainPiece], doc("the pieces, in order")]
    tokenizer: Annotated[
        TokenizerRef | None, doc("the vocabulary explained (absent for an inline one)")
    ] = None


class TrainRequest(RequestBody, frozen=True):
    """A text to train a small `pairs` tokenizer on."""

    text: Annotated[str, doc("the training text, at most 20,000 UTF-8 bytes", "low lower lowest")]
    merges: Annotated[int, doc("merges to learn, 1 to 512 (fewer if pairs run out)", 3)] = 64
    pattern: Annotated[Pattern, doc(_PATTERN)] = "gpt2"
    min_frequency: Annotated[int, doc("a pair must occur this often to merge", 1)] = 2


class TrainResponse(_Response, frozen=True):
    """The learned merges, ready for `/v1/playground/explain`."""

    merges: Annotated[list[list[int]], doc("`[left, right, new]`, new ids from 256 in order")]
    tokens: Annotated[list[str], doc("each merge's new token bytes, hex", ["6c6f"])]
    pattern: Annotated[Pattern, doc("the pre-tokenization used")]
