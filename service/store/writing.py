"""The one way files are written into a store (`import` and `train`): each to a temporary name
beside it, then all renamed into place in order (the manifest last), so a reader never sees
half a file and the manifest never lists a file that is not there.

A write that fails (a read-only store, a full disk, a file where a folder should be) leaves
the store as it was: the temporary files written so far and the folders made for them are
removed, and the failure is a `StoreError` naming the file, not an `OSError`.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Sequence
from pathlib import Path

from service.errors import StoreError


def write_files(files: Sequence[tuple[Path, bytes]]) -> None:
    """Write each (path, bytes) of `files`, replacing what was there."""
    made: list[Path] = []  # folders this call made, outermost first
    staged: list[tuple[Path, Path]] = []  # (temporary, final) written so far
    for path, data in files:
        tmp = path.with_name(f".{path.name}.tmp")
        try:
            _make_folders(path.parent, made)
            staged.append((tmp, path))
            tmp.write_bytes(data)
        except OSError as exc:
            _undo(staged, made)
            raise _failure(path, exc, tmp, "the store is left as it was") from None
    for done, (tmp, path) in enumerate(staged):
        try:
            os.replace(tmp, path)
        except OSError as exc:
            _undo(staged[done:], made)
            written = ", ".join(str(p) for _, p in staged[:done])
            left = f"{written} were replaced before it" if done else "the store is left as it was"
            raise _failure(path, exc, tmp, left) from None


def _make_folders(folder: Path, made: list[Path]) -> None:
    """Make `folder` and the parents it lacks, recording each one made in `made`."""
    missing: list[Path] = []
    while not os.path.lexists(folder) and folder.parent != folder:
        missing.append(folder)
        folder = folder.parent
    for path in reversed(missing):
        path.mkdir()
        made.append(path)


def _undo(staged: Sequence[tuple[Path, Path]], made: list[Path]) -> None:
    """Remove the temporary files of `staged`, then the folders of `made` left empty."""
    for tmp, _ in staged:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
    for folder in reversed(made):
        with contextlib.suppress(OSError):  # not empty: another writer's
            folder.rmdir()


def _failure(path: Path, exc: OSError, tmp: Path, left: str) -> StoreError:
    why = exc.strerror or str(exc)
    if exc.filename is not None and Path(exc.filename) not in (tmp, path):
        why += f": {exc.filename}"  # a folder on the way
    return StoreError(str(path), f"cannot be written ({why}); {left}")
