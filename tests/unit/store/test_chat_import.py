"""`toksvc import hf tokenizer.json --chat-config tokenizer_config.json`: the tokenizer and a
model profile from the same package in one step. The package here is Qwen2.5's tokenizer.json
with a small tokenizer_config.json written by the test (the real Llama 3.1 and Gemma 3 files:
tests/unit/models/test_family_chat_oracle.py, opt-in)."""

from __future__ import annotations

import json
import os
import random
from pathlib import Path
from typing import Any

import pytest

from service.cli import main
from service.models.billing import count_conversation
from service.runtime import engine_factory
from service.store.loader import load_store
from tests.support.chatgen import conversation
from tests.support.testdata import vocab_file

# Jinja whitespace control, a namespace, `trim`, a loop and the BOS variable: rendered by
# transformers' rules or not at all
TEMPLATE = (
    "{{- bos_token }}\n{%- set ns = namespace(n=0) %}\n{%- for m in messages %}\n"
    "    {%- set ns.n = ns.n + 1 %}\n"
    "    {{- '<|im_start|>' + m['role'] + ' ' + ns.n|string + '\\n' + m['content'] | trim }}\n"
    "    {{- '<|im_end|>\\n' }}\n{%- endfor %}\n"
    "{%- if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)


def config(**fields: Any) -> dict[str, Any]:
    return {
        "bos_token": "<|endoftext|>",
        "eos_token": {"content": "<|im_end|>", "lstrip": False},
        "model_max_length": 32768,
        "chat_template": TEMPLATE,
        **fields,
    }


def run_import(tmp_path: Path, cfg: dict[str, Any] | None, *extra: str) -> tuple[int, Path]:
    store = tmp_path / "store"
    args = [
        "import",
        "hf",
        str(vocab_file("qwen2_5_tokenizer.json")),
        "--name",
        "pkg",
        "--version",
        "1",
        "--store",
        str(store),
        "--description",
        "a test package",
    ]
    if cfg is not None:
        path = tmp_path / "tokenizer_config.json"
        path.write_text(json.dumps(cfg, ensure_ascii=False))
        args += ["--chat-config", str(path)]
    return main([*args, *extra]), store


def test_one_step_brings_the_profile(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, store = run_import(tmp_path, config(), "--model", "pkg-chat")
    assert code == 0, capsys.readouterr().err
    profile = json.loads((store / "models" / "pkg-chat@1.json").read_text())
    assert profile["tokenizer"] == "pkg@1"
    assert profile["chat"]["template"] == TEMPLATE  # verbatim
    assert (profile["chat"]["bos_token"], profile["chat"]["eos_token"]) == (
        "<|endoftext|>",
        "<|im_end|>",
    )
    assert profile["chat"]["template_source"].startswith("a test package: tokenizer_config.json")
    assert (profile["context_window"], profile["max_output_tokens"]) == (32768, 32768)
    assert profile["images"] is None
    assert "models/pkg-chat@1.json" in capsys.readouterr().out


def test_counts_match_transformers(tmp_path: Path) -> None:
    code, store = run_import(tmp_path, config())
    assert code == 0
    registry = load_store(store, engine_factory("auto"))
    os.environ["HF_HUB_OFFLINE"] = "1"
    from transformers import PreTrainedTokenizerFast  # noqa: PLC0415 (after HF_HUB_OFFLINE)

    hf = PreTrainedTokenizerFast(
        tokenizer_file=str(vocab_file("qwen2_5_tokenizer.json")),
        bos_token="<|endoftext|>",
        eos_token="<|im_end|>",
    )
    hf.chat_template = TEMPLATE
    rng = random.Random("chat-import")
    for _ in range(30):
        messages, _ = conversation(rng)
        ours = count_conversation(registry, "pkg", messages).count.ids
        theirs = hf.apply_chat_template(
            messages, tokenize=True, add_generation_prompt=True, return_dict=False
        )
        assert ours == list(theirs)


def test_limits_and_images_from_flags(tmp_path: Path) -> None:
    cfg = config(model_max_length=1000000000000000019884624838656)  # transformers' "no limit"
    code, store = run_import(
        tmp_path,
        cfg,
        "--context-window",
        "131072",
        "--max-output-tokens",
        "8192",
        "--image-tokens",
        "260",
    )
    assert code == 0
    profile = json.loads((store / "models" / "pkg@1.json").read_text())
    assert (profile["context_window"], profile["max_output_tokens"]) == (131072, 8192)
    assert profile["images"] == {"rule": "fixed", "tokens": 260}


@pytest.mark.parametrize(
    ("cfg", "says"),
    [
        (config(chat_template=[{"name": "default", "template": TEMPLATE}]), "chat_template"),
        (config(chat_template=None), "chat_template: missing"),
        (config(bos_token="<s>"), "bos_token: '<s>' is not a special or added token"),
        (config(model_max_length=10**30), "give --context-window"),
        (config(model_max_length=True), "model_max_length: True is no context window"),
        (config(chat_template="{% for m in messages %}"), "chat.template"),
    ],
)
def test_refused_before_anything_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], cfg: dict[str, Any], says: str
) -> None:
    code, store = run_import(tmp_path, cfg)
    assert code != 0
    assert says in capsys.readouterr().err
    assert not store.exists()  # neither the tokenizer nor the profile


@pytest.mark.parametrize(
    ("text", "says"),
    [
        (
            '{"chat_template": "x", "junk": ' + "[" * 100_000 + "]" * 100_000 + "}",
            "nested too deeply",
        ),
        (json.dumps(config(chat_template="{{ bos_token }}\udc80")), "lone surrogate"),
    ],
)
def test_hostile_files_are_refused_with_a_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, says: str
) -> None:
    """A file nested past Python's recursion limit, a template with a lone surrogate escape:
    a store error naming the file (they used to end the import with a traceback)."""
    path = tmp_path / "tokenizer_config.json"
    path.write_text(text)
    store = tmp_path / "store"
    code = main(
        [
            "import",
            "hf",
            str(vocab_file("qwen2_5_tokenizer.json")),
            "--name",
            "pkg",
            "--version",
            "1",
            "--store",
            str(store),
            "--chat-config",
            str(path),
        ]
    )
    assert code != 0
    err = capsys.readouterr().err
    assert says in err and "tokenizer_config.json" in err and "Traceback" not in err
    assert not store.exists()


def test_profile_flags_need_the_config(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, store = run_import(tmp_path, None, "--model", "x")
    assert code != 0 and "--chat-config" in capsys.readouterr().err
    assert not store.exists()
