/* Both merge rules without re-scanning: bpe-openai's backtracking encoder (rust-gems `bpe`), in C.

A rule's output for a piece is the one sequence of tokens in which every token is "reachable"
(its own bytes merge to it alone) and every adjacent pair is "valid" (the bytes of the two merge
to exactly those two). So instead of merging, walk the piece left to right: take the longest
reachable token that starts here (trie.h), keep it if it is a valid pair with the token before
it, else try its next shorter reachable prefix; when none fits, pop the previous token and mark
this position dead (a bitfield), so no position is tried twice from the same token:
O(n * longest token) per piece, with no re-scan and no heap.

Validity of (left, right) replays the two tokens' merge trees backwards: of the two tokens at the
boundary, the one with the higher rank was merged last, so undo it (its right part for the left
token, its left part for the right one). Before each undo, the two parts meeting at the boundary
must not merge into a token that would have been merged earlier (rank below the undone merge; on
a tie with the right token's merge the boundary pair is further left, so it would win). Whether
two parts merge is the rule's own question: for `ranks`, do their bytes form a token; for
`pairs`, is (left id, right id) a merge. This reasoning needs every token to rank after the two
parts it is merged from (format v1 guarantees it for `pairs`). A `ranks` vocabulary with a few
tokens that do not (Llama 3's 81, Qwen3.6's 27; `bk_build_ranks` checks all) still backtracks
every piece that contains none of them: the rule run on such a piece only ever forms tokens that
are parts of it, so it runs as in a vocabulary without them. Those tokens stay out of the trie,
and a piece that holds one (a bitmap of their first three bytes, then a compare) keeps the
merges of merge.h, as does every piece of a vocabulary with more than BK_MAX_OUT of them, or
with one shorter than three bytes, or with a token longer than BK_MAX_TOKEN bytes. Each
reachable token's last merge comes from running the rule on its own bytes once, at build time. */
#pragma once
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "merge.h"
#include "trie.h"

#define BK_MAX_TOKEN 1024
#define BK_STACK_PIECE 1024
#define BK_MAX_OUT 1024 /* tokens ranked before a part: with more, no piece backtracks */
#define BK_OUT_LOG2 18  /* bits in the bitmap of their heads (32 KB) */

typedef struct {
    uint32_t ntok;
    const uint8_t *blob;      /* every token's bytes: the ranks table's, or own_blob */
    uint8_t *own_blob;        /* (pairs rule) own_bytes long */
    size_t own_bytes;
    uint32_t *off;            /* id -> offset of its bytes in blob */
    uint16_t *len;            /* id -> byte length; 0: no token */
    uint32_t *left, *right;   /* id -> the two tokens its last merge joined (a byte: itself);
                                 left == NO_RANK: not reachable */
    uint32_t *shorter;        /* id -> the longest reachable token that is a proper prefix */
    trie_t trie;              /* of the reachable tokens */
    const pair_table *pairs;  /* the pairs rule's table; NULL for the ranks rule */
    uint32_t *out;            /* (ranks) the ids ranked before a part they are merged from */
    uint32_t nout;
    uint64_t *out_heads;      /* a bit per hash of their first three bytes (NULL: none) */
    int on;                   /* 1: built, and the vocabulary qualifies */
    int trie_all;             /* 1: every token a pair's check may meet (bk_valid) ends at a
                                 token of the trie, so none is longer than the trie's longest
                                 match where it starts */
} backtrack_t;

static void bk_free(backtrack_t *b) {
    free(b->own_blob); free(b->off); free(b->len);
    free(b->left); free(b->right); free(b->shorter);
    free(b->out); free(b->out_heads);
    trie_free(&b->trie);
    memset(b, 0, sizeof *b);
}

static size_t bk_nbytes(const backtrack_t *b) {
    size_t out = b->out ? BK_MAX_OUT * sizeof(uint32_t) + ((size_t)1 << BK_OUT_LOG2) / 8 : 0;
    return (size_t)b->ntok * (4 * sizeof(uint32_t) + sizeof(uint16_t)) + trie_nbytes(&b->trie) +
           b->own_bytes + out;
}

static inline uint32_t bk_head_bit(const uint8_t *s) {
    uint32_t k = (uint32_t)s[0] | (uint32_t)s[1] << 8 | (uint32_t)s[2] << 16;
    return (k * 0x9E3779B1u) >> (32 - BK_OUT_LOG2);
}

/* whether piece s[0:n] holds a token ranked before a part (then it keeps merge.h's merges) */
static int bk_holds_out(const backtrack_t *b, const uint8_t *s, size_t n) {
    if (!b->nout) return 0;
    for (size_t i = 0; i + 3 <= n; i++) {
        uint32_t bit = bk_head_bit(s + i);
        if (!(b->out_heads[bit >> 6] >> (bit & 63) & 1)) continue;
        for (uint32_t j = 0; j < b->nout; j++) {
            uint32_t id = b->out[j], len = b->len[id];
            if (len <= n - i && memcmp(b->blob + b->off[id], s + i, len) == 0) return 1;
        }
    }
    return 0;
}

/* Would the rule, run on the bytes of `l` then `r` (meeting at s[at]), give exactly l, r?
   `reach`: no token that starts where l does is longer (SIZE_MAX: not known). Two parts that
   start there and are longer together are no token, with no look-up. */
static inline int bk_valid(const backtrack_t *b, const bytes_table *t, const uint8_t *s, size_t at,
                           uint32_t l, uint32_t r, size_t reach) {
    uint32_t limit = NO_RANK, ll = b->len[l], rl = b->len[r];
    for (;;) {
        uint32_t across = (size_t)ll + rl > reach ? NO_RANK
                          : b->pairs              ? pt_lookup(b->pairs, l, r)
                                                  : bt_lookup(t, s + at - ll, ll + rl);
        if (across != NO_RANK && across < limit) return 0;
        if (l > r) { /* l was merged last: undo it */
            limit = l;
            if (b->right[l] == l) { /* a byte: undo r instead */
                limit = r + 1;
                if (b->left[r] == r) return 1;
                r = b->left[r];
                rl = b->len[r];
            } else {
                l = b->right[l];
                ll = b->len[l];
                reach = SIZE_MAX; /* l starts further on */
            }
        } else {
            limit = r + 1;
            if (b->left[r] == r) {
                limit = l;
                if (b->right[l] == l) return 1;
                l = b->right[l];
                ll = b->len[l];
                reach = SIZE_MAX;
            } else {
                r = b->left[r];
                rl = b->len[r];
            }
        }
    }
}

/* Whether a pair is valid depends on its two tokens alone, and the pairs of one text repeat (a
   run of Han characters is a few thousand tokens in pairs that recur): the answers are kept in a
   direct-mapped table in front of bk_valid's look-ups, which miss the core's cache. The pair
   (ids below 2^20) is 40 bits, mixed by a bijection of 40 bits; its low `log2` bits pick the
   slot and the slot keeps the others, so a slot names one pair and its answer is exact. A slot:
   tag << 2 | 2 | valid; 0: empty (a table from calloc is empty). The memo kept with an engine's
   hot pieces has BK_MEMO_LOG2 bits (256 KiB, touched as pairs reach its pages); a call that
   makes its own (hot pieces off, or held by another thread) a small one, cheap to make. */
#ifndef BK_MEMO_LOG2
#define BK_MEMO_LOG2 16
#endif
#define BK_CALL_MEMO_LOG2 13
#define BK_MEMO_ID_BITS 20
_Static_assert(2 * BK_MEMO_ID_BITS - BK_CALL_MEMO_LOG2 + 2 <= 32,
               "a slot keeps the rest of its pair");
typedef struct {
    unsigned log2;
    uint32_t slot[];
} bk_memo;

static size_t bk_memo_bytes(unsigned log2) {
    return sizeof(bk_memo) + ((size_t)1 << log2) * sizeof(uint32_t);
}

static bk_memo *bk_memo_new(unsigned log2) {
    bk_memo *m = calloc(1, bk_memo_bytes(log2));
    if (m) m->log2 = log2;
    return m;
}

/* forget every answer */
static void bk_memo_clear(bk_memo *m) {
    memset(m->slot, 0, bk_memo_bytes(m->log2) - sizeof *m);
}

static inline uint64_t bk_memo_mix(uint32_t l, uint32_t r) {
    const uint64_t mask = ((uint64_t)1 << (2 * BK_MEMO_ID_BITS)) - 1;
    uint64_t k = (uint64_t)l << BK_MEMO_ID_BITS | r;
    k ^= k >> 21; /* each step is invertible on 40 bits */
    k = (k * 0x9E3779B97F4A7C15ull) & mask;
    return k ^ (k >> 19);
}

static inline int bk_valid_memo(const backtrack_t *b, const bytes_table *t, const uint8_t *s,
                                size_t at, uint32_t l, uint32_t r, size_t reach, bk_memo *m) {
    if (!m || (l | r) >> BK_MEMO_ID_BITS) return bk_valid(b, t, s, at, l, r, reach);
    uint64_t k = bk_memo_mix(l, r);
    uint32_t *sl = &m->slot[k & (((uint64_t)1 << m->log2) - 1)];
    uint32_t want = (uint32_t)(k >> m->log2) << 2 | 2;
    if ((*sl & ~1u) == want) return (int)(*sl & 1);
    int v = bk_valid(b, t, s, at, l, r, reach);
    *sl = want | (uint32_t)v;
    return v;
}

/* the ids of piece s[0:n] (`t`: the ranks rule's table; for ranks, the caller has tried the
   whole piece; `m`: the call's memo of pairs, or NULL) */
static int bk_encode(const backtrack_t *b, const bytes_table *t, const uint8_t *s, size_t n,
                     sink_t *out, bk_memo *m) {
    uint32_t stack_toks[BK_STACK_PIECE];
    uint16_t stack_reach[BK_STACK_PIECE];
    uint64_t stack_dead[BK_STACK_PIECE / 64 + 1];
    int small = n <= BK_STACK_PIECE;
    size_t words = n / 64 + 1;
    uint32_t *toks = small ? stack_toks : malloc(n * sizeof *toks);
    uint16_t *reaches = small ? stack_reach : malloc(n * sizeof *reaches); /* by toks: trie's
                                                                longest match where each starts */
    uint64_t *dead = small ? stack_dead : malloc(words * sizeof *dead); /* bit p: no way on from p */
    int rc = -1;
    if (!toks || !reaches || !dead) goto done;
    memset(dead, 0, words * sizeof *dead);
    size_t top = 0, pos = 0, reach; /* the longest match at pos */
    uint32_t next = trie_longest(&b->trie, s, n, &reach);
    size_t len = reach;
    while (pos < n) {
        uint32_t tok = next, last = top ? toks[top - 1] : NO_RANK;
        size_t last_reach = top && b->trie_all ? reaches[top - 1] : SIZE_MAX;
        if (tok == NO_RANK) { rc = -2; goto done; } /* a byte that is no token */
        for (;;) {
            size_t end = pos + len;
            if (!(dead[end >> 6] >> (end & 63) & 1) &&
                (last == NO_RANK || bk_valid_memo(b, t, s, pos, last, tok, last_reach, m))) {
                toks[top] = tok;
                reaches[top++] = (uint16_t)reach;
                pos = end;
                next = pos < n ? trie_longest(&b->trie, s + pos, n - pos, &reach) : NO_RANK;
                len = reach;
                break;
            }
            if ((tok = b->shorter[tok]) != NO_RANK) {
                len = b->len[tok];
                continue;
            }
            if (last == NO_RANK) { rc = -2; goto done; } /* cannot happen: bytes always fit */
            dead[pos >> 6] |= (uint64_t)1 << (pos & 63);
            top--;
            pos -= b->len[last];
            next = last;
            len = b->len[last];
            reach = reaches[top];
            break;
        }
    }
    rc = sink_extend(out, toks, top);
done:
    if (!small) {
        free(toks);
        free(reaches);
        free(dead);
    }
    return rc;
}
