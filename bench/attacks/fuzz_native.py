"""Bounded fuzz of the native engine (run by bench/attacks/fuzz_native.sh under ASan + UBSan).

`--so PATH` loads that build of the extension in place of the installed one. For --seconds, hypothesis
throws arbitrary text (any code point but surrogates, long runs, boundaries) at every entry point of
every shipped tokenizer's engine, with every scanner (the v2 chains' too); the checks are cheap
invariants (ids decode to the text's bytes, count == len(encode), batch == single, a second pass
equal to the first, a scanner's pieces cover the text), the sanitizers catch memory and
undefined-behaviour errors. Each example runs with the process's piece cache off, tiny (a few
buckets: evictions and refusals), or small, and now and then with threads encoding at once. The
scan of the spans NFC or NFKC may change (normal_spans.h), and its ordering of runs of marks, are
checked against `unicodedata` on texts of all three widths (Latin-1, BMP, astral).
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import threading
import time
from array import array
from collections.abc import Callable
from typing import TYPE_CHECKING

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

if TYPE_CHECKING:  # imported after --so has loaded the build under test
    from service.bpe.engine.native import NativeEngine
    from service.store.registry import Registry

# an engine, its name and the bytes of its ids; the same vocabulary under the pairs and ranks rules
Named = tuple[str, "NativeEngine", list[bytes | None]]
Twins = tuple["NativeEngine", "NativeEngine"]


def load_extension(path: str) -> None:
    spec = importlib.util.spec_from_file_location("service.bpe._native", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["service.bpe._native"] = module
    spec.loader.exec_module(module)


def build_check() -> Callable[[], None]:
    """A hypothesis test: build_tokens (the start-up merge check in C) verifies exactly what the
    reference checks accept, and builds the same bytes."""
    from service.bpe.engine import native
    from service.store import validation
    from service.store.formats.tokenizer import TokenizerFile

    ids = st.one_of(st.integers(0, 300), st.integers(0, 2**24 - 1))
    chain = st.lists(st.tuples(st.integers(0, 300), st.integers(0, 300)), max_size=60).map(
        lambda pairs: [(a, b, 256 + i) for i, (a, b) in enumerate(pairs)]
    )  # consecutive new ids: often valid for both rules, until a child is not yet defined

    @settings(
        max_examples=40, deadline=None, database=None, suppress_health_check=list(HealthCheck)
    )
    @given(
        rule=st.sampled_from(["ranks", "pairs"]),
        merges=st.one_of(chain, st.lists(st.tuples(ids, ids, ids), max_size=40)),
    )
    def check_build(rule: str, merges: list[tuple[int, int, int]]) -> None:
        tf = TokenizerFile(name="f", version="1", rule=rule, pattern=None, merges=merges)  # type: ignore[arg-type]
        seed = validation._check_byte_ids(tf)
        built = native.build_tokens(rule, dict(seed), merges)
        try:
            validation._check_merges(tf, seed)
            if rule == "ranks":
                validation._check_unique_bytes(seed)
        except validation._Rule:
            assert built is None
            return
        assert built is not None
        assert {i: b for i, b in enumerate(built[0]) if b is not None} == seed

    return check_build  # type: ignore[no-any-return]


def random_vocab_check() -> Callable[[], None]:
    """Odd vocabularies against the reference, on pieces around the backtracking and heap
    thresholds: `ranks` with duplicate bytes (the later id wins), holes, a byte at a late id, a
    token over 1024 bytes; `pairs` with permuted byte ids and, now and then, an id made twice."""
    from service.bpe.engine.native import NativeEngine
    from service.bpe.vocab import Vocabulary

    def word(abc: bytes, lo: int, hi: int) -> st.SearchStrategy[bytes]:
        return st.lists(st.sampled_from(list(abc)), min_size=lo, max_size=hi).map(bytes)

    @settings(
        max_examples=10, deadline=None, database=None, suppress_health_check=list(HealthCheck)
    )
    @given(data=st.data(), abc=st.sampled_from([b"ab", b"abc", b"abcdefgh"]))
    def check(data: st.DataObject, abc: bytes) -> None:
        if data.draw(st.booleans()):
            tokens: list[bytes | None] = [bytes([b]) for b in range(256)]
            tokens += data.draw(st.lists(word(abc, 2, 12), min_size=1, max_size=60))
            tokens += data.draw(st.lists(word(abc, 1020, 1030), max_size=1))
            for i in data.draw(st.lists(st.integers(256, len(tokens) - 1), max_size=3)):
                tokens[i] = None
            if data.draw(st.booleans()):
                tokens[abc[0]], tokens[len(tokens) - 1] = None, bytes(abc[:1])
            vocab = Vocabulary("ranks", range(256), tokens, array("I"))
        else:
            byte_ids = data.draw(st.permutations(range(256)))
            ids, merges = [byte_ids[c] for c in abc], []
            for _ in range(data.draw(st.integers(1, 60))):
                pair = (data.draw(st.sampled_from(ids)), data.draw(st.sampled_from(ids)))
                made = ids[len(abc) :]
                reuse = made and data.draw(st.integers(0, 9)) == 0  # an id made twice
                new = data.draw(st.sampled_from(made)) if reuse else 256 + len(merges)
                merges.append((*pair, new))
                ids.append(new)
            vocab = Vocabulary.build("pairs", merges, byte_ids)
        engine = NativeEngine(vocab, None)
        known = [t for t in vocab.tokens if t and t[0] in abc]
        for n in data.draw(
            st.lists(st.sampled_from([15, 16, 17, 63, 64, 65, 1024, 1025]), min_size=1, max_size=4)
        ):
            parts = data.draw(st.lists(st.sampled_from(known), min_size=1, max_size=n))
            piece = (
                (b"".join(parts) * n)[:n]
                if data.draw(st.booleans())
                else data.draw(word(abc, n, n))
            )
            assert engine.merge_bytes(piece) == vocab.merge_piece(piece), (vocab.tokens, piece)

    return check


def scanner_check(engines: list[NativeEngine], texts: st.SearchStrategy[str]) -> Callable[[], None]:
    """Every scanner (a v2 file's chain included) on any engine's tables: its pieces cover the
    text, and its cut-and-merge (`encode_split`) equals merging those pieces one by one."""
    from service.bpe.engine import native

    @settings(
        max_examples=40, deadline=None, database=None, suppress_health_check=list(HealthCheck)
    )
    @given(
        text=texts,
        engine=st.sampled_from(engines),
        scanner=st.sampled_from(sorted(native.SCANNERS)),
    )
    def check(text: str, engine: NativeEngine, scanner: str) -> None:
        cut = native.split(scanner, text)
        assert "".join(cut) == text and all(cut), scanner
        assert engine.encode_split(scanner, text) == engine.encode_pieces(cut), scanner

    return check  # type: ignore[no-any-return]


def words_check(engines: list[NativeEngine], texts: st.SearchStrategy[str]) -> Callable[[], None]:
    """The word cut (`encode_words`): stretches cut before the mark except in the contexts,
    as a plain bytes search cuts them, each piece merged alone; ids put as they are."""
    marks = st.sampled_from(["\u2581", " ", "a", "中", "😀", "\x00"])
    side = st.one_of(st.binary(max_size=6), st.sampled_from([b"\xe2\x96", b"\xe2\x96\x81", b">"]))

    @settings(
        max_examples=40, deadline=None, database=None, suppress_health_check=list(HealthCheck)
    )
    @given(
        items=st.lists(st.one_of(texts, st.integers(0, 2**24)), max_size=6),
        engine=st.sampled_from(engines),
        mark=marks,
        ctx=st.lists(st.tuples(side, side), max_size=8),
    )
    def check(
        items: list[str | int], engine: NativeEngine, mark: str, ctx: list[tuple[bytes, bytes]]
    ) -> None:
        m, want = mark.encode(), []
        for item in items:
            if isinstance(item, int):
                want.append(item)
                continue
            data, p, q = item.encode(), 0, item.encode().find(m, 1)
            while q != -1:
                if not any(data[:q].endswith(b) and data[q:].startswith(a) for b, a in ctx):
                    want += engine.merge_bytes(data[p:q])
                    p = q
                q = data.find(m, q + 1)
            want += engine.merge_bytes(data[p:])
        assert engine.encode_words(m, ctx, items) == want

    return check  # type: ignore[no-any-return]


def rules_check(pairs: list[Twins], texts: st.SearchStrategy[str]) -> Callable[[], None]:
    """A self-consistent `pairs` vocabulary's engine under the `ranks` rule (as served) gives the
    ids of its engine under the `pairs` rule."""

    @settings(
        max_examples=40, deadline=None, database=None, suppress_health_check=list(HealthCheck)
    )
    @given(text=texts, which=st.integers(0, max(0, len(pairs) - 1)))
    def check(text: str, which: int) -> None:
        if pairs:
            as_pairs, as_ranks = pairs[which]
            assert as_ranks.encode_ordinary(text) == as_pairs.encode_ordinary(text)

    return check


def normal_check(texts: st.SearchStrategy[str]) -> Callable[[], None]:
    """The scan of spans NFC or NFKC may change (normal_spans.h), on 1-, 2- and 4-byte strings
    and the characters it treats apart: the text with only its spans normalized is
    `unicodedata.normalize`'s, and the parts put together are the text."""
    import unicodedata

    from service.bpe.pipeline import normal_forms

    spans = normal_forms.SPANS
    assert spans is not None, "normal_tables.h of another Unicode version than this Python's"
    tricky = st.sampled_from(
        [
            "a",
            "e\u0301",
            "\u0301",
            "\u0323",
            "\u0344",
            "\u00a0",
            "\u00e9",
            "\u00ff",
            "\u1100",
            "\u1161",
            "\u11a8",
            "\uac00",
            "\u3131",
            "न",
            "\u093c",
            "\u0958",
            "\u0b47",
            "\u0b3e",
            "\uff76",
            "\uff9e",
            "\n",
            "\U0001d15e",
            "\U0001d165",
            "\U000110ba",
            "\U0002f800",
            "😀",
        ]
    )
    latin1 = st.text(st.characters(max_codepoint=0xFF), max_size=200)
    bmp = st.text(st.characters(max_codepoint=0xFFFF, exclude_categories=("Cs",)), max_size=200)
    mixed = st.lists(
        st.one_of(tricky, st.tuples(tricky, st.integers(1, 300)).map(lambda t: t[0] * t[1])),
        max_size=40,
    ).map("".join)

    @settings(
        max_examples=40, deadline=None, database=None, suppress_health_check=list(HealthCheck)
    )
    @given(text=st.one_of(texts, latin1, bmp, mixed), nfkc=st.booleans())
    def check(text: str, nfkc: bool) -> None:
        form: normal_forms.Form = "NFKC" if nfkc else "NFC"
        parts = spans(form, text)
        assert parts is None or "".join(parts) == text
        assert normal_forms.by_spans(spans, form, text) == unicodedata.normalize(form, text)
        # a run of marks ordered in C (normal_ordered), as `unicodedata` orders it
        decomposed = unicodedata.normalize(normal_forms.DECOMPOSED[form], text)
        assert normal_forms.ordered(form, text) == decomposed

    return check  # type: ignore[no-any-return]


def configure_caches(piece_cache: int, hot_pieces: int) -> None:
    """The piece cache (per process) and the tables of hot pieces (per engine), in bytes."""
    from service.bpe.engine import native

    native.configure_piece_cache(piece_cache)
    native.configure_hot_pieces(hot_pieces)


def fuzz_texts() -> st.SearchStrategy[str]:
    """Any code point but surrogates, long runs of one character, the scanners' boundaries, and
    ASCII runs of one class around the scanners' 16-byte blocks (ascii_runs.h), ending at the
    text's end or at any character."""
    any_char = st.characters(exclude_categories=("Cs",))
    boundary = st.sampled_from(
        [
            " ",
            "\n",
            "\r",
            "\t",
            "'",
            "s",
            "S",
            "\u017f",
            "1",
            "A",
            "a",
            "\u0301",
            "\u00a0",
            "/",
            "é",
            "中",
            "😀",
            "\u3000",
            "ǅ",
            "\x00",
            "\U0010ffff",
            "\U000e0001",
            "\u0663",
            "\u30ab",
            "\u30fb",
            "\u309b",
            "\u3040",
            "\u9fa6",
            ",a",
            "\u200d",
        ]
    )
    runs = st.tuples(st.one_of(boundary, any_char), st.integers(1, 5000)).map(lambda t: t[0] * t[1])
    ascii_class = st.sampled_from(
        [
            "abcxyzABCXYZ",
            "0123456789",
            " \t\n\r\x0b\x0c",
            " ",
            "!#/:@[`{~\x00\x1f\x7f",
            "aé",
            " \u00a0",
            "!\u0301",
        ]
    )
    block_runs = st.tuples(ascii_class, st.integers(0, 40)).flatmap(
        lambda t: st.text(st.sampled_from(t[0]), min_size=t[1], max_size=t[1])
    )
    return st.lists(
        st.one_of(
            st.text(any_char, max_size=64),
            st.lists(boundary, max_size=32).map("".join),
            runs,
            block_runs,
        ),
        max_size=8,
    ).map("".join)


def shipped_engines(registry: Registry) -> tuple[list[Named], list[Twins]]:
    """Every shipped tokenizer's engine as served, the same vocabulary with no pattern and with
    a custom one (each with the bytes of its ids), and the twins of rules_check."""
    from service.bpe.engine.native import NativeEngine, scanner_of

    engines: list[Named] = []
    twins: list[Twins] = []  # (pairs rule, ranks rule as served) of each self-consistent pairs
    for t in registry:
        assert isinstance(t.tokenizer.engine, NativeEngine)
        vocab = t.tokenizer.vocab
        # a SentencePiece-style file's engine also makes the ids of characters rebuilt from
        # bytes (synthetic merges); their bytes are those of the byte-fallback ids they expand to
        tokens = list(vocab.tokens)
        pipeline = t.tokenizer.pipeline
        for made, parts in pipeline.expand.items():
            tokens[made] = b"".join(vocab.tokens[i] or b"" for i in parts)
        engines.append((t.ref, t.tokenizer.engine, tokens))
        if vocab.rule == "pairs" and t.self_consistent and pipeline.engine_cuts:
            scanner = scanner_of(t.pattern)
            twins.append(
                (
                    NativeEngine(vocab, t.pattern, scanner),
                    NativeEngine(vocab, t.pattern, scanner, as_ranks=True),
                )
            )
        engines.append((t.ref + " (no pattern)", NativeEngine(vocab, None), tokens))
        engines.append((t.ref + " (custom)", NativeEngine(vocab, r"\w+|\s+|[^\w\s]+"), tokens))
    return engines, twins


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--so", help="the sanitizer build of service.bpe._native")
    ap.add_argument("--seconds", type=float, default=90)
    args = ap.parse_args()
    if args.so:
        load_extension(args.so)

    from service.bpe.engine import native
    from service.runtime import engine_factory
    from service.settings import BUNDLED_STORE
    from service.store.loader import load_store

    assert native.AVAILABLE
    registry = load_store(BUNDLED_STORE, engine_factory("auto"))
    assert not registry.failures, registry.failures
    engines, twins = shipped_engines(registry)
    texts = fuzz_texts()

    @settings(
        max_examples=40, deadline=None, database=None, suppress_health_check=list(HealthCheck)
    )
    @given(
        text=texts,
        which=st.integers(0, len(engines) - 1),
        raw=st.binary(max_size=300),
        caches=st.tuples(
            st.sampled_from([0, 0, 4096, 20_000, 1 << 20]),
            st.sampled_from([0, 640, 4096, 640 << 10]),
        ),
        threads=st.booleans(),
    )
    def check(text: str, which: int, raw: bytes, caches: tuple[int, int], threads: bool) -> None:
        name, engine, tokens = engines[which]
        configure_caches(0, 0)
        plain = engine.encode_ordinary(text)  # no cache of either kind: what the caches must give
        configure_caches(*caches)
        ids = engine.encode_ordinary(text)
        assert ids == plain, name
        assert b"".join(tokens[i] or b"" for i in ids) == text.encode(), name
        assert engine.count_ordinary(text) == len(ids), name
        assert engine.encode_batch([text, text[: len(text) // 2]])[0] == ids, name
        assert engine.count_batch([text]) == [len(ids)], name
        assert engine.encode_ordinary(text) == ids, name
        if threads:  # the GIL is released from 2 KB and for batches: threads share the caches
            seen: list[bool] = []
            work = [
                threading.Thread(
                    target=lambda: seen.append(
                        engine.encode_batch([text, text]) == [ids, ids]
                        and engine.encode_ordinary(text) == ids
                    )
                )
                for _ in range(3)
            ]
            for t in work:
                t.start()
            for t in work:
                t.join()
            assert seen == [True] * 3, name
        merged = engine._engine.merge_bytes(raw)
        assert b"".join(tokens[i] or b"" for i in merged) == raw, name

    checks = [
        check,
        scanner_check([e for _, e, _ in engines], texts),
        build_check(),
        words_check([e for _, e, _ in engines], texts),
        random_vocab_check(),
        rules_check(twins, texts),
        normal_check(texts),
    ]

    deadline, rounds = time.monotonic() + args.seconds, 0
    while time.monotonic() < deadline:
        for one in checks:
            one()
        rounds += 1
    print(
        f"fuzz_native: {rounds * 40} examples over {len(engines)} engines ({len(twins)} pairs "
        "vocabularies also under both rules), as many scanner "
        f"cuts, {rounds * 40} merge lists checked at load, odd vocabularies, and as many texts "
        "normalized by spans, no failure"
    )


if __name__ == "__main__":
    main()
