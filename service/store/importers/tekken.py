"""Importing Mistral's tekken files (`tekken_*.json`) as `ranks` tokenizers, exactly as
mistral-common's `Tekkenizer` reads them.

A tekken file lists tiktoken ranks (`vocab`: rank, base64 bytes), the split pattern and how many
special tokens precede the ranks (`config.default_num_special_tokens`): special token k has id k,
and the token of rank r has id r + that number. `config.default_vocab_size` counts both, so only
the first `default_vocab_size - default_num_special_tokens` ranks are used. The file's own
`special_tokens` (rank, token_str) come first; files without them (version v7 and older) get
mistral-common's twenty historical ones; the rest are filled with `<SPECIAL_k>`.
"""

from __future__ import annotations

import base64
import binascii
from pathlib import Path
from typing import Any

from service.errors import StoreError
from service.store.importers.ranks import from_ranks
from service.store.importers.sources import Found, read_json, source_note

# mistral-common 1.13.1, Tekkenizer.DEPRECATED_SPECIAL_TOKENS: ids 0..19 of files without a list
HISTORICAL_SPECIALS = (
    "<unk>",
    "<s>",
    "</s>",
    "[INST]",
    "[/INST]",
    "[AVAILABLE_TOOLS]",
    "[/AVAILABLE_TOOLS]",
    "[TOOL_RESULTS]",
    "[/TOOL_RESULTS]",
    "[TOOL_CALLS]",
    "[IMG]",
    "<pad>",
    "[IMG_BREAK]",
    "[IMG_END]",
    "[PREFIX]",
    "[MIDDLE]",
    "[SUFFIX]",
    "[SYSTEM_PROMPT]",
    "[/SYSTEM_PROMPT]",
    "[TOOL_CONTENT]",
)
# tokenizer versions whose files may omit `special_tokens` (mistral-common: <= v7)
_LISTLESS_VERSIONS = {"v1", "v2", "v3", "v7"}


def from_tekken(path: Path) -> Found:
    """A `ranks` tokenizer from a tekken JSON file (every failure names the file and field)."""
    data = read_json(path)
    where = str(path)
    config = _field(data, "config", dict, where)
    pattern = _field(config, "pattern", str, f"{where}: config")
    n_special = _field(config, "default_num_special_tokens", int, f"{where}: config")
    vocab_size = _field(config, "default_vocab_size", int, f"{where}: config")
    vocab = _field(data, "vocab", list, where)
    if not 0 <= n_special <= vocab_size <= len(vocab) + n_special:
        raise StoreError(
            where,
            f"config: default_vocab_size {vocab_size} must be between "
            f"default_num_special_tokens {n_special} and that plus the "
            f"{len(vocab)} vocab entries",
        )
    specials = _special_tokens(data, config, n_special, where)
    ranks: dict[bytes, int] = {}
    for i, entry in enumerate(vocab[: vocab_size - n_special]):
        token = _token_bytes(entry, i, where)
        if i < 256 and token != bytes([i]):
            raise StoreError(where, f"vocab[{i}]: ranks 0..255 must be the single bytes")
        if token in ranks:
            raise StoreError(where, f"vocab[{i}]: the same bytes as rank {ranks[token]}")
        ranks[token] = i + n_special
    return from_ranks(
        path,
        ranks,
        pattern=pattern,
        special_tokens=specials,
        normalization="none",
        source=source_note(path),
    )


def _field(obj: Any, key: str, kind: type, where: str) -> Any:
    value = obj.get(key) if isinstance(obj, dict) else None
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise StoreError(where, f"`{key}` must be a {kind.__name__}")
    return value


def _special_tokens(
    data: dict[str, Any], config: dict[str, Any], n_special: int, where: str
) -> dict[str, int]:
    listed = data.get("special_tokens")
    if listed is None:
        if config.get("version") not in _LISTLESS_VERSIONS:
            raise StoreError(
                where,
                f"`special_tokens` is missing; only tokenizer versions "
                f"{sorted(_LISTLESS_VERSIONS)} may omit it",
            )
        names = list(HISTORICAL_SPECIALS)
    elif isinstance(listed, list):
        names = []
        for k, entry in enumerate(listed):
            text = entry.get("token_str") if isinstance(entry, dict) else None
            if not isinstance(text, str) or entry.get("rank") != k:
                raise StoreError(where, f"special_tokens[{k}]: needs token_str and rank {k}")
            names.append(text)
    else:
        raise StoreError(where, "`special_tokens` must be a list")
    if len(names) > n_special or len(set(names)) != len(names):
        raise StoreError(
            where,
            f"special_tokens: {len(names)} listed, must be unique and at "
            f"most default_num_special_tokens ({n_special})",
        )
    names += [f"<SPECIAL_{k}>" for k in range(len(names), n_special)]
    if len(set(names)) != n_special:
        raise StoreError(where, "special_tokens: a listed name collides with a <SPECIAL_k> filler")
    return {text: k for k, text in enumerate(names)}


def _token_bytes(entry: Any, i: int, where: str) -> bytes:
    if not isinstance(entry, dict) or entry.get("rank") != i:
        raise StoreError(where, f"vocab[{i}]: must be an object with rank {i}")
    try:
        return base64.b64decode(entry["token_bytes"], validate=True)
    except (KeyError, TypeError, ValueError, binascii.Error):
        raise StoreError(where, f"vocab[{i}]: token_bytes is not base64") from None
