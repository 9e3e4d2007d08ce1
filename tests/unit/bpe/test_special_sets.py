"""A call's allowed and disallowed special tokens compile nothing: the tokenizer's one regex of
its literals serves every set, and finds what a regex of the set alone would (checked against
a plain leftmost-longest search)."""

from __future__ import annotations

import itertools
import random
import re
from collections.abc import Callable, Set
from typing import Any

import pytest

from service.bpe import PythonEngine, Tokenizer, Vocabulary
from service.bpe.pipeline.added_tokens import AddedLiteral
from service.bpe.pipeline.pipeline import Pipeline
from service.bpe.specials import SpecialSet
from service.errors import DisallowedSpecialError

# literals that overlap and nest: "<a>" inside "<a>b", "a>b<" across both, ...
SPECIALS = ["<a>", "<a>b", "a>b<", "<a>b<c>", "b<c", "<c>", "<", "c>c", "<a>b<c>d", "x<a>"]
SPECIAL_IDS = {s: 1000 + i for i, s in enumerate(SPECIALS)}
ADDED = {"<a": 2000, "b<c>": 2001}  # non-special added tokens, always split out
VOCAB = Vocabulary.build("pairs", [(97, 98, 256)])


def v1() -> Tokenizer:
    return Tokenizer(VOCAB, PythonEngine(VOCAB, r"\w+|[^\w\s]+|\s+"), SPECIAL_IDS)


def v2() -> Tokenizer:
    added = [AddedLiteral(s, i, special=True) for s, i in SPECIAL_IDS.items()]
    added += [AddedLiteral(s, i) for s, i in ADDED.items()]
    return Tokenizer(VOCAB, PythonEngine(VOCAB, None), pipeline=Pipeline(added))


def leftmost_longest(text: str, literals: Set[str]) -> list[tuple[int, str]]:
    out, i = [], 0
    while i < len(text):
        here = [lit for lit in literals if text.startswith(lit, i)]
        if here:
            lit = max(here, key=len)
            out.append((i, lit))
            i += len(lit)
        else:
            i += 1
    return out


def expected(tok: Tokenizer, text: str, allowed: Set[str], disallowed: Set[str]) -> Any:
    """The ids (or the refused literal and its position) by the plain search."""
    if found := leftmost_longest(text, disallowed)[:1]:
        return ("refused", found[0][1], found[0][0])
    added = {a.content: a.id for a in tok.pipeline.added if not a.special}
    live = {**{s: SPECIAL_IDS[s] for s in allowed}, **added}
    ids: list[int] = []
    at = 0
    for start, lit in leftmost_longest(text, set(live)):
        ids += tok.encode(text[at:start], disallowed_special=frozenset()) if start > at else []
        ids.append(live[lit])
        at = start + len(lit)
    return ids + (tok.encode(text[at:], disallowed_special=frozenset()) if at < len(text) else [])


def got(tok: Tokenizer, text: str, allowed: Set[str], disallowed: SpecialSet) -> Any:
    try:
        ids = tok.encode(text, allowed_special=allowed, disallowed_special=disallowed)
    except DisallowedSpecialError as err:
        return ("refused", err.token, err.position)
    assert tok.count(text, allowed_special=allowed, disallowed_special=disallowed) == len(ids)
    return ids


def subsets() -> list[tuple[frozenset[str], frozenset[str]]]:
    rng = random.Random(7)
    out = []
    for _ in range(300):
        allowed = frozenset(s for s in SPECIALS if rng.random() < 0.5)
        rest = [s for s in SPECIALS if s not in allowed]
        out.append((allowed, frozenset(s for s in rest if rng.random() < 0.3)))
    return out


def texts() -> list[str]:
    rng = random.Random(11)
    parts = [*SPECIALS, *ADDED, "a", "b", "c", "d", " ", "x"]
    return ["".join(rng.choice(parts) for _ in range(rng.randint(1, 12))) for _ in range(40)]


@pytest.mark.parametrize("make", [v1, v2], ids=["v1", "v2"])
def test_every_set_finds_what_a_leftmost_longest_search_of_it_finds(
    make: Callable[[], Tokenizer],
) -> None:
    tok = make()
    for (allowed, disallowed), text in itertools.product(subsets()[:60], texts()):
        assert got(tok, text, allowed, disallowed) == expected(tok, text, allowed, disallowed), (
            text,
            sorted(allowed),
            sorted(disallowed),
        )


@pytest.mark.parametrize("make", [v1, v2], ids=["v1", "v2"])
def test_distinct_special_sets_compile_no_regex(
    make: Callable[[], Tokenizer], monkeypatch: pytest.MonkeyPatch
) -> None:
    tok = make()
    text = "<a>b<c>d x<a> <a b<c> c>c <c>"
    got(tok, text, frozenset(SPECIALS), frozenset())  # the first use may build what it needs
    got(tok, text, frozenset(), frozenset(SPECIALS))
    compiled: list[str] = []
    real = re.compile

    def counting(pattern: Any, flags: Any = 0) -> Any:
        compiled.append(pattern)
        return real(pattern, flags)

    monkeypatch.setattr(re, "compile", counting)
    for allowed, disallowed in subsets():  # 300 sets, nearly all distinct
        got(tok, text, allowed, disallowed)
        got(tok, text, allowed, "all")
    assert compiled == []
