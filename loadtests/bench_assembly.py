"""What stream assembly costs per id: stop-string holdback and priming against the plain stream.

A 100k-id stream of real text (every corpus slice, encoded by one tokenizer) is fed one id per
call (how a model emits them) and in chunks of 16, through

- plain: the UTF-8 `StreamDecoder` alone (today's stream);
- assembler: the `Assembler` with no options (the path every stream now takes);
- stops: four stop strings that never complete (the worst case: the whole stream is scanned),
  one of them starting with a character that is common in the text (a newline);
- stops+prime: the same, primed with 64 prompt ids and skipping special tokens.

Times are CPU seconds of this process (time.process_time). Each round runs every form once, side
by side, and a form's ratio is taken to the plain run of the same round, so a shared machine's
load shifts both; printed are the medians over --repeat rounds and the spread (lowest-highest) of
the ratios. The ratio to plain is what to read (goal: at most 1.2). Only the domain objects are
timed: over HTTP the per-message framing costs far more than either.

    python loadtests/bench_assembly.py [--ref cl100k_base] [--ids 100000] [--repeat 15]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable, Sequence

from texts import corpus_files

from service.bpe import StreamDecoder, Tokenizer
from service.bpe.assembly_options import AssemblyLimits, AssemblyOptions, assembler_for
from service.runtime import engine_factory
from service.settings import BUNDLED_STORE
from service.store.registry import load_store

STOPS = ["\n\nUser:", "</answer>", "<|im_end|>", "Observation:"]


def stream_ids(tok: Tokenizer, n: int) -> list[int]:
    ids: list[int] = []
    for text in corpus_files().values():
        ids += tok.encode(text, disallowed_special=frozenset())
    while len(ids) < n:
        ids += ids
    return ids[:n]


def run(make: Callable[[], object], chunks: Sequence[Sequence[int]]) -> float:
    decoder = make()
    decode = decoder.decode  # type: ignore[attr-defined]
    start = time.process_time()
    for chunk in chunks:
        decode(chunk)
    decoder.flush()  # type: ignore[attr-defined]
    return time.process_time() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--ref", default="cl100k_base")
    parser.add_argument("--ids", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=15)
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
            tok, AssemblyOptions(stop=STOPS, prompt_ids=prompt, skip_special_tokens=True), limits
        ),
    }
    print(f"{args.ref}: {len(ids)} ids, stop strings {STOPS!r}; CPU seconds, medians of "
          f"{args.repeat} rounds (a shared, loaded machine: read the ratios)")  # fmt: skip
    print(f"{'form':<14}{'chunk':>6}{'us/id':>8}{'x plain':>9}{'spread':>13}")
    for size in (1, 16):
        chunks = [ids[i : i + size] for i in range(0, len(ids), size)]
        times: dict[str, list[float]] = {name: [] for name in forms}
        for _ in range(args.repeat):
            for name, make in forms.items():
                times[name].append(run(make, chunks))
        for name, runs in times.items():
            ratios = sorted(t / p for t, p in zip(runs, times["plain"], strict=True))
            per_id = statistics.median(runs) / len(ids) * 1e6
            spread = f"{ratios[0]:.2f}-{ratios[-1]:.2f}"
            print(f"{name:<14}{size:>6}{per_id:>8.2f}{statistics.median(ratios):>9.2f}{spread:>13}")


if __name__ == "__main__":
    main()
