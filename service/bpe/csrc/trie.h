/* A byte trie of tokens, for "the longest token that starts here" (backtrack.h).

Depth 1 and 2 are direct tables (256 and 65536 entries); deeper links live in one open-addressing
hash table keyed by (node, byte), 8 bytes a link: the node it leads to, so one step down is one
look-up. Once built, the nodes are numbered so that a node where a token ends has that token's id
(the others come after every id): a walk knows the token of the deepest node it reached, and its
length, without another read. A link sits where a hash of the bytes of its whole prefix points
(not of its key): a walk computes every position it may read from the text alone, before its
first step, so the fetches from memory overlap instead of waiting on each other (a run of Han
characters walks 4-9 links per token, each a miss of the core's cache). The table is built keyed
by position of (node, byte), then laid out again by prefix (trie_relayout). */
#pragma once
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "token_tables.h" /* NO_RANK */

typedef struct {
    uint32_t node, tok; /* NO_RANK: none */
} trie_entry;

typedef struct {
    uint32_t key;  /* node << 8 | byte; TRIE_EMPTY when the slot is empty */
    uint32_t node; /* below ntok (once sealed): the token that ends there */
} trie_link;

#define TRIE_EMPTY UINT32_MAX
#define TRIE_MAX_NODES ((1u << 24) - 1) /* node << 8 | byte must fit in 32 bits */

typedef struct {
    trie_entry root[256];
    trie_entry *depth2; /* by the first two bytes */
    trie_link *link;
    size_t link_mask, links;
    unsigned shift; /* 64 - log2(link_mask + 1): a prefix hash's top bits are its position */
    uint32_t *node_tok; /* while building: node -> token ending there, NO_RANK if none */
    uint32_t *renum;    /* while sealing: node as built -> node as sealed */
    uint32_t nodes, node_cap;
    uint32_t ntok; /* once sealed: nodes below it are the tokens ending there */
} trie_t;

static void trie_free(trie_t *t) {
    free(t->depth2);
    free(t->link);
    free(t->node_tok);
    free(t->renum);
    memset(t, 0, sizeof *t);
}

static size_t trie_nbytes(const trie_t *t) {
    return 65536 * sizeof(trie_entry) + (t->link_mask + 1) * sizeof(trie_link);
}

static inline size_t trie_hash(uint32_t key) {
    uint64_t h = key * 0x9E3779B97F4A7C15ull;
    return (size_t)(h ^ (h >> 29));
}

#ifndef TRIE_AHEAD
#define TRIE_AHEAD 10 /* bytes of a walk whose links' positions are fetched before it starts */
#endif

static inline uint64_t trie_seed(uint8_t a, uint8_t b) {
    return ((uint64_t)a << 8 | b | 0x10000u) * 0x9E3779B97F4A7C15ull;
}

/* the hash of a prefix one byte longer */
static inline uint64_t trie_next(uint64_t h, uint8_t c) {
    return (h ^ c) * 0x9E3779B97F4A7C15ull;
}

/* the link from `node` by byte c, whose prefix hashes to h; NULL if none */
static inline const trie_link *trie_step(const trie_t *t, uint32_t node, uint8_t c, uint64_t h) {
    uint32_t key = node << 8 | c;
    for (size_t i = (size_t)(h >> t->shift);; i = (i + 1) & t->link_mask) {
        const trie_link *l = &t->link[i];
        if (l->key == key) return l;
        if (l->key == TRIE_EMPTY) return NULL;
    }
}

/* the longest token s[0:*k] (1 <= *k <= n), NO_RANK if none */
static inline uint32_t trie_longest(const trie_t *t, const uint8_t *s, size_t n, size_t *k) {
    uint32_t best = t->root[s[0]].tok;
    *k = 1;
    if (n < 2) return best;
    const trie_entry *d = &t->depth2[(size_t)s[0] << 8 | s[1]];
    if (d->node == NO_RANK) return best;
    if (d->tok != NO_RANK) {
        best = d->tok;
        *k = 2;
    }
    uint64_t ahead[TRIE_AHEAD], h = trie_seed(s[0], s[1]);
    size_t m = n < TRIE_AHEAD ? n : TRIE_AHEAD;
    for (size_t i = 2; i < m; i++) {
        ahead[i] = h = trie_next(h, s[i]);
#if defined(__GNUC__)
        __builtin_prefetch(&t->link[h >> t->shift]);
#endif
    }
    uint32_t node = d->node;
    for (size_t i = 2; i < n; i++) {
        h = i < m ? ahead[i] : trie_next(h, s[i]);
        const trie_link *l = trie_step(t, node, s[i], h);
        if (!l) break;
        node = l->node;
        if (node < t->ntok) {
            best = node;
            *k = i + 1;
        }
    }
    return best;
}

/* ---- building: trie_init, trie_insert for each token, then trie_seal ---- */

static int trie_new_node(trie_t *t, uint32_t *node) {
    if (t->nodes == TRIE_MAX_NODES) return -2;
    if (t->nodes == t->node_cap) {
        uint32_t cap = t->node_cap * 2 + 1024;
        uint32_t *p = realloc(t->node_tok, cap * sizeof *p);
        if (!p) return -1;
        t->node_tok = p;
        t->node_cap = cap;
    }
    t->node_tok[t->nodes] = NO_RANK;
    *node = t->nodes++;
    return 0;
}

static int trie_grow(trie_t *t) {
    size_t cap = t->link ? (t->link_mask + 1) * 2 : 1u << 16;
    trie_link *link = malloc(cap * sizeof *link);
    if (!link) return -1;
    memset(link, 0xFF, cap * sizeof *link);
    for (size_t i = 0; t->link && i <= t->link_mask; i++) {
        if (t->link[i].key == TRIE_EMPTY) continue;
        size_t j = trie_hash(t->link[i].key) & (cap - 1);
        while (link[j].key != TRIE_EMPTY) j = (j + 1) & (cap - 1);
        link[j] = t->link[i];
    }
    free(t->link);
    t->link = link;
    t->link_mask = cap - 1;
    return 0;
}

static int trie_init(trie_t *t) {
    memset(t, 0, sizeof *t);
    memset(t->root, 0xFF, sizeof t->root);
    t->depth2 = malloc(65536 * sizeof *t->depth2);
    if (!t->depth2 || trie_grow(t)) return -1;
    memset(t->depth2, 0xFF, 65536 * sizeof *t->depth2);
    return 0;
}

/* while building: the link keyed (node, byte), placed by trie_hash of its key */
static const trie_link *trie_built(const trie_t *t, uint32_t node, uint8_t c) {
    uint32_t key = node << 8 | c;
    for (size_t i = trie_hash(key) & t->link_mask;; i = (i + 1) & t->link_mask)
        if (t->link[i].key == key || t->link[i].key == TRIE_EMPTY) return &t->link[i];
}

static int trie_child(trie_t *t, uint32_t node, uint8_t c, uint32_t *child) {
    /* filled to at most 0.7: a walk's last step (a miss) probes about four links, one line */
    if ((t->links + 1) * 10 > (t->link_mask + 1) * 7 && trie_grow(t)) return -1;
    uint32_t key = node << 8 | c;
    size_t i = trie_hash(key) & t->link_mask;
    for (; t->link[i].key != TRIE_EMPTY; i = (i + 1) & t->link_mask)
        if (t->link[i].key == key) { *child = t->link[i].node; return 0; }
    int rc = trie_new_node(t, child);
    if (rc) return rc;
    t->link[i] = (trie_link){key, *child};
    t->links++;
    return 0;
}

/* 0, -1 out of memory, -2 too many nodes */
static int trie_insert(trie_t *t, const uint8_t *s, size_t n, uint32_t id) {
    uint32_t *slot = &t->root[s[0]].node, node;
    int rc;
    if (*slot == NO_RANK && (rc = trie_new_node(t, slot))) return rc;
    node = *slot;
    if (n >= 2) {
        slot = &t->depth2[(size_t)s[0] << 8 | s[1]].node;
        if (*slot == NO_RANK && (rc = trie_new_node(t, slot))) return rc;
        node = *slot;
    }
    for (size_t i = 2; i < n; i++)
        if ((rc = trie_child(t, node, s[i], &node))) return rc;
    t->node_tok[node] = id;
    return 0;
}

/* After every trie_insert (ids below ntok): the nodes' new numbers, and a table of the same size
   to lay the links out by prefix into (NULL: out of memory, or -2 in *rc: too many nodes), then
   trie_place for each token inserted, then trie_seal. */
static trie_link *trie_links_new(trie_t *t, uint32_t ntok, int *rc) {
    *rc = ntok > TRIE_MAX_NODES ? -2 : -1;
    if (*rc == -2) return NULL;
    t->renum = malloc((t->nodes ? t->nodes : 1) * sizeof *t->renum);
    if (!t->renum) return NULL;
    uint32_t next = ntok;
    for (uint32_t node = 0; node < t->nodes; node++) {
        if (t->node_tok[node] != NO_RANK) {
            t->renum[node] = t->node_tok[node];
        } else if (next == TRIE_MAX_NODES) {
            *rc = -2;
            return NULL;
        } else {
            t->renum[node] = next++;
        }
    }
    t->ntok = ntok;
    trie_link *dst = malloc((t->link_mask + 1) * sizeof *dst);
    if (dst) memset(dst, 0xFF, (t->link_mask + 1) * sizeof *dst);
    t->shift = 64;
    for (size_t cap = t->link_mask + 1; cap > 1; cap >>= 1) t->shift--;
    return dst;
}

static void trie_place(const trie_t *t, trie_link *dst, const uint8_t *s, size_t n) {
    if (n < 3) return;
    uint32_t node = t->depth2[(size_t)s[0] << 8 | s[1]].node;
    uint64_t h = trie_seed(s[0], s[1]);
    for (size_t i = 2; i < n; i++) {
        const trie_link *l = trie_built(t, node, s[i]); /* there: the token was inserted */
        h = trie_next(h, s[i]);
        size_t j = (size_t)(h >> t->shift);
        uint32_t key = t->renum[node] << 8 | s[i];
        while (dst[j].key != TRIE_EMPTY && dst[j].key != key) j = (j + 1) & t->link_mask;
        dst[j] = (trie_link){key, t->renum[l->node]};
        node = l->node;
    }
}

/* the links laid out by prefix and numbered anew; the tokens of depth 1 and 2 go into their
   entries */
static void trie_seal(trie_t *t, trie_link *dst) {
    free(t->link);
    t->link = dst;
    trie_entry *d[2] = {t->root, t->depth2};
    for (int k = 0; k < 2; k++)
        for (size_t i = 0; i < (k ? 65536u : 256u); i++)
            if (d[k][i].node != NO_RANK) {
                d[k][i].tok = t->node_tok[d[k][i].node];
                d[k][i].node = t->renum[d[k][i].node];
            }
    free(t->node_tok);
    free(t->renum);
    t->node_tok = t->renum = NULL;
    t->node_cap = 0;
}
