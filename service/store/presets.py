"""The published pre-tokenization patterns and special tokens of the real encodings.

OpenAI's come from tiktoken's `tiktoken_ext/openai_public.py`; Qwen's from Qwen2/2.5/3's
`tokenizer.json` (its split regex and its 26 added tokens, all encoded as special tokens; the
12 it marks `"special": false` are listed as `nonspecial_tokens`, kept by `skip_special_tokens`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from service.bpe import Normalization

GPT2_PATTERN = (
    r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s"""
)
CL100K_PATTERN = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"""
    r"""|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)
O200K_PATTERN = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)
QWEN2_PATTERN = (
    r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"""
    r"""|\s*[\r\n]+|\s+(?!\S)|\s+"""
)

PATTERNS: dict[str, str] = {
    "gpt2": GPT2_PATTERN,
    "cl100k": CL100K_PATTERN,
    "o200k": O200K_PATTERN,
    "qwen2": QWEN2_PATTERN,
}

_QWEN2_SPECIALS = [
    "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|object_ref_start|>", "<|object_ref_end|>",
    "<|box_start|>", "<|box_end|>", "<|quad_start|>", "<|quad_end|>", "<|vision_start|>",
    "<|vision_end|>", "<|vision_pad|>", "<|image_pad|>", "<|video_pad|>", "<tool_call>",
    "</tool_call>", "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>", "<|fim_pad|>",
    "<|repo_name|>", "<|file_sep|>", "<tool_response>", "</tool_response>", "<think>", "</think>",
]  # fmt: skip


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
}


def resolve_pattern(value: str) -> str | None:
    """A preset name (gpt2, cl100k, o200k, qwen2), `none`, or a regex taken as it is."""
    if value == "none":
        return None
    return PATTERNS.get(value, value)
