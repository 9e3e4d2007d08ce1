from service.bpe.engine.text_cache import TextCache
from service.store.registry import Registry


def test_hits_return_the_computed_ids_and_owners_are_kept_apart() -> None:
    cache = TextCache(max_bytes=1 << 20)
    calls: list[str] = []

    def compute(text: str) -> list[int]:
        calls.append(text)
        return [len(text), 7]

    assert list(cache.ids("a", "hello", compute)) == [5, 7]
    assert list(cache.ids("a", "hello", compute)) == [5, 7]
    assert list(cache.ids("b", "hello", compute)) == [5, 7]
    assert calls == ["hello", "hello"]
    assert (cache.hits, cache.misses) == (1, 2)


def test_a_miss_gives_the_computed_list_and_keeps_a_copy() -> None:
    cache = TextCache(max_bytes=1 << 20)
    made = [3, 1, 4]
    got = cache.ids("a", "pie", lambda t: made)
    assert got is made  # no second list built for the caller
    made[0] = 99  # the caller's to change
    assert list(cache.ids("a", "pie", lambda t: [0])) == [3, 1, 4]


def test_the_byte_bound_evicts_least_recently_used() -> None:
    cache = TextCache(max_bytes=2000)
    for i in range(100):
        cache.ids("o", f"text number {i}", lambda t: list(range(50)))
    assert 0 < len(cache) < 100
    assert cache.bytes <= 2000
    cache.ids("o", "text number 99", lambda t: [])  # most recent: still there
    assert cache.hits == 1


def test_large_texts_bypass_the_cache(registry: Registry) -> None:
    tok = registry.resolve("gpt2").tokenizer
    cache = TextCache(max_bytes=1 << 20, max_text_chars=10)
    cached = type(tok)(tok.vocab, tok.engine, tok.special_tokens, cache=cache, cache_owner="x")
    assert cached.count("hello world, again") == tok.count("hello world, again")
    assert cached.encode("short") == tok.encode("short")
    assert len(cache) == 1 and cache.misses == 1


def test_a_cached_tokenizer_gives_the_same_ids(registry: Registry) -> None:
    tok = registry.resolve("cl100k_base").tokenizer
    cache = TextCache(max_bytes=1 << 20)
    cached = type(tok)(tok.vocab, tok.engine, tok.special_tokens, cache=cache, cache_owner="x")
    text = "The same system prompt, again and again. 中文 🙂"
    for _ in range(3):
        assert cached.encode(text) == tok.encode(text)
        assert cached.count(text) == tok.count(text)
    assert cache.hits == 5 and cache.misses == 1
