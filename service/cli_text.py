"""The text commands of `toksvc`: encode, count (each carries its operation), truncate, chunk and
decode. Each takes a tokenizer or a model (its tokenizer).

They load only the versions of the asked name (a whole store takes seconds to load).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from functools import partial

from service import cli_models, cli_options
from service.bpe import SpecialSet, Tokenizer, textops
from service.errors import ConfigError, TokenizerNotFoundError
from service.store.registry import listed_refs

# (tokenizer, text, allowed special, disallowed special) -> the line to print
TextOperation = Callable[[Tokenizer, str, SpecialSet, SpecialSet], str]


def _ids(tokenizer: Tokenizer, text: str, allowed: SpecialSet, disallowed: SpecialSet) -> str:
    return json.dumps(
        tokenizer.encode(text, allowed_special=allowed, disallowed_special=disallowed)
    )


def _count(tokenizer: Tokenizer, text: str, allowed: SpecialSet, disallowed: SpecialSet) -> str:
    return str(tokenizer.count(text, allowed_special=allowed, disallowed_special=disallowed))


TEXT_OPERATIONS: dict[str, tuple[str, TextOperation]] = {
    "encode": ("print the ids of a text", _ids),
    "count": ("count tokens", _count),
}


def add_commands(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], reading: argparse.ArgumentParser
) -> None:
    for command, (helptext, operation) in TEXT_OPERATIONS.items():
        p = sub.add_parser(command, parents=[reading], help=helptext)
        p.add_argument("tokenizer", help="a tokenizer (name or name@version), or a model")
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
        p.set_defaults(run=partial(_run, operation))

    help_ = "print the longest start (or end) of a text within a token budget"
    p = sub.add_parser("truncate", parents=[reading], help=help_)
    _budget_args(p)
    p.add_argument("--keep", choices=["start", "end"], default="start")
    p.set_defaults(run=_truncate)
    help_ = "split a text into chunks within a token budget (JSON, one per line)"
    p = sub.add_parser("chunk", parents=[reading], help=help_)
    _budget_args(p)
    p.add_argument("--overlap", type=int, default=0, help="tokens a chunk may repeat (default 0)")
    p.set_defaults(run=_chunk)

    p = sub.add_parser("decode", parents=[reading], help="print the text of ids")
    p.add_argument("tokenizer", help="a tokenizer (name or name@version), or a model")
    p.add_argument("ids", nargs="*", type=int, help="ids (default: read a JSON list from stdin)")
    p.add_argument("--errors", choices=["strict", "replace"], default="strict")
    p.add_argument(
        "--no-newline", action="store_true", help="print the text exactly, without a final newline"
    )
    p.set_defaults(run=_decode)


def _budget_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("tokenizer", help="a tokenizer (name or name@version), or a model")
    p.add_argument("max_tokens", type=int, help="the token budget")
    p.add_argument("text", nargs="?", help="the text (default: all of stdin, as it is)")


def _truncate(args: argparse.Namespace) -> None:
    tokenizer = _tokenizer(args)
    text = sys.stdin.read() if args.text is None else args.text
    cut = textops.truncate(tokenizer, text, args.max_tokens, args.keep)
    sys.stdout.write(cut.text + "\n")


def _chunk(args: argparse.Namespace) -> None:
    tokenizer = _tokenizer(args)
    text = sys.stdin.read() if args.text is None else args.text
    for c in textops.chunk(tokenizer, text, args.max_tokens, args.overlap):
        line = {"text": c.text, "start": c.start, "end": c.end, "count": c.count}
        print(json.dumps(line, ensure_ascii=False))


def _tokenizer(args: argparse.Namespace) -> Tokenizer:
    """Load only the versions of the asked name; a model's name loads its tokenizer (said on
    stderr); an unknown name lists every tokenizer and model."""
    registry = cli_options.registry(args, args.tokenizer.split("@")[0])
    try:
        return registry.resolve(args.tokenizer).tokenizer
    except TokenizerNotFoundError:
        tables = cli_models.model_tables(args)
        model = tables.models.get(tables.names.get(args.tokenizer, ""))
        if model is None:
            known = [*listed_refs(cli_options.stores(args)), *tables.models]
            raise TokenizerNotFoundError(args.tokenizer, known) from None
    print(f"toksvc: {model.ref} counts with {model.tokenizer_ref}", file=sys.stderr)
    name = model.tokenizer_ref.split("@")[0]
    return cli_options.registry(args, name).resolve(model.tokenizer_ref).tokenizer


def _run(operation: TextOperation, args: argparse.Namespace) -> None:
    tokenizer = _tokenizer(args)
    text = sys.stdin.read() if args.text is None else args.text
    if args.strip_newline:
        text = text.removesuffix("\n").removesuffix("\r")
    allowed: SpecialSet = (
        "all" if "all" in args.allowed_special else frozenset(args.allowed_special)
    )
    disallowed: SpecialSet = frozenset() if args.as_text else "all"
    print(operation(tokenizer, text, allowed, disallowed))


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
