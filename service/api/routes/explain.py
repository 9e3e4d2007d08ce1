"""Explain routes: the merge steps of a short text, under a stored tokenizer or a small inline
vocabulary, and training such a vocabulary from a pasted text (for the playground's stepper)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import anyio.to_thread
from litestar.params import JSONBody

from service.api import metrics
from service.api.budget import run_work
from service.api.dependencies import TokenizerDep, WorkerDep
from service.api.openapi import json_post
from service.api.routes.catalog import ref_of
from service.api.wire.explain import (
    ExplainPiece,
    ExplainRequest,
    ExplainResponse,
    ExplainStep,
    InlineExplainRequest,
    Pattern,
    TrainRequest,
    TrainResponse,
)
from service.api.wire.tokens import TokenizerRef
from service.bpe import Rule, Vocabulary, train
from service.bpe.deadline import Deadline
from service.bpe.engine.patterns import PATTERNS
from service.bpe.text.explain import PieceSteps, explain_text, inline_vocabulary
from service.errors import ConfigError, InputError, LimitExceededError

T = TypeVar("T")
MAX_TRAIN_BYTES = 20_000  # UTF-8 bytes of text the playground may train on
MAX_TRAIN_SECONDS = 5.0  # a playground training's CPU time (a demo; the CLI trains for real)
MAX_TRAIN_MERGES = 512


async def in_thread(fn: Callable[[], T]) -> T:
    """Explaining and training are bounded but quadratic-ish: keep them off the event loop."""
    return await anyio.to_thread.run_sync(fn)


def pattern_of(name: Pattern) -> str | None:
    return None if name == "none" else PATTERNS[name]


def wire_pieces(pieces: list[PieceSteps]) -> list[ExplainPiece]:
    return [
        ExplainPiece(
            text=p.text,
            start=p.start,
            start_bytes=[d.hex() for d in p.start_data],
            steps=[
                ExplainStep(
                    at=s.at,
                    left=s.left,
                    right=s.right,
                    id=s.id,
                    rank=s.rank,
                    bytes=s.data.hex(),
                    kind=s.kind,
                )
                for s in p.steps
            ],
            ids=p.ids,
        )
        for p in pieces
    ]


def response_of(
    rule: Rule, pieces: list[PieceSteps], tokenizer: TokenizerRef | None = None
) -> ExplainResponse:
    return ExplainResponse(
        rule=rule,
        ids=[i for p in pieces for i in p.ids],
        steps=sum(len(p.steps) for p in pieces),
        pieces=wire_pieces(pieces),
        tokenizer=tokenizer,
    )


@json_post(
    "/v1/tokenizers/{ref:str}/explain",
    name="explain",
    tag="explain",
    summary="Explain a short text's merges",
    returns="the steps of every piece, and the final ids",
)
async def explain(tokenizer: TokenizerDep, data: JSONBody[ExplainRequest]) -> ExplainResponse:
    """The merge steps, one per step, that turn each piece of the text (at most 256 characters) into
    ids under the tokenizer's rule, normalization and pre-tokenization; the text is ordinary text,
    so `ids` equals encode with `disallowed_special: []`."""
    t = tokenizer
    if not t.tokenizer.pipeline.engine_cuts:  # its own pre-tokenizers, added tokens, merges
        raise InputError(
            f"explain does not cover {t.ref}: a tokenizer.json pipeline (format "
            "v2) is not replayed step by step yet; encode with pieces shows its "
            "tokens"
        )
    pieces = await in_thread(
        lambda: explain_text(t.tokenizer.vocab, t.pattern, data.text, t.normalization)
    )
    out = response_of(t.rule, pieces, ref_of(t))
    metrics.record(t.ref, "explain", len(out.ids), [data.text])
    return out


@json_post(
    "/v1/playground/explain",
    name="explain",
    tag="explain",
    summary="Explain merges under an inline vocabulary",
    returns="the steps of every piece, and the final ids",
    problems=(400, 408, 413, 422),
)
async def explain_inline(data: JSONBody[InlineExplainRequest]) -> ExplainResponse:
    """The same steps for a small vocabulary given as merges (at most 512), e.g. the textbook
    counterexample that tells the `pairs` and `ranks` rules apart. Served with the playground (off
    with TOKSVC_PLAYGROUND=0)."""

    def work() -> list[PieceSteps]:
        vocab = inline_vocabulary(data.rule, data.merges)
        return explain_text(vocab, pattern_of(data.pattern), data.text)

    return response_of(data.rule, await in_thread(work))


@json_post(
    "/v1/playground/train",
    name="train",
    tag="explain",
    summary="Train a small vocabulary",
    returns="the learned merges and their tokens",
    problems=(400, 408, 413, 422, 503),
)
async def train_small(worker: WorkerDep, data: JSONBody[TrainRequest]) -> TrainResponse:
    """Classic byte-level BPE training on at most 20,000 bytes of text, up to 512 merges, for the
    playground's stepper, one at a time per worker (503 `too-many-trainings` meanwhile), within
    5 s of work (413 past it). Served with the playground (off with TOKSVC_PLAYGROUND=0)."""
    size = len(data.text.encode("utf-8", "surrogatepass"))
    if size > MAX_TRAIN_BYTES:
        raise LimitExceededError("bytes of training text", MAX_TRAIN_BYTES, size)
    if data.merges > MAX_TRAIN_MERGES:
        raise LimitExceededError("merges to train", MAX_TRAIN_MERGES, data.merges)
    if data.merges < 1 or data.min_frequency < 1:
        raise ConfigError("merges and min_frequency must be at least 1")
    release = worker.trainings.acquire()
    seconds = Deadline(MAX_TRAIN_SECONDS)

    def check(deadline: Deadline) -> None:  # after each merge
        deadline.check()  # the request's: stopped when the client goes or the worker stops
        seconds.check()

    try:  # the work grows with the text and the merges
        model = await run_work(
            size * data.merges,
            lambda deadline: train(
                [data.text],
                256 + data.merges,
                pattern_of(data.pattern),
                min_frequency=data.min_frequency,
                progress=lambda *_: check(deadline),
            ),
        )
    finally:
        release()
    learned = Vocabulary.build("pairs", model.merges).tokens[256:]
    return TrainResponse(
        merges=[list(m) for m in model.merges],
        tokens=[d.hex() for d in learned if d is not None],
        pattern=data.pattern,
    )


ROUTES = [explain]  # always served
PLAYGROUND_ROUTES = [explain_inline, train_small]  # served with the playground page
