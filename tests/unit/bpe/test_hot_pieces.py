"""Each native engine's table of hot pieces (service/bpe/csrc/hot_pieces.h): it answers the pieces
it has seen without changing an id (encode, count, batch, in any order), stays within its bytes,
keeps the pieces read again through a flood of pieces seen once, runs one call at a time while
other threads go without it, and starts empty in a forked child. Ids are compared with the same
engine with hot pieces off."""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from litestar.testing import TestClient

from service.api.app import create_app
from service.bpe.engine import native
from service.settings import Settings
from service.store.registry import Registry
from tests.support.testdata import CORPUS_NAMES, corpus_text
from tests.unit.bpe.test_piece_cache import in_forked_child, sample, thread_failures, words
from tests.unit.bpe.test_wordcut import M, crossing
from tests.unit.store.test_hf_pipeline import served

DEFAULT = Settings().hot_piece_bytes


@pytest.fixture
def hot_off() -> Iterator[None]:
    native.configure_piece_cache(0)
    native.configure_hot_pieces(0)
    yield
    native.configure_hot_pieces(DEFAULT)


def stats() -> dict[str, int]:
    return native.hot_pieces_stats()


def native_refs(registry: Registry) -> list[str]:
    return [
        f"{t.name}@{t.version}"
        for t in registry
        if isinstance(t.tokenizer.engine, native.NativeEngine)
    ]


def test_the_default_is_on_and_small() -> None:
    assert 0 < DEFAULT <= 1 << 20


@pytest.mark.parametrize(
    "name", ["gpt2", "cl100k_base", "o200k_base", "qwen3", "qwen3.6", "bard@1"]
)
def test_reads_in_any_order_give_the_ids_of_no_table(
    registry: Registry, hot_off: None, name: str
) -> None:
    engine = registry.resolve(name).tokenizer.engine
    texts = [corpus_text(c)[:20_000] for c in CORPUS_NAMES]
    start = stats()
    expected = [engine.encode_ordinary(t) for t in texts]
    assert stats() == start  # off: no probe
    native.configure_hot_pieces(DEFAULT)
    # a count first keeps counts only; the encodes after it must still give every id
    assert [engine.count_ordinary(t) for t in texts] == [len(ids) for ids in expected]
    for _ in range(2):
        assert [engine.encode_ordinary(t) for t in texts] == expected
        assert engine.encode_batch(texts) == expected
        assert engine.count_batch(texts) == [len(ids) for ids in expected]
    s = {k: v - start[k] for k, v in stats().items()}
    assert s["hits"] > s["misses"] > 0 and s["inserts"] > 0


def test_every_shipped_native_engine_agrees_with_itself_without_the_table(
    registry: Registry, hot_off: None
) -> None:
    text = "".join(corpus_text(c)[:4000] for c in CORPUS_NAMES)
    refs = native_refs(registry)
    assert len(refs) >= 10
    for name in refs:
        engine = registry.resolve(name).tokenizer.engine
        native.configure_hot_pieces(0)
        expected = engine.encode_ordinary(text)
        native.configure_hot_pieces(DEFAULT)
        assert [engine.encode_ordinary(text) for _ in range(2)] == [expected] * 2, name


TABLE_SCRIPT = """
import gc, json, sys
from service.bpe.engine import native
from service.runtime import engine_factory
from service.settings import BUNDLED_STORE
from service.store.loader import load_store
registry = load_store(BUNDLED_STORE, engine_factory("auto"), only="cl100k_base")
loaded = registry.resolve("cl100k_base")
engine = native.NativeEngine(loaded.tokenizer.vocab, loaded.pattern, "cl100k")
native.configure_hot_pieces(int(sys.argv[1]))
before = native.hot_pieces_stats()
text = " ".join(str(i) + "abc" * (i % 7) for i in range(20000))
same = engine.encode_ordinary(text) == engine.encode_ordinary(text)
used = native.hot_pieces_stats()
del engine
gc.collect()
print(json.dumps([same, before, used, native.hot_pieces_stats()]))
"""


def test_a_table_stays_within_its_bytes() -> None:
    """A new engine's table is the largest power of two of 640-byte groups of sets (eight large
    entries, eight small) within the size asked, made on its first use, and given back with the
    engine.
    In a process of its own: nothing else there makes or frees a table meanwhile."""
    run = subprocess.run(
        [sys.executable, "-c", TABLE_SCRIPT, str(64 * 1024 + 100)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    same, before, used, after = json.loads(run.stdout)
    assert same and used["table_bytes"] == 64 * 1024 + 100
    # the table, and the backtracking encoder's 65,536 answers for pairs of tokens beside it
    # (4 bytes each, after a 4-byte header)
    grown = (used["tables"] - before["tables"], used["held_bytes"] - before["held_bytes"])
    assert grown == (1, 64 * 640 + 4 + 65536 * 4)
    assert (after["tables"], after["held_bytes"]) == (before["tables"], before["held_bytes"])


@pytest.mark.parametrize("kind", ["one-token pieces", "merged pieces"])
def test_a_flood_of_new_pieces_does_not_evict_the_ones_read_again(
    registry: Registry, hot_off: None, kind: str
) -> None:
    """Common pieces (a tenth of the entries of their kind, each read again and again), then
    pieces seen once, several tables' worth, read between them: the common pieces are still
    answered by the table. One-token pieces of up to 8 bytes (" word", tokens of the vocabulary)
    have small entries; merged pieces (random words of 9-12 letters) large ones, as many."""
    tokenizer = registry.resolve("cl100k_base").tokenizer
    engine = tokenizer.engine
    nbytes = 256 * 640  # 2,048 small entries and 2,048 large
    # a fixed key: which common pieces share a set (and take turns in it, flood or not) depends
    # on it, so a random one made this test fail on some runs (merged pieces: 1 of 30 keys tried)
    native.configure_hot_pieces(nbytes, seed=bytes(range(16)))
    if kind == "one-token pieces":
        pieces = [t.decode() for t in tokenizer.vocab.tokens if re.fullmatch(rb" [a-z]{3,7}", t)]
        random.Random(4).shuffle(pieces)
        common, flood = pieces[:204], pieces[204 : 204 + 2048 * 6]
        assert len(flood) > 2048 * 4
    else:
        common = [" " + w for w in words(4, 204)]
        flood = [" " + w for w in words(5, 2048 * 6)]

    def hits_of(text: str) -> int:
        before = stats()["hits"]
        engine.encode_ordinary(text)
        return stats()["hits"] - before

    for _ in range(4):
        hits_of("".join(common))
    chunks = range(0, len(flood), 200)
    quiet = [hits_of("".join(common)) for _ in chunks]  # read as often, with no flood between
    during = []
    for i in chunks:
        engine.encode_ordinary("".join(flood[i : i + 200]))
        during.append(hits_of("".join(common)))  # still read, as a service's common pieces are
    # (common pieces that share a set take turns, flood or not: compare with the quiet reads)
    assert sum(during) >= 0.97 * sum(quiet) > 0.9 * len(common) * len(quiet), (quiet, during)


def test_threads_get_the_same_ids(registry: Registry, hot_off: None) -> None:
    """Texts over the size from which the GIL is released, by four threads at once on one engine:
    one holds the table, the others run without it; every id is the same."""
    engine = registry.resolve("o200k_base").tokenizer.engine
    texts = [corpus_text(c)[i : i + 6000] for c in CORPUS_NAMES for i in (0, 6000)]
    expected = [engine.encode_ordinary(t) for t in texts]
    native.configure_hot_pieces(8192)  # small: evictions race with the other threads' reads
    assert thread_failures(engine, texts, expected) == []
    assert stats()["hits"] > 0


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform")
def test_a_forked_child_starts_with_an_empty_table(registry: Registry, hot_off: None) -> None:
    engine = registry.resolve("cl100k_base").tokenizer.engine
    text = " ".join(words(6, 400, (5, 9)))
    expected = engine.encode_ordinary(text)
    native.configure_hot_pieces(DEFAULT)
    engine.encode_ordinary(text)
    assert stats()["hits"] > 0

    def report() -> bytes:
        s0 = stats()
        first = engine.encode_ordinary(text)
        s1 = stats()
        second = engine.encode_ordinary(text)
        s2 = stats()
        ok = (
            s0["hits"] == s0["misses"] == 0
            and s1["misses"] > 0
            and s2["hits"] > s1["hits"]
            and first == second == expected
        )
        return b"ok" if ok else repr((s0, s1, s2)).encode()

    said = in_forked_child(report)
    assert said == b"ok", said


@pytest.mark.parametrize("size", [0, 639])
def test_off_means_no_probe(registry: Registry, hot_off: None, size: int) -> None:
    """0, or a size under one group of sets (640 bytes), is off: no table, no probe."""
    native.configure_hot_pieces(size)
    start = stats()
    registry.resolve("gpt2").tokenizer.engine.encode_ordinary(" ".join(words(7, 100, (5, 9))))
    assert stats() == start and start["table_bytes"] == size


def test_metrics_show_its_lookups_and_bytes(registry: Registry, hot_off: None) -> None:
    # a size no test asks for elsewhere: the engine's table is made anew, empty (a table that
    # earlier tests filled would make the new words wait for their sets)
    native.configure_hot_pieces(DEFAULT // 2)
    body = {"text": " ".join(words(8, 200, (5, 9)))}
    with TestClient(create_app(Settings(text_cache_bytes=0), registry)) as client:
        before = client.get("/metrics").text
        for _ in range(2):
            assert client.post("/v1/tokenizers/cl100k_base/count", json=body).status_code == 200
        after = client.get("/metrics").text
    hit, miss = (
        'toksvc_hot_pieces_lookups_total{result="hit"}',
        'toksvc_hot_pieces_lookups_total{result="miss"}',
    )
    # the second request's 200 pieces: most are hits (a piece whose set is full waits)
    assert sample(after, hit) - sample(before, hit) >= 150
    assert sample(after, miss) - sample(before, miss) > 0
    assert sample(after, "toksvc_hot_pieces_bytes") == stats()["held_bytes"] > 0


def test_the_word_cut_path_gives_the_reference_ids(tmp_path: Path, hot_off: None) -> None:
    """The native word cut of a SentencePiece-shaped pipeline (Gemma 3's) with no table, a table
    of one group of sets (eight large entries and eight small: pieces kept, evicted and answered
    in turn) and the default one: the reference's ids."""
    tok = crossing()
    (_, ours), *_ = served(tmp_path, tok)
    words = ours._words
    assert words is not None
    rng = random.Random(11)
    parts = ["a", "b", "cde", " ", "  ", "</", ">", "é", "中"]
    texts = ["".join(rng.choices(parts, k=rng.randint(0, 60))) for _ in range(300)]
    want = [tok.encode(t, add_special_tokens=False).ids for t in texts]
    for size in (0, 640, DEFAULT):
        native.configure_hot_pieces(size)
        before = stats()["hits"]
        assert [words([t.replace(" ", M)]) for t in texts] == want, size
        assert (stats()["hits"] > before) == (size > 0)


def test_a_count_keeps_as_many_pieces_as_an_encode(registry: Registry, hot_off: None) -> None:
    """Counting knows the id of a piece that is one token, so it keeps it in the small entries as
    encoding does: a second count of a text hits about as often as a second encode."""

    loaded = registry.resolve("cl100k_base")

    def second_read_hit_rate(read: str) -> float:
        """On a new engine (an empty table) of the same vocabulary."""
        call = getattr(native.NativeEngine(loaded.tokenizer.vocab, loaded.pattern, "cl100k"), read)
        text = "".join(corpus_text(c)[:60_000] for c in CORPUS_NAMES)
        call(text)
        before = stats()
        call(text)
        after = stats()
        hits, misses = (after[k] - before[k] for k in ("hits", "misses"))
        return hits / (hits + misses)

    native.configure_hot_pieces(DEFAULT)
    encode, count = second_read_hit_rate("encode_ordinary"), second_read_hit_rate("count_ordinary")
    assert count >= encode - 0.01 and encode > 0.8, (count, encode)


def test_a_call_of_new_pieces_stops_probing(registry: Registry, hot_off: None) -> None:
    """Random words are new piece after piece: after its first 4,096 probes (under one hit in five)
    the call goes on without the table, with the same ids; the next call of prose probes again."""
    engine = registry.resolve("cl100k_base").tokenizer.engine
    noise = " ".join(words(12, 40_000))
    prose = corpus_text("en_shakespeare.txt")[:100_000]
    want = engine.encode_ordinary(noise), engine.encode_ordinary(prose)
    native.configure_hot_pieces(DEFAULT)
    before = stats()
    assert engine.encode_ordinary(noise) == want[0]
    mid = stats()
    probes = (mid["hits"] - before["hits"]) + (mid["misses"] - before["misses"])
    assert 4096 <= probes <= 4200, probes
    assert len(want[0]) > 10 * probes  # the text has far more pieces than that
    assert engine.encode_ordinary(prose) == want[1]
    assert stats()["hits"] - mid["hits"] > len(want[1]) // 2
