"""The pipeline components of format v2 by kind: the one list the importer, the validation, the
build and docs/format.md are checked against (tests/unit/store/test_components.py).

A kind is the file field that holds it and its members (`service.store.pipeline.component`).
The model (BPE, with its `rule`) is the file itself for now; a new model kind gets its entry
here."""

from __future__ import annotations

from typing import NamedTuple, get_args

from service.store.pipeline.added_tokens import AddedToken
from service.store.pipeline.component import Component
from service.store.pipeline.decoders import Decoder
from service.store.pipeline.normalizers import Normalizer
from service.store.pipeline.post_processors import Template
from service.store.pipeline.pre_tokenizers import PreTokenizer


class Kind(NamedTuple):
    field: str  # the tokenizer file's field
    members: tuple[type[Component], ...]


KINDS: dict[str, Kind] = {
    "normalizer": Kind("normalizers", get_args(Normalizer)),
    "pre_tokenizer": Kind("pre_tokenizers", get_args(PreTokenizer)),
    "decoder": Kind("decoder", get_args(Decoder)),
    "post_processor": Kind("template", (Template,)),
    "added_token": Kind("added_tokens", (AddedToken,)),
}
