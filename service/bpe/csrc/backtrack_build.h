/* Building the backtracking encoder's tables (backtrack.h) for either rule: which tokens are
reachable (their own bytes merge to them alone) and the two parts each one's last merge joined,
found by running the rule on the token's bytes once; the trie of the reachable tokens and each
one's longest shorter prefix among them. Included by engine_init.h only. */
#pragma once
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backtrack.h"
#include "merge.h"
#include "trie.h"

/* a token ranked before a part it is merged from: listed and left out of the trie (0), or one
   too many or too short to list (1: the vocabulary does not qualify), or out of memory (-1) */
static int bk_leave_out(backtrack_t *b, uint32_t id) {
    if (b->nout == BK_MAX_OUT || b->len[id] < 3) return 1;
    if (!b->out) {
        b->out = malloc(BK_MAX_OUT * sizeof *b->out);
        b->out_heads = calloc(((size_t)1 << BK_OUT_LOG2) / 64, sizeof *b->out_heads);
        if (!b->out || !b->out_heads) return -1;
    }
    b->out[b->nout++] = id;
    uint32_t bit = bk_head_bit(b->blob + b->off[id]);
    b->out_heads[bit >> 6] |= (uint64_t)1 << (bit & 63);
    return 0;
}

/* left/right/shorter by id, all NO_RANK (not reachable) */
static int bk_alloc(backtrack_t *b) {
    size_t bytes = (size_t)b->ntok * sizeof(uint32_t);
    b->left = malloc(bytes);
    b->right = malloc(bytes);
    b->shorter = malloc(bytes);
    if (!b->left || !b->right || !b->shorter) return -1;
    memset(b->left, 0xFF, bytes);
    memset(b->right, 0xFF, bytes);
    memset(b->shorter, 0xFF, bytes);
    return 0;
}

/* the trie of the reachable tokens and their shorter prefixes; b->on = qualifies. `met(b, id)`:
   whether a pair's check may meet the token id (a piece that holds one of the ranks rule's
   tokens left out never backtracks; the pairs rule meets only the tokens its merges make). */
static int bk_index(backtrack_t *b, int qualifies, int (*met)(const backtrack_t *, uint32_t)) {
    if (trie_init(&b->trie)) return -1;
    for (uint32_t id = 0; id < b->ntok; id++) {
        if (b->left[id] == NO_RANK || b->len[id] == 0) continue;
        int rc = trie_insert(&b->trie, b->blob + b->off[id], b->len[id], id);
        if (rc == -2) return 0; /* too many trie nodes: b->on stays 0 */
        if (rc) return -1;
    }
    int rc;
    trie_link *dst = trie_links_new(&b->trie, b->ntok, &rc);
    if (!dst) return rc == -2 ? 0 : -1; /* too many trie nodes: b->on stays 0 */
    for (uint32_t id = 0; id < b->ntok; id++)
        if (b->left[id] != NO_RANK && b->len[id] != 0)
            trie_place(&b->trie, dst, b->blob + b->off[id], b->len[id]);
    trie_seal(&b->trie, dst);
    for (uint32_t id = 0; id < b->ntok; id++) {
        size_t k;
        if (b->left[id] != NO_RANK && b->len[id] >= 2)
            b->shorter[id] = trie_longest(&b->trie, b->blob + b->off[id], b->len[id] - 1u, &k);
    }
    b->trie_all = 1;
    for (uint32_t id = 0; id < b->ntok && b->trie_all; id++) {
        size_t k = 0;
        if (b->left[id] != NO_RANK || b->len[id] == 0 || !met(b, id)) continue;
        trie_longest(&b->trie, b->blob + b->off[id], b->len[id], &k); /* the same bytes? */
        if (k != b->len[id]) b->trie_all = 0;
    }
    b->on = qualifies;
    return 0;
}

static int bk_met_ranks(const backtrack_t *b, uint32_t id) {
    for (uint32_t j = 0; j < b->nout; j++)
        if (b->out[j] == id) return 0;
    return 1;
}

/* (pairs) a token some merge makes: its parts are kept in `right` while the trie is built */
static int bk_met_pairs(const backtrack_t *b, uint32_t id) {
    return b->right[id] != NO_RANK;
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

/* The ranks vocabulary of `t`, once the caller has set ntok, blob, off and len (every length at
   most BK_MAX_TOKEN). 0 on success (b->on: the vocabulary qualifies), -1 out of memory. */
static int bk_build_ranks(backtrack_t *b, const bytes_table *t) {
    uint32_t bounds[BK_MAX_TOKEN + 1], ranks[BK_MAX_TOKEN];
    if (bk_alloc(b)) return -1;
    for (uint32_t id = 0; id < b->ntok; id++) {
        const uint8_t *s = b->blob + b->off[id];
        size_t n = b->len[id], k;
        if (n == 0 || bt_lookup(t, s, n) != id) continue; /* no token, or bytes a later id owns */
        if (n == 1) {
            b->left[id] = b->right[id] = id;
        } else if (bk_last_merge(t, s, n, bounds, ranks, &k)) {
            uint32_t l = bt_lookup(t, s, k), r = bt_lookup(t, s + k, n - k);
            if (l >= id || r >= id) { /* ranked before a part it is merged from */
                int rc = bk_leave_out(b, id);
                if (rc) return rc < 0 ? -1 : 0; /* b->on stays 0, and no trie is built */
                continue;
            }
            b->left[id] = l;
            b->right[id] = r;
        }
    }
    return bk_index(b, 1, bk_met_ranks);
}

/* The pairs vocabulary of `t` and its merges (left, right, new; `count` of them), once the caller
   has set ntok, blob, off and len. A token is reachable if the pairs rule merges its bytes to it
   alone; its parts are then the merge that made it. */
static int bk_build_pairs(backtrack_t *b, const pair_table *t, const uint32_t *triples,
                          size_t count) {
    if (bk_alloc(b)) return -1;
    b->pairs = t;
    int qualifies = 1;
    for (size_t i = 0; i < count; i++) {
        uint32_t l = triples[3 * i], r = triples[3 * i + 1], id = triples[3 * i + 2];
        if (id >= b->ntok) return 0; /* a merge whose token has no bytes: b->on stays 0 */
        if (l >= id || r >= id) qualifies = 0;
        if (b->left[id] != NO_RANK) qualifies = 0; /* two merges make it: its last is unknown */
        b->left[id] = l;
        b->right[id] = r;
    }
    for (int c = 0; c < 256; c++) {
        uint32_t id = t->byte_ids[c];
        if (id >= b->ntok || b->len[id] != 1 || b->blob[b->off[id]] != c) return 0; /* stays off */
        if (b->left[id] != NO_RANK) return 0; /* a merge makes a byte's id: stays off */
        b->left[id] = b->right[id] = id;
    }
    sink_t out = {0};
    for (uint32_t id = 0; id < b->ntok; id++) {
        if (b->left[id] == NO_RANK || b->len[id] < 2) continue;
        out.len = 0;
        int rc = merge_pairs_piece(t, b->blob + b->off[id], b->len[id], &out);
        if (rc) { free(out.ids); return -1; }
        if (out.len != 1 || out.ids[0] != id) b->left[id] = NO_RANK; /* not reachable */
    }
    free(out.ids);
    int rc = bk_index(b, qualifies, bk_met_pairs);
    for (uint32_t id = 0; id < b->ntok; id++)
        if (b->left[id] == NO_RANK) b->right[id] = NO_RANK;
    return rc;
}
