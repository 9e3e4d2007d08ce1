"""What the service says about itself: its tokenizers, its health, its problems, its reloads."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec
from msgspec import Meta, Struct

from service.api.wire.tokens import ResponseBody, doc


class TokenizerInfoResponse(ResponseBody, frozen=True):
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
        int,
        Meta(
            description="how many ids are defined, special tokens included (ids may have gaps: "
            "cl100k defines 100261 of 0..100276); to size an array indexed by id, use `n_vocab`",
            examples=[100261],
        ),
    ]
    n_vocab: Annotated[
        int | None,
        Meta(
            description="tiktoken's `n_vocab`: the highest id + 1, special tokens included (null "
            "in the list until the tokenizer's first use; describing one tokenizer builds it)",
            examples=[100277],
        ),
    ]
    special_tokens: Annotated[
        dict[str, int],
        doc(
            "special-token literal -> its id; such a literal in a text is encoded as this id only "
            "when allowed (`allowed_special`)",
            {"<|endoftext|>": 100257, "<|fim_prefix|>": 100258},
        ),
    ]
    added_tokens: Annotated[
        dict[str, int],
        doc(
            "added-token literal -> its id, for the added tokens that are not special (a format "
            "v2 file's, e.g. DeepSeek's `<\uff5cUser\uff5c>`): such a literal is encoded as this "
            "id in any text, whatever `allowed_special` says, and decode's `skip_special_tokens` "
            "keeps it; with `special_tokens`, every literal this tokenizer matches whole",
            {"<\uff5cUser\uff5c>": 128803},
        ),
    ]
    normalization: Annotated[
        str, doc("Unicode normalization applied before encoding: `none`, `NFC` or `NFKC`", "none")
    ]
    pattern: Annotated[str | None, doc("the pre-tokenization regular expression, if any")]
    self_consistent: Annotated[
        bool | None,
        doc(
            "whether every token's bytes encode to that token alone (always for `ranks`); null "
            "for a `pairs` tokenizer not used yet (tokenizers are built on first use)"
        ),
    ]
    description: Annotated[str, doc("what this tokenizer is")]
    source: Annotated[str, doc("where the vocabulary came from")]
    license: Annotated[str, doc("the vocabulary's licence")]
    created: Annotated[str, doc("when this file was written (ISO 8601)")]


class TokenizerListResponse(ResponseBody, frozen=True):
    """Every loaded tokenizer, every version."""

    tokenizers: Annotated[list[TokenizerInfoResponse], doc("the loaded tokenizers")]


class HealthResponse(ResponseBody, frozen=True):
    """Liveness or readiness."""

    status: Annotated[str, doc("`ok` (liveness) or `ready` (readiness)", "ready")]
    tokenizers: Annotated[int | None, doc("number of loaded tokenizer files", 8)] = None
    failures: Annotated[
        list[str] | None,
        doc("store files that did not load, and why (on a ready answer: a refused last reload's)"),
    ] = None
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
    store_sha256: Annotated[
        str | None, doc("the store state this worker serves (the manifest's sha256)")
    ] = None


class ProblemResponse(Struct, frozen=True, kw_only=True, omit_defaults=True):
    """RFC 9457 problem details (`application/problem+json`). Extension members name the facts;
    which ones a problem carries depends on its `type` (listed in docs/api.md)."""

    type: Annotated[str, doc("the kind of problem, a relative URI", "/problems/unknown-tokenizer")]
    title: Annotated[str, doc("short summary of the kind", "Unknown tokenizer")]
    status: Annotated[int, doc("the HTTP status", 404)]
    detail: Annotated[str, doc("what was wrong and how to fix it")]
    request_id: Annotated[
        str | None,
        doc("the request's id, as in its `X-Request-ID` response header and the access log"),
    ] = None
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
        doc(
            "unknown-tokenizer, unknown-model: every name that resolves, each `name@version` and "
            "each plain name with a default version (a model's aliases too; unknown-tokenizer: "
            "the tokenizers' and the models')",
            ["cl100k_base", "cl100k_base@1", "gpt-4o", "gpt-4o@1", "gpt2", "gpt2@1"],
        ),
    ] = None
    closest: Annotated[
        list[str] | None,
        doc(
            "unknown-tokenizer, unknown-model: the served names closest to the one asked for",
            ["cl100k_base@1"],
        ),
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
    field: Annotated[
        str | None, doc("invalid-message, invalid-stream-option: the field at fault", "role")
    ] = None
    needed: Annotated[int | None, doc("context-overflow: input plus output tokens", 9010)] = None
    context_window: Annotated[int | None, doc("context-overflow: the model's window", 8192)] = None
    missing: Annotated[str | None, doc("price-missing: which price is missing", "output")] = None


class ReloadResponse(ResponseBody, frozen=True):
    """The outcome of a store reload."""

    status: Annotated[str, doc("what happened", "reloaded")]
    tokenizers: Annotated[int | None, doc("number of loaded tokenizer files", 8)] = None
    store_sha256: Annotated[
        str | None, doc("the store state every worker serves now (the manifest's sha256)")
    ] = None
    workers: Annotated[int | None, doc("how many workers serve it (under `toksvc serve`)", 2)] = (
        None
    )
