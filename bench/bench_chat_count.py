"""Count latency for a 20-message conversation with 3 tools, per bundled model (the goal: under
2 ms median for the count route's work, which by default counts the total only).

The route's work is `count_conversation`: the messages checked, the image parts taken out, the
conversation rendered by the model's chat format and encoded by its tokenizer, once (the
route's default, and what `estimate` and the providers' count routes do); with `breakdown: true`
the per-message figures need every prefix's rendering: a template's come
from one tracked rendering of the whole where it proves them (service/models/breakdown/prefixes.py),
the rest are rendered again (all of Qwen3's), and each prefix is encoded with the stretches
already encoded kept (harmony counts each turn once). HTTP, the body's decode and the answer's
encode are apart (bench/bench_models.py --url times them). Every model of the bundled store,
each default version once; the conversation is bench_models.py's (system, then user / assistant
tool call / tool result / assistant turns, Chinese and emoji; for Mistral's formats the tool call
ids are 9 letters or digits, as they require), the tools tests/support/chatgen.py's.

    python -m bench.bench_chat_count [--repeat 50]

Prints, per model, the tokens counted and the median and p90 of wall milliseconds (and the
median of this process's CPU milliseconds, steadier on a shared machine) for the total (the
default) and with the breakdown, and whether each median is under the goal.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable

from bench.bench_models import conversation
from service.models.billing import count_conversation
from service.runtime import engine_factory
from service.settings import BUNDLED_STORE
from service.store.loader import load_store
from tests.support.chatgen import TOOLS

GOAL_MS = 2.0


def timed(fn: Callable[[], object], repeat: int) -> tuple[float, float, float]:
    """(median wall ms, p90 wall ms, median CPU ms) over `repeat` runs after one warm-up."""
    fn()  # warm: template compile, the tokenizer's caches
    wall, cpu = [], []
    for _ in range(repeat):
        w, c = time.perf_counter(), time.process_time()
        fn()
        cpu.append((time.process_time() - c) * 1000)
        wall.append((time.perf_counter() - w) * 1000)
    wall.sort()
    return statistics.median(wall), wall[int(0.9 * (len(wall) - 1))], statistics.median(cpu)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=50)
    args = parser.parse_args()
    plain, mistral = conversation(), conversation("call{:05d}")
    registry = load_store(BUNDLED_STORE, engine_factory("auto"))
    assert not registry.failures, registry.failures
    print(
        f"{len(plain)} messages, {len(TOOLS)} tools, {len(json.dumps(plain))} bytes of "
        f"JSON; {args.repeat} runs each; ms: median / p90 wall (median CPU)"
    )
    print(
        "| model | chat format | tokens | total (default) | breakdown: true | "
        f"< {GOAL_MS:g} ms: default / breakdown |"
    )
    print("|---|---|---|---|---|---|")
    for ref, model in sorted(registry.models.models.items()):
        name = model.profile.name
        if registry.models.names.get(name) != ref:
            continue  # not the default version
        kind = model.profile.chat.__struct_config__.tag  # the profile's `chat.type`
        messages = mistral if kind == "mistral" else plain
        tokens = count_conversation(registry, name, messages, TOOLS).count.input_tokens
        full = timed(lambda: count_conversation(registry, name, messages, TOOLS), args.repeat)
        once = timed(
            lambda: count_conversation(registry, name, messages, TOOLS, breakdown=False),
            args.repeat,
        )
        cells = [f"{m:.2f} / {p:.2f} ({c:.2f})" for m, p, c in (once, full)]
        ok = " / ".join("yes" if t[0] < GOAL_MS else "no" for t in (once, full))
        print(f"| {name} | {kind} | {tokens} | {cells[0]} | {cells[1]} | {ok} |")


if __name__ == "__main__":
    main()
