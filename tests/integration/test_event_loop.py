"""A megabyte-sized request must not stall the other requests of the same worker."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import httpx

from tests.support.server import start_server, stop_server
from tests.support.testdata import all_text


def test_small_requests_are_answered_while_a_large_one_is_encoded() -> None:
    """The large request's work runs in a thread. The reference engine keeps this one busy for
    about a second (the native engine would be done before the small requests are sent, and
    releases the GIL besides: the Python engine is the harder case)."""
    server = start_server(1, TOKSVC_ENGINE="python", TOKSVC_TEXT_CACHE_BYTES="0")
    text = all_text() * 14  # 6 MB
    url = f"{server.base}/v1/tokenizers/cl100k_base/count"
    try:
        with ThreadPoolExecutor(1) as pool, httpx.Client(base_url=server.base, timeout=10) as small:
            big = pool.submit(httpx.post, url, json={"text": text}, timeout=120)
            time.sleep(0.15)  # the upload is under way or done; the encoding starts
            answered = [small.get("/healthz").status_code for _ in range(20)]
            big_done_before_small = big.done()
            response = big.result()
    finally:
        stop_server(server)
    assert answered == [200] * 20
    assert response.status_code == 200 and response.json()["count"] > 1_000_000
    assert not big_done_before_small  # the 20 small requests did not wait for the large one


def test_probes_are_answered_while_a_small_but_expensive_conversation_is_counted() -> None:
    """500 one-character messages are a 17 KB body but their per-message breakdown renders the
    template ~250 times over (issue 23, high 4: the size test counted message text only, so this
    ran on the event loop and `/healthz` waited for it). The cost is estimated from the whole
    body now, and the work runs in a thread."""
    server = start_server(1)
    body = {"messages": [{"role": "user", "content": "x"}] * 500, "breakdown": True}
    url = f"{server.base}/v1/models/qwen2.5/count"
    try:
        with ThreadPoolExecutor(1) as pool, httpx.Client(base_url=server.base, timeout=10) as small:
            big = pool.submit(httpx.post, url, json=body, timeout=120)
            time.sleep(0.2)  # the body is in; the rendering starts
            answered = [small.get("/healthz").status_code for _ in range(10)]
            big_done_before_small = big.done()
            response = big.result()
    finally:
        stop_server(server)
    assert answered == [200] * 10
    assert response.status_code == 200, response.text[:300]
    counted = response.json()
    assert len(counted["messages"]) == 500
    parts = sum(m["tokens"] for m in counted["messages"]) + sum(counted["overhead"].values())
    assert parts == counted["input_tokens"]
    assert not big_done_before_small  # the probes did not wait for the conversation


def test_probes_are_answered_while_a_long_step_is_searched_for_stop_strings() -> None:
    """A step of 131,000 ids (1 MB of `a`) with 16 stop strings each inside the next's prefix:
    a regex over the whole text held the GIL twice about 3 s, so a probe with Kubernetes' default
    timeout (1 s) failed. A long text is searched in linear time now."""
    server = start_server(1)
    stops = ["a" * (16 * k + 10) + "b" for k in range(16)]
    body = {"ids": [70540] * 131_000, "stop": stops}  # cl100k's `aaaaaaaa`
    url = f"{server.base}/v1/tokenizers/cl100k_base/decode/step"
    try:
        with ThreadPoolExecutor(1) as pool, httpx.Client(base_url=server.base, timeout=1) as small:
            big = pool.submit(httpx.post, url, json=body, timeout=120)
            answered = []
            while not big.done():  # probes all along, at most 300 (bounded)
                try:
                    answered.append(small.get("/healthz").status_code)
                except httpx.TimeoutException:
                    answered.append(0)
                if len(answered) >= 300:
                    break
                time.sleep(0.01)
            response = big.result()
    finally:
        stop_server(server)
    assert answered and set(answered) == {200}, answered
    assert response.status_code == 200, response.text[:300]
    assert response.json()["text"] == "a" * (131_000 * 8 - 250)  # the longest prefix is held
