"""Model profiles and price files in the store: verified at load, failures typed and named."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from service.errors import ModelNotFoundError
from service.settings import BUNDLED_STORE
from service.store.formats.model import json_schemas
from service.store.loader import load_store
from service.store.manifest import read_manifest
from tests.support.modelstores import make_store, model

PRICE = {
    "format": "toksvc-prices",
    "format_version": 1,
    "name": "house",
    "version": "1",
    "currency": "EUR",
    "prices": [
        {
            "model": "chat",
            "input_per_million": "1.5",
            "output_per_million": "3",
            "source": "test",
            "read_on": "2026-12-01",
        }
    ],
}


def test_manifest_without_models_stays_valid(tmp_path: Path) -> None:
    store = make_store(tmp_path, [])
    manifest = json.loads((store / "manifest.json").read_text())
    del manifest["models"], manifest["prices"]
    (store / "manifest.json").write_text(json.dumps(manifest))
    registry = load_store(store)
    assert registry.complete and not registry.models.models


def test_model_aliases_and_prices_load(tmp_path: Path) -> None:
    store = make_store(
        tmp_path, [model("chat", "{{ messages[0].content }}", aliases=["c-1"])], [PRICE]
    )
    registry = load_store(store)
    assert registry.complete, registry.failures
    assert registry.resolve_model("c-1") is registry.resolve_model("chat@1")
    assert registry.models.prices["chat"].currency == "EUR"
    with pytest.raises(ModelNotFoundError, match="chat@1"):
        registry.resolve_model("nope")


def test_missing_tokenizer_names_model_and_tokenizer(tmp_path: Path) -> None:
    store = make_store(tmp_path, [model("chat", "x", tokenizer="ghost@3")])
    registry = load_store(store)
    assert not registry.complete and not registry.models.models
    assert "chat@1" in str(registry.failures[0]) and "ghost@3" in str(registry.failures[0])


def test_changed_model_file_fails_its_hash(tmp_path: Path) -> None:
    store = make_store(tmp_path, [model("chat", "x")])
    path = store / "models" / "chat@1.json"
    path.write_bytes(path.read_bytes().replace(b'"x"', b'"y"'))
    registry = load_store(store)
    assert "sha256" in str(registry.failures[0]) and "chat@1.json" in str(registry.failures[0])


def test_template_syntax_error_is_a_load_failure(tmp_path: Path) -> None:
    registry = load_store(make_store(tmp_path, [model("chat", "{% for %}")]))
    assert "chat.template" in str(registry.failures[0])


def test_alias_claimed_twice_fails(tmp_path: Path) -> None:
    store = make_store(
        tmp_path, [model("a", "x", aliases=["same"]), model("b", "x", aliases=["same"])]
    )
    registry = load_store(store)
    assert any("same already names" in str(f) for f in registry.failures)


def test_bundled_manifest_lists_models_and_prices() -> None:
    manifest = read_manifest(BUNDLED_STORE)
    names = {e.name for e in manifest.models}
    assert {"qwen2.5", "qwen3", "gpt-oss", "gpt-4", "gpt-4o", "gpt-4o-mini", "gpt-4.1"} <= names
    assert [e.name for e in manifest.prices] == ["openai"]


def test_the_committed_schemas_are_generated_from_the_definitions() -> None:
    docs = Path(__file__).resolve().parents[3] / "docs"
    schemas = json_schemas()
    assert json.loads((docs / "model-file.schema.json").read_text()) == schemas["model"]
    assert json.loads((docs / "price-file.schema.json").read_text()) == schemas["prices"]
