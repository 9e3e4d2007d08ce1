/* The scanners whose letter runs split by case (o200k's UPPER*LOWER+ | UPPER+LOWER*, each with a
class of marks and other letters): o200k, Mistral's tekken, Kimi K2 (less \p{Han}). Same contract
as pretok.h's: the end of the piece that starts at byte `p`, as the regex engine would match it. */
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "pretok.h"

/* flags of the character at i, less every class when it has any flag of `but` (Kimi's classes
   minus \p{Han}: a Han character is in neither of its letter classes) */
static inline unsigned flags_but(const uint8_t *s, size_t n, size_t i, unsigned but) {
    unsigned f = flags_at(s, n, i);
    return (f & but) ? 0 : f;
}

/* end of the run of characters with any of `mask` and none of `but` from i (`but` is \p{Han} or
   nothing: no ASCII byte has it) */
static inline size_t run_but(const uint8_t *s, size_t n, size_t i, unsigned mask, unsigned but) {
    size_t l;
    i = ascii_run(s, n, i, mask);
    while (i < n && (flags_but(s, n, i, but) & mask)) {
        utf8_at(s, i, &l);
        i += l;
    }
    return i;
}

/* o200k's [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+ from q (less the characters
   with a flag of `but`): end, or 0 */
static size_t lower_tail_but(const uint8_t *s, size_t n, size_t q, unsigned but) {
    size_t i = q, l, last_lo_end = 0;
    while (i < n) {
        unsigned f = flags_but(s, n, i, but);
        if (!(f & UC_UP)) break;
        utf8_at(s, i, &l);
        i += l;
        if (f & UC_LO) last_lo_end = i;
    }
    if (flags_but(s, n, i, but) & UC_LO) return run_but(s, n, i, UC_LO, but);
    return last_lo_end; /* backtracking: the lower-class run is the last such character */
}

/* o200k's [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]* from q (less `but`): end, or 0 */
static size_t upper_head_but(const uint8_t *s, size_t n, size_t q, unsigned but) {
    if (!(flags_but(s, n, q, but) & UC_UP)) return 0;
    return run_but(s, n, run_but(s, n, q, UC_UP, but), UC_LO, but);
}

static size_t o200k_lower_tail(const uint8_t *s, size_t n, size_t q) {
    return lower_tail_but(s, n, q, 0);
}

static size_t o200k_upper_head(const uint8_t *s, size_t n, size_t q) {
    return upper_head_but(s, n, q, 0);
}

/* o200k: [^\r\n\p{L}\p{N}]?UPPER*LOWER+SUFFIX?|[^\r\n\p{L}\p{N}]?UPPER+LOWER*SUFFIX?|\p{N}{1,3}
   | ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+ */
static size_t scan_o200k(const uint8_t *s, size_t n, size_t p) {
    size_t l, e, x;
    uint32_t c = utf8_at(s, p, &l);
    unsigned f = flags_at(s, n, p);
    int prefix = c != '\r' && c != '\n' && !(f & (UC_L | UC_N));
    if ((prefix && (e = o200k_lower_tail(s, n, p + l))) || (e = o200k_lower_tail(s, n, p)) ||
        (prefix && (e = o200k_upper_head(s, n, p + l))) || (e = o200k_upper_head(s, n, p)))
        return (x = suffix_caseless(s, n, e)) ? x : e;
    if (f & UC_N) return run_digits3(s, n, p + l);
    if ((e = run_punct(s, n, p, c, 1))) return e;
    return space_o200k(s, n, p);
}

/* Mistral's tekken files: o200k's without the apostrophe suffixes, one digit per piece
   [^\r\n\p{L}\p{N}]?UPPER*LOWER+|[^\r\n\p{L}\p{N}]?UPPER+LOWER*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*
   |\s*[\r\n]+|\s+(?!\S)|\s+ */
static size_t scan_tekken(const uint8_t *s, size_t n, size_t p) {
    size_t l, e;
    uint32_t c = utf8_at(s, p, &l);
    unsigned f = flags_at(s, n, p);
    int prefix = c != '\r' && c != '\n' && !(f & (UC_L | UC_N));
    if ((prefix && (e = o200k_lower_tail(s, n, p + l))) || (e = o200k_lower_tail(s, n, p)) ||
        (prefix && (e = o200k_upper_head(s, n, p + l))) || (e = o200k_upper_head(s, n, p)))
        return e;
    if (f & UC_N) return p + l;
    if ((e = run_punct(s, n, p, c, 1))) return e;
    return space_o200k(s, n, p);
}

/* Kimi K2: [\p{Han}]+|[^\r\n\p{L}\p{N}]?UPPER*LOWER+SUFFIX?|[^\r\n\p{L}\p{N}]?UPPER+LOWER*SUFFIX?
   |\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
   with UPPER and LOWER o200k's classes less \p{Han} */
static size_t scan_kimi(const uint8_t *s, size_t n, size_t p) {
    size_t l, e, x;
    uint32_t c = utf8_at(s, p, &l);
    unsigned f = flags_at(s, n, p);
    if (f & UC_HAN) return run_any(s, n, p, UC_HAN);
    int prefix = c != '\r' && c != '\n' && !(f & (UC_L | UC_N));
    if ((prefix && (e = lower_tail_but(s, n, p + l, UC_HAN))) ||
        (e = lower_tail_but(s, n, p, UC_HAN)) ||
        (prefix && (e = upper_head_but(s, n, p + l, UC_HAN))) ||
        (e = upper_head_but(s, n, p, UC_HAN)))
        return (x = suffix_caseless(s, n, e)) ? x : e;
    if (f & UC_N) return run_digits3(s, n, p + l);
    if ((e = run_punct(s, n, p, c, 0))) return e;
    return space_o200k(s, n, p);
}
