"""The options the commands share: `--store` (the stores a command reads, repeatable; or the one
store it writes), the registry the stores it reads load into (failures as warnings), and the
user's text files (`read_text`: a missing or undecodable file is one line and exit 2)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from service import runtime
from service.errors import ConfigError
from service.settings import BUNDLED, BUNDLED_STORE, Settings, parse_stores
from service.store.importers.imports import target_store
from service.store.registry import Registry


def reading(settings: Settings) -> argparse.ArgumentParser:
    """The parent parser of the commands that read stores."""
    return _parent(
        settings,
        action="append",
        help=f"a store directory, or `{BUNDLED}`; repeat to serve several "
        "(default: $TOKSVC_STORE, else the bundled store)",
    )


def writing(settings: Settings) -> argparse.ArgumentParser:
    """The parent parser of the commands that write one store."""
    return _parent(
        settings,
        action="store",
        help="the store to write to (created if missing; default: the last folder in "
        "$TOKSVC_STORE); never the bundled store",
    )


def _parent(settings: Settings, *, action: str, help: str) -> argparse.ArgumentParser:
    parent = argparse.ArgumentParser(add_help=False)
    parent.add_argument("--store", action=action, type=_store_arg, help=help)
    parent.set_defaults(settings=settings)
    return parent


def _store_arg(value: str) -> Path:
    return parse_stores(value)[0] if value == BUNDLED else Path(value)


def stores(args: argparse.Namespace) -> tuple[Path, ...]:
    """The stores a reading command serves."""
    return tuple(args.store) if args.store else args.settings.stores


def target(args: argparse.Namespace) -> Path:
    """The one store a writing command writes to: never the bundled one."""
    return target_store(args.store, args.settings.stores, read_only=BUNDLED_STORE)


def read_text(path: Path, what: str) -> str:
    """A UTF-8 text file the user named; ConfigError (one line, exit 2) if it cannot be read."""
    try:
        return path.read_text("utf-8")
    except OSError as exc:
        raise ConfigError(f"{what} {path}: cannot be read ({exc.strerror or exc})") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{what} {path}: not UTF-8 text (byte {exc.start})") from None


def warn(failure: object) -> None:
    print(f"toksvc: warning: {failure}", file=sys.stderr)


def load(
    args: argparse.Namespace, only: str | None = None, *, first_use: bool | None = None
) -> Registry:
    """The registry of the stores a reading command serves (only the versions of the name
    `only`, if given), with the engines the settings ask for; `first_use` overrides the
    settings' choice of building on first use."""
    return runtime.load_registry(args.settings, stores(args), only=only, first_use=first_use)


def registry(args: argparse.Namespace, only: str | None = None) -> Registry:
    """`load`, with each failure printed as a warning."""
    loaded = load(args, only)
    for failure in loaded.failures:
        warn(failure)
    return loaded
