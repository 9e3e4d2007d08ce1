"""Count and estimate latency for a 20-message conversation with tools, per model.

In-process (the library calls) and, with --url, over HTTP against a running server:

    python -m bench.bench_models [--url http://127.0.0.1:8000] [--repeat 30]

Prints the median and p90 in milliseconds. Reads the bundled store.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from typing import Any

from service.models.billing import count_conversation, estimate_request
from service.runtime import engine_factory
from service.settings import BUNDLED_STORE
from service.store.loader import load_store
from tests.support.chatgen import TOOLS

MODELS = ["qwen2.5", "qwen3", "gpt-oss", "gpt-4o"]


def conversation(call_id: str = "c{}") -> list[dict[str, Any]]:
    """20 messages: system, then user / assistant tool call / tool result / assistant turns;
    `call_id`: the tool call ids' format (Mistral's formats take 9 letters or digits only)."""
    messages: list[dict[str, Any]] = [
        {
            "role": "system",
            "content": "You are a helpful assistant that answers about the weather. 简短回答。",
        }
    ]
    i = 0
    while len(messages) < 20:
        i += 1
        messages.append({"role": "user", "content": f"What is the weather in city {i}? 🌦️ " * 3})
        call = {
            "id": call_id.format(i),
            "type": "function",
            "function": {"name": "get_weather", "arguments": json.dumps({"city": f"city {i}"})},
        }
        messages.append({"role": "assistant", "content": "", "tool_calls": [call]})
        messages.append(
            {
                "role": "tool",
                "tool_call_id": call_id.format(i),
                "content": '{"temp": 21, "sky": "clear"}',
            }
        )
        messages.append({"role": "assistant", "content": f"In city {i} it is 21 °C and clear."})
    return messages[:20]


def timed(fn: Callable[[], object], repeat: int) -> tuple[float, float]:
    fn()  # warm: template compile, caches
    samples = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t) * 1000)
    samples.sort()
    return statistics.median(samples), samples[int(0.9 * (len(samples) - 1))]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--url")
    parser.add_argument("--repeat", type=int, default=30)
    args = parser.parse_args()
    messages = conversation()
    registry = load_store(BUNDLED_STORE, engine_factory("auto"))
    print(
        f"20 messages, {len(TOOLS)} tools, {len(json.dumps(messages))} bytes of JSON; "
        f"median / p90 ms over {args.repeat} runs"
    )
    for name in MODELS:
        n = count_conversation(registry, name, messages, TOOLS).count.input_tokens
        c = timed(lambda: count_conversation(registry, name, messages, TOOLS), args.repeat)
        row = f"{name:10} {n:5} tokens  library count {c[0]:7.2f} / {c[1]:7.2f}"
        once = timed(
            lambda: count_conversation(registry, name, messages, TOOLS, breakdown=False),
            args.repeat,
        )
        row += f"  total only (what estimate renders) {once[0]:7.2f} / {once[1]:7.2f}"
        if name == "gpt-4o":
            e = timed(
                lambda: estimate_request(
                    registry, name, messages=messages, tools=TOOLS, output_tokens=500
                ),
                args.repeat,
            )
            row += f"  estimate {e[0]:7.2f} / {e[1]:7.2f}"
        if args.url:
            import httpx

            with httpx.Client(base_url=args.url, timeout=30) as client:
                body = {"messages": messages, "tools": TOOLS}
                h = timed(
                    lambda: client.post(f"/v1/models/{name}/count", json=body).raise_for_status(),
                    args.repeat,
                )
                row += f"  HTTP count {h[0]:7.2f} / {h[1]:7.2f}"
                if name == "gpt-4o":
                    body_e = {**body, "output_tokens": 500}
                    he = timed(
                        lambda: client.post(
                            f"/v1/models/{name}/estimate", json=body_e
                        ).raise_for_status(),
                        args.repeat,
                    )
                    row += f"  HTTP estimate {he[0]:7.2f} / {he[1]:7.2f}"
        print(row)


if __name__ == "__main__":
    main()
