"""What is served: list and describe the tokenizers (and name one in every answer)."""

from __future__ import annotations

from service.api.dependencies import RegistryDep, TokenizerDep
from service.api.openapi import json_get
from service.api.wire.info import TokenizerInfoResponse, TokenizerListResponse
from service.api.wire.tokens import TokenizerRef
from service.store.registry import LoadedTokenizer


def ref_of(t: LoadedTokenizer) -> TokenizerRef:
    return TokenizerRef(name=t.name, version=t.version, sha256=t.sha256)


def info_of(t: LoadedTokenizer) -> TokenizerInfoResponse:
    """What a file says of itself; `n_vocab` once the tokenizer is built (its first use)."""
    m, built = t.metadata, t.built.built
    return TokenizerInfoResponse(
        name=t.name,
        version=t.version,
        ref=t.ref,
        default=t.is_default,
        sha256=t.sha256,
        rule=t.rule,
        vocab_size=t.defined_ids,
        n_vocab=built.tokenizer.n_vocab if built else None,
        special_tokens=t.special_tokens,
        added_tokens=t.added_tokens,
        normalization=t.normalization,
        pattern=t.pattern,
        self_consistent=t.known_self_consistent,
        description=m.description,
        source=m.source,
        license=m.license,
        created=m.created,
    )


@json_get(
    "/v1/tokenizers",
    name="list",
    tag="tokenizers",
    summary="List the tokenizers",
    returns="the loaded tokenizers",
)
def list_tokenizers(registry: RegistryDep) -> TokenizerListResponse:
    """Every loaded tokenizer file (every version of every name) with its metadata."""
    return TokenizerListResponse(tokenizers=[info_of(t) for t in registry])


@json_get(
    "/v1/tokenizers/{ref:str}",
    name="info",
    tag="tokenizers",
    summary="Describe one tokenizer",
    returns="the tokenizer",
    problems=(400, 404, 503),
)
def get_tokenizer(tokenizer: TokenizerDep) -> TokenizerInfoResponse:
    """The metadata of the file `{ref}` resolves to: exact version, sha256, merge rule, special
    tokens, pattern and provenance."""
    return info_of(tokenizer)


ROUTES = [list_tokenizers, get_tokenizer]
