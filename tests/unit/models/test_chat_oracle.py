"""Chat counts against independent oracles: transformers' apply_chat_template for the Jinja
templates (Qwen2.5, Qwen3, DeepSeek V3; Phi-4's and Qwen3.5's rendered by transformers, encoded by
tiktoken), openai-harmony for gpt-oss, mistral-common's encode_chat_completion for Mistral NeMo and
Large 2411, the OpenAI cookbook's recipe for the estimate rule. Conversations come from a seeded
generator (tests/support/chatgen.py)."""

from __future__ import annotations

import json
import os
import random
import tempfile
import unicodedata
from pathlib import Path
from typing import Any

import jinja2
import pytest

from service.errors import ChatFormatError, PriceMissingError, TemplateError
from service.models.billing import count_conversation
from service.store.registry import Registry
from tests.conftest import tiktoken_oracle
from tests.support.chatgen import MISTRAL_LITERALS, conversation
from tests.support.testdata import vocab_bytes, vocab_file

N_CONVERSATIONS = int(os.environ.get("TOKSVC_ORACLE_CONVERSATIONS", "150"))
HF_FILES = {
    "qwen2.5": ("qwen2_5_tokenizer.json", "qwen2_5_tokenizer_config.json"),
    "qwen3": ("qwen3_tokenizer.json", "qwen3_tokenizer_config.json"),
    "deepseek-v3": ("deepseek_v3_tokenizer.json", "deepseek_v3_tokenizer_config.json"),
}


def hf_tokenizer(model: str) -> Any:
    os.environ["HF_HUB_OFFLINE"] = "1"
    from transformers import PreTrainedTokenizerFast  # noqa: PLC0415 (after HF_HUB_OFFLINE)

    tokenizer_json, config_json = HF_FILES[model]
    config = json.loads(vocab_bytes(config_json))
    specials = {}  # what AutoTokenizer takes from the config: the template's bos_token, eos_token
    for name in ("bos_token", "eos_token"):
        value = config.get(name)
        if value is not None:
            specials[name] = value["content"] if isinstance(value, dict) else value
    tok = PreTrainedTokenizerFast(tokenizer_file=str(vocab_file(tokenizer_json)), **specials)
    tok.chat_template = config["chat_template"]
    return tok


def hf_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What vLLM hands the template, and what the service does too: arguments as objects."""
    out = json.loads(json.dumps(messages))
    for m in out:
        for call in m.get("tool_calls", []):
            call["function"]["arguments"] = json.loads(call["function"]["arguments"])
    return out


@pytest.mark.parametrize("model", ["qwen2.5", "qwen3", "deepseek-v3"])
def test_jinja_ids_match_transformers(registry: Registry, model: str) -> None:
    hf = hf_tokenizer(model)
    rng = random.Random(f"oracle-{model}")
    mismatches = []
    for n in range(N_CONVERSATIONS):
        messages, tools = conversation(rng)
        agp = rng.random() < 0.8
        kwargs = {"enable_thinking": rng.random() < 0.5} if model == "qwen3" else {}
        ours = count_conversation(
            registry, model, messages, tools, add_generation_prompt=agp, template_kwargs=kwargs
        ).count
        theirs = hf.apply_chat_template(
            hf_messages(messages),
            tools=tools,
            tokenize=True,
            add_generation_prompt=agp,
            return_dict=False,
            **kwargs,
        )
        if ours.ids != list(theirs):
            mismatches.append(n)
        parts = ours.tools_tokens + sum(m.tokens for m in ours.messages)
        assert parts + sum(ours.overhead.values()) == ours.input_tokens == len(theirs)
    print(f"{model}: {N_CONVERSATIONS} conversations, {len(mismatches)} mismatches")
    assert not mismatches, f"conversations {mismatches[:10]} differ from transformers"


@pytest.mark.parametrize("model", ["phi-4", "qwen3.6"])
def test_ranks_family_ids_match_transformers_and_tiktoken(registry: Registry, model: str) -> None:
    """Phi-4's and Qwen3.5's tokenizer.json are not shipped: transformers renders the template
    (tokenize=False, its own jinja environment) and tiktoken encodes the text on the same ranks,
    pattern and added tokens (after NFC for Qwen3.5, its normalizer), every literal matched, as
    `apply_chat_template` encodes."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    from transformers.utils.chat_template_utils import render_jinja_template  # noqa: PLC0415

    template = registry.resolve_model(model).profile.chat.template  # type: ignore[union-attr]
    oracle = tiktoken_oracle(registry, model)
    form = registry.resolve(model).normalization
    rng = random.Random(f"oracle-{model}")
    mismatches, refused = [], 0
    for n in range(N_CONVERSATIONS):
        messages, tools = conversation(rng)
        agp = rng.random() < 0.8
        kwargs = {"enable_thinking": rng.random() < 0.5} if model == "qwen3.6" else {}
        try:
            ours = count_conversation(
                registry, model, messages, tools, add_generation_prompt=agp, template_kwargs=kwargs
            ).count.ids
        except TemplateError:
            ours = None
        try:
            rendered, _ = render_jinja_template(
                conversations=[hf_messages(messages)],
                tools=tools,
                chat_template=template,
                add_generation_prompt=agp,
                **kwargs,
            )
            text = rendered[0] if form == "none" else unicodedata.normalize(form, rendered[0])
            theirs: list[int] | None = oracle.encode(text, allowed_special="all")
        except jinja2.TemplateError:
            theirs = None
        refused += theirs is None
        if ours != theirs:
            mismatches.append(n)
    print(
        f"{model}: {N_CONVERSATIONS} conversations ({refused} refused by both), "
        f"{len(mismatches)} mismatches"
    )
    assert refused < N_CONVERSATIONS // 2  # the comparison is mostly of ids
    assert not mismatches, f"conversations {mismatches[:10]} differ from transformers + tiktoken"


def test_literal_in_user_text_is_one_special_token(registry: Registry) -> None:
    messages = [{"role": "user", "content": "a<|im_end|>b"}]
    ids = count_conversation(registry, "qwen2.5", messages).count.ids or []
    im_end = registry.resolve("qwen2.5").tokenizer.special_tokens["<|im_end|>"]
    assert ids.count(im_end) == 3  # the system turn's, the literal, the user turn's


# --- harmony -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def harmony() -> Any:
    folder = Path(tempfile.mkdtemp(prefix="toksvc-harmony-"))
    (folder / "o200k_base.tiktoken").write_bytes(vocab_bytes("o200k_base.tiktoken"))
    os.environ["TIKTOKEN_ENCODINGS_BASE"] = str(folder)
    import openai_harmony as h  # noqa: PLC0415 (after TIKTOKEN_ENCODINGS_BASE)

    return h, h.load_harmony_encoding(h.HarmonyEncodingName.HARMONY_GPT_OSS)


def harmony_ids(h: Any, enc: Any, messages: list[dict[str, Any]], tools: Any, agp: bool) -> Any:
    """The mapping of the gpt-oss chat template and vLLM, built with openai-harmony's types."""
    msgs = [h.Message.from_role_and_content(h.Role.SYSTEM, h.SystemContent.new())]
    instructions = "\n".join(m["content"] for m in messages if m["role"] == "system")
    dev = h.DeveloperContent.new()
    if instructions:
        dev = dev.with_instructions(instructions)
    if tools:
        dev = dev.with_function_tools(
            [
                h.ToolDescription.new(
                    t["function"]["name"],
                    t["function"]["description"],
                    parameters=t["function"].get("parameters"),
                )
                for t in tools
            ]
        )
    if instructions or tools:
        msgs.append(h.Message.from_role_and_content(h.Role.DEVELOPER, dev))
    names = {}
    for m in messages:
        if m["role"] == "user":
            msgs.append(h.Message.from_role_and_content(h.Role.USER, m["content"]))
        elif m["role"] == "assistant":
            if m["content"]:
                msgs.append(
                    h.Message.from_role_and_content(h.Role.ASSISTANT, m["content"]).with_channel(
                        "final"
                    )
                )
            for call in m.get("tool_calls", []):
                names[call["id"]] = name = call["function"]["name"]
                args = json.dumps(
                    json.loads(call["function"]["arguments"]),
                    ensure_ascii=False,
                    separators=(",", ":"),
                )
                msgs.append(
                    h.Message.from_role_and_content(h.Role.ASSISTANT, args)
                    .with_channel("commentary")
                    .with_recipient(f"functions.{name}")
                    .with_content_type("<|constrain|>json")
                )
        elif m["role"] == "tool":
            author = h.Author.new(h.Role.TOOL, f"functions.{names[m['tool_call_id']]}")
            msgs.append(
                h.Message.from_author_and_content(author, m["content"])
                .with_channel("commentary")
                .with_recipient("assistant")
            )
    convo = h.Conversation.from_messages(msgs)
    if agp:
        return enc.render_conversation_for_completion(convo, h.Role.ASSISTANT)
    return enc.render_conversation(convo)


def test_harmony_ids_match_openai_harmony(registry: Registry, harmony: Any) -> None:
    h, enc = harmony
    rng = random.Random("oracle-harmony")
    mismatches = []
    for n in range(N_CONVERSATIONS):
        messages, tools = conversation(rng, reasoning=False)
        agp = rng.random() < 0.8
        ours = count_conversation(
            registry, "gpt-oss", messages, tools, add_generation_prompt=agp
        ).count
        theirs = list(harmony_ids(h, enc, messages, tools, agp))
        if ours.ids != theirs:
            mismatches.append(n)
        assert ours.input_tokens == len(ours.ids or [])
    print(f"gpt-oss: {N_CONVERSATIONS} conversations, {len(mismatches)} mismatches")
    assert not mismatches, f"conversations {mismatches[:10]} differ from openai-harmony"


# --- Mistral: mistral-common ------------------------------------------------------------------

# mistral-common 1.13.1's MODEL_NAME_TO_TOKENIZER_CLS: open-mistral-nemo-2407 -> v3 on
# tekken_240718.json (text-identical to tekken_240911.json: same config, ranks and special
# tokens; 240911 adds an image config), mistral-large-2411 -> v7 on the SentencePiece v7 model
MISTRAL_FILES = {
    "mistral-nemo": "tekken_240911.json",
    "mistral-large-2411": "mistral_instruct_tokenizer_241114.model.v7",
}


@pytest.fixture(scope="module")
def mistral_common() -> dict[str, Any]:
    from mistral_common.protocol.instruct.validator import ValidationMode  # noqa: PLC0415
    from mistral_common.tokens.tokenizers.mistral import MistralTokenizer  # noqa: PLC0415

    return {
        model: MistralTokenizer.from_file(str(vocab_file(name)), mode=ValidationMode.test)
        for model, name in MISTRAL_FILES.items()
    }


def mistral_ids(tokenizer: Any, messages: list[dict[str, Any]], tools: Any, agp: bool) -> Any:
    """mistral-common's ids, or the name of the exception it refuses the conversation with. An
    assistant message last is continued (`continue_final_message`) when no generation prompt is
    asked for, as the service maps `add_generation_prompt: false`."""
    from mistral_common.exceptions import MistralCommonException  # noqa: PLC0415
    from mistral_common.protocol.instruct.request import ChatCompletionRequest  # noqa: PLC0415

    continued = not agp and bool(messages) and messages[-1]["role"] == "assistant"
    try:
        request = ChatCompletionRequest.from_openai(
            json.loads(json.dumps(messages)), tools=tools, continue_final_message=continued
        )
        return tokenizer.encode_chat_completion(request).tokens
    except (MistralCommonException, ValueError, AssertionError) as exc:  # its refusals
        return type(exc).__name__


@pytest.mark.parametrize("model", list(MISTRAL_FILES))
def test_mistral_ids_match_mistral_common(
    registry: Registry, reference: Registry, mistral_common: dict[str, Any], model: str
) -> None:
    """Same ids, or both refuse (ours with a ChatFormatError naming the message); the first
    conversations on the pure-Python engine too. Ids are 9 letters or digits (what both take);
    some contents are given as text parts."""
    rng = random.Random(f"oracle-{model}")
    mismatches, counted, refused = [], 0, 0
    for n in range(N_CONVERSATIONS):
        messages, tools = conversation(
            rng, reasoning=False, literals=MISTRAL_LITERALS, call_id="call{:05d}"
        )
        for m in messages:  # some contents as text parts, an empty one among them
            if m["content"] and rng.random() < 0.2:
                cut = rng.randint(0, len(m["content"]))
                texts = [m["content"][:cut], "", m["content"][cut:]]
                m["content"] = [{"type": "text", "text": t} for t in texts]
        agp = rng.random() < 0.3
        theirs = mistral_ids(mistral_common[model], messages, tools, agp)
        for reg in (registry, reference) if n < N_CONVERSATIONS // 10 else (registry,):
            try:
                ours: Any = count_conversation(
                    reg, model, messages, tools, add_generation_prompt=agp
                ).count
            except ChatFormatError:
                ours = None
            if ours is None or isinstance(theirs, str):
                if (ours is None) != isinstance(theirs, str):
                    mismatches.append(n)
                continue
            if ours.ids != list(theirs):
                mismatches.append(n)
            parts = ours.tools_tokens + sum(m.tokens for m in ours.messages)
            assert parts + sum(ours.overhead.values()) == ours.input_tokens == len(theirs)
        counted, refused = (
            counted + (not isinstance(theirs, str)),
            refused + isinstance(theirs, str),
        )
    print(
        f"{model}: {N_CONVERSATIONS} conversations ({counted} counted, {refused} refused by "
        f"both), {len(mismatches)} mismatches"
    )
    assert not mismatches, f"conversations {mismatches[:10]} differ from mistral-common"
    assert counted > N_CONVERSATIONS // 3  # the generator mostly makes conversations both take


@pytest.mark.parametrize(
    ("messages", "field"),
    [
        ([], None),
        ([{"role": "assistant", "content": "hi"}], 0),
        (
            [
                {"role": "user", "content": "a"},
                {"role": "tool", "tool_call_id": "abcdefghi", "content": "1"},
            ],
            1,
        ),
        (
            [
                {"role": "user", "content": "a"},
                {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [{"id": "call_1", "function": {"name": "f", "arguments": "{}"}}],
                },
                {"role": "tool", "tool_call_id": "call_1", "content": "1"},
            ],
            1,
        ),
        (
            [
                {"role": "user", "content": "a"},
                {"role": "assistant", "content": "b"},
                {"role": "system", "content": "c"},
                {"role": "user", "content": "d"},
            ],
            2,
        ),
    ],
)
@pytest.mark.parametrize("model", list(MISTRAL_FILES))
def test_mistral_refusals_are_typed_like_mistral_common(
    registry: Registry,
    mistral_common: dict[str, Any],
    model: str,
    messages: list[dict[str, Any]],
    field: int | None,
) -> None:
    """No message; one assistant message alone; a tool result after a user message; a tool call
    id that is not 9 letters or digits; a system message after an assistant's."""
    assert isinstance(mistral_ids(mistral_common[model], messages, None, True), str)
    with pytest.raises(ChatFormatError) as caught:
        count_conversation(registry, model, messages)
    assert caught.value.index == field


def _call(n: int, arguments: Any = '{"city": "Paris"}') -> dict[str, Any]:
    return {
        "id": f"call{n:05d}",
        "type": "function",
        "function": {"name": "get_weather", "arguments": arguments},
    }


MISTRAL_CASES = {
    "developer is system": [
        {"role": "developer", "content": "Be terse."},
        {"role": "user", "content": "hi"},
    ],
    "systems and users joined": [
        {"role": "system", "content": "A."},
        {"role": "system", "content": "B."},
        {"role": "user", "content": "c"},
        {"role": "user", "content": ""},
        {"role": "user", "content": "d"},
    ],
    "null content, named tool, text results": [
        {"role": "user", "content": "weather?"},
        {"role": "assistant", "content": None, "tool_calls": [_call(1), _call(2, {"days": 2})]},
        {"role": "tool", "tool_call_id": "call00001", "name": "get_weather", "content": "sunny"},
        {"role": "tool", "tool_call_id": "call00002", "content": ""},
        {"role": "user", "content": "and tomorrow?"},
    ],
    "trailing spaces, continued": [
        {"role": "user", "content": "x"},
        {"role": "assistant", "content": "a b  "},
        {"role": "user", "content": "y"},
        {"role": "assistant", "content": "Sure "},
    ],
    "assistant first": [
        {"role": "assistant", "content": "Hello."},
        {"role": "user", "content": "hi"},
    ],
}


@pytest.mark.parametrize("case", list(MISTRAL_CASES))
@pytest.mark.parametrize("model", list(MISTRAL_FILES))
def test_mistral_request_details_match_mistral_common(
    registry: Registry, mistral_common: dict[str, Any], model: str, case: str
) -> None:
    """`developer`, several system and user messages in a row, null content, arguments given as
    an object, a tool's `name`, tool results that are not JSON or empty, trailing spaces, a
    continued assistant message, an assistant message first; with a tool lacking parameters."""
    messages = MISTRAL_CASES[case]
    tools = [TOOLS_NO_PARAMETERS] if "tool" in case else None
    theirs = mistral_ids(mistral_common[model], messages, tools, False)
    assert isinstance(theirs, list), theirs
    ours = count_conversation(registry, model, messages, tools, add_generation_prompt=False)
    assert ours.count.ids == theirs


TOOLS_NO_PARAMETERS = {"type": "function", "function": {"name": "now"}}


@pytest.mark.parametrize("model", list(MISTRAL_FILES))
def test_mistral_openai_call_ids_count_as_vllm_cuts_them(
    registry: Registry, mistral_common: dict[str, Any], model: str
) -> None:
    """OpenAI's `call_...` ids (which mistral-common refuses) count as mistral-common counts the
    conversation with each id cut to its last 9 characters, as vLLM sends it."""
    long_ids = ["call_8f3kQ2mZx7Lp0aBcDeFgH1jK", "call_Zz9yXw8VuT7sR6qP5oN4mL3k"]

    def conversation(ids: list[str], result_ids: list[str]) -> list[dict[str, Any]]:
        calls = [{**_call(0), "id": i} for i in ids]
        return [
            {"role": "user", "content": "weather?"},
            {
                "role": "assistant",
                "content": "" if model == "mistral-nemo" else "Checking.",
                "tool_calls": calls,
            },
            *({"role": "tool", "tool_call_id": r, "content": "sunny"} for r in result_ids),
            {"role": "user", "content": "thanks"},
        ]

    assert isinstance(
        mistral_ids(mistral_common[model], conversation(long_ids, long_ids), None, True), str
    )
    cut = [i[-9:] for i in long_ids]
    theirs = mistral_ids(mistral_common[model], conversation(cut, cut), None, True)
    assert isinstance(theirs, list), theirs
    ours = count_conversation(registry, model, conversation(long_ids, long_ids))
    assert ours.count.ids == theirs


@pytest.mark.parametrize("model", list(MISTRAL_FILES))
def test_mistral_consecutive_assistants_are_joined(
    registry: Registry, mistral_common: dict[str, Any], model: str
) -> None:
    """mistral-common 1.13.1 takes two assistant messages in a row (one turn, texts joined by a
    blank line), and so does the service."""
    messages = [
        {"role": "user", "content": "a"},
        {"role": "assistant", "content": "b"},
        {"role": "assistant", "content": "c"},
        {"role": "user", "content": "d"},
    ]
    theirs = mistral_ids(mistral_common[model], messages, None, True)
    assert isinstance(theirs, list)
    assert count_conversation(registry, model, messages).count.ids == theirs


# --- the OpenAI cookbook -----------------------------------------------------------------------


def num_tokens_from_messages(messages: list[dict[str, str]], encoding: Any) -> int:
    """The cookbook's recipe (gpt-3.5-turbo-0613 and later, gpt-4, gpt-4o), as published."""
    tokens_per_message = 3
    tokens_per_name = 1
    num_tokens = 0
    for message in messages:
        num_tokens += tokens_per_message
        for key, value in message.items():
            num_tokens += len(encoding.encode(value))
            if key == "name":
                num_tokens += tokens_per_name
    num_tokens += 3  # every reply is primed with <|start|>assistant<|message|>
    return num_tokens


@pytest.mark.parametrize(
    ("model", "encoding"),
    [
        ("gpt-4", "cl100k_base"),
        ("gpt-3.5-turbo", "cl100k_base"),
        ("gpt-4o", "o200k_base"),
        ("gpt-4o-mini", "o200k_base"),
        ("gpt-4.1", "o200k_base"),
        ("gpt-4o-2024-08-06", "o200k_base"),
    ],
)
def test_estimate_rule_matches_cookbook(registry: Registry, model: str, encoding: str) -> None:
    oracle = tiktoken_oracle(registry, encoding)
    rng = random.Random(f"cookbook-{model}")
    for _ in range(N_CONVERSATIONS):
        messages, _ = conversation(rng, reasoning=False, literals=False)
        plain = [
            {k: v for k, v in m.items() if isinstance(v, str) and k != "tool_call_id"}
            for m in messages
            if "tool_calls" not in m
        ]
        for m in plain:
            if rng.random() < 0.3:
                m["name"] = rng.choice(["alice", "bob_2", "example_user"])
        ours = count_conversation(registry, model, plain).count
        assert not ours.exact and ours.method == "openai-estimate"
        assert ours.input_tokens == num_tokens_from_messages(plain, oracle)


@pytest.mark.parametrize("model", ["qwen3", "gpt-oss", "gpt-4o"])
def test_estimate_counts_what_count_counts(registry: Registry, model: str) -> None:
    from service.models.billing import estimate_request  # noqa: PLC0415

    rng = random.Random(f"estimate-{model}")
    for _ in range(20):
        messages, tools = conversation(rng)
        counted = count_conversation(registry, model, messages, tools).count.input_tokens
        if model == "gpt-4o":
            est = estimate_request(
                registry, model, messages=messages, tools=tools, output_tokens=10
            )
            assert est.estimate.input_tokens == counted
        else:  # no price shipped: estimate's one-rendering total is checked directly
            once = count_conversation(registry, model, messages, tools, breakdown=False).count
            assert once.input_tokens == counted and once.ids is not None
            with pytest.raises(PriceMissingError):
                estimate_request(registry, model, messages=messages, tools=tools)
