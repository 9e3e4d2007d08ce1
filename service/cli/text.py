"""The text commands of `toksvc`: encode, count (each carries its operation), truncate, chunk and
decode. Each takes a tokenizer or a model (its tokenizer).

They load only the versions of the asked name (a whole store takes seconds to load). The text of
encode and count is the argument, or a file's contents (`--file PATH`, or `@PATH` as curl's
`-d @file`), else all of stdin; `--literal` takes an argument that starts with `@` as it is.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from functools import partial
from pathlib import Path

from service.bpe import SpecialSet, Tokenizer
from service.bpe.text import budgets
from service.cli import models as cli_models
from service.cli import options as cli_options
from service.errors import ConfigError, TokenizerNotFoundError
from service.store.loader import listed_names

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
        _text_args(p)
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


def _text_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "text",
        nargs="?",
        help="the text, or @PATH for a file's contents (default: all of stdin, as it is)",
    )
    p.add_argument("--file", type=Path, metavar="PATH", help="take the text from this file")
    p.add_argument(
        "--literal",
        action="store_true",
        help="take TEXT as it is even if it starts with @ (or pass such a text on stdin)",
    )


def _budget_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("tokenizer", help="a tokenizer (name or name@version), or a model")
    p.add_argument("max_tokens", type=int, help="the token budget")
    _text_args(p)


def _truncate(args: argparse.Namespace) -> None:
    text = _text(args)
    cut = budgets.truncate(_tokenizer(args), text, args.max_tokens, args.keep)
    sys.stdout.write(cut.text + "\n")


def _chunk(args: argparse.Namespace) -> None:
    text = _text(args)
    tokenizer = _tokenizer(args)
    for c in budgets.chunk(tokenizer, text, args.max_tokens, args.overlap):
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
            known = [*listed_names(cli_options.stores(args)), *tables.names]
            raise TokenizerNotFoundError(args.tokenizer, known) from None
    print(f"toksvc: {model.ref} counts with {model.tokenizer_ref}", file=sys.stderr)
    name = model.tokenizer_ref.split("@")[0]
    return cli_options.registry(args, name).resolve(model.tokenizer_ref).tokenizer


def _run(operation: TextOperation, args: argparse.Namespace) -> None:
    text = _text(args)
    tokenizer = _tokenizer(args)
    if args.strip_newline:
        text = text.removesuffix("\n").removesuffix("\r")
    allowed: SpecialSet = (
        "all" if "all" in args.allowed_special else frozenset(args.allowed_special)
    )
    disallowed: SpecialSet = frozenset() if args.as_text else "all"
    print(operation(tokenizer, text, allowed, disallowed))


def _text(args: argparse.Namespace) -> str:
    """The text to work on: --file, @PATH, the argument, or stdin (see the module docstring)."""
    if args.file is not None:
        if args.text is not None:
            raise ConfigError("give the text or --file, not both")
        return cli_options.read_text(args.file, "--file")
    if args.text is None:
        return sys.stdin.read()
    if args.text.startswith("@") and not args.literal:
        return cli_options.read_text(Path(args.text[1:]), "@file")
    if _names_a_file(args.text):
        cli_options.warn(
            f"working on the text {args.text!r}, which is also a file name; for "
            f"the file's contents use --file {args.text} or @{args.text}"
        )
    return str(args.text)


def _names_a_file(text: str) -> bool:
    """Is `text` (one short word) also the name of a file here? Then the user may have meant it."""
    if len(text) > 255 or text.strip() != text or "\n" in text:
        return False
    try:
        return Path(text).is_file()
    except (OSError, ValueError):
        return False


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
