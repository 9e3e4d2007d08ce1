"""A realistic mix against toksvc: count 60%, encode 20%, decode 10%, streaming decode 10% (the
stateless step form and NDJSON), over several tokenizers, with real texts (bench/support/texts.py)
(a sentence to 64 KB), plus a chat-replay user whose history grows by one message per request.

    locust -f bench/load/locustfile.py --host http://127.0.0.1:8000
    python -m bench.load.run_load --users 20 --seconds 60     # starts the service too

Task names are the operations' verbs: count, encode, decode, decode_stream.
"""

from __future__ import annotations

import json
import random

from locust import HttpUser, between, task

from bench.support.texts import corpus

TOKENIZERS = ["cl100k_base", "o200k_base", "qwen2", "gpt2"]
SIZES = [120, 120, 600, 2_000, 2_000, 8_000, 64_000]  # characters; small ones are most traffic


CORPUS = corpus()
PARAGRAPHS = [p for p in CORPUS.split("\n\n") if 40 < len(p) < 3000]


def some_text(rng: random.Random) -> str:
    size = rng.choice(SIZES)
    start = rng.randrange(len(CORPUS) - size)
    return CORPUS[start : start + size]


class MixUser(HttpUser):
    wait_time = between(0.05, 0.2)
    weight = 4

    def on_start(self) -> None:
        self.rng = random.Random()

    def _url(self, verb: str) -> str:
        return f"/v1/tokenizers/{self.rng.choice(TOKENIZERS)}/{verb}"

    @task(60)
    def count(self) -> None:
        body = {"text": some_text(self.rng), "disallowed_special": []}
        self.client.post(self._url("count"), json=body, name="count")

    @task(20)
    def encode(self) -> None:
        body = {
            "texts": [some_text(self.rng) for _ in range(self.rng.randint(1, 4))],
            "disallowed_special": [],
        }
        self.client.post(self._url("encode"), json=body, name="encode")

    @task(10)
    def decode(self) -> None:
        name = self.rng.choice(TOKENIZERS)
        ids = self._ids(name, some_text(self.rng)[:2000])
        self.client.post(
            f"/v1/tokenizers/{name}/decode", json={"ids": ids, "errors": "replace"}, name="decode"
        )

    @task(5)
    def decode_stream_step(self) -> None:
        name = self.rng.choice(TOKENIZERS)
        ids = self._ids(name, some_text(self.rng)[:1000])
        state = None
        for i in range(0, len(ids), 7):
            chunk = ids[i : i + 7]
            with self.client.post(
                f"/v1/tokenizers/{name}/decode/step",
                name="decode_stream",
                json={"ids": chunk, "state": state, "final": i + 7 >= len(ids)},
                catch_response=True,
            ) as r:
                if r.status_code != 200:
                    r.failure(f"status {r.status_code}")
                    return
                state = r.json()["state"]

    @task(5)
    def decode_stream_ndjson(self) -> None:
        name = self.rng.choice(TOKENIZERS)
        ids = self._ids(name, some_text(self.rng)[:2000])
        lines = (
            json.dumps({"ids": ids[i : i + 5]}).encode() + b"\n" for i in range(0, len(ids), 5)
        )
        with self.client.post(
            f"/v1/tokenizers/{name}/decode/stream",
            data=lines,
            headers={"content-type": "application/x-ndjson"},
            name="decode_stream",
            catch_response=True,
        ) as r:
            last = r.text.strip().splitlines()[-1] if r.text.strip() else "{}"
            if r.status_code != 200 or not json.loads(last).get("done"):
                r.failure(f"stream did not finish: {r.status_code} {last[:200]}")

    def _ids(self, name: str, text: str) -> list[int]:
        r = self.client.post(
            f"/v1/tokenizers/{name}/encode",
            json={"text": text, "disallowed_special": []},
            name="encode",
        )
        return list(r.json().get("ids", [])) if r.status_code == 200 else []


class ChatReplayUser(HttpUser):
    """Billing estimation: every request counts the whole conversation so far."""

    wait_time = between(0.1, 0.5)
    weight = 1

    def on_start(self) -> None:
        self.rng = random.Random()
        self.history: list[str] = []

    @task
    def count(self) -> None:
        if len(self.history) >= 50:
            self.history = []
        self.history.append(self.rng.choice(PARAGRAPHS))
        self.client.post(
            "/v1/tokenizers/cl100k_base/count",
            json={"texts": self.history, "disallowed_special": []},
            name="count",
        )
