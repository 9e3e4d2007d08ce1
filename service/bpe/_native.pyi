"""Type stub of the C extension built from service/bpe/native/_native.c."""

from collections.abc import Sequence
from typing import Any

UNICODE_VERSION: str
SCAN_NONE: int
SCAN_GPT2: int
SCAN_CL100K: int
SCAN_O200K: int
SCAN_QWEN2: int

class Engine:
    def __init__(
        self,
        rule: str,
        tokens: Sequence[bytes | None],
        byte_ids: Sequence[int],
        triples: Any,
        scanner: int,
    ) -> None: ...
    @property
    def nbytes(self) -> int: ...
    def encode(self, text: str, /) -> list[int]: ...
    def count(self, text: str, /) -> int: ...
    def encode_batch(self, texts: Sequence[str], /) -> list[list[int]]: ...
    def count_batch(self, texts: Sequence[str], /) -> list[int]: ...
    def encode_pieces(self, pieces: Sequence[str], /) -> list[int]: ...
    def count_pieces(self, pieces: Sequence[str], /) -> int: ...

def split(scanner: int, text: str, /) -> list[str]: ...
