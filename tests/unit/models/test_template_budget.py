"""A hostile chat template (a `tokenizer_config.json` imported with `--chat-config`) keeps the
budget of its rendering: loops and recursion without output stop at the rendering's time limit,
values past the output limit are refused before they are built, arithmetic errors are template
errors; ordinary templates render as jinja2's own sandbox renders them."""

from __future__ import annotations

import jinja2.sandbox
import pytest

from service.errors import LimitExceededError, TemplateError
from service.models.chat import jinja

REFERENCE = jinja.environment(jinja2.sandbox.ImmutableSandboxedEnvironment)
BIG = "{% set r = range(100000)|list %}"

SILENT = [  # ~10**10 steps, none of which outputs anything
    "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}x",
    BIG + "{% for i in r %}{% for j in r %}{% endfor %}{% endfor %}x",
    BIG + "{% for i in r %}{% for j in r if j < 0 %}{% endfor %}{% endfor %}x",
    "{% macro f() %}{% for i in range(100000) %}{% endfor %}{{ f() }}{% endmacro %}{{ f() }}",
]

HUGE = [  # values of a gigabyte or more, built before anything is output
    "{% set s = 'x' * 2000000000 %}{{ s|length }}",
    "{% set s = 2000000000 * ['x'] %}{{ s|length }}",
    "{{ (10 ** (10 ** 9)) % 7 }}",
    "{% set ns = namespace(s='ab') %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}"
    "{% endfor %}{{ ns.s|length }}",
    "{% set ns = namespace(s='ab') %}{% for i in range(40) %}{% set ns.s = ns.s + ns.s %}"
    "{% endfor %}{{ ns.s|length }}",
    "{% set ns = namespace(s=[1]) %}{% for i in range(40) %}{% set ns.s = ns.s + ns.s %}"
    "{% endfor %}{{ ns.s|length }}",
]

ORDINARY = [  # the same operators within the limits, and what the ticks must not change
    "{{ 'ab' * 3 }}{{ 3 * 'ab' }}{{ [1] * 2 }}{{ (1, 2) + (3,) }}{{ 'a' ~ 1 ~ none }}{{ 2 * 3 }}",
    "{{ 2 ** 10 }}{{ (-3) ** 5 }}{{ 2 ** -1 }}{{ 2.5 ** 2 }}{{ 0 ** 9 }}{{ 1 + 2.5 }}",
    "{% for m in messages %}{{ loop.index }}{{ m.role ~ ':' + m.content }}"
    "{% for c in m.content if c != 'i' %}{{ c }}{% else %}-{% endfor %}{% endfor %}",
    "{% macro f(n) %}{% if n %}{{ n }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(5) }}",
    "{% for x in [[1, 2], [3]] recursive %}{{ x if x is number else loop(x) }}{% endfor %}",
]


def render(source: str, max_seconds: float = 5.0) -> str:
    messages = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]
    return jinja.render(
        source, {"messages": messages}, max_chars=1_000_000, max_seconds=max_seconds
    )


@pytest.mark.parametrize("source", SILENT)
def test_work_without_output_stops_at_the_time_limit(source: str) -> None:
    with pytest.raises(LimitExceededError, match="rendering time"):
        render(source, max_seconds=0.2)


@pytest.mark.parametrize("source", HUGE)
def test_values_past_the_output_limit_are_refused(source: str) -> None:
    with pytest.raises(LimitExceededError, match="chat template"):
        render(source)


@pytest.mark.parametrize("source", ["{{ 1 / 0 }}", "{{ 1 // 0 }}", "{{ 10.0 ** 1000 }}"])
def test_arithmetic_errors_are_template_errors(source: str) -> None:
    with pytest.raises(TemplateError):
        render(source)


@pytest.mark.parametrize("source", ORDINARY)
def test_ordinary_templates_render_as_jinja2_renders_them(source: str) -> None:
    messages = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]
    assert render(source) == REFERENCE.from_string(source).render(messages=messages)
