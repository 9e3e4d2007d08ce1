"""The `toksvc` command line: train, import, verify, list, encode, decode, count, schema, serve,
and the model commands (models, count-chat, estimate: `service.cli.models`).

Reading commands serve one or more stores (`--store DIR`, repeatable; `bundled` names the store
that ships with the package; default `$TOKSVC_STORE`, else the bundled store). `train` and
`import` write into one store the user names and never into the bundled one.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from typing import Any

from service.cli import models as cli_models
from service.cli import options as cli_options
from service.cli import store as cli_store
from service.cli import text as cli_text
from service.errors import ConfigError, DisallowedSpecialError, ToksvcError
from service.settings import Settings, env_name
from service.store.formats.tokenizer import json_schema

# This module: the parser, `main`, schema and serve (the web stack is imported only then). The
# commands live by what they work on: train, import, verify, list in `store`; encode, count,
# decode in `text`; models, count-chat, estimate in `models`; `--store` in `options`.


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
        print(
            f"toksvc: error: the text contains the special token {exc.token!r} at character "
            f"{exc.position}; pass --allowed-special {exc.token!r} (or --allowed-special all) "
            "to encode it as a special id, or --as-text to encode it as ordinary text",
            file=sys.stderr,
        )
        return 1
    except ToksvcError as exc:
        print(f"toksvc: error: {exc}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        return 1


def _parser(settings: Settings) -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(
        prog="toksvc", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    reading, writing = cli_options.reading(settings), cli_options.writing(settings)
    sub = top.add_subparsers(required=True, metavar="COMMAND")
    cli_store.add_commands(sub, reading, writing)
    cli_text.add_commands(sub, reading)
    p = sub.add_parser("schema", help="print the JSON Schema of tokenizer files")
    p.set_defaults(run=lambda args: print(json.dumps(json_schema(), indent=2)))
    cli_models.add_commands(sub, reading)
    _add_serve(sub, reading, settings)
    return top


def _add_serve(sub: Any, reading: argparse.ArgumentParser, settings: Settings) -> None:
    """`serve`: each flag says the variable it overrides; the epilog lists every setting."""
    p = sub.add_parser(
        "serve",
        parents=[reading],
        help="run the HTTP service",
        description="Run the HTTP service. A flag overrides its environment variable.",
        epilog=_settings_epilog(settings),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--host", default=settings.host, help=_env("host", "the address to listen on"))
    p.add_argument("--port", type=int, default=settings.port, help=_env("port", "the TCP port"))
    p.add_argument(
        "--workers",
        type=int,
        default=settings.workers,
        help=_env("workers", "worker processes (one core each)"),
    )
    p.add_argument(
        "--preload",
        default=settings.preload,
        metavar="all|NAME,...",
        help=_env("preload", "tokenizers or models to build before serving (others: on first use)"),
    )
    p.set_defaults(run=_serve)


def _env(field: str, what: str) -> str:
    return f"{what} (${env_name(field)}; default: %(default)s)"


def _settings_epilog(settings: Settings) -> str:
    """Every TOKSVC_* variable and its value now (a secret shows as set or not)."""
    lines = ["environment (read at start-up; docs/api.md says what each does):"]
    for field in settings.__struct_fields__:
        value = getattr(settings, field)
        if field in _SECRETS:
            shown = "(set)" if value else "(empty)"
        elif field == "stores":
            shown = os.pathsep.join(map(str, value))
        elif isinstance(value, bool):
            shown = "1" if value else "0"
        else:
            shown = str(value) if value != "" else "(empty)"
        lines.append(f"  {env_name(field):34} {shown}")
    return "\n".join(lines)


_SECRETS = {"admin_token", "api_keys"}


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


def _serve(args: argparse.Namespace) -> None:
    from service.api.process.server import serve  # noqa: PLC0415 (lazy: the CLI needs no web stack)

    serve(
        args.settings,
        stores=cli_options.stores(args),
        host=args.host,
        port=args.port,
        workers=args.workers,
        preload=args.preload,
    )


if __name__ == "__main__":
    sys.exit(main())
