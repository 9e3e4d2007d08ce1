"""Generate service/bpe/csrc/normal_tables.h: per code point, what normal_spans.h's quick check
(UAX #15) reads, and the pairs of characters NFC composes.

Everything is derived from the running Python's `unicodedata`, the oracle the service must equal,
and recorded with its `unidata_version` (NORMAL_UNICODE_VERSION):
service/bpe/pipeline/normal_forms.py uses
the tables only under a Python of that version. setup.py generates them into the build directory
when the building Python's version differs from the committed header's; after a Python upgrade,
regenerate the committed one:

    python service/bpe/csrc/gen_normal_tables.py > service/bpe/csrc/normal_tables.h

- ccc: `unicodedata.combining(c)`.
- quick check NO: `normalize(form, c) != c` (singletons, composition exclusions, decompositions
  that start with a non-starter; for NFKC the compatibility characters too).
- MAYBE: not NO, and the second of a pair NFC composes: the two characters of a primary
  composite's canonical decomposition (one NFC composes back), or a leading and a vowel jamo;
  the trailing jamo too (they compose with a leading and vowel jamo, or their syllable).
- YES otherwise. A *boundary* is a YES character of class 0: text may be cut before it. Whether
  it has a canonical decomposition is kept too: a MAYBE character right after a boundary without
  one is left as it is unless the two are a pair (nukta after most Devanagari letters).

main() checks what normal_spans.h relies on before writing anything (AssertionError otherwise).
"""

from __future__ import annotations

import sys
import unicodedata
from typing import Literal, TextIO

YES, MAYBE, NO = 0, 1, 2
FORMS: tuple[Literal["NFC"], Literal["NFKC"]] = ("NFC", "NFKC")
DECOMPOSED: tuple[Literal["NFD"], Literal["NFKD"]] = ("NFD", "NFKD")
# a kind's order in a form (normal_spans.h): the quick check and the class in one number
ORDER_NO, ORDER_MAYBE, BOUNDARY, BOUNDARY_DECOMPOSED = -2, -1, 256, 512
Kind = tuple[int, int, int, bool]  # ccc, NFC quick check, NFKC quick check, decomposes
PLAIN: Kind = (0, YES, YES, False)  # kind 0


def code_points() -> list[int]:
    return [c for c in range(0x110000) if not 0xD800 <= c < 0xE000]


def compositions() -> set[tuple[int, int]]:
    """(first, second) of every pair of characters NFC composes into one."""
    pairs = {(lead, vowel) for lead in range(0x1100, 0x1113) for vowel in range(0x1161, 0x1176)}
    for c in code_points():
        parts = unicodedata.decomposition(chr(c)).split()
        if len(parts) == 2 and not parts[0].startswith("<"):
            pair = "".join(chr(int(p, 16)) for p in parts)
            if unicodedata.normalize("NFC", pair) == chr(c):
                pairs.add((ord(pair[0]), ord(pair[1])))
    return pairs


def kinds_of(pairs: set[tuple[int, int]]) -> dict[int, Kind]:
    """The kind of every code point that is not PLAIN."""
    maybe = {second for _, second in pairs} | set(range(0x11A8, 0x11C3))  # + trailing jamo
    kinds = {}
    for c in code_points():
        ch = chr(c)
        qc = [
            NO if unicodedata.normalize(f, ch) != ch else MAYBE if c in maybe else YES
            for f in FORMS
        ]
        kind = (unicodedata.combining(ch), qc[0], qc[1], unicodedata.normalize("NFD", ch) != ch)
        if kind != PLAIN:
            kinds[c] = kind
    return kinds


def check(kinds: dict[int, Kind], pairs: set[tuple[int, int]]) -> None:
    """What cutting before a boundary, and keeping a MAYBE character after one, rely on."""
    maybe = {c for c, k in kinds.items() if MAYBE in k[1:3]}
    for c in code_points():
        ch, kind = chr(c), kinds.get(c, PLAIN)
        for f in range(2):
            form = FORMS[f]
            if kind[1 + f] != NO:
                assert unicodedata.is_normalized(form, ch), (form, hex(c))
            if order(kind, f) >= BOUNDARY:  # its decomposition starts with a starter that
                start = unicodedata.normalize(DECOMPOSED[f], ch)[0]  # composes with nothing
                assert unicodedata.combining(start) == 0 and ord(start) not in maybe, hex(c)
    for a, b in pairs:
        assert unicodedata.normalize("NFC", chr(a) + chr(b)) != chr(a) + chr(b)
        assert b in maybe, hex(b)


def order(kind: Kind, form: int) -> int:
    ccc, qc, decomposes = kind[0], kind[1 + form], kind[3]
    if qc != YES:
        return ORDER_NO if qc == NO else ORDER_MAYBE
    return ccc or (BOUNDARY_DECOMPOSED if decomposes else BOUNDARY)


def write(kinds: dict[int, Kind], pairs: set[tuple[int, int]], out: TextIO) -> None:
    distinct = {PLAIN: 0}
    for k in sorted(set(kinds.values())):
        distinct.setdefault(k, len(distinct))
    blocks: dict[tuple[int, ...], int] = {}
    stage1 = []
    for hi in range(0x110000 >> 8):
        block = tuple(distinct[kinds.get(c, PLAIN)] for c in range(hi << 8, hi + 1 << 8))
        stage1.append(blocks.setdefault(block, len(blocks)))
    assert len(distinct) <= 256 and len(blocks) <= 256
    first = [min(c for c, k in kinds.items() if order(k, f) < BOUNDARY) for f in range(2)]
    w = out.write
    w(
        "/* Generated by service/bpe/csrc/gen_normal_tables.py from Python's unicodedata "
        f"{unicodedata.unidata_version}: do not edit. */\n"
    )
    w("#pragma once\n#include <stdint.h>\n\n")
    w(f'#define NORMAL_UNICODE_VERSION "{unicodedata.unidata_version}"\n')
    w("/* the lowest code point that is no boundary, by form (NFC, NFKC) */\n")
    w(f"static const uint32_t nf_first_unstable[2] = {{0x{first[0]:X}, 0x{first[1]:X}}};\n\n")
    w("/* the kinds (ccc, NFC quick check, NFKC quick check: 0 YES 1 MAYBE 2 NO, decomposes):\n")
    listed = [f"{i}=({c},{n},{k},{int(d)})" for (c, n, k, d), i in distinct.items()]
    for i in range(0, len(listed), 7):
        w("   " + " ".join(listed[i : i + 7]) + "\n")
    w("   Their order by form (NFC, NFKC): NF_NO, NF_MAYBE, the class of a non-starter, or\n")
    w("   NF_BOUNDARY (a YES starter; NF_BOUNDARY_DECOMPOSED if it has a canonical\n")
    w("   decomposition). A character is bad if the class before it is above its order; a\n")
    w("   character that is not bad has the class order & 255. */\n")
    w(f"#define NF_NO ({ORDER_NO})\n#define NF_MAYBE ({ORDER_MAYBE})\n")
    w(f"#define NF_BOUNDARY {BOUNDARY}\n#define NF_BOUNDARY_DECOMPOSED {BOUNDARY_DECOMPOSED}\n")
    w(f"static const int16_t nf_order[2][{len(distinct)}] = {{\n")
    for f in range(2):
        w("{" + ",".join(str(order(k, f)) for k in distinct) + "},\n")
    w("};\n")
    w(f"static const uint8_t nf_ccc[{len(distinct)}] = {{")
    w(",".join(str(k[0]) for k in distinct) + "};\n\n")
    w(f"static const uint8_t nf_stage1[{len(stage1)}] = {{")
    for i, b in enumerate(stage1):
        w(("\n" if i % 24 == 0 else "") + f"{b},")
    w("\n};\n")
    w(f"static const uint8_t nf_stage2[{len(blocks)}][256] = {{\n")
    for block in blocks:
        w("{" + ",".join(map(str, block)) + "},\n")
    w("};\n\n")
    w("/* the kind of a code point below 0x110000 (any of a str) */\n")
    w("static inline unsigned nf_kind(uint32_t cp) {\n")
    w("    return nf_stage2[nf_stage1[cp >> 8]][cp & 255];\n}\n\n")
    w("/* the pairs NFC composes, as second << 21 | first, in order */\n")
    keys = sorted(second << 21 | first for first, second in pairs)
    w(f"static const uint64_t nf_pairs[{len(keys)}] = {{")
    for i, key in enumerate(keys):
        w(("\n" if i % 8 == 0 else "") + f"0x{key:X},")
    w("\n};\n")


def main() -> None:
    pairs = compositions()
    kinds = kinds_of(pairs)
    check(kinds, pairs)
    write(kinds, pairs, sys.stdout)


if __name__ == "__main__":
    main()
