/* The two merge rules of service/bpe/merge.py, in C, over look-up tables built once per vocabulary.

`ranks` (tiktoken's): a piece that is a token is returned whole; otherwise start from its bytes and
merge the adjacent pair whose concatenated bytes form the lowest-id token, leftmost on ties.
`pairs` (classic BPE): start from the byte ids and merge the adjacent id pair with the lowest new id.
Short pieces use a scan over an array (quadratic, but tiny); from LONG_PIECE symbols on, a binary
heap of (rank, position) over a linked list of symbols makes it O(n log n): an entry is stale when
the rank of the pair now at its position differs (a rank names one token, so equal means same). */
#pragma once
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "token_tables.h"

#define LONG_PIECE 64

/* ---- output: ids appended to a growable array, or only counted ---- */
typedef struct {
    uint32_t *ids;
    size_t len, cap;
    int count_only; /* only count: ids stays NULL */
} sink_t;

static inline int sink_put(sink_t *o, uint32_t id) {
    if (o->count_only) { o->len++; return 0; }
    if (o->len == o->cap) {
        size_t cap = o->cap * 2 + 64;
        uint32_t *p = realloc(o->ids, cap * sizeof *p);
        if (!p) return -1;
        o->ids = p;
        o->cap = cap;
    }
    o->ids[o->len++] = id;
    return 0;
}

/* append n ids (`ids` must not point into o->ids: growing may move them) */
static inline int sink_extend(sink_t *o, const uint32_t *ids, size_t n) {
    if (o->count_only) { o->len += n; return 0; }
    if (o->len + n > o->cap) {
        for (size_t i = 0; i < n; i++)
            if (sink_put(o, ids[i])) return -1;
        return 0;
    }
    memcpy(o->ids + o->len, ids, n * sizeof *ids);
    o->len += n;
    return 0;
}

/* ---- a min-heap of (rank << 32 | position) ---- */
typedef struct {
    uint64_t *v;
    size_t len, cap;
    int on_stack; /* v is the caller's stack array: copy it out before growing */
} heap_t;

static int heap_push(heap_t *h, uint64_t x) {
    if (h->len == h->cap) {
        size_t cap = h->cap * 2 + 64;
        uint64_t *p = h->on_stack ? malloc(cap * sizeof *p) : realloc(h->v, cap * sizeof *p);
        if (!p) return -1;
        if (h->on_stack) memcpy(p, h->v, h->len * sizeof *p);
        h->on_stack = 0;
        h->v = p;
        h->cap = cap;
    }
    size_t i = h->len++;
    while (i > 0) {
        size_t up = (i - 1) / 2;
        if (h->v[up] <= x) break;
        h->v[i] = h->v[up];
        i = up;
    }
    h->v[i] = x;
    return 0;
}

static uint64_t heap_pop(heap_t *h) {
    uint64_t top = h->v[0], x = h->v[--h->len];
    size_t i = 0, n = h->len;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && h->v[c + 1] < h->v[c]) c++;
        if (x <= h->v[c]) break;
        h->v[i] = h->v[c];
        i = c;
    }
    if (n) h->v[i] = x;
    return top;
}

/* the lowest of ranks[0:k] and its leftmost index: a min the compiler vectorizes, then a find */
static inline uint32_t lowest(const uint32_t *ranks, size_t k, size_t *at) {
    uint32_t best = NO_RANK;
    for (size_t i = 0; i < k; i++) best = ranks[i] < best ? ranks[i] : best;
    size_t i = 0;
    while (i < k && ranks[i] != best) i++;
    *at = i;
    return best;
}

/* ranks rule, short piece that is not itself a token (the caller looked): bounds[] are part
   starts, ids[i] the id of part i, ranks[i] the rank of parts i and i+1 (a merge's rank is the id
   of the token it makes) */
static int merge_ranks_short(const bytes_table *t, const uint8_t *s, size_t n, sink_t *out) {
    uint32_t bounds[LONG_PIECE + 1], ids[LONG_PIECE], ranks[LONG_PIECE];
    size_t m = n; /* parts */
    for (size_t i = 0; i <= n; i++) bounds[i] = (uint32_t)i;
    for (size_t i = 0; i < n; i++) ids[i] = t->byte_rank[s[i]];
    for (size_t i = 0; i + 1 < n; i++) ranks[i] = t->pair_rank[(size_t)s[i] << 8 | s[i + 1]];
    while (m > 2) { /* two parts left are the whole piece: no token */
        size_t at;
        uint32_t best = lowest(ranks, m - 1, &at);
        if (best == NO_RANK) break;
        ids[at] = best;
        memmove(&bounds[at + 1], &bounds[at + 2], (m - at - 1) * sizeof bounds[0]);
        memmove(&ids[at + 1], &ids[at + 2], (m - at - 2) * sizeof ids[0]);
        memmove(&ranks[at], &ranks[at + 1], (m - at - 2) * sizeof ranks[0]);
        if (--m == 2) break;
        if (at > 0)
            ranks[at - 1] = bt_lookup(t, s + bounds[at - 1], bounds[at + 1] - bounds[at - 1]);
        if (at + 1 < m)
            ranks[at] = bt_lookup(t, s + bounds[at], bounds[at + 2] - bounds[at]);
    }
    return sink_extend(out, ids, m);
}

/* ranks rule, long piece: parts linked by nxt/prv (byte positions), heap of candidate merges */
#define STACK_PIECE 512
static int merge_ranks_long(const bytes_table *t, const uint8_t *s, size_t n, sink_t *out) {
    /* pieces up to STACK_PIECE bytes work in stack arrays; the heap array grows only if needed */
    uint32_t nxt_stack[STACK_PIECE + 1], prv_stack[STACK_PIECE + 1];
    uint64_t heap_stack[2 * STACK_PIECE];
    int small = n <= STACK_PIECE;
    uint32_t *nxt = small ? nxt_stack : malloc((n + 1) * sizeof *nxt);
    uint32_t *prv = small ? prv_stack : malloc((n + 1) * sizeof *prv);
    heap_t h = {small ? heap_stack : NULL, 0, small ? 2 * STACK_PIECE : 0, small};
    int rc = -1;
    if (!nxt || !prv) goto done;
    for (size_t i = 0; i < n; i++) {
        nxt[i] = (uint32_t)(i + 1);
        prv[i] = (uint32_t)(i - 1); /* UINT32_MAX for the first */
    }
    for (size_t i = 0; i + 1 < n; i++) {
        uint32_t r = t->pair_rank[(size_t)s[i] << 8 | s[i + 1]];
        if (r != NO_RANK && heap_push(&h, (uint64_t)r << 32 | i)) goto done;
    }
    while (h.len) {
        uint64_t top = heap_pop(&h);
        uint32_t r = (uint32_t)(top >> 32), i = (uint32_t)top;
        uint32_t j = nxt[i];
        if (j == UINT32_MAX - 1 || j >= n) continue; /* i is merged away, or is the last part */
        uint32_t k = nxt[j];
        if (bt_lookup(t, s + i, k - i) != r) continue; /* stale */
        nxt[i] = k;
        nxt[j] = UINT32_MAX - 1;
        if (k < n) {
            prv[k] = i;
            uint32_t rk = bt_lookup(t, s + i, nxt[k] - i);
            if (rk != NO_RANK && heap_push(&h, (uint64_t)rk << 32 | i)) goto done;
        }
        uint32_t p = prv[i];
        if (p != UINT32_MAX) {
            uint32_t rp = bt_lookup(t, s + p, k - p);
            if (rp != NO_RANK && heap_push(&h, (uint64_t)rp << 32 | p)) goto done;
        }
    }
    for (uint32_t i = 0; i < n; i = nxt[i]) {
        uint32_t id = bt_lookup(t, s + i, nxt[i] - i);
        if (id == NO_RANK) { rc = -2; goto done; }
        if (sink_put(out, id)) goto done;
    }
    rc = 0;
done:
    if (!small) {
        free(nxt);
        free(prv);
    }
    if (!h.on_stack) free(h.v);
    return rc;
}

/* The symbols of a piece once the ranks below char_ranks are spent, as the pairs rule spends them
   first: they are lower than every other, and never compete (a continuation byte is never a
   left), so each run of a lead byte and continuation bytes merges left to right, alone. */
static size_t pt_chars(const pair_table *t, const uint8_t *s, size_t n, uint32_t *sym) {
    size_t m = 0;
    for (size_t i = 0; i < n;) {
        uint32_t cur = t->byte_ids[s[i++]];
        if (t->char_ranks && s[i - 1] >= 0xC0)
            for (; i < n && (s[i] & 0xC0) == 0x80; i++) {
                uint32_t r = pt_lookup(t, cur, t->byte_ids[s[i]]);
                if (r >= t->char_ranks) break; /* NO_RANK too */
                cur = pt_new(t, r);
            }
        sym[m++] = cur;
    }
    return m;
}

/* pairs rule, short piece */
static int merge_pairs_short(const pair_table *t, const uint8_t *s, size_t n, sink_t *out) {
    uint32_t ids[LONG_PIECE], ranks[LONG_PIECE];
    size_t m = pt_chars(t, s, n, ids);
    for (size_t i = 0; i + 1 < m; i++) ranks[i] = pt_lookup(t, ids[i], ids[i + 1]);
    while (m > 1) {
        size_t at;
        uint32_t best = lowest(ranks, m - 1, &at);
        if (best == NO_RANK) break;
        uint32_t made = pt_new(t, best);
        ids[at] = made;
        memmove(&ids[at + 1], &ids[at + 2], (m - at - 2) * sizeof ids[0]);
        memmove(&ranks[at], &ranks[at + 1], (m - at - 2) * sizeof ranks[0]);
        m--;
        if (at > 0) ranks[at - 1] = pt_lookup(t, ids[at - 1], made);
        if (at + 1 < m) ranks[at] = pt_lookup(t, made, ids[at + 1]);
    }
    for (size_t i = 0; i < m; i++)
        if (sink_put(out, ids[i])) return -1;
    return 0;
}

/* pairs rule, long piece: symbols (pt_chars) linked by nxt/prv */
static int merge_pairs_long(const pair_table *t, const uint8_t *s, size_t n, sink_t *out) {
    uint32_t *nxt = malloc(n * sizeof *nxt), *prv = malloc(n * sizeof *prv);
    uint32_t *sym = malloc(n * sizeof *sym);
    heap_t h = {0};
    int rc = -1;
    if (!nxt || !prv || !sym) goto done;
    n = pt_chars(t, s, n, sym);
    for (size_t i = 0; i < n; i++) {
        nxt[i] = (uint32_t)(i + 1);
        prv[i] = (uint32_t)(i - 1);
    }
    for (size_t i = 0; i + 1 < n; i++) {
        uint32_t r = pt_lookup(t, sym[i], sym[i + 1]);
        if (r != NO_RANK && heap_push(&h, (uint64_t)r << 32 | i)) goto done;
    }
    while (h.len) {
        uint64_t top = heap_pop(&h);
        uint32_t r = (uint32_t)(top >> 32), i = (uint32_t)top;
        uint32_t j = nxt[i];
        if (j == UINT32_MAX - 1 || j >= n) continue;
        if (pt_lookup(t, sym[i], sym[j]) != r) continue;
        uint32_t k = nxt[j];
        uint32_t made = pt_new(t, r);
        sym[i] = made;
        nxt[i] = k;
        nxt[j] = UINT32_MAX - 1;
        if (k < n) {
            prv[k] = i;
            uint32_t rk = pt_lookup(t, made, sym[k]);
            if (rk != NO_RANK && heap_push(&h, (uint64_t)rk << 32 | i)) goto done;
        }
        uint32_t p = prv[i];
        if (p != UINT32_MAX) {
            uint32_t rp = pt_lookup(t, sym[p], made);
            if (rp != NO_RANK && heap_push(&h, (uint64_t)rp << 32 | p)) goto done;
        }
    }
    for (uint32_t i = 0; i < n; i = nxt[i])
        if (sink_put(out, sym[i])) goto done;
    rc = 0;
done:
    free(nxt);
    free(prv);
    free(sym);
    free(h.v);
    return rc;
}

static int merge_pairs_piece(const pair_table *t, const uint8_t *s, size_t n, sink_t *out) {
    if (n == 1) return sink_put(out, t->byte_ids[s[0]]);
    return n < LONG_PIECE ? merge_pairs_short(t, s, n, out) : merge_pairs_long(t, s, n, out);
}
