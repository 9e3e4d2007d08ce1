"""Hostile chat templates, imported the way a downloaded package is (`toksvc import hf
tokenizer.json --chat-config tokenizer_config.json`) and counted over HTTP: a template that loops
without output stops at TOKSVC_MAX_WORK_SECONDS (it used to run for hours, /healthz unanswered),
one that builds a gigabyte string is refused before it builds it, one that divides by zero is a
template error; the worker keeps serving."""

from __future__ import annotations

import json
from pathlib import Path

import httpx

from service.cli import main
from tests.support.server import start_server, stop_server
from tests.support.testdata import vocab_file

TAIL = "{% for m in messages %}{{ m.content }}{% endfor %}"
TEMPLATES = {
    "loops": "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
    "builds": "{% set s = 'x' * 2000000000 %}{{ s|length }}",
    "divides": "{{ messages|length / 0 }}",
}


def hostile_store(root: Path) -> Path:
    store = root / "store"
    for name, template in TEMPLATES.items():
        config = root / f"{name}.json"
        fields = {
            "bos_token": "<|endoftext|>",
            "eos_token": "<|im_end|>",
            "model_max_length": 32768,
            "chat_template": template + TAIL,
        }
        config.write_text(json.dumps(fields))
        code = main(
            [
                "import",
                "hf",
                str(vocab_file("qwen2_5_tokenizer.json")),
                "--name",
                f"pkg-{name}",
                "--version",
                "1",
                "--store",
                str(store),
                "--model",
                name,
                "--chat-config",
                str(config),
            ]
        )
        assert code == 0
    return store


def test_hostile_templates_get_problems_and_the_worker_keeps_serving(tmp_path: Path) -> None:
    server = start_server(1, TOKSVC_MAX_WORK_SECONDS="1", TOKSVC_STORE=str(hostile_store(tmp_path)))
    body = {"messages": [{"role": "user", "content": "hi"}]}
    try:
        answers = {
            name: httpx.post(f"{server.base}/v1/models/{name}/count", json=body, timeout=60)
            for name in TEMPLATES
        }
        health = httpx.get(f"{server.base}/healthz", timeout=10)
    finally:
        stop_server(server)
    loops, builds, divides = answers["loops"], answers["builds"], answers["divides"]
    assert loops.status_code == 413, loops.text[:300]
    assert "rendering time" in loops.json()["detail"]
    assert builds.status_code == 413, builds.text[:300]
    assert builds.json()["limit"] < 2_000_000_000
    assert divides.status_code == 422, divides.text[:300]
    assert divides.json()["type"] == "/problems/template-error"
    assert health.status_code == 200
