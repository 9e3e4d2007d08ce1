/* Hand-written pre-tokenizers for the shipped patterns (service/store/formats/presets.py).

Each `scan_*` returns the end of the piece that starts at byte `p` of valid UTF-8 text `s[0:n]`,
exactly as tiktoken's regex engine (leftmost-first alternation, greedy with backtracking,
possessive where the pattern says so) would match it there. Every character is one of: letter
(\p{L}), number (\p{N}), whitespace (\s), or "other" (none of the three), so every position
starts a piece and the scanners never return p. The comments name the alternative they follow.
Here: the character classes and runs every scanner shares, and the scanners with one letter run
(gpt2, cl100k, qwen2, Llama 3, Qwen3.5); those whose letter runs split by case are in
pretok_cased.h, the chains of several splits in pretok_chain.h. */
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "ascii_runs.h"
#include "unicode_tables.h"

static inline uint32_t utf8_at(const uint8_t *s, size_t i, size_t *len) {
    uint8_t b = s[i];
    if (b < 0x80) { *len = 1; return b; }
    if (b < 0xE0) { *len = 2; return ((uint32_t)(b & 0x1F) << 6) | (s[i + 1] & 0x3F); }
    if (b < 0xF0) {
        *len = 3;
        return ((uint32_t)(b & 0x0F) << 12) | ((uint32_t)(s[i + 1] & 0x3F) << 6) | (s[i + 2] & 0x3F);
    }
    *len = 4;
    return ((uint32_t)(b & 0x07) << 18) | ((uint32_t)(s[i + 1] & 0x3F) << 12) |
           ((uint32_t)(s[i + 2] & 0x3F) << 6) | (s[i + 3] & 0x3F);
}

/* class flags of the character at i (0 past the end) */
static inline unsigned flags_at(const uint8_t *s, size_t n, size_t i) {
    size_t l;
    if (i >= n) return 0;
    if (s[i] < 0x80) return uc_stage2[0][s[i]];
    return uc_flags(utf8_at(s, i, &l));
}

#define UC_LNS (UC_L | UC_N | UC_S)
static inline int is_other(unsigned f) { return (f & UC_LNS) == 0; }

/* The run loops below skip the ASCII start of their run with ascii_run (16 bytes at a time), then
   read character by character, the loop over non-ASCII characters kept as tight as it was. Runs
   of "other" characters (punctuation: mostly one or two bytes) keep the byte loop alone. */

/* end of the run of characters with any of `mask` from i */
static inline size_t run_any(const uint8_t *s, size_t n, size_t i, unsigned mask) {
    size_t l;
    i = ascii_run(s, n, i, mask);
    while (i < n) {
        unsigned f = s[i] < 0x80 ? (l = 1, uc_stage2[0][s[i]]) : uc_flags(utf8_at(s, i, &l));
        if (!(f & mask)) break;
        i += l;
    }
    return i;
}

static inline size_t run_other(const uint8_t *s, size_t n, size_t i) {
    size_t l;
    while (i < n) {
        unsigned f = s[i] < 0x80 ? (l = 1, uc_stage2[0][s[i]]) : uc_flags(utf8_at(s, i, &l));
        if (f & UC_LNS) break;
        i += l;
    }
    return i;
}

/* the whitespace run from p: its end, the start of its last character, the start of its last
   \r or \n (SIZE_MAX if none) */
static inline size_t run_space(const uint8_t *s, size_t n, size_t p, size_t *last, size_t *last_nl) {
    size_t i = p, l;
    *last = p;
    *last_nl = SIZE_MAX;
    i = ascii_space_run(s, n, i, last, last_nl);
    while (i < n) {
        unsigned f = s[i] < 0x80 ? (l = 1, uc_stage2[0][s[i]]) : uc_flags(utf8_at(s, i, &l));
        if (!(f & UC_S)) break;
        if (s[i] == '\r' || s[i] == '\n') *last_nl = i;
        *last = i;
        i += l;
    }
    return i;
}

/* (?i:x) at i: end of the matched character, or 0 */
static inline size_t caseless_at(const uint8_t *s, size_t n, size_t i, char x) {
    size_t l;
    if (i >= n) return 0;
    return uc_caseless(utf8_at(s, i, &l), x) ? i + l : 0;
}

/* (?i:'s|'t|'re|'ve|'m|'ll|'d) after the apostrophe at p (cl100k's [sdmt]|ll|ve|re is the same
   set): end of the suffix, or 0 */
static inline size_t suffix_caseless(const uint8_t *s, size_t n, size_t p) {
    size_t a = p + 1, e;
    if (p >= n || s[p] != '\'') return 0;
    if ((e = caseless_at(s, n, a, 's')) || (e = caseless_at(s, n, a, 'd')) ||
        (e = caseless_at(s, n, a, 'm')) || (e = caseless_at(s, n, a, 't')))
        return e;
    if ((e = caseless_at(s, n, a, 'l')) && (e = caseless_at(s, n, e, 'l'))) return e;
    if ((e = caseless_at(s, n, a, 'v')) && (e = caseless_at(s, n, e, 'e'))) return e;
    if ((e = caseless_at(s, n, a, 'r')) && (e = caseless_at(s, n, e, 'e'))) return e;
    return 0;
}

/* GPT-2, r50k, p50k:
   '(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s */
static size_t scan_gpt2(const uint8_t *s, size_t n, size_t p) {
    size_t l, last, last_nl, e;
    uint32_t c = utf8_at(s, p, &l);
    if (c == '\'' && p + 1 < n) {
        uint8_t a = s[p + 1];
        if (a == 's' || a == 'd' || a == 'm' || a == 't') return p + 2;
        if (p + 2 < n) {
            uint8_t b = s[p + 2];
            if ((a == 'l' && b == 'l') || (a == 'v' && b == 'e') || (a == 'r' && b == 'e'))
                return p + 3;
        }
    }
    size_t q = (c == ' ' && p + 1 < n) ? p + 1 : p;
    unsigned f = flags_at(s, n, q);
    if (f & UC_L) return run_any(s, n, q, UC_L);
    if (f & UC_N) return run_any(s, n, q, UC_N);
    if (is_other(f)) return run_other(s, n, q);
    /* whitespace at p (a space before whitespace is whitespace too) */
    e = run_space(s, n, p, &last, &last_nl);
    if (e == n) return e;        /* \s++$ */
    if (last > p) return last;   /* \s+(?!\S) */
    return p + l;                /* \s */
}

/* \p{N}{1,3} after the first digit, which ends at e: at most two more */
static size_t run_digits3(const uint8_t *s, size_t n, size_t e) {
    size_t l;
    for (int k = 1; k < 3 && (flags_at(s, n, e) & UC_N); k++) {
        utf8_at(s, e, &l);
        e += l;
    }
    return e;
}

/* ` ?[^\s\p{L}\p{N}]+` from p (whose character is c), then any run of \r \n (and / when
   `slash`): the end, or 0 where it does not match */
static size_t run_punct(const uint8_t *s, size_t n, size_t p, uint32_t c, int slash) {
    size_t q = (c == ' ' && p + 1 < n && is_other(flags_at(s, n, p + 1))) ? p + 1 : p;
    if (!is_other(flags_at(s, n, q))) return 0;
    size_t e = run_other(s, n, q);
    while (e < n && (s[e] == '\r' || s[e] == '\n' || (slash && s[e] == '/'))) e++;
    return e;
}

/* cl100k's and qwen2's first alternatives, (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+,
   from p (whose character is c, of l bytes, with flags f): the end, or 0 where neither matches */
static size_t run_word(const uint8_t *s, size_t n, size_t p, uint32_t c, size_t l, unsigned f) {
    size_t e;
    if (c == '\'' && (e = suffix_caseless(s, n, p))) return e;
    if (f & UC_L) return run_any(s, n, p, UC_L);
    if (c != '\r' && c != '\n' && !(f & UC_N) && (flags_at(s, n, p + l) & UC_L))
        return run_any(s, n, p + l, UC_L);
    return 0;
}

/* cl100k: '(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+
   | ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s */
static size_t scan_cl100k(const uint8_t *s, size_t n, size_t p) {
    size_t l, last, last_nl, e;
    uint32_t c = utf8_at(s, p, &l);
    unsigned f = flags_at(s, n, p);
    if ((e = run_word(s, n, p, c, l, f))) return e;
    if (f & UC_N) return run_digits3(s, n, p + l);
    if ((e = run_punct(s, n, p, c, 0))) return e;
    e = run_space(s, n, p, &last, &last_nl);
    if (e == n) return e;                      /* \s++$ */
    if (last_nl != SIZE_MAX) return last_nl + 1; /* \s*[\r\n] */
    if (last > p) return last;                 /* \s+(?!\S) */
    return p + l;                              /* \s */
}

/* the whitespace alternatives shared by o200k and qwen2: \s*[\r\n]+|\s+(?!\S)|\s+ */
static size_t space_o200k(const uint8_t *s, size_t n, size_t p) {
    size_t last, last_nl, e = run_space(s, n, p, &last, &last_nl);
    if (last_nl != SIZE_MAX) return last_nl + 1;
    if (e == n || last == p) return e;
    return last;
}

/* qwen2: (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*
   |\s*[\r\n]+|\s+(?!\S)|\s+ */
static size_t scan_qwen2(const uint8_t *s, size_t n, size_t p) {
    size_t l, e;
    uint32_t c = utf8_at(s, p, &l);
    unsigned f = flags_at(s, n, p);
    if ((e = run_word(s, n, p, c, l, f))) return e;
    if (f & UC_N) return p + l;
    if ((e = run_punct(s, n, p, c, 0))) return e;
    return space_o200k(s, n, p);
}

/* Llama 3 and Phi-4 (tiktoken's first cl100k regex): qwen2's with \p{N}{1,3}
   (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*
   |\s*[\r\n]+|\s+(?!\S)|\s+ */
static size_t scan_llama3(const uint8_t *s, size_t n, size_t p) {
    size_t l, e;
    uint32_t c = utf8_at(s, p, &l);
    unsigned f = flags_at(s, n, p);
    if ((e = run_word(s, n, p, c, l, f))) return e;
    if (f & UC_N) return run_digits3(s, n, p + l);
    if ((e = run_punct(s, n, p, c, 0))) return e;
    return space_o200k(s, n, p);
}

/* Qwen3.5 / 3.6: qwen2's with the marks (\p{M}) in the letter run and out of the "other" run
   (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*
   |\s*[\r\n]+|\s+(?!\S)|\s+
   A mark is itself a possible prefix, so a run of letters and marks from p (or from the next
   character, after a prefix) is the piece either way. */
static size_t scan_qwen35(const uint8_t *s, size_t n, size_t p) {
    size_t l, e;
    uint32_t c = utf8_at(s, p, &l);
    unsigned f = flags_at(s, n, p);
    if (c == '\'' && (e = suffix_caseless(s, n, p))) return e;
    if (f & (UC_L | UC_M)) return run_any(s, n, p, UC_L | UC_M);
    if (c != '\r' && c != '\n' && !(f & UC_N) && (flags_at(s, n, p + l) & (UC_L | UC_M)))
        return run_any(s, n, p + l, UC_L | UC_M);
    if (f & UC_N) return p + l;
    /* ` ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*` */
    size_t q = (c == ' ' && p + 1 < n && !(flags_at(s, n, p + 1) & (UC_LNS | UC_M))) ? p + 1 : p;
    if (!(flags_at(s, n, q) & (UC_LNS | UC_M))) {
        e = q;
        while (e < n && !(flags_at(s, n, e) & (UC_LNS | UC_M))) {
            utf8_at(s, e, &l);
            e += l;
        }
        while (e < n && (s[e] == '\r' || s[e] == '\n')) e++;
        return e;
    }
    return space_o200k(s, n, p);
}

enum {
    SCAN_NONE = 0, SCAN_GPT2 = 1, SCAN_CL100K = 2, SCAN_O200K = 3, SCAN_QWEN2 = 4,
    SCAN_LLAMA3 = 5, SCAN_TEKKEN = 6, SCAN_QWEN35 = 7, SCAN_KIMI = 8, SCAN_DEEPSEEK = 9,
    SCAN_LAST = SCAN_DEEPSEEK /* the chains' scanners are in pretok_chain.h */
};
typedef size_t (*scan_fn)(const uint8_t *, size_t, size_t);
