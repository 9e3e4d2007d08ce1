"""A stream's assembly options as a request names them, checked against their limits, and the
`Assembler` they make for a tokenizer (resumed from a stateless step's state, primed with the
prompt when the stream starts)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from service.bpe.stream.assembly import Assembler
from service.bpe.tokenizer import Tokenizer
from service.errors import StreamOptionError, UnknownIdError


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
            raise StreamOptionError(
                "stop",
                f"a stop string has at most {limits.max_stop_chars} characters (got {len(stop)})",
            )
        if not stop.isascii() and _has_surrogate(stop):
            raise StreamOptionError("stop", "a stop string cannot hold a lone surrogate")
    prompt = list(options.prompt_ids)
    if len(prompt) > limits.max_prompt_ids:
        raise StreamOptionError(
            "prompt_ids",
            f"at most the prompt's last {limits.max_prompt_ids} ids (got {len(prompt)})",
        )
    if prompt and state:
        raise StreamOptionError("prompt_ids", "the stream has started: prime it on its first step")
    skip = options.skip_special_tokens
    out = Assembler.resume(
        tokenizer.decode_bytes,
        state,
        errors,
        stops=stops,
        include_stop=options.include_stop_str_in_output,
        skip_ids=tokenizer.skipped_ids if skip else frozenset(),
        kept_bytes=tokenizer.kept_bytes if skip else None,
        text_step=tokenizer.text_step,
    )
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
