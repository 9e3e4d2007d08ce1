"""Bodies of the explain routes and the playground's training helper (`routes.explain`)."""

from __future__ import annotations

from typing import Annotated, Literal

from service.api.wire.tokens import Ids, RequestBody, ResponseBody, TokenizerRef, doc

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
            "order (at most 512; 413 beyond); no token longer than 1,024 bytes (422 beyond)",
            [[98, 99, 256], [97, 98, 257], [257, 99, 258]],
        ),
    ]
    pattern: Annotated[Pattern, doc(_PATTERN)] = "none"


class ExplainStep(ResponseBody, frozen=True):
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


class ExplainPiece(ResponseBody, frozen=True):
    """One pre-tokenized piece: its single bytes, then its merges."""

    text: Annotated[str, doc("the piece", "cat")]
    start: Annotated[Ids, doc("the id of each single byte, before any merge", [66, 64, 83])]
    start_bytes: Annotated[list[str], doc("each single byte, hex", ["63", "61", "74"])]
    steps: Annotated[list[ExplainStep], doc("the merges, in the order the rule makes them")]
    ids: Annotated[Ids, doc("the piece's ids after every step", [4719])]


class ExplainResponse(ResponseBody, frozen=True):
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


class TrainResponse(ResponseBody, frozen=True):
    """The learned merges, ready for `/v1/playground/explain`."""

    merges: Annotated[list[list[int]], doc("`[left, right, new]`, new ids from 256 in order")]
    tokens: Annotated[list[str], doc("each merge's new token bytes, hex", ["6c6f"])]
    pattern: Annotated[Pattern, doc("the pre-tokenization used")]
