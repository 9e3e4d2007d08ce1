"""What stream assembly costs per id: stop-string holdback and priming against the plain stream.

A 100k-id stream of real text (every corpus slice, encoded by one tokenizer) is fed one id per
call (how a model emits them) and in chunks of 16, through

- plain: the UTF-8 `StreamDecoder` alone (today's stream);
- assembler: the `Assembler` with no options (the path every stream now takes);
- stops: four stop strings that never complete (the worst case: the whole stream is scanned),
  one of them starting with a character that is common in the text (a newline);
- stops+prime: the same, primed with 64 prompt ids (the issue's measure); +skip: also skipping
  special tokens.

Times are CPU seconds of this process (time.process_time). The forms run side by side: in each
round every form decodes the whole stream with its own decoder, in slices of --slice ids taken in
turn (the order rotating), so a shared machine's load falls on all of them alike. A round's ratio
is a form's time over plain's; printed are the medians over --repeat rounds and the spread of the
ratios (lowest-highest). The ratio to plain is what to read (goal: at most 1.2). Only the domain
objects are timed: over HTTP the per-message framing costs far more than either.

    python -m bench.bench_assembly [--ref cl100k_base] [--ids 100000] [--repeat 15] [--slice 2000]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

from bench.support.texts import corpus_files
from service.bpe import StreamDecoder, Tokenizer
from service.bpe.stream.options import AssemblyLimits, AssemblyOptions, assembler_for
from service.runtime import engine_factory
from service.settings import BUNDLED_STORE
from service.store.loader import load_store

STOPS = ["\n\nUser:", "</answer>", "<|im_end|>", "Observation:"]


def stream_ids(tok: Tokenizer, n: int) -> list[int]:
    ids: list[int] = []
    for text in corpus_files().values():
        ids += tok.encode(text, disallowed_special=frozenset())
    while len(ids) < n:
        ids += ids
    return ids[:n]


def round_times(
    forms: dict[str, Callable[[], object]], slices: list[list[list[int]]]
) -> dict[str, float]:
    """Every form decodes the whole stream once, a slice each in turn; their CPU seconds."""
    decoders = {name: make() for name, make in forms.items()}
    times = dict.fromkeys(forms, 0.0)
    names = list(forms)
    for n, chunks in enumerate(slices):
        for name in names[n % len(names) :] + names[: n % len(names)]:
            decode = decoders[name].decode  # type: ignore[attr-defined]
            start = time.process_time()
            for chunk in chunks:
                decode(chunk)
            times[name] += time.process_time() - start
    for name, decoder in decoders.items():
        start = time.process_time()
        decoder.flush()  # type: ignore[attr-defined]
        times[name] += time.process_time() - start
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--ref", default="cl100k_base")
    parser.add_argument("--ids", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--slice", type=int, default=2000, help="ids per turn")
    args = parser.parse_args()
    registry = load_store(BUNDLED_STORE, engine_factory("auto"))
    tok = registry.resolve(args.ref).tokenizer
    ids = stream_ids(tok, args.ids)
    prompt = ids[:64]
    for stop in STOPS:  # the worst case: no stop string ever completes
        assert stop not in tok.decode(ids, "replace"), stop
    limits = AssemblyLimits()
    forms: dict[str, Callable[[], object]] = {
        "plain": lambda: StreamDecoder(tok.decode_bytes),
        "assembler": lambda: assembler_for(tok, AssemblyOptions(), limits),
        "stops": lambda: assembler_for(tok, AssemblyOptions(stop=STOPS), limits),
        "stops+prime": lambda: assembler_for(
            tok, AssemblyOptions(stop=STOPS, prompt_ids=prompt), limits
        ),
        "+skip": lambda: assembler_for(
            tok, AssemblyOptions(stop=STOPS, prompt_ids=prompt, skip_special_tokens=True), limits
        ),
    }
    print(
        f"{args.ref}: {len(ids)} ids, stop strings {STOPS!r}; CPU seconds, medians of "
        f"{args.repeat} rounds (a shared, loaded machine: read the ratios)"
    )
    print(f"{'form':<14}{'chunk':>6}{'us/id':>8}{'x plain':>9}{'spread':>13}")
    for size in (1, 16):
        chunks = [ids[i : i + size] for i in range(0, len(ids), size)]
        per = max(1, args.slice // size)
        slices = [chunks[i : i + per] for i in range(0, len(chunks), per)]
        times: dict[str, list[float]] = {name: [] for name in forms}
        for _ in range(args.repeat):
            for name, seconds in round_times(forms, slices).items():
                times[name].append(seconds)
        for name, runs in times.items():
            ratios = sorted(t / p for t, p in zip(runs, times["plain"], strict=True))
            per_id = statistics.median(runs) / len(ids) * 1e6
            spread = f"{ratios[0]:.2f}-{ratios[-1]:.2f}"
            print(f"{name:<14}{size:>6}{per_id:>8.2f}{statistics.median(ratios):>9.2f}{spread:>13}")


if __name__ == "__main__":
    main()
