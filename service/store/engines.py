"""Which engine serves a vocabulary by default: the native one (`service.bpe.engine.native`, C)
wherever it was built and can hold the vocabulary, else the pure-Python reference.

The shipped patterns are split by C scanners made for them (service/bpe/engine/scanners.py), any
other pattern by the `regex` module; both merge rules run in C, exact with the reference by
construction. `load_store` uses `default_engine` unless told otherwise, so the library is as fast
as the service; `reference_engine` is the pure-Python one (for differential tests and
benchmarks).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from service.bpe import Engine, PythonEngine, Vocabulary
from service.bpe.engine import native

log = logging.getLogger("toksvc")


def self_consistent(vocab: Vocabulary) -> bool:
    """Whether the `ranks` rule gives a vocabulary's ids (`Vocabulary.self_consistent`), checked
    in C where the extension is built, whichever engine serves it."""
    return vocab.self_consistent(native.pairs_all_whole if native.AVAILABLE else None)


def native_engine(
    vocab: Vocabulary, pattern: str | None, self_consistent: bool = False
) -> Engine | None:
    """The native engine for this vocabulary, or None where it is not built or cannot hold it.
    A `pairs` vocabulary that is `self_consistent` (and has no byte-fallback expansion: the
    caller says so) runs under the faster `ranks` rule, which gives it the same ids."""
    if not native.AVAILABLE:
        return None
    scanner = native.scanner_of(pattern)
    as_ranks = self_consistent and vocab.rule == "pairs" and not vocab.free_ids
    try:
        return native.NativeEngine(vocab, pattern, scanner, as_ranks=as_ranks)
    except ValueError as exc:  # a vocabulary the C tables cannot hold
        log.warning("native engine unavailable (%s); using the Python engine", exc)
        return None


def engine_sharing(
    engine: Engine,
    vocab: Vocabulary,
    pattern: str | None,
    self_consistent: bool,
    factory: Callable[[Vocabulary, str | None, bool], Engine],
) -> Engine:
    """An engine for `vocab` split by `pattern`, where `engine` serves the same vocabulary split
    by another pattern: a native one lends its tables (held once), any other kind is built anew
    by `factory`."""
    return native_lent(engine, pattern) or factory(vocab, pattern, self_consistent)


def native_lent(engine: Engine, pattern: str | None) -> Engine | None:
    """An engine over `engine`'s native tables split by `pattern`; None if it is not native."""
    if isinstance(engine, native.NativeEngine):
        return engine.split_by(pattern, native.scanner_of(pattern))
    return None


def default_engine(vocab: Vocabulary, pattern: str | None, self_consistent: bool) -> Engine:
    """The native engine where it can serve, else the reference."""
    return native_engine(vocab, pattern, self_consistent) or PythonEngine(vocab, pattern)


def reference_engine(vocab: Vocabulary, pattern: str | None, self_consistent: bool) -> Engine:
    """The pure-Python reference engine."""
    return PythonEngine(vocab, pattern)
