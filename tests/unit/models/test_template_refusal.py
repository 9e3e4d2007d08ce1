"""A template that raises names the message it refused, found by bisecting the prefixes of the
conversation it refuses with the same message (templates in a store of their own)."""

from __future__ import annotations

from pathlib import Path

import pytest

from service.bpe.deadline import Deadline
from service.errors import LimitExceededError, TemplateError
from service.models.billing import count_conversation
from service.runtime import engine_factory
from service.store.loader import load_store
from service.store.registry import Registry
from tests.support.modelstores import make_store, model

# refuses a conversation without a user message (as Qwen3's "No user query found"), and any
# message whose content is "bad"
PICKY = (
    "{% if not messages | selectattr('role', 'equalto', 'user') | list %}"
    "{{ raise_exception('No user query found') }}{% endif %}"
    "{% for m in messages %}{% if m.content == 'bad' %}{{ raise_exception('bad content') }}"
    "{% endif %}{{ m.role }}: {{ m.content }}\n{% endfor %}"
    "{% if add_generation_prompt %}{% if messages[-1].role == 'assistant' %}"
    "{{ raise_exception('the last message is the assistant') }}{% endif %}assistant:"
    "{% endif %}"
)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Registry:
    root: Path = tmp_path_factory.mktemp("picky")
    registry = load_store(make_store(root, [model("picky", PICKY)]), engine_factory("auto"))
    assert not registry.failures, registry.failures
    return registry


def refusal(registry: Registry, messages: list[dict[str, str]], **kw: bool) -> TemplateError:
    with pytest.raises(TemplateError) as info:
        count_conversation(registry, "picky", messages, **kw)
    return info.value


@pytest.mark.parametrize("breakdown", [True, False])
@pytest.mark.parametrize("bad", [1, 2, 4])
def test_the_refused_message_is_named(store: Registry, bad: int, breakdown: bool) -> None:
    roles = ["system", "user", "assistant", "user", "assistant", "user"]
    messages = [{"role": r, "content": f"m{i}"} for i, r in enumerate(roles)]
    messages[bad]["content"] = "bad"
    err = refusal(store, messages, breakdown=breakdown)
    assert err.index == bad and err.facts() == {"index": bad, "located": "found"}
    assert str(err).startswith(f"messages[{bad}]: ") and "bad content" in str(err)


def test_an_early_prefix_the_template_refuses_is_not_blamed(store: Registry) -> None:
    """[system] alone is refused (no user yet), yet the message to blame is the later one."""
    messages = [{"role": "system", "content": "s"}, {"role": "user", "content": "bad"}]
    assert refusal(store, messages).index == 1
    messages[1]["content"] = "fine"  # and without the bad one, the conversation renders
    assert count_conversation(store, "picky", messages).count.input_tokens > 0


def test_a_refusal_of_the_whole_names_no_message(store: Registry) -> None:
    """Every prefix renders; only the generation prompt after an assistant turn is refused."""
    messages = [{"role": "user", "content": "u"}, {"role": "assistant", "content": "a"}]
    err = refusal(store, messages)
    assert err.index is None and "the last message is the assistant" in str(err)
    assert err.located == "whole"
    assert count_conversation(store, "picky", messages, add_generation_prompt=False).count


class _OneCheck(Deadline):
    """Time is up after the first check: the whole renders (and is refused), the search does not."""

    def __init__(self) -> None:
        super().__init__(60)
        self.checks = 0

    def check(self) -> None:
        self.checks += 1
        if self.checks > 1:
            raise LimitExceededError("seconds of work per request", 60)


def test_the_search_ends_with_the_deadline(store: Registry) -> None:
    messages = [{"role": "user", "content": "u"}, {"role": "user", "content": "bad"}]
    assert refusal(store, messages).index == 1  # with time, it is found
    deadline = _OneCheck()
    with pytest.raises(TemplateError) as info:
        count_conversation(store, "picky", messages, deadline=deadline)
    assert info.value.index is None and "bad content" in str(info.value)
    assert info.value.located == "not found in time"
    assert deadline.checks == 2  # the search stopped at its first rendering


class _Counting(Deadline):
    def __init__(self) -> None:
        super().__init__(60)
        self.checks = 0

    def check(self) -> None:
        self.checks += 1


@pytest.mark.parametrize("bad", [0, 1, 1000, 1998, 1999])
def test_a_late_refusal_in_a_long_conversation_is_found_in_few_renderings(
    store: Registry, bad: int
) -> None:
    """Bisection: about log2(n) renderings, where a walk over every prefix renders n of them."""
    messages = [{"role": "user", "content": f"u{i}"} for i in range(2000)]
    messages[bad]["content"] = "bad"
    one = _Counting()
    with pytest.raises(TemplateError):
        count_conversation(store, "picky", [{"role": "user", "content": "bad"}], deadline=one)
    per_rendering = one.checks / 2  # the whole, then the prefix of one message
    deadline = _Counting()
    with pytest.raises(TemplateError) as info:
        count_conversation(store, "picky", messages, deadline=deadline)
    assert info.value.index == bad and info.value.located == "found"
    assert deadline.checks <= (2 + 11) * per_rendering  # the whole, prefix 2000, 11 halvings
