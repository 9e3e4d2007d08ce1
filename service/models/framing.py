"""The ids a model's tokenizer puts around a prompt when a request asks it to add its special
tokens (vLLM's `add_special_tokens`).

A Hugging Face tokenizer frames a text by its post-processor alone (a format v2 file's prefix
and suffix ids): Llama 3's `<|begin_of_text|>`, Gemma's `<bos>`. transformers 5, which vLLM
0.32 loads, follows the `tokenizer.json`, so a ByteLevel post-processor adds nothing even where
the config says `add_bos_token` (DeepSeek-V3). Mistral's formats put `<s>` first, as
mistral-common encodes with `bos=True`. OpenAI's vocabularies and harmony add nothing.
"""

from __future__ import annotations

from service.bpe import Tokenizer
from service.errors import ChatInputError
from service.store.formats.model import MistralChat
from service.store.modelstore import LoadedModel

Frame = tuple[tuple[int, ...], tuple[int, ...]]  # the ids before and after the text


def frame(model: LoadedModel, tok: Tokenizer, field: str = "add_special_tokens") -> Frame:
    """The ids around a prompt of `model`; a 422 naming `field` if a Mistral tokenizer lacks
    `<s>`."""
    pipeline = tok.pipeline
    if pipeline.prefix or pipeline.suffix:
        return tuple(pipeline.prefix), tuple(pipeline.suffix)
    if not isinstance(model.profile.chat, MistralChat):
        return (), ()
    bos = tok.special_tokens.get("<s>")
    if bos is None:
        raise ChatInputError(None, field, "this Mistral tokenizer has no BOS `<s>` to add")
    return (bos,), ()
