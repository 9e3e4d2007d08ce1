"""The components of a Hugging Face `tokenizer.json` mapped to format v2's steps: normalizer,
pre-tokenizer, decoder, added tokens and post-processor. What is not implemented exactly is
refused with its JSON path and what is supported instead (the support matrix in docs/format.md).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NoReturn

from service.errors import UnsupportedComponentError
from service.store.pipeline.format import (
    AddedToken,
    ByteLevel,
    DecodeMetaspace,
    DecodeReplace,
    DecodeStep,
    DecodeStrip,
    Digits,
    Lowercase,
    Metaspace,
    Normalizer,
    Prepend,
    PreTokenizer,
    Punctuation,
    Replace,
    Split,
    SplitBehavior,
    Strip,
    Template,
    UnicodeForm,
    Whitespace,
    WhitespaceSplit,
)

Speller = Callable[[str], bytes]
NORMALIZERS = "Sequence, NFC, NFKC, NFD, NFKD, Lowercase, Replace, Prepend, Strip"
PRE_TOKENIZERS = (
    "Sequence, Split, ByteLevel, Metaspace, Digits, Punctuation, Whitespace, WhitespaceSplit"
)
DECODERS = "Sequence of ByteLevel, ByteFallback, Fuse, Replace, Strip (after Fuse), Metaspace"
_BEHAVIORS: dict[str, SplitBehavior] = {
    "Removed": "removed",
    "Isolated": "isolated",
    "MergedWithPrevious": "merged_with_previous",
    "MergedWithNext": "merged_with_next",
    "Contiguous": "contiguous",
}


class Refuser:
    """Raises the refusal of one component of one file."""

    def __init__(self, where: str) -> None:
        self.where = where

    def __call__(self, at: str, found: str, supported: str) -> NoReturn:
        raise UnsupportedComponentError(self.where, at, found, supported)


def flat_steps(node: Any, key: str, at: str = "") -> list[tuple[str, dict[str, Any]]]:
    """(JSON path, component) of a component and of nested `Sequence`s, in order."""
    if node is None:
        return []
    if not isinstance(node, dict):
        return [(at, {"type": repr(node)})]
    if node.get("type") == "Sequence":
        out = []
        for i, child in enumerate(node.get(key) or []):
            out += flat_steps(child, key, f"{at}.{key}[{i}]")
        return out
    return [(at, node)]


def _pattern(node: dict[str, Any], at: str, refuse: Refuser) -> tuple[str, bool]:
    pattern = node.get("pattern")
    if isinstance(pattern, dict) and isinstance(pattern.get("String"), str):
        return pattern["String"], False
    if isinstance(pattern, dict) and isinstance(pattern.get("Regex"), str):
        return pattern["Regex"], True
    refuse(f"{at}.pattern", repr(pattern), '{"String": ...} or {"Regex": ...}')


def normalizers(node: Any, refuse: Refuser) -> list[Normalizer] | None:
    out: list[Normalizer] = []
    for at, step in flat_steps(node, "normalizers", "normalizer"):
        kind = step.get("type")
        if kind in ("NFC", "NFKC", "NFD", "NFKD"):
            out.append(UnicodeForm(form=kind))
        elif kind == "Lowercase":
            out.append(Lowercase())
        elif kind == "Replace":
            pattern, is_regex = _pattern(step, at, refuse)
            out.append(Replace(pattern=pattern, regex=is_regex, content=str(step["content"])))
        elif kind == "Prepend":
            out.append(Prepend(prepend=str(step["prepend"])))
        elif kind == "Strip":
            out.append(
                Strip(left=bool(step.get("strip_left")), right=bool(step.get("strip_right")))
            )
        else:
            refuse(f"{at}.type", repr(kind), NORMALIZERS)
    return out or None


def pre_tokenizers(node: Any, refuse: Refuser) -> list[PreTokenizer]:
    out: list[PreTokenizer] = []
    steps = flat_steps(node, "pretokenizers", "pre_tokenizer")
    for at, step in steps:
        kind = step.get("type")
        if kind == "ByteLevel" and step is not steps[-1][1]:  # later steps would see its alphabet
            refuse(
                at,
                "a ByteLevel pre-tokenizer before other steps",
                "ByteLevel as the last step (once)",
            )
        if kind == "Split":
            pattern, is_regex = _pattern(step, at, refuse)
            out.append(
                Split(
                    pattern=pattern,
                    regex=is_regex,
                    invert=bool(step.get("invert")),
                    behavior=_behavior(step, at, refuse),
                )
            )
        elif kind == "ByteLevel":
            out.append(
                ByteLevel(
                    add_prefix_space=bool(step.get("add_prefix_space")),
                    use_regex=bool(step.get("use_regex", True)),
                )
            )
        elif kind == "Metaspace":
            out.append(
                Metaspace(
                    replacement=str(step.get("replacement", "\u2581")),
                    prepend_scheme=_scheme(step, at, refuse),
                    split=bool(step.get("split", True)),
                )
            )
        elif kind == "Digits":
            out.append(Digits(individual_digits=bool(step.get("individual_digits"))))
        elif kind == "Punctuation":
            out.append(Punctuation(behavior=_behavior(step, at, refuse)))
        elif kind == "Whitespace":
            out.append(Whitespace())
        elif kind == "WhitespaceSplit":
            out.append(WhitespaceSplit())
        else:
            refuse(f"{at}.type", repr(kind), PRE_TOKENIZERS)
    return out


def _behavior(step: dict[str, Any], at: str, refuse: Refuser) -> SplitBehavior:
    name = step.get("behavior", "Isolated")
    if name not in _BEHAVIORS:
        refuse(f"{at}.behavior", repr(name), ", ".join(_BEHAVIORS))
    return _BEHAVIORS[name]


def _scheme(step: dict[str, Any], at: str, refuse: Refuser) -> Any:
    if "prepend_scheme" in step:
        scheme = step["prepend_scheme"]
        if scheme not in ("first", "always", "never"):
            refuse(f"{at}.prepend_scheme", repr(scheme), "first, always, never")
        return scheme
    return "always" if step.get("add_prefix_space", True) else "never"


def decoder(
    node: Any, refuse: Refuser, *, byte_level: bool, byte_fallback: bool
) -> list[DecodeStep]:
    """The text steps of a decoder chain. Byte-level, byte-fallback and fuse steps need none: our
    tokens are bytes and decoding joins them."""
    if node is None:
        refuse("decoder", "null (the reference joins tokens with spaces)", DECODERS)
    out: list[DecodeStep] = []
    fused = seen_byte_level = seen_fallback = False
    for at, step in flat_steps(node, "decoders", "decoder"):
        kind = step.get("type")
        if kind == "ByteLevel":
            seen_byte_level = True
        elif kind == "ByteFallback":
            seen_fallback = True
        elif kind == "Fuse":
            fused = True
        elif kind == "Replace":
            pattern, is_regex = _pattern(step, at, refuse)
            if is_regex or len(pattern) != 1:
                refuse(f"{at}.pattern", repr(pattern), "a String of one character")
            out.append(DecodeReplace(pattern=pattern, content=str(step["content"])))
        elif kind == "Strip":
            content, start = str(step.get("content", " ")), step.get("start", 0)
            if not fused or step.get("stop", 0) or len(content) != 1 or start not in (0, 1):
                refuse(
                    at,
                    "Strip before Fuse, with stop, of several characters or start > 1",
                    "Strip of one character after Fuse, start 0 or 1, stop 0",
                )
            out.append(DecodeStrip(content=content, start=int(start)))
        elif kind == "Metaspace":
            scheme = _scheme(step, at, refuse)
            out.append(
                DecodeMetaspace(
                    replacement=str(step.get("replacement", "\u2581")), drop_first=scheme != "never"
                )
            )
        else:
            refuse(f"{at}.type", repr(kind), DECODERS)
    if seen_byte_level != byte_level:
        refuse(
            "decoder",
            "a ByteLevel decoder without a ByteLevel pre-tokenizer (or the reverse)",
            "both or neither",
        )
    if seen_fallback != byte_fallback:
        refuse(
            "decoder",
            "a ByteFallback decoder without model.byte_fallback (or the reverse)",
            "both or neither",
        )
    return out


def added_tokens(entries: list[Any], refuse: Refuser, normalized_text: bool) -> list[AddedToken]:
    """`normalized_text`: the file has a normalizer (else matching on normalized text is
    matching on the raw text, and `normalized` is dropped)."""
    out = []
    for i, entry in enumerate(entries):
        try:
            out.append(
                AddedToken(
                    content=str(entry["content"]),
                    id=int(entry["id"]),
                    special=bool(entry.get("special")),
                    lstrip=bool(entry.get("lstrip")),
                    rstrip=bool(entry.get("rstrip")),
                    single_word=bool(entry.get("single_word")),
                    normalized=normalized_text and bool(entry.get("normalized")),
                )
            )
        except (KeyError, TypeError, ValueError):
            refuse(
                f"added_tokens[{i}]",
                "a malformed entry",
                "{content, id, special, lstrip, rstrip, single_word, normalized}",
            )
    return out


def template(node: Any, refuse: Refuser) -> Template | None:
    """BOS/EOS around one text, from the post-processor (TemplateProcessing's `single`)."""
    for at, step in flat_steps(node, "processors", "post_processor"):
        kind = step.get("type")
        if kind == "ByteLevel":  # offsets only
            continue
        if kind in ("BertProcessing", "RobertaProcessing"):
            return Template(prefix=[int(step["cls"][1])], suffix=[int(step["sep"][1])])
        if kind != "TemplateProcessing":
            refuse(
                f"{at}.type",
                repr(kind),
                "TemplateProcessing, BertProcessing, RobertaProcessing, ByteLevel",
            )
        specials = step.get("special_tokens") or {}
        prefix: list[int] = []
        suffix: list[int] = []
        seen_text = False
        for j, item in enumerate(step.get("single") or []):
            if "Sequence" in item:
                if seen_text or item["Sequence"].get("id") != "A":
                    refuse(f"{at}.single[{j}]", "a second sequence", "one sequence A")
                seen_text = True
            elif "SpecialToken" in item:
                name = item["SpecialToken"].get("id")
                if name not in specials:
                    refuse(
                        f"{at}.single[{j}]",
                        f"special token {name!r} without ids",
                        "a special token listed in special_tokens",
                    )
                (suffix if seen_text else prefix).extend(int(x) for x in specials[name]["ids"])
        return Template(prefix=prefix, suffix=suffix)
    return None
