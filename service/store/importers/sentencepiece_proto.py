"""Reading a SentencePiece `.model` file (a serialized `ModelProto`) without the sentencepiece or
protobuf packages: the protobuf wire format is small (varints, fixed 32/64-bit values and
length-delimited fields), and only a few fields matter here:

- `pieces` (1): piece (1, string), score (2, float), type (3: 1 normal, 2 unknown, 3 control,
  4 user defined, 5 unused, 6 byte);
- `trainer_spec` (2): model_type (3: 1 unigram, 2 BPE, 3 word, 4 char), byte_fallback (35),
  split_digits (25), treat_whitespace_as_suffix (24), unk/bos/eos/pad ids (40-43);
- `normalizer_spec` (3): name (1), precompiled_charsmap (2), add_dummy_prefix (3, default on),
  remove_extra_whitespaces (4, default on), escape_whitespaces (5, default on).

Every failure is a StoreError naming the file and what was wrong; a piece whose score is not
finite or whose type is not one of the six is refused, as the merges and the specials built
from them could not be exact.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass, field

from service.errors import StoreError

NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6
MODEL_TYPES = {1: "unigram", 2: "bpe", 3: "word", 4: "char"}


@dataclass(slots=True)
class Piece:
    piece: str
    score: float = 0.0
    type: int = NORMAL


@dataclass(slots=True)
class SentencePieceModel:
    pieces: list[Piece] = field(default_factory=list)
    model_type: str = "unigram"
    byte_fallback: bool = False
    split_digits: bool = False
    whitespace_as_suffix: bool = False
    unk_id: int = 0
    bos_id: int = 1
    eos_id: int = 2
    pad_id: int = -1
    normalizer_name: str = "nmt_nfkc"
    precompiled_charsmap: bytes = b""
    add_dummy_prefix: bool = True
    remove_extra_whitespaces: bool = True
    escape_whitespaces: bool = True


Fields = list[tuple[int, int | bytes]]  # (field number, varint / fixed value or the bytes)


def _fields(data: bytes, where: str) -> Fields:
    out: Fields = []
    i, n = 0, len(data)
    try:
        while i < n:
            key, i = _varint(data, i)
            number, wire = key >> 3, key & 7
            if wire == 0:
                value, i = _varint(data, i)
                out.append((number, value))
            elif wire == 1:
                out.append((number, data[i : i + 8]))
                i += 8
            elif wire == 2:
                length, i = _varint(data, i)
                if i + length > n:
                    raise ValueError("a field runs past the end")
                out.append((number, data[i : i + length]))
                i += length
            elif wire == 5:
                out.append((number, data[i : i + 4]))
                i += 4
            else:
                raise ValueError(f"wire type {wire} is not protobuf's")
        if i != n:
            raise ValueError("the last field runs past the end")
    except (ValueError, IndexError) as exc:
        raise StoreError(where, f"is not a SentencePiece model (protobuf: {exc})") from None
    return out


def _varint(data: bytes, i: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        b = data[i]
        i += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, i
        shift += 7
        if shift > 63:
            raise ValueError("a varint is too long")


def _text(value: int | bytes, where: str, what: str) -> str:
    if not isinstance(value, bytes):
        raise StoreError(where, f"{what} is not a string")
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        raise StoreError(where, f"{what} is not UTF-8") from None


def _int(value: int | bytes) -> int:
    """A varint as the signed int32 protobuf means (ids may be -1)."""
    if isinstance(value, bytes):
        return 0
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


def read_model(data: bytes, where: str) -> SentencePieceModel:
    model = SentencePieceModel()
    for number, value in _fields(data, where):
        if number == 1 and isinstance(value, bytes):
            model.pieces.append(_piece(value, where, len(model.pieces)))
        elif number == 2 and isinstance(value, bytes):
            _trainer(model, _fields(value, where))
        elif number == 3 and isinstance(value, bytes):
            _normalizer(model, _fields(value, where), where)
    if not model.pieces:
        raise StoreError(where, "is not a SentencePiece model (no pieces)")
    return model


def _piece(data: bytes, where: str, index: int) -> Piece:
    piece = Piece("")
    for number, value in _fields(data, where):
        if number == 1:
            piece.piece = _text(value, where, f"pieces[{index}].piece")
        elif number == 2 and isinstance(value, bytes) and len(value) == 4:
            piece.score = struct.unpack("<f", value)[0]
        elif number == 3:
            piece.type = _int(value)
    if not math.isfinite(piece.score):
        raise StoreError(where, f"pieces[{index}]: score {piece.score} is not a finite number")
    if not NORMAL <= piece.type <= BYTE:
        raise StoreError(where, f"pieces[{index}]: type {piece.type} is not one of 1 to 6")
    return piece


def _trainer(model: SentencePieceModel, fields: Fields) -> None:
    for number, value in fields:
        if number == 3:
            model.model_type = MODEL_TYPES.get(_int(value), f"type {_int(value)}")
        elif number == 35:
            model.byte_fallback = bool(_int(value))
        elif number == 25:
            model.split_digits = bool(_int(value))
        elif number == 24:
            model.whitespace_as_suffix = bool(_int(value))
        elif number in (40, 41, 42, 43):
            setattr(model, ("unk_id", "bos_id", "eos_id", "pad_id")[number - 40], _int(value))


def _normalizer(model: SentencePieceModel, fields: Fields, where: str) -> None:
    for number, value in fields:
        if number == 1:
            model.normalizer_name = _text(value, where, "normalizer_spec.name")
        elif number == 2 and isinstance(value, bytes):
            model.precompiled_charsmap = value
        elif number in (3, 4, 5):
            name = ("add_dummy_prefix", "remove_extra_whitespaces", "escape_whitespaces")[
                number - 3
            ]
            setattr(model, name, bool(_int(value)))
