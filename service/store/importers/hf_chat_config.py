"""A model profile from a Hugging Face `tokenizer_config.json`: the chat template verbatim, its
`bos_token` and `eos_token`, and the model's limits, for the tokenizer imported beside it.

The template is kept character for character (a profile is rendered as transformers renders
it); the file's name and sha256 are its `template_source`, after the user's description of the
package it came from. The BOS and EOS literals must be special or added tokens of the tokenizer,
or the count would spell them as text. The context window is the one given, else the file's
`model_max_length` when it is a real limit (transformers writes about 1e30 for "none"); the
maximum output is the one given, else the whole window, as a server lets a reply fill it.
A file of named templates (a list) is refused: a profile holds one.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec

from service.errors import StoreError
from service.store.formats.model import (
    FixedImages,
    JinjaChat,
    ModelFile,
    ModelMetadata,
    parse_model,
)
from service.store.formats.surrogates import lone_surrogate
from service.store.importers.sources import read_json, source_note

MAX_WINDOW = 1 << 24  # a `model_max_length` above this is transformers' "no limit"


@dataclass(frozen=True, slots=True)
class ChatNaming:
    """What the user says of the profile: its name and version, the tokenizer it uses
    (`name@version`), the limits and the fixed tokens per image (None: not given)."""

    name: str
    version: str
    tokenizer: str
    description: str = ""
    context_window: int | None = None
    max_output_tokens: int | None = None
    image_tokens: int | None = None


def profile_from_config(path: Path, naming: ChatNaming, literals: Collection[str]) -> bytes:
    """The profile's bytes, checked as the loader checks them; `literals`: the tokenizer's
    special and added tokens. StoreError naming the file and the field otherwise."""
    config = read_json(path, text_checked=False)  # only chat_template is kept: checked below
    if not isinstance(config, dict):
        raise StoreError(str(path), "is not a tokenizer_config.json (not a JSON object)")
    template = config.get("chat_template")
    if isinstance(template, list):
        raise StoreError(
            str(path),
            "chat_template: a list of named templates; a profile holds "
            "one (put the one you bill by in a config of its own)",
        )
    if not isinstance(template, str) or not template:
        raise StoreError(str(path), "chat_template: missing (this config has no chat template)")
    try:
        template.encode()
    except UnicodeEncodeError as exc:
        raise StoreError(
            str(path),
            f"chat_template: a lone surrogate (a \\u escape) at "
            f"character {exc.start} is no Unicode scalar value",
        ) from None
    specials = {key: _literal(config, key, path, literals) for key in ("bos_token", "eos_token")}
    window, window_source = _window(config, naming, path)
    source = (
        f"{naming.description}: {source_note(path)}" if naming.description else (source_note(path))
    )
    chat = JinjaChat(template=template, template_source=source, **specials)
    images = None if naming.image_tokens is None else FixedImages(tokens=naming.image_tokens)
    output = naming.max_output_tokens or window
    metadata = ModelMetadata(
        description=f"chat template, bos and eos of {path.name}, on tokenizer {naming.tokenizer}",
        source=f"context window: {window_source}; maximum output: "
        + ("given at import" if naming.max_output_tokens else "the whole window"),
    )
    profile = ModelFile(
        name=naming.name,
        version=naming.version,
        tokenizer=naming.tokenizer,
        context_window=window,
        max_output_tokens=output,
        chat=chat,
        images=images,
        metadata=metadata,
    )
    try:
        data = msgspec.json.format(msgspec.json.encode(profile)) + b"\n"
    except UnicodeEncodeError:  # command-line bytes not in UTF-8 become a lone surrogate
        at = lone_surrogate(msgspec.to_builtins(profile)) or "the profile"
        raise StoreError(
            str(path),
            f"{at}: a lone surrogate is no Unicode scalar value and cannot be written as UTF-8 "
            "(text given on the command line must be UTF-8)",
        ) from None
    parse_model(data, str(path))  # what the loader will check
    return data


def _literal(config: dict[str, Any], key: str, path: Path, literals: Collection[str]) -> str | None:
    value = config.get(key)
    if isinstance(value, dict):  # an AddedToken written out
        value = value.get("content")
    if value is None:
        return None
    if not isinstance(value, str):
        raise StoreError(str(path), f"{key}: must be a string or an added token")
    if value not in literals:
        raise StoreError(
            str(path),
            f"{key}: {value!r} is not a special or added token of the "
            "tokenizer; import the tokenizer.json of the same package",
        )
    return value


def _window(config: dict[str, Any], naming: ChatNaming, path: Path) -> tuple[int, str]:
    if naming.context_window is not None:
        return naming.context_window, "given at import"
    limit = config.get("model_max_length")
    if isinstance(limit, int) and not isinstance(limit, bool) and 0 < limit <= MAX_WINDOW:
        return limit, f"model_max_length of {path.name}"
    raise StoreError(
        str(path),
        f"model_max_length: {limit!r} is no context window; give "
        "--context-window (the model card's figure)",
    )
