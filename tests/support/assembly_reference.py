"""What an assembled stream must equal, computed from the full decode (never from the assembler):
decode(prompt + generated) minus the prompt's whole characters, cut at the first stop string
(earliest end; the longest string among those ending there)."""

from __future__ import annotations

import codecs
from collections.abc import Sequence

from service.bpe import Tokenizer


def prompt_text(tok: Tokenizer, prompt: Sequence[int]) -> str:
    """The prompt's whole characters: its bytes decoded with the unfinished character left out."""
    return codecs.getincrementaldecoder("utf-8")("replace").decode(tok.decode_bytes(prompt))


def expected(
    tok: Tokenizer,
    generated: Sequence[int],
    stops: Sequence[str] = (),
    *,
    prompt: Sequence[int] = (),
    include: bool = False,
    skip: bool = False,
) -> tuple[str, str | None]:
    """(the stream's whole output, the stop string that ends it or None)."""
    drop = tok.skipped_ids if skip else frozenset()
    kept_prompt = [i for i in prompt if i not in drop]
    kept = [i for i in generated if i not in drop]
    full = tok.decode([*kept_prompt, *kept], "replace")
    head = prompt_text(tok, kept_prompt)
    assert full.startswith(head)
    out = full[len(head) :]
    best: tuple[tuple[int, int], str, int] | None = None
    for stop in stops:
        at = out.find(stop)
        if at >= 0 and (best is None or (at + len(stop), -len(stop)) < best[0]):
            best = ((at + len(stop), -len(stop)), stop, at)
    if best is None:
        return out, None
    (end, _), stop, at = best
    return (out[:end] if include else out[:at]), stop


def longest_held(text: str, stops: Sequence[str]) -> int:
    """The length of the longest suffix of `text` that is a proper prefix of a stop string."""
    return max(
        (n for stop in stops for n in range(1, len(stop)) if text.endswith(stop[:n])), default=0
    )
