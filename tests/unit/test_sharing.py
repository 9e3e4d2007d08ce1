"""Files that differ only in their special tokens share one vocabulary and engine per load
(service/store/sharing.py); anything else that differs keeps them apart."""

from pathlib import Path

import msgspec

from service.bpe import train
from service.runtime import engine_factory
from service.store.fileformat import TokenizerFile
from service.store.manifest import add_to_store
from service.store.registry import load_store

TEXT = "Shared vocabularies: the same merges, other special tokens <|a|> <|b|>."


def trained(name: str, specials: dict[str, int]) -> TokenizerFile:
    model = train([Path(__file__).read_text("utf-8")], 330, r" ?\w+| ?[^\w\s]+|\s+")
    return TokenizerFile(name=name, version="1", rule="pairs", pattern=model.pattern,
                         special_tokens=specials, merges=model.merges)  # fmt: skip


def test_files_differing_only_in_special_tokens_share_and_keep_their_own_specials(
    tmp_path: Path,
) -> None:
    base = trained("base", {"<|a|>": 400})
    add_to_store(tmp_path, base)
    add_to_store(
        tmp_path, msgspec.structs.replace(base, name="chat", special_tokens={"<|b|>": 401})
    )
    add_to_store(tmp_path, msgspec.structs.replace(base, name="other", pattern=r"\w+|\W+"))
    reg = load_store(tmp_path, engine_factory())
    assert not reg.failures
    a, b, other = (reg.resolve(n).tokenizer for n in ("base", "chat", "other"))
    assert a.vocab is b.vocab and a.engine is b.engine
    assert other.vocab is not a.vocab and other.engine is not a.engine
    ids_a, ids_b = (t.encode(TEXT, allowed_special="all") for t in (a, b))
    assert 400 in ids_a and 401 not in ids_a
    assert 401 in ids_b and 400 not in ids_b
    # each one gives the ids it gives when loaded alone
    for name in ("base", "chat", "other"):
        alone = load_store(tmp_path, engine_factory(), only=name).resolve(name).tokenizer
        assert alone.vocab is not a.vocab
        ours = reg.resolve(name).tokenizer
        assert ours.encode(TEXT, allowed_special="all") == alone.encode(TEXT, allowed_special="all")
