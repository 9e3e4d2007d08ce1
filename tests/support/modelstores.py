"""Small stores with model profiles for tests: the bundled `bard@1` tokenizer plus given models."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

from service.settings import BUNDLED_STORE


def entry(path: str, name: str, data: bytes) -> dict[str, Any]:
    version = "1"
    return {
        "name": name,
        "version": version,
        "path": path,
        "sha256": hashlib.sha256(data).hexdigest(),
        "default": True,
    }


def model(name: str, template: str, tokenizer: str = "bard@1", **extra: Any) -> dict[str, Any]:
    return {
        "format": "toksvc-model",
        "format_version": 1,
        "name": name,
        "version": "1",
        "tokenizer": tokenizer,
        "context_window": 4096,
        "max_output_tokens": 1024,
        "chat": {"type": "jinja", "template": template},
        **extra,
    }


def make_store(
    root: Path, models: list[dict[str, Any]], prices: list[dict[str, Any]] | None = None
) -> Path:
    (root / "bard").mkdir(parents=True, exist_ok=True)
    shutil.copy(BUNDLED_STORE / "bard" / "1.json", root / "bard" / "1.json")
    manifest: dict[str, Any] = {
        "format": "toksvc-manifest",
        "format_version": 1,
        "tokenizers": [entry("bard/1.json", "bard", (root / "bard/1.json").read_bytes())],
        "models": [],
        "prices": [],
    }
    for kind, files in (("models", models), ("prices", prices or [])):
        (root / kind).mkdir(exist_ok=True)
        for f in files:
            path = f"{kind}/{f['name']}@{f['version']}.json"
            data = json.dumps(f).encode()
            (root / path).write_bytes(data)
            manifest[kind].append(entry(path, f["name"], data))
    (root / "manifest.json").write_text(json.dumps(manifest))
    return root
