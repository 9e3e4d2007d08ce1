"""Byte-level BPE: merge rules, engines, the tokenizer front, streaming decode and training.

Standard library and `regex` only; nothing here knows about files or HTTP.
"""

from service.bpe.engine.python import Engine, PythonEngine
from service.bpe.pipeline.normalizers import Normalization
from service.bpe.specials import SpecialSet
from service.bpe.stream.utf8 import StreamDecoder
from service.bpe.tokenizer import Errors, Tokenizer
from service.bpe.trainer import TrainedModel, train
from service.bpe.vocab import Rule, Vocabulary

__all__ = [
    "Engine",
    "Errors",
    "Normalization",
    "PythonEngine",
    "Rule",
    "SpecialSet",
    "StreamDecoder",
    "Tokenizer",
    "TrainedModel",
    "Vocabulary",
    "train",
]
