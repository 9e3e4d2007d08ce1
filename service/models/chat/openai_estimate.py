"""The OpenAI cookbook's token estimate for the chat API ("How to count tokens with tiktoken").

`num_tokens_from_messages`: each message costs `tokens_per_message` plus the tokens of each of
its string values (role, content, name, ...), `tokens_per_name` more with a name; the reply is
primed with `reply_priming` tokens. `num_tokens_for_tools`: per function `func_init`, its
`name:description`, `prop_init` once if it has properties, per property `prop_key` and
`name:type:description`, enums `enum_init` plus `enum_item` and the tokens per item; `func_end`
once. The API's real rendering is not published, so the result is an estimate. Values that are
not strings (tool calls) are counted as their compact JSON. A schema part of another shape than
the cookbook reads (`properties` not an object, a property not an object, `enum` not a list)
counts as absent.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from service.store.formats.model import OpenAIEstimateChat

Count = Callable[[str], int]


def message_tokens(rule: OpenAIEstimateChat, message: dict[str, Any], count: Count) -> int:
    total = rule.tokens_per_message
    for key, value in message.items():
        text = value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))
        total += count(text)
        if key == "name":
            total += rule.tokens_per_name
    return total


def tools_tokens(rule: OpenAIEstimateChat, tools: list[dict[str, Any]], count: Count) -> int:
    if not tools:
        return 0
    total = 0
    for tool in tools:
        fn = tool["function"]
        total += rule.func_init
        description = (fn.get("description") or "").removesuffix(".")
        total += count(f"{fn['name']}:{description}")
        properties = (fn.get("parameters") or {}).get("properties") or {}
        if properties and isinstance(properties, dict):
            total += rule.prop_init
            for key, value in properties.items():
                prop = value if isinstance(value, dict) else {}
                total += rule.prop_key
                if isinstance(prop.get("enum"), list):
                    total += rule.enum_init
                    for item in prop["enum"]:
                        total += rule.enum_item + count(str(item))
                p_desc = str(prop.get("description", "")).removesuffix(".")
                total += count(f"{key}:{prop.get('type', '')}:{p_desc}")
    return total + rule.func_end
