"""The stream assembler: stop strings, holding back no more than a stop string's prefix, priming
with the prompt, special tokens, and the stateless state."""

from __future__ import annotations

import random
from itertools import combinations, pairwise

import pytest

from service.bpe import Tokenizer
from service.bpe.stream.options import AssemblyLimits, AssemblyOptions, assembler_for
from service.bpe.stream.stops import StopMatcher
from service.errors import StreamOptionError, StreamStateError
from service.store.registry import Registry
from tests.support.assembly_reference import expected, longest_held

LIMITS = AssemblyLimits()


def every_chunking(ids: list[int]) -> list[list[list[int]]]:
    """Every way of cutting `ids` into consecutive non-empty chunks."""
    out = []
    for k in range(len(ids)):
        for cuts in combinations(range(1, len(ids)), k):
            bounds = [0, *cuts, len(ids)]
            out.append([ids[a:b] for a, b in pairwise(bounds)])
    return out


def run(
    tok: Tokenizer,
    chunks: list[list[int]],
    stops: list[str],
    include: bool = False,
    stateless: bool = False,
) -> tuple[list[str], str | None]:
    options = AssemblyOptions(stop=stops, include_stop_str_in_output=include)
    state: str | None = None
    assembler = assembler_for(tok, options, LIMITS)
    parts = []
    for chunk in chunks:
        if stateless:
            assembler = assembler_for(tok, options, LIMITS, state=state)
        parts.append(assembler.decode(chunk))
        state = assembler.state()
    if stateless:
        assembler = assembler_for(tok, options, LIMITS, state=state)
    parts.append(assembler.flush())
    return parts, assembler.stopped


@pytest.mark.parametrize(
    ("text", "stops"),
    [
        ("Hello world. STOP and more", ["STOP"]),
        ("abcabd then abc", ["abd", "abc"]),  # ends at the first one completed
        ("xx aab yy", ["aab", "ab"]),  # the same end: the longer one
        ("a 🙂 b 日本語 c", ["日本", "🙂 b"]),  # stop strings of multi-byte characters
        ("no stop in here", ["zz", "q!"]),
        ("ends with a prefix: ST", ["STOP"]),  # held text is emitted at the end
        ("say xab, then", ["xaby", "ab"]),  # one lies inside another's prefix
        ("a " + "x" * 18 + "!", ["x" * 19 + "!", "x" * 30]),  # held past 16 characters
    ],
)
@pytest.mark.parametrize("include", [False, True])
@pytest.mark.parametrize("stateless", [False, True])
def test_every_chunking_equals_the_reference(
    registry: Registry, text: str, stops: list[str], include: bool, stateless: bool
) -> None:
    tok = registry.resolve("cl100k_base").tokenizer
    ids = tok.encode(text)
    assert len(ids) <= 12
    want, want_stop = expected(tok, ids, stops, include=include)
    for chunks in every_chunking(ids):
        parts, stopped = run(tok, chunks, stops, include, stateless)
        assert "".join(parts) == want, chunks
        assert stopped == want_stop


def test_only_a_stop_strings_prefix_is_held_back(registry: Registry) -> None:
    tok = registry.resolve("qwen3").tokenizer
    stops = ["</answer>", "\n\nUser:", "ans"]
    text = "I think </ans the answer is 42.\n\nUse it </answer> more"
    ids = tok.encode(text)
    assembler = assembler_for(tok, AssemblyOptions(stop=stops), LIMITS)
    emitted = ""
    for n, i in enumerate(ids, 1):
        emitted += assembler.decode([i])
        if assembler.stopped is not None:
            break
        so_far = tok.decode(ids[:n], "replace")  # whole characters only: these ids end cleanly
        held = longest_held(so_far, stops)
        assert emitted == so_far[: len(so_far) - held]
    assert emitted == expected(tok, ids, stops)[0]
    assert assembler.stopped == "ans"


@pytest.mark.parametrize(
    "stops",
    [
        ["w" * 19 + "vv"],  # longer than the characters the matcher's gate spells out
        ["w" * 30, "wv", "vv w"],  # a long one, and short ones inside its prefixes
        ["\n\nUser:", "ww\n", "v"],
    ],
)
@pytest.mark.parametrize("skip", [False, True])
def test_long_and_overlapping_stop_strings_hold_back_only_a_prefix(
    registry: Registry, stops: list[str], skip: bool
) -> None:
    tok = registry.resolve("cl100k_base").tokenizer
    text = "zz " + "w" * 19 + "v " + "w" * 25 + "\n<|endoftext|>\nUse " + "w" * 19 + "vv end"
    ids = tok.encode(text, allowed_special="all")
    options = AssemblyOptions(stop=stops, skip_special_tokens=skip)
    assembler = assembler_for(tok, options, LIMITS)
    kept = [i for i in ids if not skip or i not in tok.skipped_ids]
    emitted = ""
    for n, i in enumerate(ids, 1):
        emitted += assembler.decode([i])
        if assembler.stopped is not None:
            break
        so_far = tok.decode([i for i in ids[:n] if i in kept], "replace")
        assert emitted == so_far[: len(so_far) - longest_held(so_far, stops)]
    emitted += assembler.flush()
    assert (emitted, assembler.stopped) == expected(tok, ids, stops, skip=skip)


def test_nothing_is_emitted_after_the_stop(registry: Registry) -> None:
    tok = registry.resolve("gpt2").tokenizer
    assembler = assembler_for(tok, AssemblyOptions(stop=["END"]), LIMITS)
    first = assembler.decode(tok.encode("one END two"))
    assert (first, assembler.stopped) == ("one ", "END")
    assert assembler.decode(tok.encode(" three")) == ""
    assert assembler.flush() == ""


def test_the_matcher_reads_each_character_a_bounded_number_of_times() -> None:
    """Aho-Corasick: a text that keeps almost matching is still read in one pass."""
    stop = "a" * 200 + "b"
    matcher = StopMatcher([stop])
    text = "a" * 50_000
    node, end, _ = matcher.scan(text, 0)
    assert end == -1 and matcher.depth[node] == 200
    node, end, index = matcher.scan("b", node)
    assert (end, index) == (1, 0)


def _find_by_definition(text: str, stops: list[str]) -> tuple[int, int]:
    """The earliest end of a stop string (the longest on a tie), else the longest suffix of
    `text` that is a proper prefix of one: by brute force."""
    ends = [
        (at + len(stop), -len(stop), k)
        for k, stop in enumerate(stops)
        if (at := text.find(stop)) >= 0
    ]
    if ends:
        return min(ends)[0], min(ends)[2]
    held = max(
        (n for stop in stops for n in range(len(stop)) if n and text.endswith(stop[:n])),
        default=0,
    )
    return len(text) - held, -1


def test_short_and_long_texts_are_searched_alike() -> None:
    """A long text (a whole step's worth of ids) is searched in linear time, not by the regex
    that costs a stop string's length per place it may begin (16 nested stop strings over
    790 KB of `a`: 2.5 s of the GIL); the answer is the same as for any text."""
    rng = random.Random(7)
    for _ in range(400):
        stops = list(
            dict.fromkeys(
                "".join(rng.choice("ab") for _ in range(rng.randint(1, 30)))
                for _ in range(rng.randint(1, 5))
            )
        )
        matcher = StopMatcher(stops)
        text = "".join(rng.choice("aab") for _ in range(rng.choice([5, 60, 64, 65, 300])))
        assert matcher.find(text) == _find_by_definition(text, matcher.stops), (text, stops)
        assert bool(matcher.gate(text)) or matcher.find(text) == (len(text), -1)
    stops = ["a" * (16 * k + 10) + "b" for k in range(16)]
    text = "a" * 790_000
    assert StopMatcher(stops).find(text) == (790_000 - 250, -1)  # all but the longest's last


@pytest.mark.parametrize(
    "ref",
    [
        "gpt2",
        "p50k_base",
        "cl100k_base",
        "o200k_base",
        "qwen2",
        "qwen2.5",
        "qwen3",
        "bard",
        "o200k_harmony",
    ],
)
@pytest.mark.parametrize("cut", [1, 2, 3])
def test_priming_with_a_prompt_that_ends_mid_character(
    registry: Registry, ref: str, cut: int
) -> None:
    """The prompt's text is never emitted; the character it leaves unfinished comes out with
    the first generated ids."""
    tok = registry.resolve(ref).tokenizer
    char = "🙂".encode()
    byte_ids = tok.vocab.byte_ids
    prompt = [*tok.encode("Say it: é"), *(byte_ids[b] for b in char[:cut])]
    generated = [*(byte_ids[b] for b in char[cut:]), *tok.encode(" done ✓")]
    want, _ = expected(tok, generated, prompt=prompt)
    assert want == "🙂 done ✓"
    for chunks in every_chunking(generated)[:64]:
        assembler = assembler_for(tok, AssemblyOptions(prompt_ids=prompt), LIMITS)
        parts = [assembler.decode(c) for c in chunks] + [assembler.flush()]
        assert "".join(parts) == want
        assert "Say it" not in parts[0]


def test_a_leading_space_rule_applies_to_the_prompt_not_the_output(registry: Registry) -> None:
    """A decoder that drops the first token's leading space (SentencePiece-style, mistral-v7's
    Metaspace): the output after a prompt keeps its space, as the full decode of prompt +
    output shows it, and a stream that starts with the output drops it."""
    tok = registry.resolve("mistral-v7").tokenizer
    hi, there = tok.encode("Hi"), tok.encode(" there")[1:]  # "▁there" after the prompt
    assert tok.decode(hi + there) == "Hi there"
    plain = assembler_for(tok, AssemblyOptions(), LIMITS)
    assert plain.decode(there) + plain.flush() == "there"
    primed = assembler_for(tok, AssemblyOptions(prompt_ids=hi), LIMITS)
    assert primed.decode(there) + primed.flush() == " there"


@pytest.mark.parametrize("ref", ["qwen2", "qwen2.5", "qwen3"])
def test_skip_special_tokens_keeps_added_not_special_tokens(registry: Registry, ref: str) -> None:
    tok = registry.resolve(ref).tokenizer
    ids = tok.encode("<think>x</think> yo<|im_end|>ab", allowed_special="all")
    assembler = assembler_for(tok, AssemblyOptions(skip_special_tokens=True), LIMITS)
    assert assembler.decode(ids) + assembler.flush() == "<think>x</think> yoab"


@pytest.mark.parametrize(
    ("options", "field"),
    [
        (AssemblyOptions(stop=["x"] * 17), "stop"),
        (AssemblyOptions(stop=[""]), "stop"),
        (AssemblyOptions(stop=["y" * 257]), "stop"),
        (AssemblyOptions(stop=["\ud800"]), "stop"),
        (AssemblyOptions(prompt_ids=[1] * 65), "prompt_ids"),
        (AssemblyOptions(prompt_ids=[10**7]), "prompt_ids"),
    ],
)
def test_bad_options_name_their_field(
    registry: Registry, options: AssemblyOptions, field: str
) -> None:
    tok = registry.resolve("cl100k_base").tokenizer
    with pytest.raises(StreamOptionError) as caught:
        assembler_for(tok, options, LIMITS)
    assert caught.value.field == field


def test_a_state_needs_the_streams_own_stop_options(registry: Registry) -> None:
    tok = registry.resolve("cl100k_base").tokenizer
    first = assembler_for(tok, AssemblyOptions(stop=["STOP"]), LIMITS)
    first.decode(tok.encode("a ST"))
    state = first.state()
    for other in (
        AssemblyOptions(stop=["STAY"]),
        AssemblyOptions(),
        AssemblyOptions(stop=["STOP"], include_stop_str_in_output=True),
    ):
        with pytest.raises(StreamOptionError):
            assembler_for(tok, other, LIMITS, state=state)
    with pytest.raises(StreamOptionError) as caught:
        assembler_for(tok, AssemblyOptions(stop=["STOP"], prompt_ids=[1]), LIMITS, state=state)
    assert caught.value.field == "prompt_ids"


def test_a_forged_state_is_refused(registry: Registry) -> None:
    tok = registry.resolve("cl100k_base").tokenizer
    options = AssemblyOptions(stop=["STOP"])
    good = assembler_for(tok, options, LIMITS)
    good.decode(tok.encode("a ST"))
    state = good.state()
    prefix, offset, pending, held, flags, digest = state.split(".")
    forged = [
        ".".join([prefix, offset, pending, "eHl6", flags, digest]),  # held "xyz": no stop prefix
        ".".join([prefix, offset, pending, "U1RPUA==", flags, digest]),  # held a whole stop
        ".".join([prefix, offset, "_w==", held, flags, digest]),  # pending 0xff
        ".".join([prefix, offset, pending, held, "s9", digest]),  # no 10th stop string
        ".".join([prefix, offset, pending, held, "x", digest]),
        state + ".",
    ]
    for bad in forged:
        with pytest.raises(StreamStateError):
            assembler_for(tok, options, LIMITS, state=bad)
