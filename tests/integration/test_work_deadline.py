"""A request's CPU work ends at TOKSVC_MAX_WORK_SECONDS, also inside an encoding: format v2's
pre-tokenization runs in Python (~6 us a piece), so a few megabytes of `" 1"` on DeepSeek V4
are tens of seconds of work in one engine call, which used to run to its end whatever the
deadline, and after its client had gone."""

from __future__ import annotations

import httpx

from tests.serverproc import start_server, stop_server


def test_a_v2_encoding_stops_at_the_work_deadline() -> None:
    server = start_server(1, TOKSVC_MAX_WORK_SECONDS="1")
    url = f"{server.base}/v1/tokenizers/deepseek-v4/count"
    try:
        long = httpx.post(url, json={"text": " 1" * 2_000_000}, timeout=300)
        short = httpx.post(url, json={"text": " 1" * 10_000}, timeout=30)
    finally:
        stop_server(server)
    assert long.status_code == 413, long.text[:300]
    problem = long.json()
    assert problem["type"] == "/problems/limit-exceeded" and problem["limit"] == 1
    assert "seconds of work" in problem["detail"]
    assert short.status_code == 200  # the limit is the work's, not the tokenizer's
