"""The native engine's process-wide piece cache (service/bpe/csrc/piece_cache.h): it answers
repeated pieces without changing an id, stays within its bytes, keeps the pieces that are read
again through a flood of pieces seen once, is shared safely by threads, and starts empty in a
forked child. Ids are compared with the same engine with no cache."""

from __future__ import annotations

import os
import random
import string
import threading
from collections.abc import Callable, Iterator

import pytest
from litestar.testing import TestClient

from service.api.app import create_app
from service.bpe.engine import native
from service.bpe.engine.native import NativeEngine
from service.settings import Settings
from service.store.registry import Registry
from tests.support.testdata import CORPUS_NAMES, corpus_text


@pytest.fixture
def no_cache() -> Iterator[None]:
    """No piece cache yet, and no hot pieces in front of it (they would answer the short pieces
    these tests send to the cache); the defaults again afterwards."""
    native.configure_piece_cache(0)
    native.configure_hot_pieces(0)
    yield
    native.configure_piece_cache(0)
    native.configure_hot_pieces(Settings().hot_piece_bytes)


def words(seed: int, count: int, letters: tuple[int, int] = (9, 12)) -> list[str]:
    """Random lower-case words (of 9-12 letters: pieces that are no token and need merging)."""
    rng = random.Random(seed)
    return [
        "".join(rng.choices(string.ascii_lowercase, k=rng.randint(*letters))) for _ in range(count)
    ]


def thread_failures(engine: NativeEngine, texts: list[str], expected: list[list[int]]) -> list[str]:
    """Four threads at once, each in its own order, five times: encode, count and a batch of
    every text (over the size from which the GIL is released); what differed from `expected`."""
    failures: list[str] = []

    def work(seed: int) -> None:
        order = list(range(len(texts)))
        random.Random(seed).shuffle(order)
        for _ in range(5):
            for i in order:
                if engine.encode_ordinary(texts[i]) != expected[i]:
                    failures.append(f"text {i}")
                if engine.count_ordinary(texts[i]) != len(expected[i]):
                    failures.append(f"count {i}")
            if engine.encode_batch(texts) != expected:
                failures.append("batch")

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return failures


def in_forked_child(report: Callable[[], bytes]) -> bytes:
    """What `report` says in a forked child (which leaves at once)."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.write(write, report())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as f:
        said = f.read()
    os.waitpid(pid, 0)
    return said


def sample(metrics: str, name: str) -> float:
    """The value of the first series of a Prometheus text that starts with `name` (0 if none)."""
    lines = [x for x in metrics.splitlines() if x.startswith(name)]
    return float(lines[0].rsplit(" ", 1)[1]) if lines else 0.0


def stats() -> dict[str, int]:
    return native.piece_cache_stats()


def test_off_means_no_table_and_no_probe(registry: Registry, no_cache: None) -> None:
    registry.resolve("cl100k_base").tokenizer.engine.encode_ordinary(" ".join(words(1, 50)))
    assert stats() == dict.fromkeys(native.PIECE_CACHE_STATS, 0)


@pytest.mark.parametrize("name", ["gpt2", "cl100k_base", "o200k_base", "qwen3", "bard@1"])
def test_a_second_read_hits_and_gives_the_same_ids(
    registry: Registry, no_cache: None, name: str
) -> None:
    engine = registry.resolve(name).tokenizer.engine
    texts = [corpus_text(c)[:20_000] for c in CORPUS_NAMES]
    expected = [engine.encode_ordinary(t) for t in texts]
    native.configure_piece_cache(8 << 20)
    for _ in range(2):
        assert [engine.encode_ordinary(t) for t in texts] == expected
        assert [engine.count_ordinary(t) for t in texts] == [len(ids) for ids in expected]
        assert engine.encode_batch(texts) == expected
    after = stats()
    assert after["hits"] > 0 and after["inserts"] > 0
    assert 0 < after["entries"] <= after["inserts"]


def test_a_piece_seen_once_is_noted_not_kept(registry: Registry, no_cache: None) -> None:
    """The doorkeeper: a piece's first miss only sets a bit of its bucket (no insert, so text read
    once costs no writes); its second miss keeps it; the third read is answered by the table."""
    engine = registry.resolve("cl100k_base").tokenizer.engine
    text = " ".join(words(9, 300))
    expected = engine.encode_ordinary(text)
    native.configure_piece_cache(8 << 20)
    assert engine.encode_ordinary(text) == expected
    first = stats()
    # (two pieces of one bucket may share a seen bit: then the second is kept at once)
    assert first["misses"] > 0 and first["inserts"] * 20 <= first["misses"]
    assert first["hits"] <= first["inserts"]
    assert first["refused"] + first["inserts"] == first["misses"]
    assert engine.encode_ordinary(text) == expected
    second = stats()
    assert second["inserts"] > 0 and second["hits"] <= first["inserts"]
    assert engine.encode_ordinary(text) == expected
    third = stats()
    assert third["hits"] >= second["inserts"] and third["inserts"] == second["inserts"]


def test_same_bytes_in_two_vocabularies_are_two_entries(registry: Registry, no_cache: None) -> None:
    """The engine is part of the key: a piece cached for cl100k is not o200k's answer."""
    cl, o2 = (registry.resolve(n).tokenizer.engine for n in ("cl100k_base", "o200k_base"))
    text = " ".join(words(2, 300))
    want_cl, want_o2 = cl.encode_ordinary(text), o2.encode_ordinary(text)
    native.configure_piece_cache(8 << 20)
    for _ in range(2):
        assert cl.encode_ordinary(text) == want_cl
        assert o2.encode_ordinary(text) == want_o2


def test_the_table_stays_within_its_bytes(registry: Registry, no_cache: None) -> None:
    engine = registry.resolve("cl100k_base").tokenizer.engine
    native.configure_piece_cache(256 * 1024)
    text = " ".join(words(3, 20_000))
    assert engine.encode_ordinary(text) == engine.encode_ordinary(text)
    s = stats()
    assert 0 < s["capacity_bytes"] <= 256 * 1024
    assert s["entries"] <= s["capacity_entries"] < s["inserts"]


def test_a_flood_of_new_pieces_does_not_evict_the_ones_read_again(
    registry: Registry, no_cache: None
) -> None:
    """The common pieces fill the table (each read a few times); then pieces seen once, eight
    tables' worth: the common ones that were held are still held."""
    engine = registry.resolve("cl100k_base").tokenizer.engine
    native.configure_piece_cache(256 * 1024)
    common = [" " + w for w in words(4, stats()["capacity_entries"])]

    def held() -> int:
        before = stats()["hits"]
        for w in common:
            engine.encode_ordinary(w)
        return stats()["hits"] - before

    for _ in range(3):
        held()
    before_flood = held()
    flood = words(5, stats()["capacity_entries"] * 8)
    for i in range(0, len(flood), 500):
        engine.encode_ordinary(" " + " ".join(flood[i : i + 500]))
    assert held() >= 0.98 * before_flood > 0, before_flood


def test_threads_share_it_and_get_the_same_ids(registry: Registry, no_cache: None) -> None:
    """Texts over the size from which the GIL is released, encoded by four threads at once."""
    engine = registry.resolve("o200k_base").tokenizer.engine
    texts = [corpus_text(c)[i : i + 6000] for c in CORPUS_NAMES for i in (0, 6000)]
    expected = [engine.encode_ordinary(t) for t in texts]
    native.configure_piece_cache(1 << 20)  # small: inserts, refusals and evictions race
    assert thread_failures(engine, texts, expected) == []
    assert stats()["hits"] > 0


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform")
def test_a_forked_child_starts_with_an_empty_cache(registry: Registry, no_cache: None) -> None:
    engine = registry.resolve("cl100k_base").tokenizer.engine
    text = " ".join(words(6, 400))
    expected = engine.encode_ordinary(text)
    native.configure_piece_cache(1 << 20)
    for _ in range(2):  # a piece is kept on its second miss
        engine.encode_ordinary(text)
    assert stats()["entries"] > 0

    def report() -> bytes:
        s0 = stats()
        reads = [engine.encode_ordinary(text) for _ in range(3)]  # noted, kept, hit
        s1 = stats()
        ok = (
            s0["entries"] == s0["hits"] == 0
            and s1["misses"] > 0
            and s1["hits"] > 0
            and reads == [expected] * 3
        )
        return b"ok" if ok else repr((s0, s1)).encode()

    said = in_forked_child(report)
    assert said == b"ok", said
    assert stats()["entries"] > 0  # the parent keeps its own


def test_the_same_size_keeps_it_and_zero_drops_it(registry: Registry, no_cache: None) -> None:
    engine = registry.resolve("gpt2").tokenizer.engine
    text = " ".join(words(7, 100))
    native.configure_piece_cache(1 << 20)
    for _ in range(2):  # a piece is kept on its second miss
        engine.encode_ordinary(text)
    held = stats()["entries"]
    native.configure_piece_cache(1 << 20)
    assert stats()["entries"] == held > 0
    native.configure_piece_cache(0)
    assert stats()["capacity_bytes"] == 0


def test_metrics_show_its_lookups_and_size(registry: Registry, no_cache: None) -> None:
    native.configure_piece_cache(1 << 20)
    body = {"text": " ".join(words(8, 200))}
    with TestClient(create_app(Settings(text_cache_bytes=0), registry)) as client:
        before = client.get("/metrics").text
        for _ in range(3):  # the first miss of a piece is noted, the second kept, then hits
            assert client.post("/v1/tokenizers/cl100k_base/count", json=body).status_code == 200
        after = client.get("/metrics").text
    s = stats()
    hit, miss = (
        'toksvc_piece_cache_lookups_total{result="hit"}',
        ('toksvc_piece_cache_lookups_total{result="miss"}'),
    )
    assert sample(after, hit) - sample(before, hit) >= 200 and sample(after, miss) >= 200
    assert sample(after, "toksvc_piece_cache_capacity_bytes") == s["capacity_bytes"] > 0
    assert sample(after, "toksvc_piece_cache_entries") == s["entries"] > 0
