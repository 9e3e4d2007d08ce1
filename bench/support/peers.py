"""The engines the benchmark runs beside ours: for each shipped tokenizer, a maker per peer that
builds a new engine (no state from an earlier call) from the files in ../shared/vocab, the bundled
data of the peer's own package, or our vocabulary. A peer that is not installed, or cannot build
this vocabulary, is left out with a printed note; `exact` says whether its ids equal ours on a text.

    pip install -e '.[bench]'   # every peer below
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from pathlib import Path

Encoder = Callable[[str], list[int]]
Maker = Callable[[], Encoder]

# tokenizer -> the .tiktoken file of ../shared/vocab it is (None: a trained vocabulary of ours)
TIKTOKEN_FILES = {
    "gpt2": "r50k_base",
    "cl100k_base": "cl100k_base",
    "o200k_base": "o200k_base",
    "qwen2": "qwen",
    "qwen3": "qwen",
    "bard": None,
}
HF_FILES = {"qwen2": "qwen2_5_tokenizer.json", "qwen3": "qwen3_tokenizer.json"}
# the package each peer comes in (pip name, import name)
PACKAGES = {
    "tiktoken": ("tiktoken", "tiktoken"),
    "bpe-openai": ("bpe-openai", "bpe_openai"),
    "fastokens": ("fastokens", "fastokens"),
    "gigatoken": ("gigatoken", "gigatoken"),
    "quicktok-v1": ("quicktok-v1", "quicktok"),
    "splintr-rs": ("splintr-rs", "splintr"),
    "riptoken": ("riptoken", "riptoken"),
    "hf-tokenizers": ("tokenizers", "tokenizers"),
}


def _ids(result: object) -> list[int]:
    ids = getattr(result, "ids", result)
    return ids if isinstance(ids, list) else list(ids)  # type: ignore[call-overload]


QUICKTOK_NAMES = {"qwen2": "qwen3"}  # quicktok-v1 ships one encoding for Qwen2.5 and Qwen3


def _quicktok_new(name: str) -> Encoder:
    """A new quicktok-v1 engine. Not `quicktok.get_encoding`: it returns one engine per name for
    the whole process, whose memo of pair answers (several MB) then keeps every pair it has read,
    so a "new" engine would start warm."""
    import quicktok

    encoding = QUICKTOK_NAMES.get(name, name)
    return quicktok.Tokenizer(encoding, "").encode_ordinary  # type: ignore[no-any-return]


def makers(name: str, pattern: str, ranks: dict[bytes, int], vocab: Path) -> dict[str, Maker]:
    """Every peer that may serve `name` (split by `pattern`, with `ranks`), installed or not."""
    tfile = TIKTOKEN_FILES[name]
    path = str(vocab / f"{tfile}.tiktoken") if tfile else ""
    openai = name in ("cl100k_base", "o200k_base")
    out: dict[str, Maker] = {}

    def tiktoken_() -> Encoder:
        import tiktoken

        enc = tiktoken.Encoding(
            f"tt_{name}", pat_str=pattern, mergeable_ranks=ranks, special_tokens={}
        )
        return enc.encode_ordinary

    out["tiktoken"] = tiktoken_

    def riptoken_() -> Encoder:
        import riptoken

        return riptoken.CoreBPE(ranks, {}, pattern).encode_ordinary  # type: ignore[no-any-return]

    out["riptoken"] = riptoken_
    if openai:

        def bpe_openai() -> Encoder:
            from bpe_openai import _bindings  # the Rust core; the wrapper caps tokens per call

            return _bindings.tokenizer_for_encoding(name).encode  # type: ignore[no-any-return]

        def quicktok_() -> Encoder:
            return _quicktok_new(name)

        def splintr_() -> Encoder:
            import splintr

            return splintr.Tokenizer.from_pretrained(name).encode_ordinary  # type: ignore[no-any-return]

        out |= {"bpe-openai": bpe_openai, "quicktok-v1": quicktok_, "splintr-rs": splintr_}
    if openai or name == "gpt2":

        def fastokens_() -> Encoder:
            import fastokens

            kw = {"encoding": name} if openai else {"pattern": pattern}
            tok = fastokens.Tokenizer.from_tiktoken(path, **kw)
            return lambda text: _ids(tok.encode_ordinary(text))

        def gigatoken_() -> Encoder:
            import gigatoken

            return gigatoken.Tokenizer.from_tiktoken(path).as_tiktoken().encode_ordinary  # type: ignore[no-any-return]

        out |= {"fastokens": fastokens_, "gigatoken": gigatoken_}
    if name in HF_FILES:
        json = str(vocab / HF_FILES[name])

        def hf() -> Encoder:
            from tokenizers import Tokenizer

            tok = Tokenizer.from_file(json)
            return lambda text: tok.encode(text, add_special_tokens=False).ids

        def fastokens_hf() -> Encoder:
            import fastokens

            tok = fastokens.Tokenizer.from_file(json)
            return lambda text: _ids(tok.encode(text, add_special_tokens=False))

        def gigatoken_hf() -> Encoder:
            import gigatoken

            return gigatoken.Tokenizer(json).as_tiktoken().encode_ordinary  # type: ignore[no-any-return]

        def splintr_hf() -> Encoder:
            import splintr

            return splintr.from_json(json).encode_ordinary  # type: ignore[no-any-return]

        def quicktok_hf() -> Encoder:
            return _quicktok_new(name)

        out |= {
            "hf-tokenizers": hf,
            "fastokens": fastokens_hf,
            "gigatoken": gigatoken_hf,
            "splintr-rs": splintr_hf,
            "quicktok-v1": quicktok_hf,
        }
    return out


def available(
    name: str, candidates: dict[str, Maker], check: str, want: list[int]
) -> dict[str, Maker]:
    """The candidates that are installed, build, and give `want` for `check`; a note for each other."""
    kept = {}
    for peer, make in candidates.items():
        pip_name, module = PACKAGES[peer]
        if importlib.util.find_spec(module) is None:
            print(f"note: {peer} is not installed (pip install {pip_name}): left out", flush=True)
            continue
        try:
            got = _ids(make()(check))
        except Exception as exc:  # a peer without this vocabulary or pattern
            print(f"note: {peer} cannot serve {name} ({str(exc)[:80]}): left out", flush=True)
            continue
        if got != want:
            print(f"note: {peer} is not exact on {name}: left out", flush=True)
            continue
        kept[peer] = make
    return kept
