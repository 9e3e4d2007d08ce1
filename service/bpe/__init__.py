"""Byte-level BPE: the tokenizer front, its engines and text pipeline, streaming decode, text
budgets and training. Standard library and `regex` only; nothing here knows about files or HTTP.

The names below are the public API; the modules of the sub-packages (engine/, pipeline/,
stream/, text/) are internal and may change.
"""

from service.bpe.engine.native import NativeEngine
from service.bpe.engine.python import Engine, PythonEngine
from service.bpe.pipeline.normalizers import Normalization
from service.bpe.pipeline.pipeline import Pipeline
from service.bpe.specials import SpecialSet
from service.bpe.stream.assembly import Assembler
from service.bpe.stream.options import AssemblyLimits, AssemblyOptions, assembler_for
from service.bpe.stream.utf8 import StreamDecoder
from service.bpe.text.budgets import Cut, chunk, truncate
from service.bpe.tokenizer import Errors, Tokenizer
from service.bpe.trainer import TrainedModel, train
from service.bpe.vocab import Rule, Vocabulary

__all__ = [
    "Assembler",
    "AssemblyLimits",
    "AssemblyOptions",
    "Cut",
    "Engine",
    "Errors",
    "NativeEngine",
    "Normalization",
    "Pipeline",
    "PythonEngine",
    "Rule",
    "SpecialSet",
    "StreamDecoder",
    "Tokenizer",
    "TrainedModel",
    "Vocabulary",
    "assembler_for",
    "chunk",
    "train",
    "truncate",
]
