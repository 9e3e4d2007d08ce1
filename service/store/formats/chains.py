"""The format v2 pre-tokenizer chains a C scanner cuts exactly, recognised at load by their
exact pattern strings, never by a file's name (the table: service/bpe/engine/scanners.py).

A chain is a run of `Split` steps, each a regex, `isolated`, not inverted, optionally followed
by a `ByteLevel` step without its prefix space or its own regex (which leaves a piece as it is:
the engine merges bytes either way). Any other chain keeps the Python steps
(service/bpe/pipeline/pre_tokenizers.py) in front of the native merge.
"""

from __future__ import annotations

from collections.abc import Sequence

from service.bpe.engine import native
from service.store.pipeline.pre_tokenizers import ByteLevel, PreTokenizer, Split


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
    return native.chain_scanner_of(patterns)
