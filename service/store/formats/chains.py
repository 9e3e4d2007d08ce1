r"""The format v2 pre-tokenizer chains a C scanner cuts exactly, recognised at load by their
exact pattern strings (as presets are), never by a file's name.

A chain is a run of `Split` steps, each a regex, `isolated`, not inverted, optionally followed
by a `ByteLevel` step without its prefix space or its own regex (which leaves a piece as it is:
the engine merges bytes either way). Any other chain keeps the Python steps
(service/bpe/pipeline/textsteps.py) in front of the native merge.

- DeepSeek V3 / V4: numbers, then runs of CJK-range characters, then the main regex
  (service/bpe/csrc/pretok_chain.h);
- Llama 3 / 3.1: one split by tiktoken's first cl100k regex (LLAMA3_PATTERN), whose matches
  cover every character, so `isolated` (matches and gaps) cuts what the scanner's matches cut.
"""

from __future__ import annotations

from collections.abc import Sequence

from service.bpe.engine import native
from service.store.formats.presets import LLAMA3_PATTERN
from service.store.pipeline.format import ByteLevel, PreTokenizer, Split

DEEPSEEK_PATTERN = (
    r"""[!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^"""
    + "\r\n"
    + r"""\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+["""
    + "\r\n"
    + r"""]*|\s*["""
    + "\r\n"
    + r"""]+|\s+(?!\S)|\s+"""
)
DEEPSEEK_CHAIN = (r"\p{N}{1,3}", "[\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff]+", DEEPSEEK_PATTERN)

# the Split patterns of a chain, in order -> the scanner (a key of
# service.bpe.engine.native.SCANNERS)
CHAINS: dict[tuple[str, ...], str] = {DEEPSEEK_CHAIN: "deepseek", (LLAMA3_PATTERN,): "llama3"}


def chain_scanner(steps: Sequence[PreTokenizer]) -> str | None:
    """The C scanner that cuts a text into exactly the pieces `steps` cut it into, or None (no
    such scanner, or the extension is not built)."""
    splits = list(steps)
    if splits and isinstance(last := splits[-1], ByteLevel):
        if last.add_prefix_space or last.use_regex:
            return None
        splits.pop()
    if not splits:
        return None
    patterns = []
    for step in splits:
        if not (isinstance(step, Split) and step.regex and step.behavior == "isolated"):
            return None
        if step.invert:
            return None
        patterns.append(step.pattern)
    name = CHAINS.get(tuple(patterns))
    return name if name is not None and name in native.SCANNERS else None
