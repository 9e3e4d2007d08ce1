"""A Jinja chat template's budget while it renders: its time and the size of what it builds.

The renderer checks its output and its clock between the chunks a template yields; a template
that loops or recurses without output, or builds a huge value before it outputs anything
(`'x' * 10**9`, `2 ** 10**8`, a string doubled in a loop), never reaches such a check. A
`Budgeted` sandbox's templates check the budget themselves: the code they compile to ticks at the
top of every loop iteration and at every call (macros, `range`, methods); their `+` and `*`
refuse a string, list or tuple longer than the output limit, and `**` an integer power of more
bits than any chat template needs, before it is made; a `~` result past the limit (at most the
sum of its parts) is refused as it is made. Outside `within`, no budget holds.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import jinja2.compiler
import jinja2.nodes
import jinja2.runtime
import jinja2.sandbox

from service.errors import LimitExceededError

MAX_POWER_BITS = 1 << 16  # an integer `**` result beyond this many bits is refused


@dataclass(frozen=True, slots=True)
class Budget:
    max_chars: int  # the longest string, list or tuple a template may build (its output limit)
    max_seconds: float
    deadline: float  # time.monotonic() at which rendering stops


_BUDGET: ContextVar[Budget | None] = ContextVar("template_budget", default=None)


@contextmanager
def within(max_chars: int, max_seconds: float) -> Iterator[Budget]:
    """Within it, a `Budgeted` sandbox's templates rendered in this context keep this budget."""
    budget = Budget(max_chars, max_seconds, time.monotonic() + max_seconds)
    token = _BUDGET.set(budget)
    try:
        yield budget
    finally:
        _BUDGET.reset(token)


def overtime(budget: Budget) -> LimitExceededError:
    return LimitExceededError("chat template rendering time (ms)", int(budget.max_seconds * 1000))


def _tick() -> None:
    budget = _BUDGET.get()
    if budget is not None and time.monotonic() > budget.deadline:
        raise overtime(budget)


def _sized(value: Any, length: int | None = None) -> Any:
    """`value` if it (or the `length` it would have) is within the budget's characters."""
    budget = _BUDGET.get()
    if budget is not None:
        if length is None and isinstance(value, (str, list, tuple)):
            length = len(value)
        if length is not None and length > budget.max_chars:
            raise LimitExceededError(
                "a value the chat template builds (items)", budget.max_chars, length
            )
    return value


def _check_binop(operator: str, left: Any, right: Any) -> None:
    sequences = (str, list, tuple)
    if operator == "+" and isinstance(left, sequences) and isinstance(right, sequences):
        _sized(None, len(left) + len(right))
    elif operator == "*":
        if isinstance(left, sequences) and isinstance(right, int):
            _sized(None, len(left) * right)
        elif isinstance(right, sequences) and isinstance(left, int):
            _sized(None, len(right) * left)
    elif operator == "**" and isinstance(left, int) and isinstance(right, int) and right > 0:
        bits = max(abs(left).bit_length() - 1, 0) * right  # a lower bound of the result's
        if bits > MAX_POWER_BITS:
            raise LimitExceededError("bits of an integer power in a chat template", MAX_POWER_BITS)


TICK = "toksvc_budget_tick"  # the filter a loop iteration begins with: the cheapest plain call


def _tick_filter(_value: object) -> None:
    _tick()


class _SizingCodeGenerator(jinja2.compiler.CodeGenerator):
    """Each `~` is sized."""

    def visit_Concat(  # noqa: N802
        self, node: jinja2.nodes.Concat, frame: jinja2.compiler.Frame
    ) -> None:
        self.write("environment.sized(")
        super().visit_Concat(node, frame)
        self.write(")")


class Budgeted(jinja2.sandbox.SandboxedEnvironment):
    """A sandbox whose templates keep the budget of `within` (mixed in before the sandbox)."""

    code_generator_class = _SizingCodeGenerator
    intercepted_binops = frozenset({"+", "*", "**"})

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.filters[TICK] = _tick_filter

    def _generate(self, source: jinja2.nodes.Template, *args: Any, **kwargs: Any) -> str:
        """Each loop iteration begins with a tick: the filter on the context (no constant the
        compiler could fold, and a plain call, unlike a sandboxed one)."""
        for loop in list(source.find_all(jinja2.nodes.For)):
            tick = jinja2.nodes.Filter(jinja2.nodes.ContextReference(), TICK, [], [], None, None)
            loop.body = [jinja2.nodes.ExprStmt(tick), *loop.body]
        return super()._generate(source, *args, **kwargs)

    def sized(self, value: Any) -> Any:
        return _sized(value)

    def call(
        __self,  # noqa: N805
        __context: jinja2.runtime.Context,
        __obj: Any,
        *args: Any,
        **kwargs: Any,
    ) -> Any:
        _tick()
        return super().call(__context, __obj, *args, **kwargs)

    def call_binop(
        self, context: jinja2.runtime.Context, operator: str, left: Any, right: Any
    ) -> Any:
        _check_binop(operator, left, right)
        return self.binop_table[operator](left, right)
