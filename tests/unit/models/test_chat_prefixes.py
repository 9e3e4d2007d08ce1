"""Prefix renderings derived from one tracked rendering (service.models.breakdown.prefixes) are the
prefixes' own renderings, in jinja2's own sandbox, wherever a derivation is given; templates it
cannot vouch for get none (the caller renders those prefixes alone)."""

from __future__ import annotations

import functools
import random
from typing import Any

import jinja2
import jinja2.sandbox
import pytest

from service.models.breakdown import prefixes as chat_prefixes
from service.models.breakdown import tracked_messages
from service.models.chat import jinja
from service.models.conversation import check_messages, check_tools
from service.store.formats.model import JinjaChat
from service.store.registry import Registry
from tests.support.chatgen import conversation

REFERENCE = jinja.environment(jinja2.sandbox.ImmutableSandboxedEnvironment)
N = 40  # conversations per template

SYNTHETIC = {  # constructs the real templates use, one or a few at a time
    "system scan, state after the loop": (
        "{% set ns = namespace(sp='', tool=false) %}{% for m in messages %}"
        "{% if m.role == 'system' %}{% set ns.sp = ns.sp + m.content %}{% endif %}{% endfor %}"
        "[{{ ns.sp }}]{% for m in messages %}{% if m.role == 'tool' %}"
        "{% if not ns.tool %}<outs>{% endif %}{% set ns.tool = true %}{{ m.content }}"
        "{% else %}{% if ns.tool %}</outs>{% endif %}{% set ns.tool = false %}"
        "{{ m.role }}:{{ m.content }}{% endif %}{% endfor %}{% if ns.tool %}</outs>{% endif %}"
    ),
    "peeks": (
        "{% for m in messages %}{{ m.role }}{% if loop.last %}!{% else %}"
        "{{ loop.nextitem.role }}{% endif %}{% if m.role == 'tool' and (loop.last or "
        "messages[loop.index0 + 1].role != 'tool') %}<end>{% endif %}{% endfor %}"
    ),
    "slice, as Gemma and Llama take the system message out": (
        "{% if messages[0].role == 'system' %}{% set first = messages[0].content %}"
        "{% set loop_messages = messages[1:] %}{% else %}{% set first = '' %}"
        "{% set loop_messages = messages %}{% endif %}<{{ first }}>{% for m in loop_messages %}"
        "{% if (m.role == 'user') != (loop.index0 % 2 == 0) %}{{ m.role }}?{% endif %}"
        "{{ m.role }}:{{ m.content }};{% endfor %}{% if add_generation_prompt %}A:{% endif %}"
    ),
    "filter over the messages": (
        "{{ messages|selectattr('role', 'equalto', 'user')|list|length }}"
        "{% for m in messages %}{{ m.content }}{% endfor %}"
    ),
    "first and last": "{{ messages|first }}{% for m in messages %}{{ m.role }}{% endfor %}"
    "{{ (messages|last).role }}",
    "negative index": "{{ messages[-1].role }}{% for m in messages %}{{ m.content }}{% endfor %}",
    "break": (
        "{% for m in messages %}{% if m.role == 'tool' %}{% break %}{% endif %}"
        "{{ m.content }}{% endfor %}."
    ),
    "loop filter": (
        "{% for m in messages if m.role != 'system' %}{{ m.content }}{% if loop.last %}.{% endif %}"
        "{% endfor %}"
    ),
    "nested loops": "{% for m in messages %}{% for o in messages %}{{ o.role[0] }}{% endfor %}|"
    "{% endfor %}",
    "loop length": "{% for m in messages %}{{ loop.index }}/{{ loop.length }}{% endfor %}",
    "else": "{% for m in messages[2:] %}{{ m.content }}{% else %}empty{% endfor %}",
    "last role kept": (
        "{% set ns = namespace(last='') %}{% for m in messages %}{% set ns.last = m.role %}"
        "{{ m.content }}{% endfor %}({{ ns.last }}){{ ns }}"
    ),
    "the messages as text": "{% for m in messages %}{{ m.role }}{{ messages }}{% endfor %}",
    "the messages compared": "{% for m in messages %}{{ messages[1:] == [] }}{% endfor %}",
    "the messages as JSON": "{{ messages|tojson }}{% for m in messages %}{{ m.role }}{% endfor %}",
    "held back by a set block": (
        "{% set out %}{% for m in messages %}{{ m.content }}{% endfor %}{% endset %}{{ out }}"
    ),
    "held back by a macro": (
        "{% macro all(ms) %}{% for m in ms %}{{ m.content }}{% endfor %}{% endmacro %}"
        "{{ all(messages) }}"
    ),
}


@functools.lru_cache(maxsize=64)
def compiled(source: str) -> jinja2.Template:
    return REFERENCE.from_string(source)


def reference(source: str, variables: dict[str, Any], messages: list[dict[str, Any]]) -> str | None:
    try:
        return compiled(source).render(**variables, messages=messages)
    except (jinja2.TemplateError, TypeError, ValueError, AttributeError, KeyError, IndexError):
        return None


def check_derivations(source: str, variables: dict[str, Any], rng: random.Random) -> int:
    """Asserts each derivation is the prefix's rendering; returns how many were derived."""
    derived_count = 0
    for _ in range(N):
        messages, tools = conversation(rng)
        messages = check_messages(messages)
        variables = {**variables, "tools": check_tools(tools)}
        try:
            tracked = chat_prefixes.render_tracked(
                source, variables, messages, max_chars=1 << 22, max_seconds=5.0
            )
        except Exception:  # the template refused the whole: the reference must too
            assert reference(source, variables, messages) is None
            continue
        if tracked is None:
            continue
        whole, prefixes = tracked
        assert whole == reference(source, variables, messages)
        assert len(prefixes) == len(messages) + 1
        for k, rendering in enumerate(prefixes):
            if rendering is not None:
                assert rendering.text() == reference(source, variables, messages[:k]), k
                derived_count += 1
    return derived_count


def test_every_bundled_template_derives_only_the_prefixes_renderings(registry: Registry) -> None:
    derived = {}
    for model in registry.models.models.values():
        chat = model.profile.chat
        if not isinstance(chat, JinjaChat):
            continue
        rng = random.Random(f"prefixes-{model.profile.name}")
        variables = {
            "bos_token": chat.bos_token or "",
            "eos_token": chat.eos_token or "",
            "add_generation_prompt": False,
            "enable_thinking": rng.random() < 0.5,
        }
        derived[model.profile.name] = check_derivations(chat.template, variables, rng)
    assert derived["qwen2.5"] > 0
    assert derived["deepseek-v3"] > 0


@pytest.mark.parametrize("name", sorted(SYNTHETIC))
def test_synthetic_templates_derive_only_the_prefixes_renderings(name: str) -> None:
    check_derivations(SYNTHETIC[name], {"add_generation_prompt": False}, random.Random(name))


@pytest.mark.parametrize("name", ["held back by a set block", "held back by a macro"])
def test_a_template_that_holds_output_back_is_not_tracked(name: str) -> None:
    """Its loops' advances cannot be placed in the output: every prefix is rendered alone."""
    messages = [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]
    assert not tracked_messages.trackable(SYNTHETIC[name])
    assert (
        chat_prefixes.render_tracked(SYNTHETIC[name], {}, messages, max_chars=1000, max_seconds=5.0)
        is None
    )


def test_qwen3s_reverse_scan_gives_up_at_once(registry: Registry) -> None:
    """Qwen3 reads the whole list backwards (the last user query) before any output: no prefix
    is the whole's, so the tracking stops there and every prefix is rendered."""
    chat = registry.resolve_model("qwen3").profile.chat
    assert isinstance(chat, JinjaChat)
    messages = [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]
    assert (
        chat_prefixes.render_tracked(
            chat.template,
            {"add_generation_prompt": False},
            messages,
            max_chars=1000,
            max_seconds=5.0,
        )
        is None
    )


def test_peeking_leaves_exactly_the_peeked_prefixes_to_render() -> None:
    """`loop.last` on message i looks at message i + 1: prefix i + 1 is not derived (there it is
    the last), the others are."""
    source = (
        "{% for m in messages %}{{ m.content }}"
        "{% if m.role == 'tool' and loop.last %}!{% endif %}{% endfor %}"
    )
    messages = [{"role": r, "content": r[0]} for r in ("user", "tool", "user", "tool", "user")]
    tracked = chat_prefixes.render_tracked(source, {}, messages, max_chars=1000, max_seconds=5.0)
    assert tracked is not None
    missing = [k for k, rendering in enumerate(tracked[1]) if rendering is None]
    assert missing == [0, 2, 4]  # 0: its loop has nothing to do; 2 and 4: after a peek


PROBES = [  # lookups the sandbox's shortcuts answer, and the attacks its checks refuse
    "{{ m.role }}{{ m.content }}{{ m.missing is defined }}{{ m.items()|list|length }}",
    "{{ m.update }}{{ m.pop }}{{ m.get('role') }}{{ m.keys()|list }}",
    "{{ d.items }}{{ d.update }}{{ d.keys }}{{ d.values is defined }}",  # keys named as methods
    "{{ m.role.upper() }}{{ m.role.startswith('u') }}{{ m.role.__class__ }}{{ m.role.mro }}",
    "{{ '{0.__class__}'.format(m.role) }}",
    "{{ '{x.__class__}'.format_map({'x': m.role}) }}",
    "{% set ns = namespace(a=1, f=m.role.upper) %}{{ ns.a }}{{ ns.f() }}{{ ns.b is defined }}"
    "{{ ns._Namespace__attrs }}{{ ns.__class__ }}",
    "{% for x in [m] %}{{ loop.index0 }}{{ loop.last }}{{ loop.__class__ }}{{ loop._after }}"
    "{{ loop.cycle('a', 'b') }}{{ loop.nope is defined }}{% endfor %}",
]


@pytest.mark.parametrize("source", PROBES)
def test_the_sandbox_shortcuts_give_the_sandboxs_answers(source: str) -> None:
    """Our sandbox and jinja2's own render the same text or refuse alike."""
    variables = {
        "m": {"role": "user", "content": "hi"},
        "d": {"items": 1, "update": 2, "keys": 3, "values": 4},
    }

    def rendered(env: jinja2.Environment) -> str:
        try:
            return env.from_string(source).render(**variables)
        except jinja2.TemplateError as exc:
            return f"refused: {type(exc).__name__}"

    assert rendered(jinja.compile_template(source).environment) == rendered(REFERENCE)


def test_shared_json_serializes_each_object_as_alone() -> None:
    """Under `shared_json` (one count's renderings), fresh objects each time, in-template ones,
    every argument form: each `tojson` as jinja2's own sandbox with transformers' filter gives."""
    source = (
        "{{ m|tojson }}{{ {'a': m.role, 'n': n}|tojson }}{{ m|tojson(indent=2) }}"
        "{{ [m.role, n]|tojson(separators=[',', ':']) }}{{ m|tojson(sort_keys=true) }}"
    )
    with jinja.shared_json():
        for n in range(50):
            variables = {"m": {"role": f"user {n}", "content": "你好" * n}, "n": n}
            ours = jinja.compile_template(source).render(**variables)
            assert ours == compiled(source).render(**variables)
