/* Chained pre-tokenizers of format v2 files (service/store/formats/chains.py), each as one scanner: the
   pieces the chain of `Split` steps gives, as Hugging Face `tokenizers` cuts them.

DeepSeek V3 and V4 run three `Split` steps, each `isolated` (gaps between matches are pieces
too), each on every piece the step before made:
  1. \p{N}{1,3}
  2. [\x{4E00}-\x{9FA5}\x{3040}-\x{309F}\x{30A0}-\x{30FF}]+            (the "CJK" ranges)
  3. [!-/:-@\[-`{-~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*
     |\s*[\r\n]+|\s+(?!\S)|\s+
Steps 1 and 2 cut the text into segments: runs of up to three numbers (which step 3 leaves
whole: no alternative matches a number), runs of CJK-range characters, and runs of anything
else. Step 3 then runs inside each segment as if it were the whole text, so its last character
is an end of text for `(?!\S)` and no match crosses it. The scanner reads forward only, so at
any position it knows its segment by the kind of the character there; a character of another
kind reads as the end of the text (DS_END). Where no alternative matches, the gap runs to the
next position where one does: a character with none of the classes (control, format,
unassigned, private use) starts a match only when a letter or mark follows it. */
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "pretok.h"

#define DS_END 0x100u /* past the segment: no class */

static inline int ds_cjk(uint32_t c) {
    return (c >= 0x4E00 && c <= 0x9FA5) || (c >= 0x3040 && c <= 0x30FF);
}

/* flags of the character at i, of `*l` bytes; DS_END when i is past the segment of kind `cjk`
   (the text's end, a number, or a character of the other kind) */
static inline unsigned ds_at(const uint8_t *s, size_t n, size_t i, int cjk, size_t *l) {
    uint32_t c;
    unsigned f;
    if (i >= n) return *l = 0, DS_END;
    if (s[i] < 0x80) {
        *l = 1;
        c = s[i];
        f = uc_stage2[0][c];
    } else {
        c = utf8_at(s, i, l);
        f = uc_flags(c);
    }
    return ((f & UC_N) || ds_cjk(c) != cjk) ? DS_END : f;
}

/* end of the run of characters with any of `mask` from i, inside the segment (its ASCII start by
   ascii_run: an ASCII byte is in a segment of the other kind, and `mask` never holds \p{N}) */
static inline size_t ds_run(const uint8_t *s, size_t n, size_t i, int cjk, unsigned mask) {
    size_t l;
    unsigned f;
    if (!cjk) i = ascii_run(s, n, i, mask);
    while (!((f = ds_at(s, n, i, cjk, &l)) & DS_END) && (f & mask)) i += l;
    return i;
}

static inline int ds_ascii_punct(uint32_t c) {
    return (c >= '!' && c <= '/') || (c >= ':' && c <= '@') || (c >= '[' && c <= '`') ||
           (c >= '{' && c <= '~');
}

static inline int ds_ascii_letter(uint8_t b) { return (b | 0x20) >= 'a' && (b | 0x20) <= 'z'; }

/* [^\r\n\p{L}\p{P}\p{S}]: the optional character before a run of letters and marks */
static inline int ds_prefix(uint32_t c, unsigned f) {
    return c != '\r' && c != '\n' && !(f & (UC_L | UC_PS));
}

static size_t scan_deepseek(const uint8_t *s, size_t n, size_t p) {
    size_t l, ln, e;
    uint32_t c = utf8_at(s, p, &l);
    unsigned f = flags_at(s, n, p);
    if (f & UC_N) return run_digits3(s, n, p + l); /* step 1; step 3 keeps it whole */
    int cjk = ds_cjk(c);
    unsigned next = ds_at(s, n, p + l, cjk, &ln);
    /* [!-/:-@\[-`{-~][A-Za-z]+ (ASCII: never in a CJK segment) */
    if (c < 0x80 && ds_ascii_punct(c) && p + 1 < n && ds_ascii_letter(s[p + 1])) {
        for (e = p + 1; e < n && ds_ascii_letter(s[e]);) e++;
        return e;
    }
    /* [^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+: a mark is itself a possible prefix, so from a letter
       or a mark the piece is the run of letters and marks either way */
    if (f & (UC_L | UC_M)) return ds_run(s, n, p, cjk, UC_L | UC_M);
    if (ds_prefix(c, f) && !(next & DS_END) && (next & (UC_L | UC_M)))
        return ds_run(s, n, p + l, cjk, UC_L | UC_M);
    /* ` ?[\p{P}\p{S}]+[\r\n]*` */
    if ((f & UC_PS) || (c == ' ' && !(next & DS_END) && (next & UC_PS))) {
        e = ds_run(s, n, c == ' ' ? p + 1 : p, cjk, UC_PS);
        while (!(ds_at(s, n, e, cjk, &l) & DS_END) && (s[e] == '\r' || s[e] == '\n')) e++;
        return e;
    }
    if (f & UC_S) { /* \s*[\r\n]+|\s+(?!\S)|\s+ */
        size_t i = p, last = p, last_nl = SIZE_MAX;
        unsigned g;
        if (!cjk) i = ascii_space_run(s, n, i, &last, &last_nl);
        while (!((g = ds_at(s, n, i, cjk, &l)) & DS_END) && (g & UC_S)) {
            if (s[i] == '\r' || s[i] == '\n') last_nl = i;
            last = i;
            i += l;
        }
        if (last_nl != SIZE_MAX) return last_nl + 1;
        if ((g & DS_END) || last == p) return i;
        return last;
    }
    /* no alternative matches at p: a gap, up to where one does */
    e = p + l;
    unsigned g = next;
    size_t lg = ln;
    while (!(g & DS_END) && !(g & (UC_L | UC_M | UC_PS | UC_S))) {
        size_t lh;
        unsigned h = ds_at(s, n, e + lg, cjk, &lh);
        if (!(h & DS_END) && (h & (UC_L | UC_M))) break; /* a prefix: a match starts at e */
        e += lg;
        g = h;
        lg = lh;
    }
    return e;
}
