"""A request's CPU work ends at TOKSVC_MAX_WORK_SECONDS, also inside an encoding: a format v2
file whose pre-tokenizers no C scanner cuts runs them in Python (~6 us a piece), so a few
megabytes of `" 1"` are tens of seconds of work in one engine call, which used to run to its end
whatever the deadline, and after its client had gone. (The bundled DeepSeek files are cut in C
now: service/store/formats/chains.py; the file served here is DeepSeek V4's with its number step
changed,
which only the Python steps can cut.)"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import httpx

from service.settings import BUNDLED_STORE
from tests.support.server import start_server, stop_server


def python_steps_store(root: Path) -> Path:
    tf = json.loads((BUNDLED_STORE / "deepseek-v4" / "1.json").read_bytes())
    tf["name"] = "deepseek-v4-steps"
    assert tf["pre_tokenizers"][0]["pattern"] == r"\p{N}{1,3}"
    tf["pre_tokenizers"][0]["pattern"] = r"\p{N}{1,2}"  # no known chain: the Python steps
    data = json.dumps(tf).encode()
    (root / "deepseek-v4-steps").mkdir()
    (root / "deepseek-v4-steps" / "1.json").write_bytes(data)
    entry = {
        "name": "deepseek-v4-steps",
        "version": "1",
        "path": "deepseek-v4-steps/1.json",
        "sha256": hashlib.sha256(data).hexdigest(),
        "default": True,
    }
    manifest = {
        "format": "toksvc-manifest",
        "format_version": 1,
        "tokenizers": [entry],
        "models": [],
        "prices": [],
    }
    (root / "manifest.json").write_text(json.dumps(manifest))
    return root


def test_a_v2_encoding_stops_at_the_work_deadline(tmp_path: Path) -> None:
    store = python_steps_store(tmp_path)
    server = start_server(1, TOKSVC_MAX_WORK_SECONDS="1", TOKSVC_STORE=str(store))
    url = f"{server.base}/v1/tokenizers/deepseek-v4-steps/count"
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
