"""Model profile and price file formats v1: msgspec definitions, parsing and rule checks.

A model profile names the tokenizer a model uses (`name@version`), its aliases, context window
and how a conversation becomes tokens (`chat`). A price file lists per-model prices, each with
the source it was read from and the date. Both are listed in the manifest with their sha256 and
verified at load like tokenizer files. The JSON Schemas in docs/ are generated from these Structs.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import jinja2
import jinja2.sandbox
import msgspec
from msgspec import Meta, Struct

from service.errors import FormatError
from service.store.formats.tokenizer import Name, StoreFile

TokenizerRefText = Annotated[
    str, Meta(pattern=r"^[a-z0-9][a-z0-9_.-]{0,63}@[A-Za-z0-9][A-Za-z0-9_.-]{0,31}$")
]
Alias = Annotated[str, Meta(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,99}$")]
DecimalText = Annotated[str, Meta(pattern=r"^[0-9]+(\.[0-9]+)?$", description="a decimal number")]
Day = Annotated[str, Meta(pattern=r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$", description="YYYY-MM-DD")]


class JinjaChat(Struct, frozen=True, forbid_unknown_fields=True, kw_only=True, tag="jinja"):
    """A Hugging Face chat template, verbatim from the model's tokenizer_config.json."""

    template: str
    template_source: str = ""
    bos_token: str | None = None
    eos_token: str | None = None


class HarmonyChat(Struct, frozen=True, forbid_unknown_fields=True, kw_only=True, tag="harmony"):
    """OpenAI's harmony format (gpt-oss), rendered by `service.models.chat.harmony`."""

    model_identity: str = "You are ChatGPT, a large language model trained by OpenAI."
    knowledge_cutoff: str = "2024-06"
    reasoning_effort: Literal["low", "medium", "high"] = "medium"


class OpenAIEstimateChat(
    Struct, frozen=True, forbid_unknown_fields=True, kw_only=True, tag="openai-estimate"
):
    """The OpenAI cookbook's per-message rule (`num_tokens_from_messages`, `num_tokens_for_tools`):
    an estimate, since the API's real rendering is not published."""

    tokens_per_message: int = 3
    tokens_per_name: int = 1
    reply_priming: int = 3
    func_init: int = 7
    prop_init: int = 3
    prop_key: int = 3
    enum_init: int = -3
    enum_item: int = 3
    func_end: int = 12


class MistralChat(Struct, frozen=True, forbid_unknown_fields=True, kw_only=True, tag="mistral"):
    """Mistral's instruct format of `instruct_version` (v3: Mistral NeMo, Large 2407; v7: Large
    2411), built as mistral-common's `encode_chat_completion` does, by
    `service.models.chat.mistral`."""

    instruct_version: Literal["v3", "v7"]


ChatFormat = JinjaChat | HarmonyChat | MistralChat | OpenAIEstimateChat


class OpenAITileImages(
    Struct,
    frozen=True,
    forbid_unknown_fields=True,
    kw_only=True,
    tag_field="rule",
    tag="openai-tiles",
):
    """OpenAI's tile rule (GPT-4o, GPT-4.1, o1/o3): `base` tokens, plus `per_tile` for each
    512 px tile of the image scaled into 2048 px and its short side to 768 px (`detail: low`:
    `base` alone). Computed by `service.models.images.rules`."""

    base: Annotated[int, Meta(ge=0)] = 85
    per_tile: Annotated[int, Meta(ge=0)] = 170


class OpenAIPatchImages(
    Struct,
    frozen=True,
    forbid_unknown_fields=True,
    kw_only=True,
    tag_field="rule",
    tag="openai-patches",
):
    """OpenAI's patch rule (GPT-4.1-mini/nano, o4-mini): the 32 px patches covering the image
    (scaled down to at most `max_patches`), times the model's `multiplier`."""

    multiplier: Annotated[float, Meta(gt=0)] = 1.0
    max_patches: Annotated[int, Meta(ge=1)] = 1536


class AnthropicImages(
    Struct,
    frozen=True,
    forbid_unknown_fields=True,
    kw_only=True,
    tag_field="rule",
    tag="anthropic",
):
    """Anthropic's rule: width * height / 750 after the image is scaled down to a long edge of
    at most `max_long_edge` px and at most `max_pixels` px."""

    max_long_edge: Annotated[int, Meta(ge=1)] = 1568
    max_pixels: Annotated[int, Meta(ge=1)] = 1568 * 784


class FixedImages(
    Struct, frozen=True, forbid_unknown_fields=True, kw_only=True, tag_field="rule", tag="fixed"
):
    """The same count for every image, whatever its size (Gemma 3: 260, its 256 soft tokens and
    the markers around them). The only rule for models counted by a chat template."""

    tokens: Annotated[int, Meta(ge=0)]


ImageRule = OpenAITileImages | OpenAIPatchImages | AnthropicImages | FixedImages


class ModelMetadata(Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    description: str = ""
    source: str = ""


class ModelFile(StoreFile, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """One model profile version. See docs/format.md."""

    format: Literal["toksvc-model"] = "toksvc-model"
    tokenizer: TokenizerRefText
    aliases: list[Alias] = msgspec.field(default_factory=list)
    context_window: Annotated[int, Meta(ge=1)]
    max_output_tokens: Annotated[int, Meta(ge=1)]
    chat: ChatFormat
    images: ImageRule | None = None
    metadata: ModelMetadata = msgspec.field(default_factory=ModelMetadata)


class Price(Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """Prices per 1M tokens of one model (its name, not an alias)."""

    model: Name
    input_per_million: DecimalText
    cached_input_per_million: DecimalText | None = None
    output_per_million: DecimalText
    source: str
    read_on: Day


class PriceFile(StoreFile, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """One price list version. See docs/format.md."""

    format: Literal["toksvc-prices"] = "toksvc-prices"
    currency: Annotated[str, Meta(pattern=r"^[A-Z]{3}$")]
    prices: list[Price]


def parse_model(data: bytes, where: str) -> ModelFile:
    try:
        mf = msgspec.json.decode(data, type=ModelFile)
    except msgspec.MsgspecError as exc:
        raise FormatError(where, "file", f"is not a valid model profile: {exc}") from None
    if isinstance(mf.chat, JinjaChat):
        try:
            jinja2.sandbox.ImmutableSandboxedEnvironment(
                extensions=["jinja2.ext.loopcontrols"]
            ).parse(mf.chat.template)
        except jinja2.TemplateSyntaxError as exc:
            raise FormatError(where, "chat.template", f"line {exc.lineno}: {exc.message}") from None
    rendered = not isinstance(mf.chat, OpenAIEstimateChat)  # a template, harmony, Mistral: text
    if rendered and mf.images is not None and not isinstance(mf.images, FixedImages):
        raise FormatError(
            where,
            "images",
            "a chat template, harmony or Mistral's format renders "
            "text only: only a fixed rule counts its images",
        )
    if len(set(mf.aliases)) != len(mf.aliases):
        raise FormatError(where, "aliases", "an alias is listed twice")
    return mf


def parse_prices(data: bytes, where: str) -> PriceFile:
    try:
        pf = msgspec.json.decode(data, type=PriceFile)
    except msgspec.MsgspecError as exc:
        raise FormatError(where, "file", f"is not a valid price file: {exc}") from None
    seen: set[str] = set()
    for i, price in enumerate(pf.prices):
        if price.model in seen:
            raise FormatError(where, f"prices[{i}]", f"{price.model} is priced twice")
        seen.add(price.model)
    return pf


def model_path(name: str, version: str) -> str:
    return f"models/{name}@{version}.json"


def prices_path(name: str, version: str) -> str:
    return f"prices/{name}@{version}.json"


def json_schemas() -> dict[str, Any]:
    return {"model": msgspec.json.schema(ModelFile), "prices": msgspec.json.schema(PriceFile)}
