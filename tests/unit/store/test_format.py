import json
from pathlib import Path

import msgspec
import pytest

from service.bpe import train
from service.errors import FormatError
from service.runtime import engine_factory
from service.store.builder import build
from service.store.formats.tokenizer import TokenizerFile, dumps, json_schema, parse
from service.store.manifest import ManifestEntry
from service.store.validation import validate

ROOT = Path(__file__).resolve().parents[3]
SAMPLES = [
    "",
    "a",
    "hello world",
    "Hello, World! 123",
    "naïve café",
    "中文字符",
    "😀👍🏽",
    "\x00\t\n",
    "<|endoftext|>",
    "  spaces   and\ttabs\n\n",
]


def small_file(**changes: object) -> TokenizerFile:
    text = Path(__file__).read_text("utf-8") * 2
    model = train([text], 400, r" ?\w+| ?[^\w\s]+|\s+", ["<|endoftext|>"])
    tf = TokenizerFile(
        name="small",
        version="1",
        rule="pairs",
        pattern=model.pattern,
        special_tokens=model.special_tokens,
        merges=model.merges,
    )
    return msgspec.structs.replace(tf, **changes)


def ids_of(tf: TokenizerFile) -> list[list[int]]:
    entry = ManifestEntry(
        name=tf.name,
        version=tf.version,
        path=f"{tf.name}/{tf.version}.json",
        sha256="0" * 64,
        default=True,
    )
    tok = build(entry, tf, engine_factory("python")).tokenizer
    return [tok.encode(s, disallowed_special=frozenset()) for s in SAMPLES]


def test_save_then_load_gives_the_same_ids() -> None:
    tf = small_file()
    again = parse(dumps(tf))
    assert again == tf
    assert ids_of(again) == ids_of(tf)
    assert any(len(ids) < len(s.encode()) for ids, s in zip(ids_of(tf), SAMPLES, strict=True))


def test_the_layout_is_one_merge_per_line_and_valid_json() -> None:
    data = dumps(small_file())
    doc = json.loads(data)
    assert doc["format"] == "toksvc-bpe" and doc["format_version"] == 1
    lines = data.decode().splitlines()
    assert sum(1 for line in lines if line.strip().startswith("[") and line.count(",") >= 2) == len(
        doc["merges"]
    )


def test_unknown_fields_are_refused() -> None:
    doc = json.loads(dumps(small_file()))
    doc["surprise"] = 1
    with pytest.raises(msgspec.ValidationError, match="surprise"):
        parse(json.dumps(doc).encode())


def test_the_committed_schema_is_generated_from_the_definition() -> None:
    committed = json.loads((ROOT / "docs" / "tokenizer-file.schema.json").read_text())
    assert committed == json_schema()


@pytest.mark.parametrize(
    ("changes", "entry", "reason"),
    [
        ({"pattern": "(unclosed"}, "pattern", "does not compile"),
        ({"byte_ids": list(range(255))}, "byte_ids", "256"),
        ({"byte_ids": [0, *range(255)]}, "byte_ids", "0..255"),
        ({"merges": [(97, 98, 256), (97, 98, 257)]}, "merges[1]", "listed twice"),
        ({"merges": [(97, 98, 256), (256, 999, 257)]}, "merges[1]", "999 is not defined"),
        ({"merges": [(97, 98, 257)]}, "merges[0]", "must be 256"),
        ({"special_tokens": {"<x>": 97}}, "special_tokens['<x>']", "ordinary token"),
        ({"special_tokens": {"<x>": 500, "<y>": 500}}, "special_tokens['<y>']", "<x>"),
        ({"special_tokens": {"": 500}}, "special_tokens['']", "non-empty"),
        ({"tokens": [(300, "6162")]}, "tokens", "only allowed with the ranks rule"),
    ],
)
def test_validation_names_the_offending_entry(
    changes: dict[str, object], entry: str, reason: str
) -> None:
    with pytest.raises(FormatError) as err:
        validate(small_file(**changes), "store/small/1.json")
    assert err.value.entry == entry
    assert reason in str(err.value)
    assert "store/small/1.json" in str(err.value)


def ranks_file(**changes: object) -> TokenizerFile:
    tf = TokenizerFile(
        name="r",
        version="1",
        rule="ranks",
        pattern=None,
        byte_ids=list(range(1, 257)),
        merges=[(99, 100, 300), (98, 300, 301)],
        tokens=[(400, "7878")],
    )
    return msgspec.structs.replace(tf, **changes)


@pytest.mark.parametrize(
    ("changes", "entry", "reason"),
    [
        ({"merges": [(99, 100, 300), (98, 300, 300)]}, "merges[1]", "greater than"),
        ({"merges": [(99, 100, 300), (99, 100, 301)]}, "merges[1]", "listed twice"),
        (
            {"merges": [(99, 100, 300), (98, 99, 301), (301, 100, 302), (98, 300, 303)]},
            "token 303",
            "same bytes",
        ),
        ({"tokens": [(5, "7878")]}, "tokens[0]", "defined twice"),
        ({"tokens": [(400, "zz")]}, "tokens[0]", "not hex"),
        ({"merges": [(99, 100, 400)]}, "merges[0]", "already defined"),
    ],
)
def test_ranks_validation(changes: dict[str, object], entry: str, reason: str) -> None:
    with pytest.raises(FormatError) as err:
        validate(ranks_file(**changes), "r.json")
    assert err.value.entry == entry
    assert reason in str(err.value)


def test_extra_tokens_round_trip_through_the_ranks_rule() -> None:
    tf = ranks_file()
    validate(tf, "r.json")
    entry = ManifestEntry(name="r", version="1", path="r/1.json", sha256="0" * 64)
    tok = build(entry, tf, engine_factory("python")).tokenizer
    # byte b has id b + 1; "xx" is an extra token (hex 7878) that no merge expresses
    assert tok.encode("xx") == [400]
    assert tok.encode("abc") == [301]
    assert tok.decode([400, 301]) == "xxabc"


def test_the_example_in_docs_format_md_loads_and_behaves_as_described() -> None:
    text = (ROOT / "docs" / "format.md").read_text("utf-8")
    example = text.split("```json\n", 1)[1].split("```", 1)[0]
    tf = parse(example.encode())
    validate(tf, "docs/format.md")
    entry = ManifestEntry(name="tiny", version="1", path="tiny/1.json", sha256="0" * 64)
    tok = build(entry, tf, engine_factory("python")).tokenizer
    assert tok.encode("abc") == [97, 256]
    assert tok.decode([258]) == "abc"
    assert not build(entry, tf, engine_factory("python")).self_consistent


def test_ids_above_2_to_the_24_are_refused() -> None:
    doc = json.loads(dumps(small_file()))
    doc["special_tokens"] = {"<|big|>": 2**24}
    with pytest.raises(msgspec.ValidationError, match="special_tokens"):
        parse(json.dumps(doc).encode())
