"""Format v2's text pipeline: the normalizer, pre-tokenizer, added-token and decoder steps a
tokenizer file may list (imported from a Hugging Face `tokenizer.json`), as msgspec Structs.

Each step is a tagged object (`{"type": "split", ...}`); unknown types and unknown fields are
refused. `service.store.pipeline.build` turns them into the engine-side steps of
`service.bpe.pipeline.pipeline`; docs/format.md gives the meaning of each and the support matrix.
"""

from __future__ import annotations

from typing import Annotated, Literal

from msgspec import Meta, Struct

TokenId = Annotated[int, Meta(ge=0, le=2**24 - 1)]
SplitBehavior = Literal[
    "removed", "isolated", "merged_with_previous", "merged_with_next", "contiguous"
]


class _Step(Struct, frozen=True, forbid_unknown_fields=True, kw_only=True, tag_field="type"):
    pass


# --- normalizers: applied in order to each stretch of ordinary text -------------------------
class UnicodeForm(_Step, frozen=True, kw_only=True, tag="unicode"):
    form: Literal["NFC", "NFKC", "NFD", "NFKD"]


class Lowercase(_Step, frozen=True, kw_only=True, tag="lowercase"):
    pass


class Replace(_Step, frozen=True, kw_only=True, tag="replace"):
    """Every match of `pattern` (a literal, or a regex when `regex`) becomes `content`."""

    pattern: str
    regex: bool = False
    content: str


class Prepend(_Step, frozen=True, kw_only=True, tag="prepend"):
    """`prepend` goes in front of every non-empty stretch of ordinary text."""

    prepend: str


class Strip(_Step, frozen=True, kw_only=True, tag="strip"):
    """Whitespace removed from the left and/or right end."""

    left: bool = True
    right: bool = True


Normalizer = UnicodeForm | Lowercase | Replace | Prepend | Strip


# --- pre-tokenizers: each splits every piece of the previous step ---------------------------
class Split(_Step, frozen=True, kw_only=True, tag="split"):
    """Hugging Face's `Split`: matches of `pattern` (literal, or regex when `regex`), or with
    `invert` what lies between them, combined with the rest as `behavior` says."""

    pattern: str
    regex: bool = True
    behavior: SplitBehavior = "isolated"
    invert: bool = False


class ByteLevel(_Step, frozen=True, kw_only=True, tag="byte_level"):
    """GPT-2's byte-level step: a space put in front (`add_prefix_space`, when the text does not
    begin with one) and GPT-2's split regex (`use_regex`)."""

    add_prefix_space: bool = False
    use_regex: bool = True


class Metaspace(_Step, frozen=True, kw_only=True, tag="metaspace"):
    """Spaces become `replacement`; it is put in front as `prepend_scheme` says (`first`: of the
    text's first stretch only); `split`: pieces begin at each `replacement`."""

    replacement: str = "\u2581"
    prepend_scheme: Literal["first", "always", "never"] = "always"
    split: bool = True


class Digits(_Step, frozen=True, kw_only=True, tag="digits"):
    individual_digits: bool = False


class Punctuation(_Step, frozen=True, kw_only=True, tag="punctuation"):
    behavior: SplitBehavior = "isolated"


class Whitespace(_Step, frozen=True, kw_only=True, tag="whitespace"):
    """Pieces are `\\w+` and `[^\\w\\s]+` runs; whitespace is dropped."""


class WhitespaceSplit(_Step, frozen=True, kw_only=True, tag="whitespace_split"):
    """Pieces are the runs of non-whitespace."""


PreTokenizer = Split | ByteLevel | Metaspace | Digits | Punctuation | Whitespace | WhitespaceSplit


# --- added tokens ------------------------------------------------------------------------------
class AddedToken(Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """A literal split out of the text before the model sees it. `special`: under the special
    token policy (an error unless allowed); otherwise always its id, as ordinary text.
    `normalized`: matched in the normalized text instead of the raw text; `lstrip`/`rstrip`: the
    match takes the whitespace on that side along; `single_word`: only where no word character
    touches it."""

    content: str
    id: TokenId
    special: bool = False
    lstrip: bool = False
    rstrip: bool = False
    single_word: bool = False
    normalized: bool = False


# --- decoder: applied to the decoded text (after joining the ids' bytes as UTF-8) ------------
class DecodeReplace(_Step, frozen=True, kw_only=True, tag="replace"):
    """Every `pattern` (one character) becomes `content`."""

    pattern: str
    content: str


class DecodeStrip(_Step, frozen=True, kw_only=True, tag="strip"):
    """Up to `start` leading `content` characters are removed from the whole decoded text."""

    content: str = " "
    start: Annotated[int, Meta(ge=0, le=1)] = 1


class DecodeMetaspace(_Step, frozen=True, kw_only=True, tag="metaspace"):
    """Every `replacement` becomes a space; with `drop_first`, those of the first token are
    dropped instead (Hugging Face's Metaspace decoder)."""

    replacement: str = "\u2581"
    drop_first: bool = True


DecodeStep = DecodeReplace | DecodeStrip | DecodeMetaspace


class Template(Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """The ids a model's post-processor puts around one text (Hugging Face `TemplateProcessing`
    `single`): added only when a request asks for `add_special_tokens`, never to plain counts."""

    prefix: list[TokenId] = []
    suffix: list[TokenId] = []
