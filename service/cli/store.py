"""The store commands of `toksvc`: train, import (tokenizers, model profiles, price files),
verify, list."""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path

from service.bpe import train
from service.bpe.engine.patterns import PATTERNS
from service.cli import options as cli_options
from service.cli.progress import MergeProgress
from service.errors import ConfigError
from service.store.formats import presets
from service.store.formats.model import OpenAIEstimateChat
from service.store.formats.tokenizer import TokenizerFile
from service.store.importers.hf_chat_config import ChatNaming, profile_from_config
from service.store.importers.imports import add_model, add_prices, import_files, trained_file
from service.store.importers.sources import Naming
from service.store.loader import listed_refs
from service.store.manifest import ManifestEntry, add_entry, add_to_store


def add_commands(
    sub: argparse._SubParsersAction[argparse.ArgumentParser],
    reading: argparse.ArgumentParser,
    writing: argparse.ArgumentParser,
) -> None:
    p = sub.add_parser("train", parents=[writing], help="train a pairs tokenizer into a store")
    p.add_argument("corpus", nargs="+", type=Path, help="UTF-8 text files")
    p.add_argument(
        "--vocab-size",
        type=int,
        required=True,
        help="256 byte ids plus the merges to learn (special tokens come after); training stops "
        "short when no pair occurs --min-frequency times any more: a warning says the size "
        "reached (an error with --strict-size)",
    )
    p.add_argument(
        "--strict-size",
        action="store_true",
        help="refuse (exit 2, nothing written) when training stops short of --vocab-size",
    )
    _naming_args(p)
    p.add_argument(
        "--pattern",
        default="gpt2",
        help=f"a preset ({', '.join(PATTERNS)}), a regex, or none",
    )
    p.add_argument("--special", action="append", default=[], help="a special token literal")
    p.add_argument("--min-frequency", type=int, default=2)
    p.add_argument("--normalization", choices=["none", "NFC", "NFKC"], default="none")
    _metadata_args(p)
    p.set_defaults(run=_train)

    help_ = "import a tokenizer, a model profile or a price file into a store"
    p = sub.add_parser("import", parents=[writing], help=help_)
    p.add_argument(
        "kind", choices=["tiktoken", "tekken", "sentencepiece", "hf", "gpt2", "model", "prices"]
    )
    p.add_argument(
        "files",
        nargs="+",
        type=Path,
        help="tiktoken: FILE.tiktoken; tekken: tekken.json; sentencepiece: tokenizer.model; "
        "hf: tokenizer.json; gpt2: encoder.json vocab.bpe; model: PROFILE.json; prices: "
        "PRICES.json (docs/format.md)",
    )
    p.add_argument("--name", help="the tokenizer's name (a profile or price file names itself)")
    p.add_argument("--version", help="the tokenizer's version")
    p.add_argument(
        "--preset",
        choices=sorted(presets.PRESETS),
        help="pattern, special tokens and normalization of a known encoding",
    )
    p.add_argument("--pattern", help="a preset pattern name, a regex, or none (overrides --preset)")
    _metadata_args(p)
    _chat_args(p)
    p.set_defaults(run=_import)

    p = sub.add_parser("verify", parents=[reading], help="check every manifest entry")
    p.set_defaults(run=_verify)
    p = sub.add_parser("list", parents=[reading], help="list the tokenizers in the store")
    p.set_defaults(run=_list)


def _naming_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--name", required=True)
    p.add_argument("--version", required=True)


def _metadata_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--description", default="")
    p.add_argument("--license", default="")
    p.add_argument(
        "--no-default", action="store_true", help="do not make this version the name's default"
    )


def _chat_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("a model profile from the same package (tokenizer imports)")
    g.add_argument(
        "--chat-config",
        type=Path,
        help="its tokenizer_config.json: the chat template (verbatim), bos and eos become the "
        "model profile --model, on the tokenizer imported",
    )
    g.add_argument("--model", help="the profile's name (default: --name); its version is --version")
    g.add_argument(
        "--context-window",
        type=int,
        help="default: the config's model_max_length, when it is a real limit",
    )
    g.add_argument("--max-output-tokens", type=int, help="default: the whole context window")
    g.add_argument("--image-tokens", type=int, help="tokens per image (a fixed rule; Gemma 3: 260)")


def _chat_profile(args: argparse.Namespace, tf: TokenizerFile) -> bytes | None:
    """The profile `--chat-config` asks for, checked before anything is written."""
    if args.chat_config is None:
        if args.model or args.context_window or args.max_output_tokens or args.image_tokens:
            raise ConfigError(
                "--model, --context-window, --max-output-tokens and "
                "--image-tokens go with --chat-config"
            )
        return None
    literals = {
        *tf.special_tokens,
        *tf.nonspecial_tokens,
        *(a.content for a in tf.added_tokens or []),
    }
    naming = ChatNaming(
        args.model or args.name,
        args.version,
        f"{tf.name}@{tf.version}",
        args.description,
        args.context_window,
        args.max_output_tokens,
        args.image_tokens,
    )
    return profile_from_config(args.chat_config, naming, literals)


def _naming(args: argparse.Namespace) -> Naming:
    return Naming(args.name, args.version, args.description, args.license)


def _train(args: argparse.Namespace) -> None:
    store = cli_options.target(args)  # refuse before the work, not after
    texts = [cli_options.read_text(path, "corpus file") for path in args.corpus]
    progress = MergeProgress()  # a bar on a terminal, plain lines in a log
    model = train(
        texts,
        args.vocab_size,
        presets.resolve_pattern(args.pattern),
        args.special,
        min_frequency=args.min_frequency,
        progress=progress,
    )
    progress.finish()
    reached = 256 + len(model.merges)
    if reached < args.vocab_size:
        short = (
            f"training stopped at a vocabulary of {reached}, short of --vocab-size "
            f"{args.vocab_size}: no pair occurs --min-frequency {args.min_frequency} times "
            "any more (train on more text, or lower --min-frequency)"
        )
        if args.strict_size:
            raise ConfigError(f"{short}; nothing written (--strict-size)")
        cli_options.warn(short)
    _write(args, store, trained_file(model, args.corpus, _naming(args), args.normalization))


def _import(args: argparse.Namespace) -> None:
    store = cli_options.target(args)
    if args.kind in ("model", "prices"):
        if args.chat_config is not None:
            raise ConfigError("--chat-config goes with a tokenizer import (hf, tiktoken, ...)")
        if len(args.files) != 1:
            raise ConfigError(f"import {args.kind} takes one file")
        if args.kind == "model":
            served = listed_refs([*args.settings.stores, store])
            entry = add_model(store, args.files[0], served, default=not args.no_default)
        else:
            entry = add_prices(store, args.files[0], default=not args.no_default)
        _wrote(store, entry)
        return
    if not (args.name and args.version):
        raise ConfigError(f"import {args.kind} needs --name and --version")
    tf = import_files(
        args.kind, args.files, _naming(args), preset=args.preset, pattern=args.pattern
    )
    profile = _chat_profile(args, tf)
    _write(args, store, tf)
    if profile is not None:
        name = args.model or args.name
        _wrote(
            store,
            add_entry(store, "models", name, args.version, profile, default=not args.no_default),
        )


def _write(args: argparse.Namespace, store: Path, tf: TokenizerFile) -> None:
    _wrote(store, add_to_store(store, tf, default=not args.no_default))


def _wrote(store: Path, entry: ManifestEntry) -> None:
    print(
        f"wrote {store / entry.path} sha256:{entry.sha256}{' (default)' if entry.default else ''}"
    )


# A `pairs` file need not be self-consistent (docs/format.md): its merges are the rule, and its
# ids are exact either way; only the faster `ranks` engine cannot serve it.
_CONSISTENT = "self-consistent"
_NOT_CONSISTENT = (
    "not self-consistent: some tokens are not what its merges make of their bytes "
    "(common in imported vocabularies; ids stay exact)"
)


def _verify(args: argparse.Namespace) -> int:
    registry = cli_options.load(args, first_use=False)  # every file validated and built
    for t in registry:
        consistent = _CONSISTENT if t.self_consistent else _NOT_CONSISTENT
        print(f"ok    {t.ref:28} {t.rule:5} {t.tokenizer.defined_ids:>7} ids  {consistent}")
    tables = registry.models
    for m in tables.models.values():
        kind = "estimate" if isinstance(m.profile.chat, OpenAIEstimateChat) else "exact"
        print(f"ok    {m.ref:28} model  -> {m.tokenizer_ref} ({kind})")
    for file_ref, n in Counter(p.file_ref for p in tables.prices.values()).items():
        print(f"ok    {file_ref:28} prices  {n} models")
    for failure in registry.failures:
        print(f"FAIL  {failure}")
    n_prices = len({p.file_ref for p in tables.prices.values()})
    print(
        f"{len(registry)} tokenizers, {len(tables.models)} models, {n_prices} price files "
        f"loaded, {len(registry.failures)} failed in {registry.load_seconds:.2f}s"
    )
    return 0 if registry.complete else 1


def _list(args: argparse.Namespace) -> int:
    registry = cli_options.registry(args)
    for t in registry:
        mark = "*" if t.is_default else " "
        print(f"{mark} {t.ref:28} {t.rule:5} {t.defined_ids:>7} ids  sha256:{t.sha256[:16]}")
    return 0 if registry.complete else 1
