/* The ranks rule without re-scanning: bpe-openai's backtracking encoder (rust-gems `bpe`), in C.

The ranks rule's output for a piece is the one sequence of tokens in which every token is
"reachable" (its own bytes merge to it alone) and every adjacent pair is "valid" (the bytes of
the two merge to exactly those two). So instead of merging, walk the piece left to right: take
the longest reachable token that starts here (a trie), keep it if it is a valid pair with the
token before it, else try its next shorter reachable prefix; when none fits, pop the previous
token and mark this position dead (a bitfield), so no position is tried twice from the same
token: O(n * longest token) per piece, with no re-scan and no heap.

Validity of (left, right) replays the two tokens' merge trees backwards: of the two tokens at the
boundary, the one with the higher rank was merged last, so undo it (its right part for the left
token, its left part for the right one). Before each undo, the bytes on both sides of the boundary
must not form a token that would have been merged earlier (rank below the undone merge; on a tie
with the right token's merge the boundary pair is further left, so it would win). This reasoning
needs every token to rank after the two parts it is merged from; a vocabulary where one does not
(`bk_build` checks all) keeps the heap merge of merge.h.

Each reachable token's last merge comes from running the ranks rule on its own bytes at build
time; tokens longer than BK_MAX_TOKEN bytes also keep the heap merge for the whole vocabulary. */
#pragma once
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "merge.h"

#define BK_MAX_TOKEN 1024
#define BK_STACK_PIECE 1024

typedef struct {
    uint32_t node, tok; /* NO_RANK: none */
} bk_entry;

typedef struct {
    uint32_t key, node, tok;
} bk_edge_t;

#define EMPTY_KEY UINT32_MAX

typedef struct {
    uint32_t ntok;
    uint32_t *off;          /* id -> offset of its bytes in the bytes table's blob */
    uint16_t *len;          /* id -> byte length; 0: no token */
    uint32_t *left, *right; /* id -> the two tokens its last merge joined (a byte: itself);
                               left == NO_RANK: not reachable */
    uint32_t *shorter;      /* id -> the longest reachable token that is a proper prefix of it */
    /* the trie of reachable tokens: depth 1 and 2 in direct tables, deeper edges hashed; each
       entry holds the node it leads to and the token ending there, so a step is one look-up */
    bk_entry root[256];
    bk_entry *depth2;       /* 65536, by the first two bytes */
    bk_edge_t *edge;        /* key node << 8 | byte, EMPTY_KEY when empty */
    size_t edge_mask, edges;
    uint32_t *node_tok;     /* while building: node -> reachable token ending there */
    uint32_t nodes, node_cap;
    int on;                 /* 1: built and the vocabulary qualifies */
} backtrack_t;

static void bk_free(backtrack_t *b) {
    free(b->off); free(b->len); free(b->left); free(b->right); free(b->shorter);
    free(b->depth2); free(b->edge); free(b->node_tok);
    memset(b, 0, sizeof *b);
}

#define BK_MAX_NODES ((1u << 24) - 1) /* an edge's key is node << 8 | byte in 32 bits */

static inline size_t bk_hash(uint32_t key) {
    uint64_t h = key * 0x9E3779B97F4A7C15ull;
    return (size_t)(h ^ (h >> 29));
}

static inline const bk_edge_t *bk_edge(const backtrack_t *b, uint32_t node, uint8_t c) {
    uint32_t key = node << 8 | c;
    for (size_t i = bk_hash(key) & b->edge_mask;; i = (i + 1) & b->edge_mask) {
        const bk_edge_t *e = &b->edge[i];
        if (e->key == key) return e;
        if (e->key == EMPTY_KEY) return NULL;
    }
}

/* the longest reachable token s[0:k] (k <= n), NO_RANK if none */
static inline uint32_t bk_longest(const backtrack_t *b, const uint8_t *s, size_t n) {
    uint32_t best = b->root[s[0]].tok; /* every byte is a reachable token */
    if (n < 2) return best;
    const bk_entry *d = &b->depth2[(size_t)s[0] << 8 | s[1]];
    if (d->node == NO_RANK) return best;
    if (d->tok != NO_RANK) best = d->tok;
    uint32_t node = d->node;
    for (size_t i = 2; i < n; i++) {
        const bk_edge_t *e = bk_edge(b, node, s[i]);
        if (!e) break;
        if (e->tok != NO_RANK) best = e->tok;
        node = e->node;
    }
    return best;
}

static size_t bk_nbytes(const backtrack_t *b) {
    return (size_t)b->ntok * (3 * sizeof(uint32_t) + sizeof(uint32_t) + sizeof(uint16_t)) +
           65536 * sizeof(bk_entry) + (b->edge_mask + 1) * sizeof(bk_edge_t);
}

/* ---- building ---- */

static int bk_new_node(backtrack_t *b, uint32_t *node) {
    if (b->nodes == BK_MAX_NODES) return -2;
    if (b->nodes == b->node_cap) {
        uint32_t cap = b->node_cap * 2 + 1024;
        uint32_t *p = realloc(b->node_tok, cap * sizeof *p);
        if (!p) return -1;
        b->node_tok = p;
        b->node_cap = cap;
    }
    b->node_tok[b->nodes] = NO_RANK;
    *node = b->nodes++;
    return 0;
}

static int bk_grow_edges(backtrack_t *b) {
    size_t cap = b->edge_mask ? (b->edge_mask + 1) * 2 : 1u << 16;
    bk_edge_t *edge = malloc(cap * sizeof *edge);
    if (!edge) return -1;
    memset(edge, 0xFF, cap * sizeof *edge);
    for (size_t i = 0; b->edge && i <= b->edge_mask; i++) {
        if (b->edge[i].key == EMPTY_KEY) continue;
        size_t j = bk_hash(b->edge[i].key) & (cap - 1);
        while (edge[j].key != EMPTY_KEY) j = (j + 1) & (cap - 1);
        edge[j] = b->edge[i];
    }
    free(b->edge);
    b->edge = edge;
    b->edge_mask = cap - 1;
    return 0;
}

/* the child of `node` by byte c, created if missing */
static int bk_child(backtrack_t *b, uint32_t node, uint8_t c, uint32_t *child) {
    if ((b->edges + 1) * 2 > b->edge_mask + 1 && bk_grow_edges(b)) return -1;
    uint32_t key = node << 8 | c;
    size_t i = bk_hash(key) & b->edge_mask;
    for (; b->edge[i].key != EMPTY_KEY; i = (i + 1) & b->edge_mask)
        if (b->edge[i].key == key) { *child = b->edge[i].node; return 0; }
    int rc = bk_new_node(b, child);
    if (rc) return rc;
    b->edge[i] = (bk_edge_t){key, *child, NO_RANK};
    b->edges++;
    return 0;
}

static int bk_insert(backtrack_t *b, const uint8_t *s, size_t n, uint32_t id) {
    uint32_t *slot = &b->root[s[0]].node, node;
    int rc;
    if (*slot == NO_RANK && (rc = bk_new_node(b, slot))) return rc;
    node = *slot;
    if (n >= 2) {
        slot = &b->depth2[(size_t)s[0] << 8 | s[1]].node;
        if (*slot == NO_RANK && (rc = bk_new_node(b, slot))) return rc;
        node = *slot;
    }
    for (size_t i = 2; i < n; i++)
        if ((rc = bk_child(b, node, s[i], &node))) return rc;
    b->node_tok[node] = id;
    return 0;
}

/* Run the ranks rule on s[0:n] (n >= 2) until two parts are left: 1 and *k = where they meet,
   or 0 if it stops earlier. bounds/ranks hold n + 1 and n entries. */
static int bk_last_merge(const bytes_table *t, const uint8_t *s, size_t n, uint32_t *bounds,
                         uint32_t *ranks, size_t *k) {
    size_t m = n;
    for (size_t i = 0; i <= n; i++) bounds[i] = (uint32_t)i;
    for (size_t i = 0; i + 1 < n; i++) ranks[i] = t->pair_rank[(size_t)s[i] << 8 | s[i + 1]];
    while (m > 2) {
        size_t at;
        if (lowest(ranks, m - 1, &at) == NO_RANK) return 0;
        memmove(&bounds[at + 1], &bounds[at + 2], (m - at - 1) * sizeof bounds[0]);
        memmove(&ranks[at], &ranks[at + 1], (m - at - 2) * sizeof ranks[0]);
        m--;
        if (at > 0)
            ranks[at - 1] = bt_lookup(t, s + bounds[at - 1], bounds[at + 1] - bounds[at - 1]);
        if (at + 1 < m)
            ranks[at] = bt_lookup(t, s + bounds[at], bounds[at + 2] - bounds[at]);
    }
    *k = bounds[1];
    return 1;
}

/* The tables for the ranks vocabulary `t` was built from, once the caller has set b->ntok and,
   by id, b->off and b->len (where each token's bytes are in t->blob; length 0: no token; every
   length at most BK_MAX_TOKEN). 0 on success (b->on says whether the vocabulary qualifies), -1
   when out of memory. */
static int bk_build(backtrack_t *b, const bytes_table *t) {
    uint32_t bounds[BK_MAX_TOKEN + 1], ranks[BK_MAX_TOKEN];
    uint32_t ntok = b->ntok;
    const uint32_t *off = b->off;
    const uint16_t *len = b->len;
    b->left = malloc(ntok * sizeof *b->left);
    b->right = malloc(ntok * sizeof *b->right);
    b->shorter = malloc(ntok * sizeof *b->shorter);
    b->depth2 = malloc(65536 * sizeof *b->depth2);
    if (!b->edge && bk_grow_edges(b)) return -1;
    if (!b->left || !b->right || !b->shorter || !b->depth2) return -1;
    memset(b->root, 0xFF, sizeof b->root);
    memset(b->depth2, 0xFF, 65536 * sizeof *b->depth2);
    memset(b->shorter, 0xFF, ntok * sizeof *b->shorter);
    int qualifies = 1;
    for (uint32_t id = 0; id < ntok; id++) {
        const uint8_t *s = t->blob + off[id];
        size_t n = len[id], k;
        b->left[id] = b->right[id] = NO_RANK;
        if (n == 0 || bt_lookup(t, s, n) != id) continue; /* no token, or bytes a later id owns */
        if (n == 1) {
            b->left[id] = b->right[id] = id;
        } else if (bk_last_merge(t, s, n, bounds, ranks, &k)) {
            uint32_t l = bt_lookup(t, s, k), r = bt_lookup(t, s + k, n - k);
            if (l >= id || r >= id) qualifies = 0; /* ranked before a part it is merged from */
            b->left[id] = l;
            b->right[id] = r;
        }
        int rc = b->left[id] != NO_RANK ? bk_insert(b, s, n, id) : 0;
        if (rc == -2) return 0; /* too many trie nodes: b->on stays 0 */
        if (rc) return -1;
    }
    /* the token ending at each node goes next to the link that leads there */
    for (int i = 0; i < 256; i++)
        if (b->root[i].node != NO_RANK) b->root[i].tok = b->node_tok[b->root[i].node];
    for (size_t i = 0; i < 65536; i++)
        if (b->depth2[i].node != NO_RANK) b->depth2[i].tok = b->node_tok[b->depth2[i].node];
    for (size_t i = 0; i <= b->edge_mask; i++)
        if (b->edge[i].key != EMPTY_KEY) b->edge[i].tok = b->node_tok[b->edge[i].node];
    free(b->node_tok);
    b->node_tok = NULL;
    /* each reachable token's longest reachable proper prefix: walk its bytes in the trie */
    for (uint32_t id = 0; id < ntok; id++) {
        if (b->left[id] == NO_RANK || len[id] < 2) continue;
        const uint8_t *s = t->blob + off[id];
        b->shorter[id] = bk_longest(b, s, (size_t)len[id] - 1);
    }
    b->on = qualifies;
    return 0;
}

/* ---- encoding ---- */

/* Would the ranks rule, run on the bytes of `l` then `r` (meeting at s[at]), give exactly l, r? */
static inline int bk_valid(const backtrack_t *b, const bytes_table *t, const uint8_t *s, size_t at,
                           uint32_t l, uint32_t r) {
    uint32_t limit = NO_RANK, ll = b->len[l], rl = b->len[r];
    for (;;) {
        uint32_t across = bt_lookup(t, s + at - ll, ll + rl);
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
            }
        } else {
            limit = r + 1;
            if (b->left[r] == r) {
                limit = l;
                if (b->right[l] == l) return 1;
                l = b->right[l];
                ll = b->len[l];
            } else {
                r = b->left[r];
                rl = b->len[r];
            }
        }
    }
}

/* the ids of piece s[0:n] under the ranks rule (the caller has tried the whole piece) */
static int bk_encode(const backtrack_t *b, const bytes_table *t, const uint8_t *s, size_t n,
                     sink_t *out) {
    uint32_t stack_toks[BK_STACK_PIECE];
    uint64_t stack_dead[BK_STACK_PIECE / 64 + 1];
    int small = n <= BK_STACK_PIECE;
    size_t words = n / 64 + 1;
    uint32_t *toks = small ? stack_toks : malloc(n * sizeof *toks);
    uint64_t *dead = small ? stack_dead : malloc(words * sizeof *dead); /* bit p: no way on from p */
    int rc = -1;
    if (!toks || !dead) goto done;
    memset(dead, 0, words * sizeof *dead);
    size_t top = 0, pos = 0;
    uint32_t next = bk_longest(b, s, n);
    while (pos < n) {
        uint32_t tok = next, last = top ? toks[top - 1] : NO_RANK;
        if (tok == NO_RANK) { rc = -2; goto done; }
        for (;;) {
            size_t end = pos + b->len[tok];
            if (!(dead[end >> 6] >> (end & 63) & 1) &&
                (last == NO_RANK || bk_valid(b, t, s, pos, last, tok))) {
                toks[top++] = tok;
                pos = end;
                next = pos < n ? bk_longest(b, s + pos, n - pos) : NO_RANK;
                break;
            }
            if ((tok = b->shorter[tok]) != NO_RANK) continue;
            if (last == NO_RANK) { rc = -2; goto done; } /* cannot happen: bytes always fit */
            dead[pos >> 6] |= (uint64_t)1 << (pos & 63);
            top--;
            pos -= b->len[last];
            next = last;
            break;
        }
    }
    if (out->count_only) {
        out->len += top;
    } else {
        for (size_t i = 0; i < top; i++)
            if (sink_put(out, toks[i])) goto done;
    }
    rc = 0;
done:
    if (!small) {
        free(toks);
        free(dead);
    }
    return rc;
}
