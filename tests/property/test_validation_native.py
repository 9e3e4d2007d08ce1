"""The merge checks in C (`native.build_tokens`) against the reference checks in
service/store/validation.py: on any merge list, valid or broken, C verifies exactly when the
reference accepts, and then builds the same token bytes."""

from __future__ import annotations

from array import array

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from service.bpe.engine import native
from service.store import validation
from service.store.formats.tokenizer import TokenizerFile

pytestmark = pytest.mark.skipif(not native.AVAILABLE, reason="the native extension is not built")

# small ids, so that children, repeats and collisions are frequent; ids past 2**24 never reach
# validation (msgspec refuses them), but the C checker must still say "not verified" safely
Case = tuple[str, list[int], list[tuple[int, str]], list[tuple[int, int, int]]]
ids = st.one_of(st.integers(0, 270), st.integers(0, 2**24 - 1))


@st.composite
def merge_lists(draw: st.DrawFn) -> Case:
    rule = draw(st.sampled_from(["ranks", "pairs"]))
    byte_ids = list(range(256))
    if draw(st.booleans()):  # a permutation: ids of bytes anywhere in 0..255
        byte_ids = draw(st.permutations(byte_ids))
    extra: list[tuple[int, str]] = []
    if rule == "ranks" and draw(st.booleans()):
        extra = [
            (tid, bytes(data).hex())
            for tid, data in draw(
                st.lists(
                    st.tuples(
                        st.integers(256, 300), st.lists(st.integers(0, 255), min_size=2, max_size=3)
                    ),
                    max_size=3,
                    unique_by=lambda t: t[0],
                )
            )
        ]
    merges: list[tuple[int, int, int]] = []
    next_id = 301 if extra else 256
    for _ in range(draw(st.integers(0, 40))):
        if draw(st.integers(0, 30)) == 0:  # anything at all
            merges.append((draw(ids), draw(ids), draw(ids)))
        else:  # mostly valid-looking: children from what exists, the next new id
            known = [*byte_ids[:4], *(t for t, _ in extra), *(m[2] for m in merges)]
            used = {m[:2] for m in merges}
            if draw(st.integers(0, 20)) == 0:  # a pair again, sometimes
                fresh = [(a, b) for a in known for b in known]
            else:
                fresh = [(a, b) for a in known for b in known if (a, b) not in used]
            left, right = draw(st.sampled_from(fresh))
            merges.append((left, right, next_id))
            next_id += draw(st.sampled_from([1] * 20 + [2, 0]))
    return rule, byte_ids, extra, merges


def reference(tf: TokenizerFile) -> dict[int, bytes] | str:
    tokens = validation._check_byte_ids(tf)
    try:
        validation._check_extra_tokens(tf, tokens)
        validation._check_merges(tf, tokens)
        if tf.rule == "ranks":
            validation._check_unique_bytes(tokens)
    except validation._Rule as broken:
        return broken.entry
    return tokens


@settings(max_examples=200, deadline=None)
@given(merge_lists())
def test_c_verifies_exactly_what_the_reference_accepts(case: Case) -> None:
    rule, byte_ids, extra, merges = case
    tf = TokenizerFile(
        name="t",
        version="1",
        rule=rule,
        pattern=None,  # type: ignore[arg-type]
        byte_ids=byte_ids,
        tokens=extra,
        merges=merges,
    )
    if rule == "pairs" and extra:
        return
    seed = validation._check_byte_ids(tf)
    try:
        validation._check_extra_tokens(tf, seed)
    except validation._Rule:
        return
    built = native.build_tokens(rule, dict(seed), merges)
    expected = reference(tf)
    if isinstance(expected, str):
        assert built is None, f"C verified a file the reference refuses at {expected}"
        return
    assert built is not None, "C refused a file the reference accepts"
    tokens, triples = built
    assert {tid: data for tid, data in enumerate(tokens) if data is not None} == expected
    assert len(tokens) == max(expected) + 1
    assert triples == array("I", [x for m in merges for x in m]).tobytes()


def test_c_says_not_verified_to_what_it_does_not_expect() -> None:
    seed = {b: bytes([b]) for b in range(256)}
    assert native.build_tokens("ranks", seed, [[97, 98, 256]]) is None  # type: ignore[list-item]
    assert native.build_tokens("ranks", seed, [(97, 98)]) is None  # type: ignore[list-item]
    assert native.build_tokens("ranks", seed, [(97, -1, 256)]) is None
    assert native.build_tokens("ranks", seed, [(97, 2**24, 256)]) is None
    assert native.build_tokens("ranks", {**seed, 256: b""}, []) is None
    assert native.build_tokens("other", seed, []) is None
    assert native.build_tokens("ranks", seed, [(97, 98, 256)]) is not None


def test_two_tokens_with_the_same_bytes_are_not_verified_for_ranks_only() -> None:
    seed = {b: bytes([b]) for b in range(256)}
    merges = [(97, 98, 256), (256, 99, 257), (98, 99, 258), (97, 258, 259)]  # 257, 259: b"abc"
    assert native.build_tokens("ranks", seed, merges) is None
    built = native.build_tokens("pairs", seed, merges)
    assert built is not None and built[0][257] == built[0][259] == b"abc"
