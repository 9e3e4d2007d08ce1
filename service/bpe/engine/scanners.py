"""The C scanners: each cuts text into exactly the pieces that one shipped pattern, or one chain
of `Split` patterns, makes (service/bpe/csrc, the scan headers; their Unicode classes were probed
from tiktoken). This table alone says which patterns a scanner stands for: a format v1 file's
`pattern` is a chain of one, a format v2 file's pre-tokenizers a chain of `Split` steps
(service/store/formats/chains.py). `service.bpe.engine.native` maps each to its code."""

from __future__ import annotations

from typing import NamedTuple

from service.bpe.engine.patterns import (
    CL100K_PATTERN,
    DEEPSEEK_CHAIN,
    GPT2_PATTERN,
    KIMI_PATTERN,
    LLAMA3_PATTERN,
    O200K_PATTERN,
    QWEN2_PATTERN,
    QWEN3_5_PATTERN,
    TEKKEN_PATTERN,
)


class Scanner(NamedTuple):
    name: str
    patterns: tuple[str, ...]  # the chain it cuts as, in order
    code: str  # the extension's constant
    split_chain: bool = False  # tested as a v2 chain of `isolated` Splits (matches and gaps)


SCANNERS: tuple[Scanner, ...] = (
    Scanner("gpt2", (GPT2_PATTERN,), "SCAN_GPT2"),  # also r50k and p50k
    Scanner("cl100k", (CL100K_PATTERN,), "SCAN_CL100K"),
    Scanner("o200k", (O200K_PATTERN,), "SCAN_O200K"),
    Scanner("qwen2", (QWEN2_PATTERN,), "SCAN_QWEN2"),
    # Llama 3 and Phi-4: the matches cover every character, so as one `isolated` Split (matches
    # and gaps) it cuts what the pattern's matches cut
    Scanner("llama3", (LLAMA3_PATTERN,), "SCAN_LLAMA3", split_chain=True),
    Scanner("tekken", (TEKKEN_PATTERN,), "SCAN_TEKKEN"),
    Scanner("qwen3.5", (QWEN3_5_PATTERN,), "SCAN_QWEN35"),
    Scanner("kimi", (KIMI_PATTERN,), "SCAN_KIMI"),
    # DeepSeek V3 / V4: numbers, then runs of CJK-range characters, then the main pattern
    Scanner("deepseek", DEEPSEEK_CHAIN, "SCAN_DEEPSEEK", split_chain=True),
)
PATTERN_OF: dict[str, str] = {s.patterns[0]: s.name for s in SCANNERS if len(s.patterns) == 1}
"""A format v1 file's pattern -> the scanner that cuts as its matches do."""
SPLIT_CHAINS: dict[tuple[str, ...], str] = {s.patterns: s.name for s in SCANNERS if s.split_chain}
"""A format v2 chain of `isolated` Split patterns -> the scanner that cuts as it does."""
