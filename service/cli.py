"""The `toksvc` command line: train, import, verify, list, encode, decode, count, schema, serve,
and the model commands (models, count-chat, estimate: `service.cli_models`).

Reading commands serve one or more stores (`--store DIR`, repeatable; `bundled` names the store
that ships with the package; default `$TOKSVC_STORE`, else the bundled store). `train` and
`import` write into one store the user names and never into the bundled one.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

import msgspec

from service import cli_models
from service.bpe import SpecialSet, Tokenizer, train
from service.errors import (
    ConfigError,
    DisallowedSpecialError,
    StoreError,
    TokenizerNotFoundError,
    ToksvcError,
)
from service.settings import BUNDLED, Settings, is_bundled, parse_stores
from service.store import presets
from service.store.fileformat import Metadata, TokenizerFile, json_schema
from service.store.importers import import_files, source_note, today
from service.store.manifest import add_to_store
from service.store.registry import Registry, listed_refs, load_store


def main(argv: Sequence[str] | None = None) -> int:
    try:
        parser = _parser(Settings.from_env())
        args, late = parser.parse_known_args(argv)
        _take_late_positionals(parser, args, late)
        return int(args.run(args) or 0)
    except ConfigError as exc:
        print(f"toksvc: error: {exc}", file=sys.stderr)
        return 2
    except DisallowedSpecialError as exc:  # the library's message names the API's fields
        print(f"toksvc: error: the text contains the special token {exc.token!r} at character "
              f"{exc.position}; pass --allowed-special {exc.token!r} (or --allowed-special all) "
              "to encode it as a special id, or --as-text to encode it as ordinary text",
              file=sys.stderr)  # fmt: skip
        return 1
    except ToksvcError as exc:
        print(f"toksvc: error: {exc}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        return 1


def _parser(settings: Settings) -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="toksvc", description=__doc__,
                                  formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--store",
        action="append",
        type=_store_arg,
        help=f"a store directory, or `{BUNDLED}`; repeat to serve several (default: "
        "$TOKSVC_STORE, else the bundled store)",
    )
    common.set_defaults(default_stores=settings.stores)
    target = argparse.ArgumentParser(add_help=False)
    target.add_argument(
        "--store",
        type=_store_arg,
        help="the store to write to (created if missing; default: the last folder in "
        "$TOKSVC_STORE); never the bundled store",
    )
    target.set_defaults(default_stores=settings.stores)
    sub = top.add_subparsers(required=True, metavar="COMMAND")

    p = sub.add_parser("train", parents=[target], help="train a pairs tokenizer into a store")
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

    p = sub.add_parser("import", parents=[target], help="import a tokenizer into a store")
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

    _text_commands(sub, common)

    p = sub.add_parser("schema", help="print the JSON Schema of tokenizer files")
    p.set_defaults(run=lambda args: print(json.dumps(json_schema(), indent=2)))

    cli_models.add_commands(sub, common)
    p = sub.add_parser("serve", parents=[common], help="run the HTTP service")
    p.add_argument("--host", default=settings.host)
    p.add_argument("--port", type=int, default=settings.port)
    p.add_argument("--workers", type=int, default=settings.workers)
    p.set_defaults(run=_serve)
    return top


def _take_late_positionals(
    parser: argparse.ArgumentParser, args: argparse.Namespace, late: list[str]
) -> None:
    """argparse fills an optional positional before it sees a later option, so the text of
    `encode NAME --allowed-special all TEXT` (or the ids of `decode NAME --errors replace 1 2`)
    arrives as unrecognized: take it where it belongs."""
    if not late:
        return
    if getattr(args, "text", "") is None and len(late) == 1:
        args.text = late[0]
    elif getattr(args, "ids", None) == [] and all(x.lstrip("-").isdigit() for x in late):
        args.ids = [int(x) for x in late]
    else:
        parser.error(f"unrecognized arguments: {' '.join(late)}")


def _text_commands(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser
) -> None:
    """encode, count and decode."""
    for verb, helptext in (("encode", "print the ids of a text"), ("count", "count tokens")):
        p = sub.add_parser(verb, parents=[common], help=helptext)
        p.add_argument("tokenizer", help="name or name@version")
        p.add_argument("text", nargs="?", help="the text (default: all of stdin, as it is: see -n)")
        p.add_argument(
            "--allowed-special",
            action="append",
            default=[],
            metavar="TOKEN",
            help="a special token to encode as its special id (repeatable), or `all`",
        )
        p.add_argument(
            "--as-text", action="store_true", help="encode special-token literals as ordinary text"
        )
        p.add_argument(
            "-n",
            "--strip-newline",
            action="store_true",
            help="drop one trailing newline from the text (what `echo` adds)",
        )
        p.set_defaults(run=_encode_or_count, verb=verb)

    p = sub.add_parser("decode", parents=[common], help="print the text of ids")
    p.add_argument("tokenizer", help="name or name@version")
    p.add_argument("ids", nargs="*", type=int, help="ids (default: read a JSON list from stdin)")
    p.add_argument("--errors", choices=["strict", "replace"], default="strict")
    p.add_argument(
        "--no-newline", action="store_true", help="print the text exactly, without a final newline"
    )
    p.set_defaults(run=_decode)


def _metadata_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--description", default="")
    p.add_argument("--license", default="")
    p.add_argument(
        "--no-default", action="store_true", help="do not make this version the name's default"
    )


def _train(args: argparse.Namespace) -> None:
    _target(args)  # refuse before the work, not after
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
    _target(args)
    tf = import_files(args.kind, args.files, name=args.name, version=args.version,
                      preset=args.preset, pattern=args.pattern)  # fmt: skip
    meta = Metadata(
        description=args.description,
        license=args.license,
        source=tf.metadata.source,
        created=tf.metadata.created,
    )
    _write(args, msgspec.structs.replace(tf, metadata=meta))


def _store_arg(value: str) -> Path:
    return parse_stores(value)[0] if value == BUNDLED else Path(value)


def _stores(args: argparse.Namespace) -> tuple[Path, ...]:
    return tuple(args.store) if args.store else args.default_stores


def _target(args: argparse.Namespace) -> Path:
    """The one store `train` and `import` write to: never the bundled one."""
    store: Path = args.store or args.default_stores[-1]
    if is_bundled(store):
        raise StoreError(str(store), "the bundled store is read-only; name your own store with "
                         "--store DIR (created if missing), then serve both with "
                         f"--store {BUNDLED} --store DIR")  # fmt: skip
    return store


def _write(args: argparse.Namespace, tf: TokenizerFile) -> None:
    store = _target(args)
    entry = add_to_store(store, tf, default=not args.no_default)
    print(
        f"wrote {store / entry.path} sha256:{entry.sha256}{' (default)' if entry.default else ''}"
    )


def _verify(args: argparse.Namespace) -> int:
    registry = load_store(_stores(args))
    for t in registry:
        consistent = "self-consistent" if t.self_consistent else "NOT self-consistent"
        print(f"ok    {t.ref:28} {t.rule:5} {t.tokenizer.n_vocab:>7} ids  {consistent}")
    for failure in registry.failures:
        print(f"FAIL  {failure}")
    print(
        f"{len(registry)} loaded, {len(registry.failures)} failed in {registry.load_seconds:.2f}s"
    )
    return 0 if registry.complete else 1


def _list(args: argparse.Namespace) -> int:
    registry = _registry(args)
    for t in registry:
        mark = "*" if t.is_default else " "
        print(f"{mark} {t.ref:28} {t.rule:5} {t.tokenizer.n_vocab:>7} ids  sha256:{t.sha256[:16]}")
    return 0 if registry.complete else 1


def _registry(args: argparse.Namespace, only: str | None = None) -> Registry:
    registry = load_store(_stores(args), only=only)
    for failure in registry.failures:
        print(f"toksvc: warning: {failure}", file=sys.stderr)
    return registry


def _tokenizer(args: argparse.Namespace) -> Tokenizer:
    """Load only the versions of the asked name; an unknown name lists every tokenizer."""
    try:
        return _registry(args, args.tokenizer.split("@")[0]).resolve(args.tokenizer).tokenizer
    except TokenizerNotFoundError:
        raise TokenizerNotFoundError(args.tokenizer, listed_refs(_stores(args))) from None


def _encode_or_count(args: argparse.Namespace) -> None:
    tokenizer = _tokenizer(args)
    text = sys.stdin.read() if args.text is None else args.text
    if args.strip_newline:
        text = text.removesuffix("\n").removesuffix("\r")
    allowed: SpecialSet = (
        "all" if "all" in args.allowed_special else frozenset(args.allowed_special)
    )
    disallowed: SpecialSet = frozenset() if args.as_text else "all"
    if args.verb == "count":
        print(tokenizer.count(text, allowed_special=allowed, disallowed_special=disallowed))
    else:
        ids = tokenizer.encode(text, allowed_special=allowed, disallowed_special=disallowed)
        print(json.dumps(ids))


def _decode(args: argparse.Namespace) -> None:
    tokenizer = _tokenizer(args)
    ids = args.ids if args.ids else _ids_from_stdin()
    text = tokenizer.decode(ids, args.errors)
    sys.stdout.write(text if args.no_newline else text + "\n")


def _ids_from_stdin() -> list[int]:
    try:
        ids = json.loads(sys.stdin.read())
    except ValueError as exc:
        raise ConfigError(f"stdin is not a JSON list of ids: {exc}") from None
    if not isinstance(ids, list) or not all(type(i) is int for i in ids):
        raise ConfigError("stdin must be a JSON list of integer ids, e.g. [9906, 11, 1917]")
    return ids


def _serve(args: argparse.Namespace) -> None:
    from service.api.server import serve  # noqa: PLC0415 (lazy: the CLI needs no web stack)

    serve(
        Settings.from_env(), stores=_stores(args), host=args.host, port=args.port,
        workers=args.workers,
    )  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
