"""Hugging Face chat templates, rendered the way transformers renders them, within bounds.

The environment is transformers' (`apply_chat_template`): jinja2's ImmutableSandboxedEnvironment
with `trim_blocks`, `lstrip_blocks` and the `loopcontrols` extension, a `tojson` filter that does
not escape HTML and keeps non-ASCII, and the globals `raise_exception`, `strftime_now`, `dict`
and `namespace`. Rendering streams, so output beyond `max_chars` or past `max_seconds` stops it.
"""

from __future__ import annotations

import json
import time
import types
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import datetime
from functools import lru_cache
from typing import Any, Protocol

import jinja2
import jinja2.ext
import jinja2.runtime
import jinja2.sandbox
import jinja2.utils

from service.errors import LimitExceededError, TemplateError
from service.models.chat import jinja_budget


def _raise_exception(message: str) -> None:
    raise jinja2.TemplateError(message)


_SHARED_JSON: ContextVar[dict[tuple[Any, ...], tuple[Any, str]] | None] = ContextVar(
    "shared_json", default=None
)


@contextmanager
def shared_json() -> Iterator[None]:
    """Within it (a context or a decorator), `tojson` of the same object with the same arguments
    is computed once: the renderings of one count serialize the same tools and arguments again,
    and nothing can change them in between (the immutable sandbox; the object is held, so its id
    stays its own)."""
    token = _SHARED_JSON.set({})
    try:
        yield
    finally:
        _SHARED_JSON.reset(token)


def _tojson(
    x: Any,
    ensure_ascii: bool = False,
    indent: int | None = None,
    separators: tuple[str, str] | None = None,
    sort_keys: bool = False,
) -> str:
    shared = _SHARED_JSON.get()
    key = (id(x), ensure_ascii, indent, separators, sort_keys)
    try:
        hit = shared.get(key) if shared is not None else None
    except TypeError:  # unhashable arguments (separators as a list): not shared
        shared, hit = None, None
    if hit is not None and hit[0] is x:
        return hit[1]
    text = json.dumps(
        x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys
    )
    if shared is not None:
        shared[key] = (x, text)
    return text


def _strftime_now(fmt: str) -> str:
    return datetime.now().strftime(fmt)


class NamespaceObserver(Protocol):
    """What a tracked rendering (service.models.breakdown.prefixes) is told of its namespaces."""

    def created(self, ns: object, attrs: dict[str, Any]) -> None: ...
    def read(self, ns: object, name: str) -> None: ...
    def wrote(self, ns: object, name: str, value: Any) -> None: ...
    def read_all(self, ns: object) -> None: ...


OBSERVER: ContextVar[NamespaceObserver | None] = ContextVar("namespace_observer", default=None)


class _Namespace(jinja2.utils.Namespace):
    """transformers' namespace: no underscore-prefixed attributes. Its reads and writes are told
    to the OBSERVER of the rendering, if it has one."""

    def __init__(*args: Any, **kwargs: Any) -> None:
        self, rest = args[0], args[1:]
        attrs = dict(*rest, **kwargs)
        for name in attrs:
            _check_name(name)
        jinja2.utils.Namespace.__init__(self, attrs)
        if (observer := OBSERVER.get()) is not None:
            observer.created(self, attrs)

    def __getattribute__(self, name: str) -> Any:
        if name.startswith("_"):  # its own (the sandbox refuses these names to templates)
            return jinja2.utils.Namespace.__getattribute__(self, name)
        if (observer := OBSERVER.get()) is not None:
            observer.read(self, name)
        return jinja2.utils.Namespace.__getattribute__(self, name)

    def __setitem__(self, name: str, value: Any) -> None:
        _check_name(name)
        jinja2.utils.Namespace.__setitem__(self, name, value)
        if (observer := OBSERVER.get()) is not None:
            observer.wrote(self, name, value)

    def __repr__(self) -> str:
        if (observer := OBSERVER.get()) is not None:
            observer.read_all(self)
        return jinja2.utils.Namespace.__repr__(self)


def _check_name(name: object) -> None:
    if isinstance(name, str) and name.startswith("_"):
        raise jinja2.exceptions.SecurityError(f"underscore-prefixed namespace attribute {name!r}")


_DICT_ATTRIBUTES = frozenset(dir({}))  # what `getattr` finds on a plain dict before its keys
_PLAIN = frozenset({str, _Namespace, jinja2.runtime.LoopContext})
_STR_FORMAT = frozenset({"format", "format_map"})  # what the sandbox wraps (wrap_str_format)
_METHODS = (types.MethodType, types.BuiltinMethodType)


class _Sandbox(jinja_budget.Budgeted, jinja2.sandbox.ImmutableSandboxedEnvironment):
    """The immutable sandbox, with its answers for a template's commonest lookups given
    without its general checks (which are most of a chat template's rendering time): a plain
    dict's key that is no dict attribute (`message.role`) is the item, as the sandbox finds it
    after `getattr` fails; an attribute of a str, a namespace or a `loop` is safe unless it
    starts with an underscore, the sandbox's own verdict for those types (they are neither
    internal Python objects nor known mutables), and is returned as found unless it is a method
    the sandbox could wrap (str.format and str.format_map). Its templates keep the budget of
    their rendering (service.models.chat.jinja_budget)."""

    def getattr(self, obj: Any, attribute: str) -> Any:
        kind = type(obj)
        if kind is dict:
            if attribute not in _DICT_ATTRIBUTES and attribute in obj:
                return obj[attribute]
        elif kind in _PLAIN and not attribute.startswith("_"):
            try:
                value = getattr(obj, attribute)
            except AttributeError:
                return super().getattr(obj, attribute)
            if kind is str:  # its methods, named as found: only format and format_map are wrapped
                if attribute not in _STR_FORMAT:
                    return value
            elif not isinstance(value, _METHODS):  # no method: none the sandbox wraps
                return value
        return super().getattr(obj, attribute)

    def is_safe_attribute(self, obj: Any, attr: str, value: Any) -> bool:
        if type(obj) in _PLAIN:
            return not attr.startswith("_")
        return super().is_safe_attribute(obj, attr, value)


@lru_cache(maxsize=32)
def compile_template(source: str) -> jinja2.Template:
    return environment(_Sandbox).from_string(source)


def environment(
    sandbox: type[jinja2.sandbox.ImmutableSandboxedEnvironment],
) -> jinja2.Environment:
    """transformers' environment on `sandbox` (tests render with jinja2's own, as reference)."""
    env = sandbox(trim_blocks=True, lstrip_blocks=True, extensions=[jinja2.ext.loopcontrols])
    env.filters["tojson"] = _tojson
    env.globals["raise_exception"] = _raise_exception
    env.globals["strftime_now"] = _strftime_now
    env.globals["dict"] = dict
    env.globals["namespace"] = _Namespace
    return env


class Meter(Protocol):
    size: int


def render(
    source: str,
    variables: dict[str, Any],
    *,
    max_chars: int,
    max_seconds: float = 5.0,
    meter: Meter | None = None,
) -> str:
    """Render the template; its own errors become TemplateError, runaway output a limit error.
    `meter.size`: the characters the template has output, kept current while it runs."""
    template = compile_template(source)
    parts: list[str] = []
    size = 0
    try:
        with jinja_budget.within(max_chars, max_seconds) as budget:
            for chunk in template.generate(**variables):
                parts.append(chunk)
                size += len(chunk)
                if meter is not None:
                    meter.size = size
                if size > max_chars:
                    raise LimitExceededError("rendered chat template (characters)", max_chars, size)
                if time.monotonic() > budget.deadline:
                    raise jinja_budget.overtime(budget)
    except jinja2.TemplateError as exc:
        raise TemplateError(exc.message or type(exc).__name__) from None
    except RecursionError:
        raise TemplateError("the template recursed too deeply") from None
    except (TypeError, ValueError, AttributeError, KeyError, IndexError, ArithmeticError) as exc:
        raise TemplateError(f"{type(exc).__name__}: {exc}") from None
    return "".join(parts)
