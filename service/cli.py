"""The `toksvc` command line: train, import, verify, list, encode, decode, count, schema, serve."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

import msgspec

from service.bpe import SpecialSet, Tokenizer, train
from service.errors import TokenizerNotFoundError, ToksvcError
from service.settings import Settings
from service.store import presets
from service.store.fileformat import Metadata, TokenizerFile, json_schema
from service.store.importers import from_gpt2, from_hf_json, from_tiktoken, source_note, today
from service.store.manifest import add_to_store, read_manifest
from service.store.registry import Registry, load_store


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        return int(args.run(args) or 0)
    except ToksvcError as exc:
        print(f"toksvc: error: {exc}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        return 1


def _parser() -> argparse.ArgumentParser:
    settings = Settings.from_env()
    top = argparse.ArgumentParser(prog="toksvc", description=__doc__)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--store",
        type=Path,
        default=settings.store,
        help="store directory (default: $TOKSVC_STORE, else the bundled store)",
    )
    sub = top.add_subparsers(required=True, metavar="COMMAND")

    p = sub.add_parser("train", parents=[common], help="train a pairs tokenizer into the store")
    p.add_argument("corpus", nargs="+", type=Path, help="UTF-8 text files")
    p.add_argument("--vocab-size", type=int, required=True)
    p.add_argument("--name", required=True)
    p.add_argument("--version", required=True)
    p.add_argument(
        "--pattern", default="gpt2", help="a preset (gpt2, cl100k, o200k, qwen2), a regex, or none"
    )
    p.add_argument("--special", action="append", default=[], help="a special token literal")
    p.add_argument("--min-frequency", type=int, default=2)
    p.add_argument("--normalization", choices=["none", "NFC", "NFKC"], default="none")
    _metadata_args(p)
    p.set_defaults(run=_train)

    p = sub.add_parser("import", parents=[common], help="import a tokenizer into the store")
    p.add_argument("kind", choices=["tiktoken", "hf", "gpt2"])
    p.add_argument(
        "files",
        nargs="+",
        type=Path,
        help="tiktoken: FILE.tiktoken; hf: tokenizer.json; gpt2: encoder.json vocab.bpe",
    )
    p.add_argument("--name", required=True)
    p.add_argument("--version", required=True)
    p.add_argument(
        "--preset",
        choices=sorted(presets.PRESETS),
        help="pattern, special tokens and normalization of a known encoding",
    )
    p.add_argument("--pattern", help="a preset pattern name, a regex, or none (overrides --preset)")
    _metadata_args(p)
    p.set_defaults(run=_import)

    p = sub.add_parser("verify", parents=[common], help="check every manifest entry")
    p.set_defaults(run=_verify)
    p = sub.add_parser("list", parents=[common], help="list the tokenizers in the store")
    p.set_defaults(run=_list)

    for verb, helptext in (("encode", "print the ids of a text"), ("count", "count tokens")):
        p = sub.add_parser(verb, parents=[common], help=helptext)
        p.add_argument("tokenizer", help="name or name@version")
        p.add_argument("text", nargs="?", help="the text (default: read stdin)")
        p.add_argument(
            "--allowed-special",
            nargs="*",
            default=[],
            help="special tokens to encode as special ids, or `all`",
        )
        p.add_argument(
            "--as-text", action="store_true", help="encode special-token literals as ordinary text"
        )
        p.set_defaults(run=_encode_or_count, verb=verb)

    p = sub.add_parser("decode", parents=[common], help="print the text of ids")
    p.add_argument("tokenizer", help="name or name@version")
    p.add_argument("ids", nargs="*", type=int, help="ids (default: read a JSON list from stdin)")
    p.add_argument("--errors", choices=["strict", "replace"], default="strict")
    p.set_defaults(run=_decode)

    p = sub.add_parser("schema", help="print the JSON Schema of tokenizer files")
    p.set_defaults(run=lambda args: print(json.dumps(json_schema(), indent=2)))

    p = sub.add_parser("serve", parents=[common], help="run the HTTP service")
    p.add_argument("--host", default=settings.host)
    p.add_argument("--port", type=int, default=settings.port)
    p.add_argument("--workers", type=int, default=settings.workers)
    p.set_defaults(run=_serve)
    return top


def _metadata_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--description", default="")
    p.add_argument("--license", default="")
    p.add_argument(
        "--no-default", action="store_true", help="do not make this version the name's default"
    )


def _train(args: argparse.Namespace) -> None:
    texts = [path.read_text("utf-8") for path in args.corpus]
    model = train(
        texts,
        args.vocab_size,
        presets.resolve_pattern(args.pattern),
        args.special,
        min_frequency=args.min_frequency,
        progress=_progress_bar,
    )
    print(file=sys.stderr)
    tf = TokenizerFile(
        name=args.name,
        version=args.version,
        rule="pairs",
        pattern=model.pattern,
        normalization=args.normalization,
        special_tokens=model.special_tokens,
        metadata=Metadata(
            description=args.description,
            license=args.license,
            created=today(),
            source=f"trained by toksvc on {source_note(*args.corpus)}",
        ),
        merges=model.merges,
    )
    _write(args, tf)


def _progress_bar(done: int, total: int) -> None:
    """Redraw at each whole percent (and at the end), so a long run writes ~100 updates."""
    if done != total and done * 100 // max(total, 1) == (done - 1) * 100 // max(total, 1):
        return
    width = 40
    filled = width * done // max(total, 1)
    print(
        f"\rmerges [{'#' * filled}{'.' * (width - filled)}] {done}/{total}",
        end="",
        file=sys.stderr,
        flush=True,
    )


def _import(args: argparse.Namespace) -> None:
    preset = presets.PRESETS.get(args.preset) if args.preset else None
    pattern = (
        presets.resolve_pattern(args.pattern)
        if args.pattern is not None
        else preset.pattern
        if preset
        else None
    )
    specials = preset.special_tokens if preset else {}
    files: list[Path] = args.files
    expected = {"tiktoken": 1, "hf": 1, "gpt2": 2}[args.kind]
    if len(files) != expected:
        raise SystemExit(f"toksvc: error: import {args.kind} takes {expected} file(s)")
    if args.kind == "tiktoken":
        tf = from_tiktoken(
            files[0],
            name=args.name,
            version=args.version,
            pattern=pattern,
            special_tokens=specials,
            normalization=preset.normalization if preset else "none",
        )
    elif args.kind == "gpt2":
        tf = from_gpt2(
            files[0],
            files[1],
            name=args.name,
            version=args.version,
            pattern=pattern or presets.GPT2_PATTERN,
            special_tokens=specials,
        )
    else:
        tf = from_hf_json(
            files[0],
            name=args.name,
            version=args.version,
            pattern=pattern if args.pattern is not None else None,
        )
    meta = Metadata(
        description=args.description,
        license=args.license,
        source=tf.metadata.source,
        created=tf.metadata.created,
    )
    _write(args, msgspec.structs.replace(tf, metadata=meta))


def _write(args: argparse.Namespace, tf: TokenizerFile) -> None:
    entry = add_to_store(args.store, tf, default=not args.no_default)
    print(
        f"wrote {args.store / entry.path} sha256:{entry.sha256}"
        f"{' (default)' if entry.default else ''}"
    )


def _verify(args: argparse.Namespace) -> int:
    registry = load_store(args.store)
    for t in registry:
        consistent = "self-consistent" if t.self_consistent else "NOT self-consistent"
        print(f"ok    {t.ref:28} {t.rule:5} {t.tokenizer.n_vocab:>7} ids  {consistent}")
    for failure in registry.failures:
        print(f"FAIL  {failure}")
    print(
        f"{len(registry)} loaded, {len(registry.failures)} failed in {registry.load_seconds:.2f}s"
    )
    return 1 if registry.failures or not len(registry) else 0


def _list(args: argparse.Namespace) -> None:
    registry = _registry(args)
    for t in registry:
        mark = "*" if t.is_default else " "
        print(f"{mark} {t.ref:28} {t.rule:5} {t.tokenizer.n_vocab:>7} ids  sha256:{t.sha256[:16]}")


def _registry(args: argparse.Namespace, only: str | None = None) -> Registry:
    registry = load_store(args.store, only=only)
    for failure in registry.failures:
        print(f"toksvc: warning: {failure}", file=sys.stderr)
    return registry


def _tokenizer(args: argparse.Namespace) -> Tokenizer:
    """Load only the versions of the asked name; an unknown name lists the whole manifest."""
    try:
        return _registry(args, args.tokenizer.split("@")[0]).resolve(args.tokenizer).tokenizer
    except TokenizerNotFoundError:
        refs = [e.ref for e in read_manifest(args.store).tokenizers]
        raise TokenizerNotFoundError(args.tokenizer, refs) from None


def _encode_or_count(args: argparse.Namespace) -> None:
    tokenizer = _tokenizer(args)
    text = sys.stdin.read() if args.text is None else args.text
    allowed: SpecialSet = (
        "all" if args.allowed_special == ["all"] else frozenset(args.allowed_special)
    )
    disallowed: SpecialSet = frozenset() if args.as_text else "all"
    if args.verb == "count":
        print(tokenizer.count(text, allowed_special=allowed, disallowed_special=disallowed))
    else:
        ids = tokenizer.encode(text, allowed_special=allowed, disallowed_special=disallowed)
        print(json.dumps(ids))


def _decode(args: argparse.Namespace) -> None:
    tokenizer = _tokenizer(args)
    ids = args.ids if args.ids else json.loads(sys.stdin.read())
    sys.stdout.write(tokenizer.decode(ids, args.errors))


def _serve(args: argparse.Namespace) -> None:
    from service.api.server import serve  # noqa: PLC0415 (lazy: the CLI needs no web stack)

    serve(
        Settings.from_env(), store=args.store, host=args.host, port=args.port, workers=args.workers
    )


if __name__ == "__main__":
    sys.exit(main())
