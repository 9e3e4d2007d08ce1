"""The `toksvc` command line (`main`); one module per group of commands."""

from service.cli.commands import main

__all__ = ["main"]
