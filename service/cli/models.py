"""The model commands of `toksvc`: models, count-chat, estimate.

They read model profiles and price files from the manifests, then load only the one tokenizer
the model needs (a whole store takes seconds to load).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from service.cli import options as cli_options
from service.errors import ConfigError, ModelNotFoundError, StoreError
from service.models import billing
from service.models.pricing import money
from service.store.formats.model import OpenAIEstimateChat
from service.store.loader import listed_refs
from service.store.manifest import Manifest, read_manifest
from service.store.modelstore import ModelTables, load_models
from service.store.registry import Registry


def add_commands(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], reading: argparse.ArgumentParser
) -> None:
    p = sub.add_parser("models", parents=[reading], help="list the models in the store")
    p.set_defaults(run=_models)
    p = sub.add_parser("count-chat", parents=[reading], help="count a conversation for a model")
    _chat_args(p)
    p.add_argument("--ids", action="store_true", help="print the ids too")
    p.set_defaults(run=_count_chat)
    p = sub.add_parser("estimate", parents=[reading], help="estimate the cost of a request")
    _chat_args(p)
    p.add_argument(
        "--output-tokens",
        type=int,
        help="expected output tokens (default: none; the input alone is priced, and the "
        "model's longest reply apart)",
    )
    p.add_argument("--cached-input-tokens", type=int, default=0)
    p.set_defaults(run=_estimate)


def _chat_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("model", help="a model name, alias or name@version")
    p.add_argument(
        "file",
        type=Path,
        help='a JSON file: {"messages": [...], "tools": [...]} '
        "or a list of messages; - reads stdin",
    )
    p.add_argument("--no-generation-prompt", action="store_true")


def model_tables(args: argparse.Namespace) -> ModelTables:
    """Every model profile and price file of the stores a command reads (failures warned)."""
    stores = cli_options.stores(args)
    manifests: list[tuple[Path, Manifest]] = []
    for root in stores:
        try:
            manifests.append((root, read_manifest(root)))
        except StoreError as exc:
            cli_options.warn(exc)
    tables = load_models(manifests, dict.fromkeys(listed_refs(stores)))
    for failure in tables.failures:
        cli_options.warn(failure)
    return tables


def _registry(args: argparse.Namespace) -> Registry:
    """The asked model's tokenizer, loaded, with every model profile and price."""
    tables = model_tables(args)
    if args.model not in tables.names:
        raise ModelNotFoundError(args.model, tables.names)  # every name, alias and ref
    model = tables.models[tables.names[args.model]]
    registry = cli_options.load(args, only=model.tokenizer_ref.split("@")[0])
    registry.models = tables
    return registry


def _conversation(path: Path) -> tuple[list[Any], list[Any] | None]:
    try:
        raw = sys.stdin.read() if str(path) == "-" else path.read_text("utf-8")
        data = json.loads(raw)
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{path}: not a readable JSON file: {exc}") from None
    if isinstance(data, list):
        return data, None
    if isinstance(data, dict) and isinstance(data.get("messages"), list):
        return data["messages"], data.get("tools")
    raise ConfigError(f'{path}: expected {{"messages": [...], "tools": [...]}} or a list')


def _models(args: argparse.Namespace) -> int:
    tables = model_tables(args)
    for m in tables.models.values():
        p = m.profile
        kind = "estimate" if isinstance(p.chat, OpenAIEstimateChat) else "exact"
        price = tables.prices.get(m.name)
        cost = (
            f"{price.price.input_per_million}/{price.price.output_per_million} "
            f"{price.currency} per 1M"
            if price
            else "no price"
        )
        print(
            f"{'*' if m.is_default else ' '} {m.ref:20} {p.tokenizer:18} "
            f"{_format(p.chat):16} {kind:8} {p.context_window:>8} ctx  {cost}"
        )
    return 0 if not tables.failures else 1


def _format(chat: object) -> str:
    return str(type(chat).__struct_config__.tag)  # type: ignore[attr-defined]


def _count_chat(args: argparse.Namespace) -> None:
    messages, tools = _conversation(args.file)
    counted = billing.count_conversation(
        _registry(args),
        args.model,
        messages,
        tools,
        add_generation_prompt=not args.no_generation_prompt,
    )
    c = counted.count
    print(
        f"{c.input_tokens} input tokens ({'exact' if c.exact else 'estimate'}, {c.method}, "
        f"{counted.model.ref}, {counted.tokenizer.ref})"
    )
    for i, m in enumerate(c.messages):
        note = " (with next)" if m.merged_with_next else ""
        print(f"  messages[{i}] {m.role:9} {m.tokens:>6}{note}")
    print(f"  tools             {c.tools_tokens:>6}")
    for name, n in c.overhead.items():
        print(f"  {name:17} {n:>6}")
    if args.ids:
        print(json.dumps(c.ids))


def _estimate(args: argparse.Namespace) -> None:
    messages, tools = _conversation(args.file)
    est = billing.estimate_request(
        _registry(args),
        args.model,
        messages=messages,
        tools=tools,
        add_generation_prompt=not args.no_generation_prompt,
        output_tokens=args.output_tokens,
        cached_input_tokens=args.cached_input_tokens,
    )
    e = est.estimate
    cur = e.price.currency
    print(
        f"{est.model.ref}: {e.input_tokens} input ({'exact' if est.exact else 'estimate'}), "
        f"{e.output_tokens} output, {e.remaining_context} of the context window left; the "
        f"longest reply ({e.max_output_tokens} tokens) would cost {money(e.max_output_cost)} {cur}"
    )
    print(f"  input        {money(e.input_cost)} {cur}")
    print(f"  cached input {money(e.cached_input_cost)} {cur}")
    print(f"  output       {money(e.output_cost)} {cur}")
    print(
        f"  total        {money(e.total_cost)} {cur}  (prices {e.price.file_ref}, "
        f"read {e.price.price.read_on} from {e.price.price.source})"
    )
