import pytest

from service.bpe import PythonEngine, Tokenizer, Vocabulary
from service.bpe.engine.text_cache import TextCache
from service.errors import (
    DisallowedSpecialError,
    SurrogateError,
    UndecodableBytesError,
    UnknownIdError,
    UnknownSpecialError,
)

SPECIALS = {"<|end|>": 1000, "<|endoftext|>": 1001}


def make(normalization: str = "none") -> Tokenizer:
    vocab = Vocabulary.build("pairs", [(104, 105, 256), (256, 33, 257)])  # "hi", "hi!"
    engine = PythonEngine(vocab, r"\w+|[^\w\s]+|\s+")
    return Tokenizer(vocab, engine, SPECIALS, normalization)  # type: ignore[arg-type]


def test_special_literal_is_an_error_by_default_and_names_the_token() -> None:
    with pytest.raises(DisallowedSpecialError) as err:
        make().encode("hi <|endoftext|>")
    assert err.value.token == "<|endoftext|>"
    assert err.value.position == 3
    assert "<|endoftext|>" in str(err.value)


def test_allowed_special_encodes_the_special_id() -> None:
    tok = make()
    assert tok.encode("hi<|end|>hi", allowed_special={"<|end|>"}) == [256, 1000, 256]
    assert tok.encode("<|endoftext|><|end|>", allowed_special="all") == [1001, 1000]


def test_longest_special_wins_where_two_start_together() -> None:
    tok = make()
    assert tok.encode("<|endoftext|>", allowed_special="all") == [1001]


def test_empty_disallowed_set_encodes_literals_as_ordinary_text() -> None:
    tok = make()
    ids = tok.encode("<|end|>", disallowed_special=frozenset())
    assert 1000 not in ids
    assert tok.decode(ids) == "<|end|>"


def test_allowing_one_special_still_refuses_the_other() -> None:
    with pytest.raises(DisallowedSpecialError):
        make().encode("<|end|><|endoftext|>", allowed_special={"<|end|>"})


def test_unknown_special_names_are_refused() -> None:
    with pytest.raises(UnknownSpecialError, match=r"<\|nope\|>"):
        make().encode("x", allowed_special={"<|nope|>"})


def test_count_equals_len_encode() -> None:
    tok = make()
    text = "hi hi! <|end|> hi!!"
    assert tok.count(text, allowed_special="all") == len(tok.encode(text, allowed_special="all"))


def test_decode_joins_bytes_before_utf8() -> None:
    tok = make()
    assert tok.decode([228, 184, 173]) == "中"
    assert tok.decode_bytes([228, 184]) == b"\xe4\xb8"


def test_strict_decode_reports_the_byte_offset() -> None:
    with pytest.raises(UndecodableBytesError) as err:
        make().decode([104, 105, 228, 184])
    assert err.value.offset == 2
    assert err.value.data == b"\xe4\xb8"


def test_replace_decode() -> None:
    assert make().decode([104, 255, 105], errors="replace") == "h\ufffdi"


def test_unknown_ids_are_named() -> None:
    with pytest.raises(UnknownIdError) as err:
        make().decode([104, 5000, 999, 5000])
    assert err.value.ids == [999, 5000]
    assert "999" in str(err.value)


def test_kept_bytes_leave_out_the_skipped_ids_only() -> None:
    tok = make()
    ids = [1000, 104, 1001, 257, 1000]
    assert tok.skipped_ids == {1000, 1001}
    assert tok.kept_bytes(ids) == tok.decode_bytes([104, 257]) == b"hhi!"
    assert tok.decode_bytes(ids) == b"<|end|>h<|endoftext|>hi!<|end|>"
    for bad in ([104, 999], [-1], [10**6]):
        with pytest.raises(UnknownIdError) as err:
            tok.kept_bytes(bad)
        assert err.value.ids == [i for i in bad if i != 104]


def test_lone_surrogate_is_a_clear_error() -> None:
    with pytest.raises(SurrogateError) as err:
        make().encode("ab\ud800c")
    assert err.value.position == 2


def test_normalization_applies_to_ordinary_text_only() -> None:
    tok = make("NFC")
    decomposed = "e\u0301"
    assert tok.decode(tok.encode(decomposed)) == "\u00e9"
    nfkc = make("NFKC")
    # a fullwidth look-alike is not a special token, before or after normalization
    ids = nfkc.encode("\uff1c|end|\uff1e", allowed_special="all")
    assert 1000 not in ids


def test_encode_decode_is_not_an_identity_on_ids() -> None:
    tok = make()
    ids = [104, 105]  # "h", "i" as separate tokens
    assert tok.decode(ids) == "hi"
    assert tok.encode(tok.decode(ids)) == [256] != ids


def test_empty_text() -> None:
    tok = make()
    assert tok.encode("") == []
    assert tok.count("") == 0
    assert tok.decode([]) == ""


@pytest.mark.parametrize("cached", [False, True])
def test_the_caller_owns_the_list_it_gets(cached: bool) -> None:
    """Ordinary text gets the engine's own list (no copy); from the text cache, a new one: a
    caller that changes it changes no later answer."""
    vocab = Vocabulary.build("pairs", [(104, 105, 256), (256, 33, 257)])
    engine = PythonEngine(vocab, r"\w+|[^\w\s]+|\s+")
    cache = TextCache(max_bytes=1 << 20) if cached else None
    tok = Tokenizer(vocab, engine, SPECIALS, cache=cache, cache_owner="t")
    first = tok.encode("hi! hi")
    want = list(first)
    first.append(99)
    first[0] = 98
    assert tok.encode("hi! hi") == want
    assert tok.encode("hi! <|end|>", allowed_special="all") == [*want[:2], 32, 1000]
    assert cache is None or cache.hits >= 1


def test_a_special_token_of_5000_characters_is_found() -> None:
    vocab = Vocabulary.build("pairs", [(104, 105, 256)])
    long = "<" + "x" * 5000 + ">"
    tok = Tokenizer(vocab, PythonEngine(vocab, r"\w+|[^\w\s]+|\s+"), {long: 1000, "<|e|>": 1001})
    text = f"hi{long}hi{long[:-1]}"
    ids = tok.encode(text, allowed_special="all")
    assert ids[:3] == [256, 1000, 256] and ids.count(1000) == 1
    assert tok.decode(ids) == text and tok.count(text, allowed_special="all") == len(ids)
    with pytest.raises(DisallowedSpecialError):
        tok.encode(text)
