/* ASCII runs of one character class, read 16 bytes at a time (the pre-tokenizers' fast path).

The classes of the ASCII bytes (uc_stage2[0], generated from tiktoken's engine) are ranges:
letters A-Z (UC_L | UC_UP) and a-z (UC_L | UC_LO), digits 0-9 (UC_N), whitespace \t..\r and
' ' (UC_S), the other printable bytes (UC_PS), and the controls and DEL (no flag). A block of 16
bytes is tested against those ranges at once with GCC/Clang vector extensions, which the
compiler lowers to SSE2 on x86-64, NEON on arm64 and plain integer code elsewhere: no CPU flag
and no intrinsics header. Another compiler (or -DASCII_RUNS_SCALAR), or fewer than 16 bytes
left, takes the byte loop.
A block is loaded only when it lies inside the text; a non-ASCII byte is in no class here, so
the callers read every non-ASCII character themselves. */
#pragma once
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "unicode_tables.h"

/* whether ASCII byte b (< 0x80) has any of the flags `mask` */
static inline int ar_member(uint8_t b, unsigned mask) { return (uc_stage2[0][b] & mask) != 0; }

#if (defined(__GNUC__) || defined(__clang__)) && !defined(ASCII_RUNS_SCALAR)
#define ASCII_RUNS_VECTOR 1
typedef uint8_t ar_v16 __attribute__((vector_size(16)));

static inline ar_v16 ar_splat(uint8_t x) {
    ar_v16 v = {x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x};
    return v;
}

/* 0xFF in each byte of b within lo..hi, else 0 */
static inline ar_v16 ar_in(ar_v16 b, uint8_t lo, uint8_t hi) {
    return (ar_v16)((ar_v16)(b - ar_splat(lo)) <= ar_splat((uint8_t)(hi - lo)));
}

/* 0xFF in each byte of b with any of the flags `mask` (as ar_member; a non-ASCII byte never) */
static inline ar_v16 ar_flags(ar_v16 b, unsigned mask) {
    ar_v16 m = ar_splat(0);
    if ((mask & UC_L) || (mask & (UC_UP | UC_LO)) == (UC_UP | UC_LO))
        m |= ar_in(b | ar_splat(0x20), 'a', 'z');
    else if (mask & UC_UP)
        m |= ar_in(b, 'A', 'Z');
    else if (mask & UC_LO)
        m |= ar_in(b, 'a', 'z');
    if (mask & UC_N) m |= ar_in(b, '0', '9');
    if (mask & UC_S) m |= ar_in(b, '\t', '\r') | (ar_v16)(b == ar_splat(' '));
    if (mask & UC_PS)
        m |= ar_in(b, '!', '/') | ar_in(b, ':', '@') | ar_in(b, '[', '`') | ar_in(b, '{', '~');
    return m;
}

/* bit j set where byte j of m (0 or 0xFF) is set: each half's bytes, weighted 1..128, summed by
   one multiply (the same in either byte order) */
static inline unsigned ar_bits(ar_v16 m) {
    const ar_v16 w = {1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128};
    const uint64_t ones = 0x0101010101010101ull;
    uint64_t lo, hi;
    m &= w;
    memcpy(&lo, &m, 8);
    memcpy(&hi, (const uint8_t *)&m + 8, 8);
    return (unsigned)((lo * ones) >> 56) | (unsigned)((hi * ones) >> 56) << 8;
}

static inline ar_v16 ar_load(const uint8_t *s) {
    ar_v16 b;
    memcpy(&b, s, 16);
    return b;
}
#endif

/* end of the run of ASCII bytes with any of the flags `mask` from i: n, or the position of a
   non-ASCII byte or of an ASCII byte with none of them */
static inline size_t ascii_run(const uint8_t *s, size_t n, size_t i, unsigned mask) {
    if (i >= n || s[i] >= 0x80 || !ar_member(s[i], mask)) return i;
#ifdef ASCII_RUNS_VECTOR
    while (n - i >= 16) {
        unsigned in = ar_bits(ar_flags(ar_load(s + i), mask));
        if (in != 0xFFFF) return i + (size_t)__builtin_ctz(~in);
        i += 16;
    }
#endif
    while (i < n && s[i] < 0x80 && ar_member(s[i], mask)) i++;
    return i;
}

/* the same for ASCII whitespace, keeping the start of the run's last character in *last and of
   its last \r or \n in *last_nl (both unchanged when the run is empty) */
static inline size_t ascii_space_run(const uint8_t *s, size_t n, size_t i, size_t *last,
                                     size_t *last_nl) {
    if (i >= n || s[i] >= 0x80 || !(uc_stage2[0][s[i]] & UC_S)) return i;
#ifdef ASCII_RUNS_VECTOR
    while (n - i >= 16) {
        ar_v16 b = ar_load(s + i);
        unsigned in = ar_bits(ar_flags(b, UC_S));
        unsigned k = in == 0xFFFF ? 16 : (unsigned)__builtin_ctz(~in);
        unsigned nl = ar_bits((ar_v16)(b == ar_splat('\r')) | (ar_v16)(b == ar_splat('\n')));
        nl &= (1u << k) - 1;
        if (nl) *last_nl = i + 31 - (size_t)__builtin_clz(nl);
        if (k == 0) return i;
        *last = i + k - 1;
        i += k;
        if (k < 16) return i;
    }
#endif
    for (; i < n && s[i] < 0x80 && (uc_stage2[0][s[i]] & UC_S); i++) {
        if (s[i] == '\r' || s[i] == '\n') *last_nl = i;
        *last = i;
    }
    return i;
}
