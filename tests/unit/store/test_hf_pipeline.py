"""The tokenizer.json loader against Hugging Face `tokenizers` itself, component by component.

Small tokenizers are trained (or, for `ignore_merges`, converted from a tiktoken ranks prefix the
way the reference's converter does) with `tokenizers`, given each normalizer, pre-tokenizer,
added-token flag and decoder, saved, imported and served by both engines; the reference encodes
and decodes the same file. This is also where the constructions of Llama 3 (`ignore_merges`) and
Gemma 3 (SentencePiece-style BPE with byte fallback) are tested, since their own files are not
redistributed here (tests/data/README.md).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, trainers
from tokenizers import pre_tokenizers as pre

from service.bpe import StreamDecoder
from service.errors import DisallowedSpecialError, UnsupportedComponentError
from service.runtime import engine_factory
from service.store.importers.hf_tokenizer import from_tokenizer_json
from service.store.importers.sources import Naming
from service.store.loader import load_store
from service.store.manifest import add_to_store
from tests.support.testdata import corpus_text, vocab_bytes

TEXTS = [
    "Hello world, it's 2026!  Spaces   and\ttabs\n\nnew lines 1234567 x",
    "  leading spaces, trailing  ",
    "中文汉字测试ひらがなカタカナ 한국어 देवनागरी",
    "emoji 👨‍👩‍👧 👍🏽 e\u0301 é \x00 NUL \U000e0fff \U0010fffe",
    "▁ typed ▁▁ and <0x41> typed, <s> and </s> and [MASK]x",
    "UPPER lower MiXeD \uff21\uff22\uff23 ﬁ ...!!! ??? a_b",
    "",
    " ",
    "9" * 40 + " " + "=" * 70,
]
LLAMA3_REGEX = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)


def training_text() -> list[str]:
    names = ("en_shakespeare.txt", "zh_manpages.txt", "mixed_emoji_test.txt", "code_python.txt")
    text = "".join(corpus_text(n)[:6000] for n in names)
    return text.splitlines()


def byte_level_bpe(pre_steps: list[Any], last: Any = None) -> Tokenizer:
    tok = Tokenizer(models.BPE())
    last = last or pre.ByteLevel(add_prefix_space=False, use_regex=False)
    tok.pre_tokenizer = pre.Sequence([*pre_steps, last])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=600, initial_alphabet=pre.ByteLevel.alphabet(), show_progress=False
    )
    tok.train_from_iterator(training_text(), trainer)
    return tok


def sentencepiece_bpe() -> Tokenizer:
    """Gemma 3's construction: characters merged, `▁` for spaces, `<0xNN>` byte fallback."""
    tok = Tokenizer(models.BPE(byte_fallback=True, unk_token="<unk>", fuse_unk=True))
    tok.normalizer = normalizers.Replace(" ", "▁")
    tok.pre_tokenizer = pre.Split(" ", "merged_with_previous")
    trainer = trainers.BpeTrainer(
        vocab_size=700, special_tokens=["<unk>"], show_progress=False, limit_alphabet=300
    )
    tok.train_from_iterator(training_text(), trainer)
    doc = json.loads(tok.to_str())
    vocab = doc["model"]["vocab"]
    for b in range(256):
        vocab.setdefault(f"<0x{b:02X}>", len(vocab))
    doc["decoder"] = {
        "type": "Sequence",
        "decoders": [
            {"type": "Replace", "pattern": {"String": "▁"}, "content": " "},
            {"type": "ByteFallback"},
            {"type": "Fuse"},
            {"type": "Strip", "content": " ", "start": 1, "stop": 0},
        ],
    }
    return Tokenizer.from_str(json.dumps(doc))


def tiktoken_converted() -> Tokenizer:
    """Llama 3's construction: a ranks vocabulary (r50k's first 3000 ranks) with every split of
    each token into two tokens listed as a merge, in rank order, and `ignore_merges`."""
    ranks: dict[bytes, int] = {}
    for line in vocab_bytes("r50k_base.tiktoken").splitlines()[:3000]:
        token, rank = line.split()
        ranks[base64.b64decode(token)] = int(rank)
    spell = {b: c for c, b in _alphabet().items()}

    def text(b: bytes) -> str:
        return "".join(spell[x] for x in b)

    merges = []
    for token, rank in ranks.items():
        splits = [
            (token[:i], token[i:])
            for i in range(1, len(token))
            if token[:i] in ranks and token[i:] in ranks
        ]
        merges += [(rank, ranks[a], ranks[b], text(a), text(b)) for a, b in splits]
    vocab = {text(t): r for t, r in ranks.items()}
    model = models.BPE(vocab, [(m[3], m[4]) for m in sorted(merges)], ignore_merges=True)
    tok = Tokenizer(model)
    split = pre.Split(Regex(LLAMA3_REGEX), "isolated")
    tok.pre_tokenizer = pre.Sequence(
        [split, pre.ByteLevel(add_prefix_space=False, use_regex=False)]
    )
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens(["<|begin_of_text|>"])
    return tok


def _alphabet() -> dict[str, int]:
    from service.store.importers.gpt2 import gpt2_byte_alphabet  # noqa: PLC0415

    return gpt2_byte_alphabet()


def served(tmp_path: Path, tok: Tokenizer) -> Iterator[tuple[str, Any]]:
    """(engine, our tokenizer) for both engines, from the reference's own saved file."""
    source = tmp_path / "tokenizer.json"
    tok.save(str(source))
    tf = from_tokenizer_json(source).named(Naming("t", "1"))
    add_to_store(tmp_path / "store", tf)
    for engine in ("auto", "python"):
        registry = load_store([tmp_path / "store"], engine_factory(engine))  # type: ignore[arg-type]
        assert not registry.failures, registry.failures
        yield engine, registry.resolve("t").tokenizer


def assert_same(tmp_path: Path, tok: Tokenizer, texts: list[str] = TEXTS) -> None:
    for engine, ours in served(tmp_path, tok):
        for text in texts:
            want = tok.encode(text, add_special_tokens=False).ids
            got = ours.encode(text, allowed_special="all")
            assert got == want, (engine, text)
            assert ours.decode(got) == tok.decode(want, skip_special_tokens=False), (engine, text)


def test_gemma_construction_sentencepiece_bpe_with_byte_fallback(tmp_path: Path) -> None:
    tok = sentencepiece_bpe()
    names = ("ja_debian_reference.txt", "hi_devanagari.txt", "zh_manpages.txt")
    corpus = [corpus_text(n)[20000:26000] for n in names]
    assert_same(tmp_path, tok, TEXTS + corpus)


def test_llama3_construction_ignore_merges_is_the_ranks_rule(tmp_path: Path) -> None:
    tok = tiktoken_converted()
    assert_same(tmp_path, tok, [*TEXTS, corpus_text("en_shakespeare.txt")[:8000]])
    tf = from_tokenizer_json(tmp_path / "tokenizer.json")
    assert tf.rule == "ranks"


@pytest.mark.parametrize(
    "steps",
    [
        [pre.Split(Regex(LLAMA3_REGEX), "isolated")],
        [
            pre.Split(Regex(r"\p{N}{1,3}"), "isolated"),
            pre.Split(Regex("[一-龥]+"), "isolated"),
            pre.Split(Regex(r" ?\p{L}+|\s+"), "removed", invert=True),
        ],  # DeepSeek's shape
        *[
            [pre.Split(" ", b)]
            for b in (
                "removed",
                "isolated",
                "merged_with_previous",
                "merged_with_next",
                "contiguous",
            )
        ],
        *[
            [pre.Split(Regex(r"\s+"), b, invert=True)]
            for b in ("removed", "isolated", "merged_with_previous")
        ],
        [pre.Metaspace(prepend_scheme="first")],
        [pre.Metaspace(prepend_scheme="always", split=False)],
        [pre.Metaspace(prepend_scheme="never")],
        [pre.Digits(individual_digits=True)],
        [pre.Digits(individual_digits=False)],
        [pre.Punctuation()],
        [pre.Punctuation("merged_with_next")],
        [pre.Whitespace()],
        [pre.WhitespaceSplit()],
        [],
    ],
    ids=lambda s: "+".join(type(x).__name__ + str(getattr(x, "behavior", "")) for x in s),
)
def test_pre_tokenizers(tmp_path: Path, steps: list[Any]) -> None:
    assert_same(tmp_path, byte_level_bpe(steps))


@pytest.mark.parametrize("prefix", [True, False])
@pytest.mark.parametrize("use_regex", [True, False])
def test_byte_level_options(tmp_path: Path, prefix: bool, use_regex: bool) -> None:
    last = pre.ByteLevel(add_prefix_space=prefix, use_regex=use_regex)
    assert_same(tmp_path, byte_level_bpe([pre.Digits()], last))


@pytest.mark.parametrize(
    "norm",
    [
        normalizers.Sequence([]),
        normalizers.NFC(),
        normalizers.NFKC(),
        normalizers.NFD(),
        normalizers.NFKD(),
        normalizers.Lowercase(),
        normalizers.Sequence([normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")]),
        normalizers.Replace(Regex(r"\s+"), " "),
        normalizers.Strip(),
        normalizers.Sequence(
            [normalizers.Strip(left=True, right=False), normalizers.NFKC(), normalizers.Lowercase()]
        ),
    ],
    ids=lambda n: type(n).__name__,
)
def test_normalizers(tmp_path: Path, norm: Any) -> None:
    tok = byte_level_bpe([pre.Metaspace(prepend_scheme="first")])
    tok.normalizer = norm
    tok.add_tokens([AddedToken("ﬁx", normalized=True)])  # matched in the normalized text
    assert_same(tmp_path, tok, [*TEXTS, "ﬁx FIX fix"])


@pytest.mark.parametrize(
    "flags",
    [
        {},
        {"lstrip": True},
        {"rstrip": True},
        {"single_word": True},
        {"lstrip": True, "rstrip": True, "normalized": True},
    ],
    ids=lambda f: "-".join(f) or "plain",
)
def test_added_tokens(tmp_path: Path, flags: dict[str, bool]) -> None:
    tok = byte_level_bpe([pre.Split(Regex(LLAMA3_REGEX), "isolated")])
    tok.normalizer = normalizers.Lowercase()
    tok.add_tokens([AddedToken("[MASK]", **flags), AddedToken("and", **flags)])
    tok.add_special_tokens([AddedToken("<s>", **flags), "</s>"])
    texts = [*TEXTS, "x [MASK] y[MASK]z  [mask]  AND and band <s> x </s>", "[MASK]", " and "]
    assert_same(tmp_path, tok, texts)


def test_added_tokens_of_any_length_and_nesting_are_found(tmp_path: Path) -> None:
    """A 5,000-character added token and special token, and 300 tokens each the previous one
    and one more character (a trie 300 groups deep), are found as the reference finds them."""
    long_added, long_special = "<" + "x" * 5000 + ">", "[" + "y" * 5000 + "]"
    nested = ["<n>" + "a" * k for k in range(300)]
    tok = byte_level_bpe([pre.Split(Regex(LLAMA3_REGEX), "isolated")])
    tok.add_tokens([long_added, *nested])
    tok.add_special_tokens([long_special])
    texts = [
        f"a {long_added} b{long_special}c {long_added[:-1]}",
        "<n>" + "a" * 150 + " <n>" + "a" * 400 + "<n>",
    ]
    assert_same(tmp_path, tok, texts)
    for _, ours in served(tmp_path, tok):
        ids = ours.encode(texts[0], allowed_special="all")
        assert tok.token_to_id(long_added) in ids and tok.token_to_id(long_special) in ids
        assert ours.count(texts[0], allowed_special="all") == len(ids)


def test_special_added_tokens_follow_the_policy_and_the_template_is_explicit(
    tmp_path: Path,
) -> None:
    tok = sentencepiece_bpe()
    tok.add_special_tokens(["<bos>"])
    doc = json.loads(tok.to_str())
    bos = tok.token_to_id("<bos>")
    specials = {"<bos>": {"id": "<bos>", "ids": [bos], "tokens": ["<bos>"]}}
    doc["post_processor"] = {
        "type": "TemplateProcessing",
        "single": [
            {"SpecialToken": {"id": "<bos>", "type_id": 0}},
            {"Sequence": {"id": "A", "type_id": 0}},
        ],
        "pair": [],
        "special_tokens": specials,
    }
    tok = Tokenizer.from_str(json.dumps(doc))
    for _, ours in served(tmp_path, tok):
        text = "hi <bos> there"
        with pytest.raises(DisallowedSpecialError, match="<bos>"):
            ours.encode(text)
        assert (
            ours.encode(text, allowed_special="all")
            == tok.encode(text, add_special_tokens=False).ids
        )
        assert ours.count("hi") == len(tok.encode("hi", add_special_tokens=False).ids)
        assert ours.encode("hi", add_special_tokens=True) == tok.encode("hi").ids


@pytest.mark.parametrize("tok_of", [sentencepiece_bpe, tiktoken_converted])
def test_the_stream_equals_the_full_decode(tmp_path: Path, tok_of: Callable[[], Tokenizer]) -> None:
    tok = tok_of()
    for _, ours in served(tmp_path, tok):
        for text in TEXTS:
            ids = ours.encode(text, allowed_special="all")
            for size in (1, 2, 3):
                stream = StreamDecoder(ours.decode_bytes, "strict", text_step=ours.text_step)
                out = "".join(stream.decode(ids[i : i + size]) for i in range(0, len(ids), size))
                out += stream.flush()
                assert out == ours.decode(ids) == tok.decode(ids, skip_special_tokens=False)
                held = StreamDecoder(ours.decode_bytes, "strict", text_step=ours.text_step)
                parts = [held.decode(ids[:1])]
                resumed = StreamDecoder.resume(
                    ours.decode_bytes, held.state(), "strict", ours.text_step
                )
                parts += [resumed.decode(ids[1:]), resumed.flush()]
                assert "".join(parts) == out


@pytest.mark.parametrize(
    ("change", "path"),
    [
        (lambda d: d.update(normalizer={"type": "BertNormalizer"}), "normalizer.type"),
        (
            lambda d: d.update(
                normalizer={
                    "type": "Sequence",
                    "normalizers": [{"type": "NFC"}, {"type": "StripAccents"}],
                }
            ),
            "normalizer.normalizers[1].type",
        ),
        (lambda d: d.update(pre_tokenizer={"type": "BertPreTokenizer"}), "pre_tokenizer.type"),
        (lambda d: d["model"].update(type="Unigram"), "model.type"),
        (lambda d: d["model"].update(dropout=0.1), "model.dropout"),
        (lambda d: d.update(decoder={"type": "WordPiece"}), "decoder.type"),
        (lambda d: d.update(post_processor={"type": "Weird"}), "post_processor.type"),
        (
            lambda d: d["pre_tokenizer"]["pretokenizers"].append({"type": "Digits"}),
            "pre_tokenizer.pretokenizers[0]",
        ),
    ],
)
def test_refusals_name_the_json_path_and_what_is_supported(
    tmp_path: Path, change: Callable[[dict[str, Any]], None], path: str
) -> None:
    doc = json.loads(byte_level_bpe([]).to_str())
    change(doc)
    source = tmp_path / "tokenizer.json"
    source.write_text(json.dumps(doc))
    with pytest.raises(UnsupportedComponentError) as caught:
        from_tokenizer_json(source)
    assert caught.value.at == path and "supported:" in str(caught.value), str(caught.value)


def test_ignore_merges_on_a_trained_file_is_refused(tmp_path: Path) -> None:
    doc = json.loads(byte_level_bpe([]).to_str())
    doc["model"]["ignore_merges"] = True
    source = tmp_path / "tokenizer.json"
    source.write_text(json.dumps(doc))
    with pytest.raises(UnsupportedComponentError, match="tiktoken-converted"):
        from_tokenizer_json(source)


def test_the_api_adds_bos_only_when_asked(tmp_path: Path) -> None:
    """encode and count over the app: the template's ids come only with `add_special_tokens`,
    as the reference's `encode(add_special_tokens=True)` gives them; its pieces are literals."""
    from litestar.testing import TestClient  # noqa: PLC0415

    from service.api.app import create_app  # noqa: PLC0415
    from service.settings import Settings  # noqa: PLC0415

    tok = sentencepiece_bpe()
    tok.add_special_tokens(["<bos>"])
    doc = json.loads(tok.to_str())
    bos = tok.token_to_id("<bos>")
    doc["post_processor"] = {
        "type": "TemplateProcessing",
        "single": [
            {"SpecialToken": {"id": "<bos>", "type_id": 0}},
            {"Sequence": {"id": "A", "type_id": 0}},
        ],
        "pair": [],
        "special_tokens": {"<bos>": {"id": "<bos>", "ids": [bos], "tokens": ["<bos>"]}},
    }
    tok = Tokenizer.from_str(json.dumps(doc))
    next(served(tmp_path, tok))  # writes the store
    registry = load_store([tmp_path / "store"], engine_factory("auto"))
    text = "Hello there"
    with TestClient(create_app(Settings(playground=False), registry)) as client:
        plain = client.post("/v1/tokenizers/t/encode", json={"text": text}).json()
        asked = client.post(
            "/v1/tokenizers/t/encode",
            json={
                "text": text,
                "add_special_tokens": True,
                "pieces": True,
                "offsets": "codepoints",
            },
        ).json()
        both = {"texts": [text, ""], "add_special_tokens": True}
        counted = client.post("/v1/tokenizers/t/count", json=both).json()
    assert plain["ids"] == tok.encode(text, add_special_tokens=False).ids
    assert asked["ids"] == tok.encode(text).ids == [bos, *plain["ids"]]
    assert asked["pieces"][0] == "<bos>" and asked["offsets"][0] == [0, 0]
    assert counted["counts"] == [len(tok.encode(text).ids), len(tok.encode("").ids)]


def test_a_v2_pattern_keeps_the_v1_meaning(tmp_path: Path) -> None:
    """Without pre_tokenizers, a v2 file's `pattern` cuts as v1's does (text no match covers is
    dropped): the v2 pipeline and the v1 engine give the same ids."""
    import msgspec  # noqa: PLC0415

    from service.store.formats.tokenizer import parse  # noqa: PLC0415

    v1 = parse((Path(__file__).parents[3] / "tokenizers_store" / "bard" / "1.json").read_bytes())
    v1 = msgspec.structs.replace(v1, pattern=r"\p{L}+", name="v1")
    v2 = msgspec.structs.replace(v1, name="v2", format_version=2, added_tokens=[])
    for tf in (v1, v2):
        add_to_store(tmp_path / "store", tf)
    for engine in ("auto", "python"):
        registry = load_store([tmp_path / "store"], engine_factory(engine))  # type: ignore[arg-type]
        old, new = registry.resolve("v1").tokenizer, registry.resolve("v2").tokenizer
        assert old.pipeline.engine_cuts and not new.pipeline.engine_cuts
        for text in TEXTS:
            assert new.encode(text, disallowed_special=frozenset()) == old.encode(
                text, disallowed_special=frozenset()
            )
