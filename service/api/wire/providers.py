"""Bodies of the provider-shaped routes: Anthropic's and OpenAI's count routes, vLLM's tokenize.

They take the provider's own request (fields the count does not need, such as `max_tokens` or
`temperature`, are accepted and ignored, since clients send whole requests) and answer in the
provider's own shape, so a gateway can point its client at this service unchanged.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from service.api.wire.tokens import RequestBody, ResponseBody, doc
from service.errors import ChatInputError
from service.models.conversation import check_nesting

_MODEL = "a model in the store: a name, an alias or `name@version`"
_TOOLS = "tool definitions offered to the model, in the provider's own shape"


class ProviderRequest(RequestBody, frozen=True, forbid_unknown_fields=False, kw_only=True):
    """A provider's request: other fields are accepted and ignored."""

    model: Annotated[str | None, doc(_MODEL + "; required", "gpt-4o")] = None

    def model_ref(self) -> str:
        """`model`, or a 422 naming it: the count depends on the model, so it is never guessed."""
        if self.model is None:
            raise ChatInputError(
                None, "model", "required: name a model of the store (GET /v1/models lists them)"
            )
        return self.model


class AnthropicCountRequest(ProviderRequest, frozen=True, forbid_unknown_fields=False):
    """Anthropic's `messages/count_tokens` request: `system`, `messages` with content blocks
    (`text`, `image`, `thinking`, `tool_use`, `tool_result`), `tools` with `input_schema`."""

    messages: Annotated[
        list[dict[str, Any]],
        doc(
            "messages, `user` or `assistant`; content a string or blocks",
            [{"role": "user", "content": "Hello, world"}],
        ),
    ]
    system: Annotated[
        str | list[dict[str, Any]] | None, doc("the system prompt: a string or text blocks")
    ] = None
    tools: Annotated[list[dict[str, Any]] | None, doc(_TOOLS)] = None

    def __post_init__(self) -> None:  # as it is decoded: nothing below recurses too deep
        check_nesting(self.messages, self.tools, None)


class InputTokens(ResponseBody, frozen=True):
    """Anthropic's answer: the conversation's input tokens."""

    input_tokens: Annotated[int, doc("the input tokens, as the model is billed", 18)]


class ResponsesInputRequest(ProviderRequest, frozen=True, forbid_unknown_fields=False):
    """OpenAI's `responses/input_tokens` request: `instructions`, `input` (a string or items:
    messages, `function_call`, `function_call_output`), function `tools`."""

    input: Annotated[
        str | list[dict[str, Any]], doc("the input: a string or items", "Hello, world")
    ] = ""
    instructions: Annotated[str | None, doc("the system (developer) instructions")] = None
    tools: Annotated[list[dict[str, Any]] | None, doc(_TOOLS)] = None
    previous_response_id: Annotated[
        str | None, doc("not counted: the earlier turns are OpenAI's, not sent; given, a 422")
    ] = None
    conversation: Annotated[
        str | dict[str, Any] | None,
        doc("not counted: the conversation's items are OpenAI's, not sent; given, a 422"),
    ] = None

    def __post_init__(self) -> None:  # as it is decoded: nothing below recurses too deep
        check_nesting(None if isinstance(self.input, str) else self.input, self.tools, None)

    def check_self_contained(self) -> None:
        """A 422 naming `previous_response_id` or `conversation`: the turns they stand for are
        stored by OpenAI, so a count here would leave them out."""
        for name in ("previous_response_id", "conversation"):
            if getattr(self, name) is not None:
                raise ChatInputError(
                    None,
                    name,
                    "not counted: the earlier turns it names are stored by OpenAI and not in "
                    "this request; send them in `input`",
                )


class ResponsesInputTokens(ResponseBody, frozen=True):
    """OpenAI's answer: `{"object": "response.input_tokens", "input_tokens": N}`."""

    object: Annotated[Literal["response.input_tokens"], doc("the object type")]
    input_tokens: Annotated[int, doc("the input tokens, as the model is billed", 18)]


class TokenizeRequest(ProviderRequest, frozen=True, forbid_unknown_fields=False):
    """vLLM's `/tokenize` request: a `prompt`, or chat `messages` rendered by the model's
    chat format."""

    prompt: Annotated[str | None, doc("a text; give `prompt` or `messages`", "Hello")] = None
    messages: Annotated[
        list[dict[str, Any]] | None, doc("OpenAI-style messages; give `prompt` or `messages`")
    ] = None
    tools: Annotated[list[dict[str, Any]] | None, doc("OpenAI-style tools (with messages)")] = None
    add_generation_prompt: Annotated[bool, doc("start the assistant's reply (messages)")] = True
    chat_template_kwargs: Annotated[
        dict[str, Any] | None, doc("extra variables for a Jinja chat template")
    ] = None
    return_token_strs: Annotated[
        bool, doc("also return each token's text (U+FFFD where a character is split)")
    ] = False
    add_special_tokens: Annotated[
        bool | None,
        doc(
            "put the model's BOS (its tokenizer's template ids) around the text; "
            "default true for `prompt`, false for `messages` (as vLLM)"
        ),
    ] = None
    continue_final_message: Annotated[
        bool, doc("not supported: `true` is a 422 naming the field")
    ] = False
    chat_template: Annotated[
        str | None, doc("not supported: the model's own format renders; given, a 422")
    ] = None

    def __post_init__(self) -> None:  # as it is decoded: nothing below recurses too deep
        check_nesting(self.messages, self.tools, self.chat_template_kwargs)


class TokenizeResponse(ResponseBody, frozen=True):
    """vLLM's answer: the ids, their number and the model's context window."""

    count: Annotated[int, doc("the number of tokens", 1)]
    max_model_len: Annotated[int, doc("the model's context window", 128000)]
    tokens: Annotated[list[int], doc("the token ids", [13225])]
    token_strs: Annotated[list[str] | None, doc("each token's text, if asked")] = None


class DetokenizeRequest(ProviderRequest, frozen=True, forbid_unknown_fields=False):
    """vLLM's `/detokenize` request: ids to text."""

    tokens: Annotated[list[int], doc("token ids", [13225])]

    def size(self) -> tuple[int, int]:
        return 1, len(self.tokens)


class DetokenizeResponse(ResponseBody, frozen=True):
    """vLLM's answer: the text (U+FFFD where the ids end inside a character)."""

    prompt: Annotated[str, doc("the decoded text", "Hello")]
